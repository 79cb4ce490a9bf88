"""Read a report back: a report.json file, or the folder `recallbench run` wrote it into."""

from __future__ import annotations

from pathlib import Path

from recallbench.core import ConfigError
from recallbench.core._validation import read_json, validate
from recallbench.report._model import REPORT_FORMAT, Report


def output_file(path: Path, names: tuple[str, ...] = ("report.json",)) -> Path:
    """``path`` itself, or for a folder the first of ``names`` in it."""
    if not path.is_dir():
        return path
    for name in names:
        if (path / name).is_file():
            return path / name
    raise ConfigError(f"{path}: a folder without {' or '.join(names)}")


def read_report(path: Path) -> Report:
    """A `recallbench.report/v1` file; anything else is an error saying what it is."""
    path = output_file(path)
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind != REPORT_FORMAT:
        raise ConfigError(f"{path}: not a recallbench report (format {kind!r})")
    return validate(Report, data, str(path))
