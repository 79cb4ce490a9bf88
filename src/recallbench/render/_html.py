"""report.html, comparison.html and leaderboard.html: one self-contained page each.

Each page is the same template (``templates/page.html.j2``) with the page's own script and
style and the vendored Chart.js (``static/``) inlined, and its data embedded as JSON in a
``<script type="application/json">`` element: nothing is fetched, so the file works from
``file://`` with no network. The data is escaped so that no text in it (a memory, a query)
can close the element: every ``<``, ``>`` and ``&`` becomes a JSON ``\\u`` escape.

report.html shows every section of report.md (the sections' texts come from the same
functions of ``_markdown.py``) under an at-a-glance block; comparison.html adds, per system
and measure, what changed query by query (:mod:`recallbench.report._what_changed`).

Memory texts come from the dataset when the caller has it; they are cut to fit a budget
(``TEXT_BUDGET`` characters over all memories shown) so that a page over thousands of
queries and long memories (LongMemEval sessions) stays well under 5 MB.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Literal

from recallbench._version import __version__
from recallbench.core import ConfigError, Dataset, Run
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.render._agent_memory import DETAIL_TITLES, targets
from recallbench.render._markdown import (
    CHANNEL_HEADER,
    _distribution,
    channel_texts,
    interval_notes,
    unmatched_summary,
)
from recallbench.report._leaderboard import Standings, interval_method, safe_name
from recallbench.report._model import Report
from recallbench.report._what_changed import QueryChange, WhatChanged, what_changed
from recallbench.stats._rankdiff import rank_difference

if TYPE_CHECKING:
    import jinja2

    from recallbench.compare import Comparison
    from recallbench.compare._inputs import Compared
    from recallbench.core import DatasetRef

PageKind = Literal["report", "comparison", "leaderboard"]

TEXT_BUDGET = 2_000_000
"""Characters of memory text a page may embed in all; each memory gets an equal share."""
TEXT_MIN = 240
"""A memory is never cut shorter than this (the budget is exceeded instead)."""
TEXT_MAX = 4_000
"""Nor shown longer than this, however much budget is left."""
QUERY_TEXT_MAX = 2_000
DIGITS = 6
"""Values and scores are rounded for the page (the JSON files keep every digit)."""
CHANGES_SHOWN = 50
"""Queries listed per side (worse, better) of each "what changed" in comparison.html."""

_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def embed_json(data: object) -> str:
    """``data`` as JSON safe inside a ``<script>`` element: ``</script>`` or ``<!--`` in a
    string cannot end or alter the element, and JSON.parse reads the escapes back."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return re.sub("[<>&\u2028\u2029]", lambda m: _ESCAPES[m.group()], text)


def _asset(name: str) -> str:
    return (resources.files("recallbench.render") / name).read_text(encoding="utf-8")


@cache
def _inlined() -> dict[str, str]:
    """The scripts and style the template inlines, checked to be safe inside their
    elements (a ``</script`` or ``</style`` in them would end the element early)."""
    chart = _asset("static/chart.umd.min.js")
    # the source map is not shipped: a devtools fetch of it would be the page's only request
    chart = re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", chart)
    assets = {
        "chart": chart,
        "script": _asset("static/page.js"),
        "style": _asset("static/page.css"),
    }
    for name, text in assets.items():
        if re.search(r"</(script|style)|<!--", text, re.IGNORECASE):
            raise RuntimeError(f"static asset {name} cannot be inlined: it closes its element")
    return assets


def render_page(kind: PageKind, title: str, data: Mapping[str, object]) -> str:
    """The whole page: the template with its assets and ``data`` embedded."""
    return _template().render(
        kind=kind,
        title=title,
        version=__version__,
        data=embed_json({"kind": kind, **data}),
        **_inlined(),
    )


@cache
def _template() -> jinja2.Template:
    import jinja2  # imported here: only writing a page needs it, not every command

    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    return environment.from_string(_asset("templates/page.html.j2"))


