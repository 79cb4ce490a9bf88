"""Assemble a comparison: paired statistics per system and measure, by group, rank diffs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from recallbench import __version__
from recallbench.compare._inputs import Compared, MissingPolicy, paired_queries
from recallbench.compare._model import (
    ComparedSystem,
    Comparison,
    GroupComparison,
    Interval,
    PairedComparison,
    QueryCounts,
    RankChange,
    RankDifferences,
    Settings,
    Verdict,
)
from recallbench.core import ConfigError
from recallbench.report._model import MeasureInfo, QueryReport
from recallbench.stats._multiple import CORRECTION_NAMES, Correction, adjust
from recallbench.stats._paired import PairedResult, PairedSettings, paired_results
from recallbench.stats._rankdiff import rank_differences

TESTS = ("randomisation", "t", "wilcoxon")
MOST_CHANGED = 10
RANK_CLASSES_IN_WORDS = (
    "identical: tau >= 0.99 and Jaccard >= 0.95; minor: tau >= 0.95 and the same top-1; "
    "major: tau >= 0.85; otherwise incompatible. Kendall tau-b over the union of the two "
    "top-k lists, a document absent from a list tied below its last (Fagin et al. 2003)"
)


def pick_baseline(compared: Sequence[Compared], name: str | None) -> Compared:
    """The input named ``name`` (label, system name or file), else the first."""
    if name is None:
        return compared[0]
    matches = [
        c
        for c in compared
        if name in (c.label, c.report.system.system, str(c.source), str(c.source.parent))
    ]
    if len(matches) != 1:
        labels = ", ".join(c.label for c in compared)
        how = "matches several inputs" if matches else "matches no input"
        raise ConfigError(f"--baseline {name!r} {how}; the inputs are: {labels}")
    return matches[0]


@dataclass(frozen=True, slots=True)
class _Row:
    """One comparison to make: a system against the baseline on a measure, over a group."""

    system: Compared
    measure: str
    grouping: Literal["category", "intent"] | None = None
    group: str | None = None

    def selects(self, query: QueryReport) -> bool:
        return self.grouping is None or getattr(query, self.grouping) == self.group


def build_comparison(
    compared: Sequence[Compared],
    measures: Sequence[str],
    baseline_name: str | None = None,
    settings: PairedSettings | None = None,
    correction: Correction = "holm",
    missing: MissingPolicy = "error",
    k: int = 10,
) -> Comparison:
    settings = settings or PairedSettings()
    baseline = pick_baseline(compared, baseline_name)
    others = [c for c in compared if c is not baseline]
    kept, dropped, everywhere = paired_queries(compared, missing)
    info = {m.name: m for m in baseline.report.measures}
    directions = {m: info[m].higher_is_better if m in info else True for m in measures}
    family = _Family(baseline, frozenset(kept), directions, settings, correction)
    main = [
        PairedComparison(system=row.system.label, measure=row.measure, **fields)
        for row, fields in family.compare([_Row(o, m) for o in others for m in measures])
    ]
    breakdowns = []
    for grouping in ("category", "intent"):
        groups = sorted({g for q in baseline.report.queries if (g := getattr(q, grouping))})
        rows = [_Row(o, m, grouping, g) for g in groups for o in others for m in measures]
        breakdowns += [
            GroupComparison(
                grouping=grouping,
                group=str(row.group),
                system=row.system.label,
                measure=row.measure,
                **fields,
            )
            for row, fields in family.compare(rows, with_mde=False)
        ]
    return Comparison(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        dataset=baseline.report.dataset,
        baseline=baseline.label,
        systems=[
            ComparedSystem(
                label=c.label,
                source=str(c.source),
                kind=c.kind,
                system=c.report.system,
                failed=c.report.counts.failed,
            )
            for c in compared
        ],
        measures=[info.get(m) or MeasureInfo(name=m, definition="") for m in measures],
        settings=Settings(
            resamples=settings.resamples,
            seed=settings.seed,
            level=settings.level,
            interval=settings.interval,
            alpha=settings.alpha,
            power=settings.power,
            correction=correction,
            missing=missing,
            k=k,
        ),
        methods={
            **settings.describe(),
            "correction": (
                f"{CORRECTION_NAMES[correction]} over the {len(main)} comparisons of the main "
                "table, and separately over each breakdown (Holm 1979; Benjamini & Hochberg "
                "1995)"
            ),
            "verdict": (
                f"better / worse when the adjusted randomisation p < {settings.alpha}, in the "
                "measure's direction; otherwise no significant difference"
            ),
            "rank_classes": RANK_CLASSES_IN_WORDS,
        },
        queries=QueryCounts(
            dataset=len(baseline.report.queries),
            paired=len(kept),
            dropped=dropped,
            missing_everywhere=len(everywhere),
        ),
        comparisons=main,
        breakdowns=breakdowns,
        rank_differences=[_rank_differences(baseline, other, kept, k) for other in others],
        warnings=_warnings(compared, main, everywhere, k),
    )


@dataclass(frozen=True, slots=True)
class _Family:
    """Makes a family of comparisons and corrects their p-values together."""

    baseline: Compared
    kept: frozenset[str]
    directions: dict[str, bool]
    settings: PairedSettings
    correction: Correction

    def _pairs(self, row: _Row) -> NDArray[np.float64]:
        """(baseline, system) values of the kept queries in the row's group and population."""
        kept = self.kept
        values = {q.id: q.values.get(row.measure) for q in row.system.report.queries}
        paired = [
            (base, value)
            for q in self.baseline.report.queries
            if q.id in kept
            and row.selects(q)
            and (base := q.values.get(row.measure)) is not None
            and (value := values.get(q.id)) is not None
        ]
        return np.array(paired, dtype=np.float64).reshape(-1, 2)

    def compare(
        self, rows: Sequence[_Row], with_mde: bool = True
    ) -> list[tuple[_Row, dict[str, Any]]]:
        """Each row with at least one paired query, with its statistics as model fields."""
        pairs = [self._pairs(row) for row in rows]
        results = paired_results(
            [p[:, 0] for p in pairs],
            [p[:, 1] for p in pairs],
            [self.directions[row.measure] for row in rows],
            self.settings,
            with_mde=with_mde,
        )
        tested = [(row, r) for row, r in zip(rows, results, strict=True) if r.n]
        adjusted = {
            test: adjust([_p(r, test) for _, r in tested], self.correction) for test in TESTS
        }
        out = []
        for index, (row, r) in enumerate(tested):
            p_adjusted = {test: adjusted[test][index] for test in TESTS}
            interval = None
            if r.ci_low is not None and r.ci_high is not None:
                interval = Interval(low=r.ci_low, high=r.ci_high)
            fields = {
                "n": r.n,
                "mean_baseline": r.mean_baseline,
                "mean_system": r.mean_system,
                "delta": r.delta,
                "ci": interval,
                "p_randomisation": r.p_randomisation,
                "p_exact": r.exact,
                "p_t": r.p_t,
                "p_wilcoxon": r.p_wilcoxon,
                "p_adjusted": p_adjusted,
                "verdict": _verdict(
                    r.delta,
                    p_adjusted["randomisation"],
                    self.directions[row.measure],
                    self.settings.alpha,
                ),
                "effect_size": r.effect_size,
                "wins": r.wins,
                "ties": r.ties,
                "losses": r.losses,
                "mde": r.mde,
            }
            out.append((row, fields))
        return out


