"""Write run.json, report.json and report.md into an output folder, each atomically."""

from __future__ import annotations

from pathlib import Path

from recallbench.core import Run
from recallbench.core._files import atomic_write_text
from recallbench.report._markdown import render_markdown
from recallbench.report._model import Report


def write_outputs(folder: Path, run: Run, report: Report) -> list[Path]:
    """Render everything first, then write; returns the paths written."""
    rendered = {
        folder / "run.json": run.model_dump_json(indent=2) + "\n",
        folder / "report.json": report.model_dump_json(indent=2) + "\n",
        folder / "report.md": render_markdown(report),
    }
    for path, text in rendered.items():
        atomic_write_text(path, text)
    return list(rendered)
