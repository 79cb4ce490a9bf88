"""Gates on an extraction benchmark (``recallbench.extraction-report/v1``): thresholds on
event, entity, deduplication, observation and connection measures under one matching rule.

    [gates.extraction]
    rule = "jaccard>=0.5"      # whose numbers are checked (default: the report's first rule)
    statistic = "lower"        # macro (default), micro, or lower: the macro interval's low end

    [gates.extraction.measures.event_f1]
    min = 0.4
    target = 0.6

A measure the data leaves undefined (no document defines it) fails a blocking threshold with
the reason; the rule must be one the report scored, else the gate cannot decide and fails.
Gating on ``lower`` asks that the 95% interval clear the bar, so a small corpus cannot pass
on luck.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from recallbench.gates._checks import Check, threshold_checks
from recallbench.gates._config import ExtractionGates
from recallbench.gates._gate import GateResult, finished

if TYPE_CHECKING:
    from recallbench.extraction._report import ExtractionReport

LOWER_IS_BETTER = frozenset({"connection_fpr"})


def is_extraction_report(path: Path) -> bool:
    """Whether ``path`` (a file, or a folder holding only extraction.json) is an extraction
    report, judged by its ``format`` field."""
    import json

    if path.is_dir():
        if (path / "report.json").is_file() or not (path / "extraction.json").is_file():
            return False
        path = path / "extraction.json"
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    from recallbench.extraction._report import REPORT_FORMAT

    # The format is the report's first key; reading the head avoids parsing a large file twice.
    return json.dumps(REPORT_FORMAT) in head.decode("utf-8", "replace")


def extraction_checks(report: ExtractionReport, gates: ExtractionGates) -> Iterator[Check]:
    """The threshold checks of ``gates`` on ``report``."""
    if not gates.measures:
        return
    rule = gates.rule or report.rules[0]
    scores = next((s for s in report.results if s.rule == rule), None)
    if scores is None:
        yield Check(
            "extraction",
            f"rule {rule}",
            "fail",
            f"the report has no scores under rule {rule} (it has {', '.join(report.rules)}); "
            f"run `recallbench extract --rule {rule}`",
        )
        return
    undefined = report.undefined.get(rule, {})
    for name, threshold in gates.measures.items():
        aggregate = scores.aggregate(name)
        value = {
            "macro": aggregate.macro,
            "micro": aggregate.micro,
            "lower": aggregate.macro_interval[0] if aggregate.macro_interval else None,
        }[gates.statistic]
        label = name if gates.statistic == "macro" else f"{name} ({gates.statistic})"
        label = f"{label} [{rule}]"
        if value is None and name in undefined:
            yield Check(
                "extraction",
                label,
                "fail" if threshold.blocking else "warn",
                f"{label}: no value ({undefined[name]})",
            )
            continue
        yield from threshold_checks(
            "extraction", label, value, threshold, name not in LOWER_IS_BETTER
        )


def run_extraction_gate(
    report: ExtractionReport,
    gates: ExtractionGates,
    *,
    strict: bool = False,
    config: Path | None = None,
) -> GateResult:
    """The verdict on an extraction report: its ``[gates.extraction]`` thresholds (no
    baseline: extraction reports are not kept in the history store yet)."""
    checks = finished(
        list(extraction_checks(report, gates)),
        "no extraction gates configured: add [gates.extraction.measures] to recallbench.toml",
        strict,
    )
    truth = report.ground_truth
    return GateResult(
        system=report.output.system,
        dataset=f"{truth.name} {truth.version}",
        dataset_sha256=truth.sha256,
        report_created=report.created_at.isoformat(),
        config=config,
        baseline=None,
        strict=strict,
        checks=tuple(checks),
    )


def read_extraction_report(path: Path) -> ExtractionReport:
    """An extraction report file (or the folder holding extraction.json), validated."""
    from recallbench.core._validation import read_json, validate
    from recallbench.extraction._report import ExtractionReport
    from recallbench.report._read import output_file

    path = output_file(path, ("extraction.json",))
    return validate(ExtractionReport, read_json(path), str(path))
