"""report.md: the report for people, in a PR comment or a browser."""

from __future__ import annotations

from recallbench.render._agent_memory import agent_memory_markdown
from recallbench.render._session import session_markdown
from recallbench.report._channels import ChannelAnalysis, ChannelStats
from recallbench.report._escape import md_code, md_table, md_text
from recallbench.report._model import Bootstrap, Distribution, Group, Interval, Report
from recallbench.report._returned import depth_note
from recallbench.stats._resampling import INTERVAL_NAMES

SHOWN_RETURNED = 10


def fmt(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def bounds(interval: Interval | None, digits: int = 4) -> str:
    """``0.6386–0.7838``; ``–`` when there is no interval."""
    if interval is None or interval.low is None or interval.high is None:
        return "–"
    return f"{interval.low:.{digits}f}–{interval.high:.{digits}f}"


def small_mark(interval: Interval | None) -> str:
    """``*`` after the n of a mean whose interval under-covers (too few queries)."""
    return "*" if interval is not None and interval.small else ""


def interval_n(interval: Interval | None) -> str:
    """The n of a mean with its ``*``; "–" for an aggregate with no per-query values of its
    own (a ratio of two means), which has no n to show."""
    if interval is None or (interval.n == 0 and interval.reason is not None):
        return "–"
    return f"{interval.n}{small_mark(interval)}"


def interval_notes(bootstrap: Bootstrap | None, intervals: dict[str, Interval]) -> list[str]:
    """What the intervals are, which means have none and why, and what ``*`` marks."""
    if bootstrap is None:
        return []
    notes = [
        f"{bootstrap.level:.0%} intervals: bootstrap {INTERVAL_NAMES[bootstrap.method]}, "
        f"{bootstrap.resamples:,} resamples, seed {bootstrap.seed} (Efron 1987; Efron & "
        f"Tibshirani 1993). * fewer than {bootstrap.small_n} queries: the interval tends to "
        "be too narrow."
    ]
    notes += [f"{name}: {i.reason}" for name, i in intervals.items() if i.reason is not None]
    return notes


def _groups_table(title: str, groups: list[Group], measures: list[str]) -> list[str]:
    if not groups:
        return []
    rows = [
        [
            g.name,
            f"{g.n}{'*' if any(i.small for i in g.intervals.values()) else ''}",
            *(_with_bounds(g.means.get(m), g.intervals.get(m)) for m in measures),
        ]
        for g in groups
    ]
    return ["", f"## By {md_text(title)}", "", *md_table([title, "n", *measures], rows)]


def _with_bounds(mean: float | None, interval: Interval | None) -> str:
    """A group's mean with its interval: ``0.756 (0.511–0.900)``."""
    shown = bounds(interval, 3)
    return fmt(mean, 3) + ("" if shown == "–" else f" ({shown})")


def _distribution(label: str, unit: str, dist: Distribution | None) -> str:
    if dist is None:
        return f"- {label}: not recorded"
    return (
        f"- {label} ({unit}, n={dist.n}): p50 {dist.p50:.2f} · p95 {dist.p95:.2f} · "
        f"p99 {dist.p99:.2f} · max {dist.max:.2f} · mean {dist.mean:.2f}"
    )


def unmatched_summary(report: Report) -> str | None:
    """``results that matched no dataset document: 3 of 40 returned (not scored)``, with
    the documents the system refused to store; None when there is neither."""
    counts = report.counts
    unmatched = counts.unmatched or report.system.settings.get("unmatched_results")
    parts = []
    if isinstance(unmatched, int) and unmatched:
        of = f" of {counts.returned} returned" if counts.returned else ""
        parts.append(f"results that matched no dataset document: {unmatched}{of} (not scored)")
    if counts.not_ingested:
        parts.append(f"documents not ingested (refused by the system): {counts.not_ingested}")
    return " · ".join(parts) or None


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    measures = [m.name for m in report.measures]
    counts = report.counts
    spec = report.system
    lines = [
        f"# recallbench report: {md_text(spec.system)} on {md_text(report.dataset.name)}",
        "",
        f"- dataset: {md_code(report.dataset.name)} version {md_text(report.dataset.version)}, "
        f"sha256 `{report.dataset.sha256[:16]}…`"
        + (f", loader {md_code(report.dataset.loader)}" if report.dataset.loader else ""),
        f"- system: {md_code(spec.system)}"
        + (f", {depth_note(spec.k, report.k_searched)}" if spec.k else "")
        + (
            ""
            if report.system_scores
            else "; it returned no scores: results are evaluated in the order returned"
        ),
        *(
            [
                f"- replayed from {md_code(spec.replayed_from)}: the answers and latencies "
                "are those recorded with the live system"
            ]
            if spec.replayed_from
            else []
        ),
        f"- recallbench {report.recallbench_version}"
        + (f", git {report.git_revision}" if report.git_revision else "")
        + f", {report.created_at.isoformat(timespec='seconds')}",
        f"- queries: {counts.queries} · evaluated {counts.evaluated} · "
        f"no relevant judgments {counts.no_relevant} (not in the means) · "
        f"failed {counts.failed} · missing {counts.missing} · "
        f"duplicate results {counts.duplicates}"
        + (
            f" · the system's process restarted {report.system.restarts} times (it hung or died)"
            if report.system.restarts
            else ""
        ),
        *(f"- **warning:** {md_text(warning)}" for warning in report.warnings),
        "",
        "## Summary",
        "",
        *_summary(report, measures),
        "",
        _distribution("latency", "ms", report.latency_ms),
        *([f"- {line}"] if (line := unmatched_summary(report)) else []),
        _distribution("output size", "bytes", report.output_bytes),
    ]
    lines += agent_memory_markdown(report)
    lines += _stability(report)
    lines += session_markdown(report.session_lift)
    lines += _channels(report.channels)
    for key, groups in report.breakdowns.items():
        lines += _groups_table(key, groups, measures)
    lines += _worst(report, measures)
    if report.bootstrap is not None and report.breakdowns:
        lines += [
            "",
            f"Group means with their {report.bootstrap.level:.0%} intervals in "
            "parentheses; * marks groups of fewer than "
            f"{report.bootstrap.small_n} queries, whose intervals tend to be too narrow.",
        ]
    lines += ["", "## Rules", ""]
    lines += [f"- {name.replace('_', ' ')}: {text}" for name, text in report.rules.items()]
    lines += ["", "## Measures", ""]
    lines += [f"- `{m.name}`: {m.definition}" for m in report.measures]
    return "\n".join(lines) + "\n"


def _summary(report: Report, measures: list[str]) -> list[str]:
    """The mean of every measure with its n and interval, then how the intervals were made."""
    if report.bootstrap is None:  # a report made before intervals
        return md_table(["measure", "mean"], [[m, fmt(report.means.get(m))] for m in measures])
    header = ["measure", "n", "mean", f"{report.bootstrap.level:.0%} interval"]
    rows = []
    for m in measures:
        interval = report.intervals.get(m)
        n = interval_n(interval)
        rows.append([m, n, fmt(report.means.get(m)), bounds(interval)])
    notes = interval_notes(report.bootstrap, report.intervals)
    return [*md_table(header, rows), "", *(f"- {note}" for note in notes)]


def _stability(report: Report) -> list[str]:
    stability = report.stability
    if stability is None:
        return []
    lines = ["", "## Stability", ""]
    lines.append(
        f"Each query was asked {stability.repeats} times in a row; the measures score the "
        "first answer."
    )
    lines.append("")
    if stability.rate is None:
        lines.append("- no query was answered without error every time")
    else:
        lines.append(
            f"- identical rankings: {stability.stable} of {stability.queries} queries "
            f"({stability.rate:.1%})"
        )
    if stability.failed_in_some:
        lines.append(f"- failed in some runs but not all: {stability.failed_in_some} queries")
    if stability.changed:
        texts = {query.id: query.text for query in report.queries}
        lines += ["", "Queries whose ranking changed:", ""]
        lines += [f"- {md_code(q)} {md_text(texts.get(q, ''))}".rstrip() for q in stability.changed]
    return lines


def channel_cells(c: ChannelStats) -> list[str]:
    """A channel's rates, in the column order of both renderings."""
    return [
        pct(c.contribution_rate),
        pct(c.relevant_contribution_rate),
        pct(c.unique_rate),
        pct(c.unique_relevant_rate),
        pct(c.reorder_rate),
        fmt(c.mean_rank_change, 2),
    ]


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


CHANNEL_HEADER = [
    "channel",
    "results",
    "contribution",
    "relevant contribution",
    "unique",
    "unique relevant",
    "reorder rate",
    "mean rank change",
]


def channel_texts(analysis: ChannelAnalysis) -> tuple[str, list[list[str]], str | None]:
    """The channels section of report.md and report.html: its introduction, the rows of
    its table (``CHANNEL_HEADER``) and the line on query expansion (None without it)."""
    intro = (
        f"Top {analysis.k} results of {analysis.queries} queries: {analysis.results} results, "
        f"{analysis.relevant_results} relevant. A result found by several channels counts for "
        "each; unique: found by that channel only; reorder: the fused rank differs from the "
        "channel's own rank."
    )
    rows = [[c.name, str(c.results), *channel_cells(c)] for c in analysis.channels]
    expansion = analysis.expansion
    if expansion is None:
        return intro, rows, None
    return (
        intro,
        rows,
        f"Query expansion: {expansion.queries} of {analysis.queries} queries expanded; "
        f"mean Jaccard@{analysis.k} of the results before and after "
        f"{expansion.jaccard:.3f}; first result changed in {pct(expansion.top1_changed_rate)}; "
        f"after minus before, recall@{analysis.k} {signed(expansion.recall_change)} and "
        f"reciprocal rank {signed(expansion.reciprocal_rank_change)} "
        f"(mean over the {expansion.judged} expanded queries with a relevant document).",
    )


def _channels(analysis: ChannelAnalysis | None) -> list[str]:
    if analysis is None:
        return []
    intro, rows, expansion = channel_texts(analysis)
    lines = ["", "## Channels", "", intro, "", *md_table(CHANNEL_HEADER, rows)]
    return lines + (["", expansion] if expansion else [])


def signed(value: float | None, digits: int = 4) -> str:
    """``+0.0123``; a value that rounds to zero is ``+0.0000``, never ``-0.0000``."""
    if value is None:
        return "–"
    return f"{value if round(value, digits) else 0.0:+.{digits}f}"


def _worst(report: Report, measures: list[str]) -> list[str]:
    by_id = {query.id: query for query in report.queries}
    lines = ["", f"## The {len(report.worst_queries)} worst queries", ""]
    lines.append("Lowest mean over all measures; ✓ marks a returned document judged relevant.")
    for query_id in report.worst_queries:
        query = by_id[query_id]
        tags = md_text(", ".join(t for t in (query.category, query.intent) if t))
        values = " · ".join(f"{m} {fmt(query.values.get(m), 3)}" for m in measures[:3])
        lines += ["", f"### {md_code(query.id)} {md_text(query.text)}", ""]
        lines.append(f"- {tags + ' · ' if tags else ''}{values}")
        if query.error:
            lines.append(f"- error: {md_code(query.error)}")
        expected = ", ".join(
            f"{md_code(doc)} ({grade})"
            for doc, grade in sorted(query.relevant.items(), key=lambda item: (-item[1], item[0]))
        )
        lines.append(f"- expected: {expected or 'nothing'}")
        returned = ", ".join(
            f"{md_code(doc)}{' ✓' if doc in query.relevant else ''}"
            for doc in query.returned[:SHOWN_RETURNED]
        )
        lines.append(f"- returned: {returned or 'nothing'}")
    return lines