def _round(value: float | None) -> float | None:
    """``value`` to ``DIGITS`` digits; None for None and for a NaN or an infinity (JSON has
    neither: the page shows "–" with the reason instead)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, DIGITS)


def _texts(ids: Sequence[str], dataset: Dataset | None) -> dict[str, list[object]]:
    """Memory id -> [text, full length], texts cut to an equal share of ``TEXT_BUDGET``."""
    if dataset is None or not ids:
        return {}
    wanted = set(ids)
    documents = [d for d in dataset.documents if d.id in wanted]
    share = max(TEXT_MIN, min(TEXT_MAX, TEXT_BUDGET // max(1, len(documents))))
    found: dict[str, list[object]] = {}
    for document in documents:
        text = f"{document.title}\n{document.text}" if document.title else document.text
        found[document.id] = [text[:share], len(text)]
    return found


def _query_fields(report: Report) -> dict[str, dict[str, object]]:
    """What every page shows of a query whatever the system: text, groups, gold."""
    return {
        q.id: {
            "id": q.id,
            "text": q.text[:QUERY_TEXT_MAX],
            "category": q.category,
            "intent": q.intent,
        }
        for q in report.queries
    }


def _grades(report: Report, dataset: Dataset | None) -> dict[str, dict[str, int]]:
    """Per query, every judged memory with its grade (the dataset's, when given, keeps
    the grades below the relevance threshold; the report keeps those at or above it)."""
    judged = dataset.qrels if dataset is not None else {}
    return {q.id: {**judged.get(q.id, {}), **q.relevant} for q in report.queries}


def report_data(
    report: Report, run: Run | None = None, dataset: Dataset | None = None
) -> dict[str, object]:
    """The data of report.html: the summary, the breakdowns and every query's detail."""
    results = {r.query_id: r for r in run.results} if run is not None else {}
    grades = _grades(report, dataset)
    fields = _query_fields(report)
    queries = []
    referenced: dict[str, None] = {}
    for q in report.queries:
        result = results.get(q.id)
        scores = {h.doc_id: h.score for h in result.hits} if result is not None else {}
        hits = [[doc, _round(scores.get(doc))] for doc in q.returned]
        referenced.update(dict.fromkeys(q.returned))
        referenced.update(dict.fromkeys(grades[q.id]))
        queries.append(
            {
                **fields[q.id],
                "status": q.status,
                "included": q.included,
                "error": q.error,
                "values": {m: _round(v) for m, v in q.values.items()},
                "latency": _round(q.latency_ms),
                "hits": hits,
                "grades": grades[q.id],
                "threshold": report.relevance_threshold,
                "details": {
                    m: items
                    for m, per_query in report.details.items()
                    if (items := per_query.get(q.id))
                },
            }
        )
    return {
        "summary": _summary(report),
        "measures": [m.model_dump() for m in report.measures],
        "means": {m: _round(v) for m, v in report.means.items()},
        "intervals": {m: i.model_dump() for m, i in report.intervals.items()},
        "breakdowns": {
            key: [g.model_dump() for g in groups] for key, groups in report.breakdowns.items()
        },
        "queries": queries,
        "texts": _texts(list(referenced), dataset),
        "sections": _sections(report),
    }


def _sections(report: Report) -> dict[str, object]:
    """What report.md says besides the means and the queries, for the same sections of
    report.html: the notes on the intervals, the distributions, agent-memory targets and
    what each query missed, the channels, the rules and the measures."""
    channels = None
    if report.channels is not None:
        intro, rows, expansion = channel_texts(report.channels)
        channels = {"intro": intro, "header": CHANNEL_HEADER, "rows": rows, "expansion": expansion}
    return {
        "interval_notes": interval_notes(report.bootstrap, report.intervals),
        "distributions": [
            _distribution("latency", "ms", report.latency_ms).removeprefix("- "),
            _distribution("output size", "bytes", report.output_bytes).removeprefix("- "),
        ],
        "agent_memory": _agent_memory(report),
        "channels": channels,
        "rules": report.rules,
    }


def _agent_memory(report: Report) -> dict[str, object] | None:
    """The targets of report.md's agent-memory section and the memories each query missed."""
    shown = [
        {
            "measure": t.measure,
            "value": _round(t.value),
            "interval": t.interval,
            "target": t.target,
            "verdict": t.verdict,
        }
        for t in targets(report)
    ]
    if not shown and not report.details:
        return None
    details = [
        {
            "title": DETAIL_TITLES.get(measure.partition("@")[0], "Details"),
            "measure": measure,
            "queries": [[query, items] for query, items in per_query.items()],
        }
        for measure, per_query in report.details.items()
    ]
    return {"targets": shown, "details": details}


