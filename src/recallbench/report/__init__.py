"""Reports: the JSON format, Markdown and terminal renderings, atomic writing."""

from recallbench.core._files import atomic_write_text
from recallbench.report._build import build_report
from recallbench.report._markdown import render_markdown
from recallbench.report._model import REPORT_FORMAT, Report
from recallbench.report._read import output_file, read_report
from recallbench.report._terminal import render_terminal
from recallbench.report._write import write_outputs

__all__ = [
    "REPORT_FORMAT",
    "Report",
    "atomic_write_text",
    "build_report",
    "output_file",
    "read_report",
    "render_markdown",
    "render_terminal",
    "write_outputs",
]
