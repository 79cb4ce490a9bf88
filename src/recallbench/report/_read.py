"""Read a report back: a report.json file, or the folder `recallbench run` wrote it into."""

from __future__ import annotations

import json
import math
from pathlib import Path

from recallbench.core import ConfigError
from recallbench.core._errors import DatasetError, Problem
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


def check_finite(report: Report, source: str) -> Report:
    """``report`` itself when every mean and per-query value is a finite number or null.

    JSON readers accept NaN and Infinity, and one of them turns every statistic computed
    from the values into NaN ("Δ +nan ***"); so each is an error located by its JSON path,
    e.g. ``queries[12].values["mrr@10"]``.
    """
    problems = [
        Problem(f"means[{json.dumps(name)}]", f"{value} is not a finite number")
        for name, value in report.means.items()
        if value is not None and not math.isfinite(value)
    ]
    problems += [
        Problem(f"queries[{index}].values[{json.dumps(name)}]", f"{value} is not a finite number")
        for index, query in enumerate(report.queries)
        for name, value in query.values.items()
        if value is not None and not math.isfinite(value)
    ]
    if problems:
        raise DatasetError(source, problems)
    return report


def read_report(path: Path) -> Report:
    """A `recallbench.report/v1` file; anything else is an error saying what it is."""
    path = output_file(path)
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind != REPORT_FORMAT:
        raise ConfigError(f"{path}: not a recallbench report (format {kind!r})")
    return check_finite(validate(Report, data, str(path)), str(path))
