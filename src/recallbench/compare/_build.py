"""Assemble a comparison: paired statistics per system and measure, by group, rank diffs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from recallbench._version import __version__
from recallbench.compare._family import Family, Row, family_levels
from recallbench.compare._inputs import Compared, MissingPolicy, paired_queries
from recallbench.compare._model import (
    ComparedSystem,
    Comparison,
    GroupComparison,
    PairedComparison,
    QueryCounts,
    RankChange,
    RankDifferences,
    Settings,
)
from recallbench.core import ConfigError
from recallbench.report._model import MeasureInfo
from recallbench.stats._attainable import queries_to_reach
from recallbench.stats._multiple import CORRECTION_NAMES, Correction
from recallbench.stats._paired import PairedSettings
from recallbench.stats._rankdiff import rank_differences

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
    family = Family(baseline, frozenset(kept), directions, settings, correction)
    main = [
        PairedComparison(system=row.system.label, measure=row.measure, **fields)
        for row, fields in family.compare([Row(o, m) for o in others for m in measures])
    ]
    breakdowns = []
    for grouping in ("category", "intent"):
        groups = sorted({g for q in baseline.report.queries if (g := getattr(q, grouping))})
        rows = [Row(o, m, grouping, g) for g in groups for o in others for m in measures]
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
            **_family_methods(settings, correction, main),
            "verdict": (
                f"better / worse when the adjusted randomisation p < {settings.alpha}, in the "
                "measure's direction; otherwise no significant difference. p_floor: the "
                "smallest p the randomisation test can give with this many non-zero "
                "differences (2/2^m exact, 1/(resamples+1) sampled); at or above alpha no "
                "difference can be significant"
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
        warnings=_warnings(compared, main, everywhere, k, settings, correction),
    )


CORRECTION_SOURCES = {
    "holm": "Holm 1979",
    "bh": "Benjamini & Hochberg 1995",
    "westfall-young": (
        "Westfall & Young 1993: single-step max-T over shared sign flips of every query in "
        "every comparison, for the randomisation test; Holm for t and Wilcoxon"
    ),
    "none": "each comparison on its own",
}


def _family_methods(
    settings: PairedSettings, correction: Correction, main: Sequence[PairedComparison]
) -> dict[str, str]:
    """How the correction, the intervals and the MDE of each family were made."""
    tested = sum(1 for row in main if row.p_randomisation is not None)
    level = next((row.ci_level for row in main if row.ci_level is not None), settings.level)
    _, mde_alpha = family_levels(correction, settings, tested)
    if correction == "none":
        interval = f"{settings.level:.1%} per comparison (no correction)"
    elif correction == "bh":
        interval = (
            f"false-coverage-rate intervals at 1 - R·{1 - settings.level:.3g}/m "
            f"({level:.2%} in the main table, m = {tested}; Benjamini & Yekutieli 2005), "
            "the companion of Benjamini-Hochberg"
        )
    else:
        interval = (
            f"simultaneous over the family: Bonferroni level 1 - {1 - settings.level:.3g}/m "
            f"({level:.2%} in the main table, m = {tested}; Dunn 1961), conservative for "
            f"{CORRECTION_NAMES[correction]}"
        )
    return {
        "correction": (
            f"{CORRECTION_NAMES[correction]} over the {len(main)} comparisons of the main "
            f"table, and separately over each breakdown ({CORRECTION_SOURCES[correction]}); "
            "tables show raw / adjusted p"
        ),
        "interval": settings.describe()["interval"].replace(
            f"{settings.level:.0%} paired", "paired"
        )
        + f"; level {interval}",
        "mde": (
            f"minimum detectable effect: the mean difference the paired t-test detects with "
            f"power {settings.power} at alpha {mde_alpha:.4g}"
            + ("" if correction == "none" else f" = {settings.alpha}/{tested} (Bonferroni bound)")
            + " given this n and the differences' standard deviation"
        ),
    }


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
    settings: PairedSettings,
    correction: Correction,
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
    out_of_reach = [r for r in main if r.p_floor is not None and r.p_floor >= settings.alpha]
    if out_of_reach:
        shown = ", ".join(
            f"{r.system} {r.measure} (n={r.n}, {r.wins + r.losses} differ: smallest p "
            f"{r.p_floor:.4g})"
            for r in out_of_reach
        )
        warnings.append(
            f"never significant at α {settings.alpha} with the randomisation test, whatever "
            f"the difference: {shown}; it needs {queries_to_reach(settings.alpha, 'randomisation')}"
            " queries whose values differ"
        )
    tested = sum(1 for r in main if r.p_randomisation is not None)
    if correction != "none" and tested and 1 / (settings.resamples + 1) >= settings.alpha / tested:
        warnings.append(
            f"{settings.resamples:,} resamples cannot give a p below α/m = "
            f"{settings.alpha / tested:.3g}: raise --resamples"
        )
    small = sorted({r.n for r in main if r.n < 30})
    if small:
        warnings.append(
            f"few paired queries ({', '.join(map(str, small))}): only large differences "
            "can be told from noise; see the MDE column"
        )
    return warnings
