"""The rankings a run's recorded folder holds (``recallbench run --out`` writes it; the
store keeps it as the run's ``source``): from ``run.json`` every returned id, from
``report.json`` the first 20 each query keeps. Failed queries have none."""

from __future__ import annotations

from pathlib import Path

from recallbench.core import ConfigError, Run
from recallbench.core._validation import read_json, validate
from recallbench.report import Report


def recorded_rankings(path: Path) -> dict[str, tuple[str, ...]]:
    """Query id -> returned memory ids, best first, from a run.json or a report.json."""
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind == "recallbench.run/v1":
        run = validate(Run, data, str(path))
        return {
            result.query_id: tuple(hit.doc_id for hit in result.hits)
            for result in run.results
            if not result.failed
        }
    if kind == "recallbench.report/v1":
        report = validate(Report, data, str(path))
        return {
            query.id: tuple(query.returned) for query in report.queries if query.status != "failed"
        }
    raise ConfigError(f"{path}: not a recallbench run or report (format {kind!r})")
