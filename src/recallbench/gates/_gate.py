"""A gate's verdict: every check, and pass / fail with the exit code CI acts on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from recallbench.gates._baseline import Baseline
from recallbench.gates._checks import STATUS_ORDER, Check, Status, all_threshold_checks
from recallbench.gates._config import Gates
from recallbench.gates._regression import regression_checks
from recallbench.report import Report

EXIT_PASS = 0
EXIT_FAIL = 1


@dataclass(frozen=True, slots=True)
class GateResult:
    system: str
    dataset: str
    dataset_sha256: str
    report_created: str
    config: Path | None
    baseline: str | None
    """What the regression checks compared with (None: no baseline)."""
    strict: bool
    checks: tuple[Check, ...]

    @property
    def status(self) -> Status:
        worst = max((STATUS_ORDER[c.status] for c in self.checks), default=0)
        return next(s for s, order in STATUS_ORDER.items() if order == worst)

    @property
    def exit_code(self) -> int:
        return EXIT_FAIL if self.status == "fail" else EXIT_PASS

    @property
    def undecided(self) -> tuple[Check, ...]:
        """Drops the paired test could not judge (too few differing queries)."""
        return tuple(check for check in self.checks if check.undecided)

    @property
    def acceptable(self) -> bool:
        """Whether ``--accept`` may add the run to the baseline: it passed, and no drop was
        left unjudged (a run with an unjudged drop would pull the rolling mean down and
        hide the next drop; `recallbench baseline accept` still accepts it on purpose)."""
        return self.exit_code == EXIT_PASS and not self.undecided

    def count(self, status: Status) -> int:
        return sum(1 for check in self.checks if check.status == status)


def run_gate(
    report: Report,
    gates: Gates,
    baseline: Baseline | None,
    *,
    baseline_wanted: bool = True,
    baseline_problem: str | None = None,
    strict: bool = False,
    config: Path | None = None,
    baseline_starting: str | None = None,
) -> GateResult:
    """Check ``report`` against the thresholds of ``gates`` and against ``baseline``.

    A wanted baseline that does not exist warns (``baseline_problem`` says why); with
    ``strict`` every warning is a failure, so a gate without its baseline fails closed.
    ``baseline_starting`` (``--accept`` with nothing accepted yet: this run starts the
    baseline) makes the missing baseline a passing check that says so.
    """
    checks = all_threshold_checks(report, gates)
    if baseline is not None:
        checks += regression_checks(report, baseline, gates)
    elif baseline_starting is not None:
        checks.append(Check("baseline", "baseline exists", "pass", baseline_starting))
    elif baseline_wanted:
        checks.append(
            Check(
                "baseline",
                "baseline exists",
                "warn",
                baseline_problem or "no baseline: no regression checked",
            )
        )
    checks = finished(
        checks, "no gates configured and no baseline: add [gates] to recallbench.toml", strict
    )
    return GateResult(
        system=report.system.system,
        dataset=f"{report.dataset.name} {report.dataset.version}",
        dataset_sha256=report.dataset.sha256,
        report_created=report.created_at.isoformat(),
        config=config,
        baseline=baseline.description if baseline else None,
        strict=strict,
        checks=tuple(checks),
    )


def finished(checks: Sequence[Check], nothing: str, strict: bool) -> list[Check]:
    """``checks`` as the verdict takes them: a warning saying ``nothing`` when there are
    none, and every warning a failure under ``strict`` (fail closed)."""
    out = list(checks) or [Check("config", "something to check", "warn", nothing)]
    return _fail_closed(out) if strict else out


def _fail_closed(checks: Sequence[Check]) -> list[Check]:
    return [
        replace(check, status="fail", message=check.message + " (warning; failed by --strict)")
        if check.status == "warn"
        else check
        for check in checks
    ]
