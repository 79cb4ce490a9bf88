"""Write run.json, report.json, report.md and report.html into an output folder, all or
none."""

from __future__ import annotations

from pathlib import Path

from recallbench.core import Dataset, Run
from recallbench.core._files import atomic_write_texts
from recallbench.render._html import render_report_html
from recallbench.render._markdown import render_markdown
from recallbench.report._model import Report


def write_outputs(
    folder: Path, run: Run, report: Report, dataset: Dataset | None = None
) -> list[Path]:
    """Render everything first, then write the four files together (a failure leaves the
    folder as it was); returns the paths written. With ``dataset``, report.html shows the
    memories' texts beside their ids."""
    rendered = {
        folder / "run.json": run.model_dump_json(indent=2) + "\n",
        folder / "report.json": report.model_dump_json(indent=2) + "\n",
        folder / "report.md": render_markdown(report),
        folder / "report.html": render_report_html(report, run, dataset),
    }
    atomic_write_texts(rendered)
    return list(rendered)