def _summary(report: Report) -> dict[str, object]:
    return {
        "system": report.system.system,
        "settings": report.system.settings,
        "k": report.system.k,
        "k_searched": report.k_searched,
        "unmatched": unmatched_summary(report),
        "replayed_from": report.system.replayed_from,
        "dataset": report.dataset.model_dump(mode="json"),
        "created_at": report.created_at.isoformat(),
        "recallbench_version": report.recallbench_version,
        "git_revision": report.git_revision,
        "system_scores": report.system_scores,
        "relevance_threshold": report.relevance_threshold,
        "restarts": report.system.restarts,
        "counts": report.counts.model_dump(),
        "latency_ms": report.latency_ms.model_dump() if report.latency_ms else None,
        "bootstrap": report.bootstrap.model_dump() if report.bootstrap else None,
        "interval_method": interval_method(report),
        "warnings": report.warnings,
        "stability": report.stability.model_dump() if report.stability else None,
        "session_lift": report.session_lift.model_dump() if report.session_lift else None,
        "worst_queries": report.worst_queries,
    }


def render_report_html(
    report: Report, run: Run | None = None, dataset: Dataset | None = None
) -> str:
    title = f"{report.system.system} on {report.dataset.name} {report.dataset.version}"
    return render_page("report", title, report_data(report, run, dataset))


def leaderboard_data(
    boards: Sequence[tuple[Standings, str]], context: Mapping[str, str] | None = None
) -> dict[str, object]:
    """One entry per dataset: systems best first with rank ranges, means and intervals,
    per-category means, and a link to each system's report.html (``prefix`` + its folder,
    relative to the leaderboard)."""
    return {
        "context": dict(context or {}),
        "boards": [_board(standings, prefix) for standings, prefix in boards],
    }


def _board(board: Standings, prefix: str) -> dict[str, object]:
    first = board.reports[0]
    return {
        "dataset": first.dataset.model_dump(mode="json"),
        "queries": first.counts.queries,
        "evaluated": first.counts.evaluated,
        "measures": [m.model_dump() for m in first.measures],
        "ranking": board.ranking.to_json(),
        "rank_method": board.ranking.method(),
        "interval_method": interval_method(first),
        "warnings": first.warnings,
        "systems": [
            {
                **board.system_json(report),
                "means": {m: _round(v) for m, v in report.means.items()},
                "latency_p50": _round(report.latency_ms.p50) if report.latency_ms else None,
                "failed": report.counts.failed,
                "scores": report.system_scores,
                "href": f"{prefix}{safe_name(report.system.system)}/report.html",
                "categories": [g.model_dump() for g in report.breakdowns.get("category", [])],
            }
            for report in board.reports
        ],
    }


def render_leaderboard_html(
    boards: Sequence[tuple[Standings, str]], context: Mapping[str, str] | None = None
) -> str:
    names = ", ".join(dict.fromkeys(s.reports[0].dataset.name for s, _ in boards))
    return render_page("leaderboard", f"Leaderboard: {names}", leaderboard_data(boards, context))