def _p(result: PairedResult, test: str) -> float | None:
    if test == "randomisation":
        return result.p_randomisation
    return result.p_t if test == "t" else result.p_wilcoxon


def _verdict(delta: float, p: float | None, higher_is_better: bool, alpha: float) -> Verdict:
    if p is None:
        return "not tested"
    if p >= alpha or delta == 0:
        return "no significant difference"
    return "better" if (delta > 0) == higher_is_better else "worse"


def _rank_differences(
    baseline: Compared, other: Compared, kept: Sequence[str], k: int
) -> RankDifferences:
    texts = {q.id: q.text for q in baseline.report.queries}
    base = {q: baseline.rankings.get(q, []) for q in kept}
    changes, summary = rank_differences(
        base, {q: other.rankings.get(q, []) for q in kept}, k, MOST_CHANGED
    )
    del changes
    return RankDifferences(
        system=other.label,
        k=k,
        queries=summary.queries,
        classes=dict(summary.classes),
        mean_kendall_tau=summary.mean_kendall_tau,
        mean_jaccard=summary.mean_jaccard,
        top1_changed=summary.top1_changed,
        most_changed=[
            RankChange(
                query_id=d.query_id,
                text=texts.get(d.query_id, ""),
                kendall_tau=d.kendall_tau,
                jaccard=d.jaccard,
                top1_changed=d.top1_changed,
                position_changes=d.position_changes,
                rank_class=d.rank_class,
            )
            for d in summary.most_changed
        ],
    )


REPORT_RETURNED = 20
"""report.json keeps the first 20 results of each query."""


def _warnings(
    compared: Sequence[Compared],
    main: Sequence[PairedComparison],
    everywhere: Sequence[str],
    k: int,
) -> list[str]:
    warnings = []
    for c in compared:
        if c.report.counts.failed:
            warnings.append(
                f"{c.label}: {c.report.counts.failed} queries failed (scored 0 in its values)"
            )
    if everywhere:
        warnings.append(f"{len(everywhere)} queries are missing from every input (ties at 0)")
    if k > REPORT_RETURNED and any(c.kind == "report" for c in compared):
        warnings.append(
            f"rank differences at k={k} from report.json files see only their first "
            f"{REPORT_RETURNED} results; compare the run.json files for deeper ones"
        )
    small = sorted({r.n for r in main if r.n < 30})
    if small:
        warnings.append(
            f"few paired queries ({', '.join(map(str, small))}): only large differences "
            "can be told from noise; see the MDE column"
        )
    return warnings
