"""Reports: the JSON format, Markdown and terminal renderings, atomic writing."""

from recallbench.core._files import atomic_write_text
from recallbench.report._build import build_report
from recallbench.report._channels import ChannelAnalysis, channel_analysis
from recallbench.report._markdown import render_markdown
from recallbench.report._model import REPORT_FORMAT, Report, SessionLift
from recallbench.report._read import output_file, read_report
from recallbench.report._session import measure_session_lift
from recallbench.report._terminal import render_terminal
from recallbench.report._write import write_outputs

__all__ = [
    "REPORT_FORMAT",
    "ChannelAnalysis",
    "Report",
    "SessionLift",
    "atomic_write_text",
    "build_report",
    "channel_analysis",
    "measure_session_lift",
    "output_file",
    "read_report",
    "render_markdown",
    "render_terminal",
    "write_outputs",
]
