"""Write run.json, report.json and report.md into an output folder, all or none."""

from __future__ import annotations

from pathlib import Path

from recallbench.core import Run
from recallbench.core._files import atomic_write_texts
from recallbench.report._markdown import render_markdown
from recallbench.report._model import Report


def write_outputs(folder: Path, run: Run, report: Report) -> list[Path]:
    """Render everything first, then write the three files together (a failure leaves the
    folder as it was); returns the paths written."""
    rendered = {
        folder / "run.json": run.model_dump_json(indent=2) + "\n",
        folder / "report.json": report.model_dump_json(indent=2) + "\n",
        folder / "report.md": render_markdown(report),
    }
    atomic_write_texts(rendered)
    return list(rendered)
