"""``recallbench.compare(a, b, measures=...)``: the comparison `recallbench compare` makes,
in one call."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from recallbench.compare._build import build_comparison
from recallbench.compare._inputs import (
    Compared,
    DatasetSpec,
    Input,
    MissingPolicy,
    load_compared,
    measures_of,
)
from recallbench.compare._model import Comparison
from recallbench.measures import DEFAULT_MEASURES, Measure, parse_measures
from recallbench.stats._multiple import Correction
from recallbench.stats._paired import PairedSettings
from recallbench.stats._resampling import IntervalMethod


def paired_settings(
    resamples: int = 10_000,
    seed: int = 0,
    interval: IntervalMethod = "bca",
    alpha: float = 0.05,
    power: float = 0.8,
) -> PairedSettings:
    """The paired statistics' settings; the interval is at ``1 - alpha``, so that it and
    the verdict speak of the same level."""
    return PairedSettings(
        resamples=resamples, seed=seed, level=1 - alpha, interval=interval, alpha=alpha, power=power
    )


def compare_inputs(
    inputs: Sequence[Input],
    measures: Iterable[str | Measure] = (),
    *,
    baseline: str | None = None,
    dataset: DatasetSpec = None,
    missing: MissingPolicy = "error",
    correction: Correction = "holm",
    settings: PairedSettings | None = None,
    k: int = 10,
) -> tuple[list[Compared], Comparison]:
    """What `recallbench compare` does: read (and, for runs, score) the inputs, then
    compare them; returns the inputs as read (the HTML view shows their rankings) and the
    comparison. :func:`compare` is the one-call form."""
    given = [measures] if isinstance(measures, str) else [str(m) for m in measures]
    chosen = [str(m) for m in parse_measures(given)] if given else []
    scoring = parse_measures(chosen or DEFAULT_MEASURES)
    compared = load_compared(inputs, scoring, dataset)
    comparison = build_comparison(
        compared,
        measures_of(compared, chosen),
        baseline,
        settings or paired_settings(),
        correction=correction,
        missing=missing,
        k=k,
    )
    return compared, comparison


def compare(
    a: Input,
    b: Input,
    *more: Input,
    measures: Iterable[str | Measure] = (),
    baseline: str | None = None,
    dataset: DatasetSpec = None,
    missing: MissingPolicy = "error",
    correction: Correction = "holm",
    resamples: int = 10_000,
    seed: int = 0,
    interval: IntervalMethod = "bca",
    alpha: float = 0.05,
    power: float = 0.8,
    k: int = 10,
) -> Comparison:
    """Compare systems with a baseline on the same queries, with paired statistics: the
    same comparison, to the last digit, as ``recallbench compare`` (its comparison.json,
    or ``--format json``) makes of the same inputs and options.

    ``a``, ``b`` (and ``more``): report.json or run.json files, the folders
    ``recallbench run`` wrote, or ``Report`` / ``Run`` objects. The baseline is ``a``
    unless ``baseline`` names another (system name, label or path). ``measures``: the
    measures to compare (names or measures); default: the reports' common measures, or the
    default measures for runs, which are scored on ``dataset`` (a name, a path or a
    ``Dataset``; default: the bundled dataset the runs name). ``missing``: queries some
    inputs lack are an ``"error"``, ``"drop"``-ped everywhere or scored 0 (``"zero"``).
    ``correction``: ``"holm"``, ``"bh"``, ``"maxt"`` or ``"none"``. Intervals are
    bootstrap (``"bca"`` or ``"percentile"``) with ``resamples`` draws from ``seed``, at
    level 1 - ``alpha``; ``power`` is that of the smallest detectable effect; ``k`` the cutoff
    of the rank differences.

    Returns a :class:`~recallbench.compare.Comparison` (``.comparisons``: one row per
    system and measure with the difference, interval, p-values, effect size, wins/ties/
    losses and verdict; ``.breakdowns``, ``.rank_differences``, ``.warnings``;
    ``.model_dump_json()`` is comparison.json). Bad input is a ``RecallbenchError`` saying
    what and where.

    Example::

        import recallbench

        result = recallbench.compare(
            "out/builtin-lexical", "out/builtin-hybrid", measures=["ndcg@10", "mrr@10"]
        )
        for row in result.comparisons:
            print(row.system, row.measure, f"{row.delta:+.3f}", row.verdict)
    """
    settings = paired_settings(resamples, seed, interval, alpha, power)
    _, comparison = compare_inputs(
        [a, b, *more],
        measures,
        baseline=baseline,
        dataset=dataset,
        missing=missing,
        correction=correction,
        settings=settings,
        k=k,
    )
    return comparison