def comparison_data(
    comparison: Comparison, compared: Sequence[Compared], dataset: Dataset | None = None
) -> dict[str, object]:
    """The comparison's tables, and per paired query every system's values, its top k and
    its rank-change class against the baseline (``rank_difference``, as in the summary)."""
    baseline = next(c for c in compared if c.label == comparison.baseline)
    others = [c for c in compared if c is not baseline]
    measures = [m.name for m in comparison.measures]
    k = comparison.settings.k
    dropped = set(comparison.queries.dropped)
    fields = _query_fields(baseline.report)
    grades = _grades(baseline.report, dataset)
    values = {c.label: {q.id: q.values for q in c.report.queries} for c in compared}
    rows = []
    referenced: dict[str, None] = {}
    for q in baseline.report.queries:
        if q.id in dropped:
            continue
        rankings = {c.label: list(c.rankings.get(q.id, []))[:k] for c in compared}
        for ranking in rankings.values():
            referenced.update(dict.fromkeys(ranking))
        referenced.update(dict.fromkeys(grades[q.id]))
        classes = {}
        for other in others:
            diff = rank_difference(q.id, rankings[baseline.label], rankings[other.label], k)
            classes[other.label] = {
                "class": diff.rank_class,
                "tau": _round(diff.kendall_tau),
                "jaccard": _round(diff.jaccard),
                "top1_changed": diff.top1_changed,
            }
        rows.append(
            {
                **fields[q.id],
                "values": {
                    label: {m: _round(per_query.get(q.id, {}).get(m)) for m in measures}
                    for label, per_query in values.items()
                },
                "rankings": rankings,
                "classes": classes,
                "grades": grades[q.id],
                "threshold": baseline.report.relevance_threshold,
            }
        )
    return {
        "comparison": comparison.model_dump(mode="json"),
        "labels": [c.label for c in compared],
        "rows": rows,
        "texts": _texts(list(referenced), dataset),
        "what_changed": {
            other.label: {
                name: what_changed_json(changes)
                for name, changes in comparison_changes(comparison, baseline, other).items()
            }
            for other in others
        },
    }


def comparison_changes(
    comparison: Comparison, baseline: Compared, other: Compared
) -> dict[str, WhatChanged]:
    """Per measure, what changed from the baseline to ``other`` on the paired queries (the
    dropped ones left out), grouped by the baseline report's query categories."""
    dropped = set(comparison.queries.dropped)
    paired = [q for q in baseline.report.queries if q.id not in dropped]
    categories = {q.id: [q.category] if q.category else [] for q in paired}
    theirs = {q.id: q.values for q in other.report.queries}
    return {
        info.name: what_changed(
            {q.id: q.values.get(info.name) for q in paired},
            {q.id: theirs.get(q.id, {}).get(info.name) for q in paired},
            categories,
            higher_is_better=info.higher_is_better,
        )
        for info in comparison.measures
    }


def what_changed_json(changes: WhatChanged, shown: int = CHANGES_SHOWN) -> dict[str, object]:
    """A what-changed result for a page: counts, categories, and the ``shown`` largest
    changes of each side."""

    def listed(side: Sequence[QueryChange]) -> list[dict[str, object]]:
        return [
            {
                "id": c.query_id,
                "delta": _round(c.delta),
                "first": _round(c.first),
                "second": _round(c.second),
                "categories": list(c.categories),
            }
            for c in side[:shown]
        ]

    return {
        "compared": changes.compared,
        "unchanged": changes.unchanged,
        "worse_count": len(changes.worse),
        "better_count": len(changes.better),
        "mean_delta": _round(changes.mean_delta),
        "worse": listed(changes.worse),
        "better": listed(changes.better),
        "only_first": len(changes.only_first),
        "only_second": len(changes.only_second),
        "categories": [
            {
                "category": c.category,
                "compared": c.compared,
                "worse": c.worse,
                "better": c.better,
                "unchanged": c.unchanged,
                "mean_delta": _round(c.mean_delta),
                "worse_delta": _round(c.worse_delta),
                "better_delta": _round(c.better_delta),
            }
            for c in changes.categories
        ],
        "higher_is_better": changes.higher_is_better,
    }


def render_comparison_html(
    comparison: Comparison, compared: Sequence[Compared], dataset: Dataset | None = None
) -> str:
    others = ", ".join(s.label for s in comparison.systems if s.label != comparison.baseline)
    title = f"{others} vs {comparison.baseline} on {comparison.dataset.name}"
    return render_page("comparison", title, comparison_data(comparison, compared, dataset))


def dataset_for_texts(ref: DatasetRef, spec: str | None = None) -> Dataset | None:
    """The dataset a comparison was made on, to show memory texts: ``spec`` when given,
    else the bundled dataset of that name; None when it cannot be had or is another
    version (same sha256 only: texts of another version would mislead)."""
    if spec is None and ref.name != DEFAULT_DATASET:
        return None
    try:
        dataset = load_dataset(spec or ref.name)
    except (ConfigError, OSError):
        return None
    return dataset if dataset.sha256 == ref.sha256 else None
