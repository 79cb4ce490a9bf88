"""Reports: the report model and its JSON format, building a report from a run, reading it
back, and the analyses a report holds (channels, session lift). Its views (Markdown, HTML,
terminal) are in :mod:`recallbench.render`, above this package.

Names are imported on first use (PEP 562): `history` reads series of runs through
``report._changes`` without loading the report builder and scipy.stats.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports
from recallbench.core._files import atomic_write_text

if TYPE_CHECKING:
    from recallbench.report._build import build_report
    from recallbench.report._channels import ChannelAnalysis, channel_analysis
    from recallbench.report._model import REPORT_FORMAT, Report, SessionLift
    from recallbench.report._read import output_file, read_report
    from recallbench.report._session import measure_session_lift

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
]

__getattr__ = lazy_exports(
    __name__, ("_build", "_channels", "_model", "_read", "_session"), __all__
)
