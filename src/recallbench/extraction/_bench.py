"""The extraction leaderboard of ``recallbench bench --extraction``: several extractors on
several ground truths, one board per ground truth (Markdown and JSON).

Each board has one row per extractor and one column per headline measure (:data:`HEADLINE`,
the F1 or coverage of each component, and the connections' recall and false-positive
rate): the macro mean over documents (graph seeds for the connection measures) with its
95% bootstrap interval, exactly as ``recallbench extract`` reports it for the same pair
(the same scoring call, rule, resamples and seed). A measure no document defines shows
``–``, and a note below the table says why (the report's ``undefined``). There is one
table per matching rule; the first rule ranks.

Ranks: every pair of extractors that produced an output is compared on the ranking measure
(the first headline measure any of them defines under the first rule) by a two-sided paired
randomisation test over the documents (seeds) where both define it, and the p-values of all
pairs are adjusted together by Holm's step-down procedure (the test and rank rule of the
retrieval leaderboard, :mod:`recallbench.report._ranks`). An extractor's rank range is
``1 + #significantly better .. m - #significantly worse``; a shared range (``1–2``) means
the documents cannot order those extractors. The unit is the one the intervals resample
(the conversation of LoCoMo's sessions, a conversation's value the mean over its sessions;
else the document): two extractors' values on one unit are paired, and units are taken as
exchangeable draws.

Fisher, R. A. (1935). The Design of Experiments, sec. 21; Holm, S. (1979). A simple
sequentially rejective multiple test procedure. Scand. J. Stat. 6(2), 65-70; Smucker, M.,
Allan, J. & Carterette, B. (2007). A comparison of statistical significance tests for
information retrieval evaluation. CIKM; Al Mohamad, D., Goeman, J. J. & van Zwet, E. W.
(2022). Simultaneous confidence intervals for ranks. Biometrics 78(1), 238-247.

extraction-leaderboard.json (``"format": "recallbench.extraction-leaderboard/v1"``):
``context`` (command, version, date, machine) and ``ground_truths``, one per board, each
with ``ground_truth`` (name, version, sha256, documents, graph cases, as in the reports),
``rules``, ``headline``, ``ranking`` (``measure``, ``rule``, ``unit``, ``alpha``,
``correction``, ``test``, ``resamples``, ``seed``, ``method`` and ``pairs``: ``first``,
``second``, ``n`` paired units, ``delta`` first - second, raw ``p``, Holm ``p_adjusted``,
``better``; null when no extractor produced an output) and ``extractors``, best first
(failed ones last), each with ``extractor`` (the spec), ``system``, ``status`` (``ok``,
``failed``, ``unreliable``), ``error``, ``note``, ``rank``, ``report`` and ``output``
(paths relative to the leaderboard), ``missing_documents`` and ``results``: rule -> measure
-> ``n``, ``macro``, ``interval``, ``micro``, ``undefined`` (why there is no value).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from recallbench.extraction._matching import MatchRule
from recallbench.extraction._measures import MEASURES, Aggregate, ExtractionScores, UnitScores
from recallbench.extraction._report import (
    ExtractionReport,
    GroundTruthInfo,
    interval,
    number,
)
from recallbench.report._escape import md_code, md_text

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.report._ranks import Ranking

LEADERBOARD_FORMAT: Final = "recallbench.extraction-leaderboard/v1"
HEADLINE: Final = (
    "event_f1",
    "entity_f1",
    "dedup_bcubed_f1",
    "observation_f1",
    "connection_precision",
    "connection_recall",
    "connection_fpr",
)
"""The leaderboard's columns: the F1 of each component, and the connections' precision,
recall and false-positive rate (a recall is never shown without its precision)."""
SHORT: Final = {
    "event_f1": "event F1",
    "entity_f1": "entity F1",
    "dedup_bcubed_f1": "dedup B3 F1",
    "observation_f1": "observ. F1",
    "connection_precision": "conn. prec.",
    "connection_recall": "conn. recall",
    "connection_fpr": "conn. FPR",
}
"""Column headings in the terminal, where the full names would not fit."""
LOWER_IS_BETTER: Final = frozenset({"connection_fpr"})
ALPHA: Final = 0.05
MIN_PAIRED_RESAMPLES: Final = 1000
"""The paired tests draw at least this many sign flips (fewer give p-values too coarse to
pass Holm's thresholds), whatever --resamples asks of the intervals."""


@dataclass(frozen=True)
class Entry:
    """One extractor on one ground truth: its report, or why it failed."""

    extractor: str
    """The spec as given (``python:pkg.mod:fn``): the row's name and its folder's."""
    folder: str
    """Its files' folder relative to the leaderboard (``GROUND_TRUTH/EXTRACTOR``)."""
    report: ExtractionReport | None = None
    error: str | None = None
    note: str | None = None
    """An LLM extractor's model, prompt and failures (None for another system)."""

    def scores(self, rule: str) -> ExtractionScores | None:
        if self.report is None:
            return None
        return next((s for s in self.report.results if s.rule == rule), None)

    def aggregate(self, rule: str, measure: str) -> Aggregate | None:
        scores = self.scores(rule)
        return None if scores is None else scores.aggregate(measure)

    @property
    def status(self) -> str:
        if self.report is None:
            return "failed"
        return "unreliable" if self.report.output.metadata.get("unreliable") is True else "ok"


@dataclass
class Board:
    """One ground truth's entries, best first once :meth:`rank` has run."""

    truth: GroundTruthInfo
    folder: str
    rules: tuple[str, ...]
    entries: list[Entry]
    ranking: Ranking | None = field(default=None)
    resamples: int = MIN_PAIRED_RESAMPLES
    seed: int = 0

    @property
    def measure(self) -> str | None:
        """The ranking measure: the first headline measure an extractor defines under the
        first rule (event_f1 unless the ground truth has no events)."""
        for name in HEADLINE:
            for entry in self.entries:
                found = entry.aggregate(self.rules[0], name)
                if found is not None and found.macro is not None:
                    return name
        return None

    def rank(self) -> None:
        """Order the entries best first on the ranking measure (undefined last, failed
        after them) and test every pair of extractors with an output."""
        from recallbench.report._ranks import rank_values
        from recallbench.stats._paired import PairedSettings

        measure = self.measure
        scored = [e for e in self.entries if e.report is not None]
        failed = [e for e in self.entries if e.report is None]
        if measure is None:
            self.entries = sorted(scored, key=lambda e: e.extractor) + failed
            return
        sign = 1.0 if measure in LOWER_IS_BETTER else -1.0

        def key(entry: Entry) -> tuple[float, str]:
            found = entry.aggregate(self.rules[0], measure)
            value = None if found is None else found.macro
            return (sign * value if value is not None else float("inf"), entry.extractor)

        scored.sort(key=key)
        self.entries = scored + failed
        settings = PairedSettings(
            resamples=max(self.resamples, MIN_PAIRED_RESAMPLES), seed=self.seed
        )
        values = {e.extractor: unit_values(e, self.rules[0], measure) for e in scored}
        self.ranking = rank_values(measure, values, measure not in LOWER_IS_BETTER, ALPHA, settings)

    def rank_label(self, entry: Entry) -> str:
        if self.ranking is None or entry.report is None:
            return "–"
        return self.ranking.label(entry.extractor)

    def method(self) -> str:
        """How the ranks were made, in words."""
        if self.ranking is None:
            return (
                "no ranks: no extractor produced an output that defines a headline measure "
                "under the first rule"
            )
        r = self.ranking
        kind = ranked_unit(self.entries, self.rules[0], r.measure)
        unit = "graph seeds" if kind == "seed" else f"{kind}s"
        pairs = len(r.pairs)
        return (
            f"ranked by {r.measure} (macro) under {self.rules[0]}; a shared rank ('1–2') means "
            f"the data cannot order those extractors: two-sided paired randomisation tests "
            f"over the {unit} both define ({r.settings.resamples:,} sign flips, seed "
            f"{r.settings.seed}; Fisher 1935), Holm-adjusted over "
            f"{'the 1 pair' if pairs == 1 else f'all {pairs} pairs'}, alpha {r.alpha}; rank = "
            "1 + extractors significantly better .. m - extractors significantly worse "
            "(simultaneous rank intervals, Al Mohamad, Goeman & van Zwet 2022)"
        )


def _units(scores: ExtractionScores, measure: str) -> tuple[UnitScores, ...]:
    """The documents, or the graph seeds for a connection measure."""
    return scores.documents if MEASURES[measure][0] == "document" else scores.seeds


def _grouped(units: Sequence[UnitScores]) -> bool:
    """Whether some units share a cluster (the sessions of a LoCoMo conversation)."""
    labels = [unit.cluster for unit in units]
    return bool(labels) and None not in labels and len(set(labels)) < len(labels)


def unit_values(entry: Entry, rule: str, measure: str) -> dict[str, float]:
    """Unit key -> the measure's value where it is defined. The unit is the one the
    intervals resample: when documents (seeds) share a cluster (the sessions of a LoCoMo
    conversation), a cluster's value is the mean over its documents that define the
    measure, keyed by the cluster, so the paired test flips the sign of a whole
    conversation; otherwise the document, keyed with its position so that two graph cases
    with one seed document stay apart."""
    scores = entry.scores(rule)
    if scores is None:
        return {}
    units = _units(scores, measure)
    if not _grouped(units):
        return {
            f"{index}:{unit.id}": value
            for index, unit in enumerate(units)
            if (value := unit.values.get(measure)) is not None
        }
    grouped: dict[str, list[float]] = {}
    for unit in units:
        if (value := unit.values.get(measure)) is not None:
            grouped.setdefault(str(unit.cluster), []).append(value)
    return {cluster: sum(values) / len(values) for cluster, values in grouped.items()}


def ranked_unit(entries: Sequence[Entry], rule: str, measure: str) -> str:
    """What the paired tests pair: ``conversation`` (or another cluster kind) when the
    documents are grouped, else ``document`` or ``seed``."""
    scores = next((s for e in entries if (s := e.scores(rule)) is not None), None)
    if scores is not None and _grouped(units := _units(scores, measure)):
        return str(units[0].cluster).split(":", 1)[0]
    return MEASURES[measure][0]


def cell(found: Aggregate | None) -> str:
    """``macro [low, high]``; ``–`` when undefined (or the extractor failed)."""
    if found is None or found.macro is None:
        return "–"
    return f"{number(found.macro)} {interval(found.macro_interval)}"


def _code(name: str) -> str:
    """An extractor's spec as Markdown code, or as escaped text when a code span cannot
    hold it (a ``|`` would split a table cell): :func:`md_code`."""
    return md_code(name)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _undefined_notes(board: Board, rule: str) -> list[str]:
    """One line per (measure, reason): why a headline measure has no value, and for which
    extractors when not for all."""
    reports = {e.extractor: e.report for e in board.entries if e.report is not None}
    reasons: dict[tuple[str, str], list[str]] = {}
    for name in HEADLINE:
        for extractor, report in reports.items():
            why = report.undefined.get(rule, {}).get(name)
            if why is not None:
                reasons.setdefault((name, why), []).append(extractor)
    lines = []
    for (name, why), names in reasons.items():
        who = "every extractor" if len(names) == len(reports) else ", ".join(names)
        lines.append(f"- {name} –: {why} ({who})")
    return lines


def _status(entry: Entry, rule: str) -> str:
    scores = entry.scores(rule)
    if scores is not None and scores.missing_documents:
        return f"{entry.status}, {len(scores.missing_documents)} documents missing"
    return entry.status


def board_markdown(board: Board) -> list[str]:
    """One ground truth's section: a table per rule (the first with ranks), notes on
    undefined measures, failures, and the pairs behind the ranks."""
    truth = board.truth
    lines = [
        f"## {md_text(truth.name)}",
        "",
        f"version {truth.version}, sha256 `{truth.sha256[:16]}…`; {truth.documents} "
        f"documents, {truth.graph_cases} graph cases. Cells: macro mean over documents "
        "(graph seeds for connection_*) [95% BCa bootstrap interval over them], as "
        f"`recallbench extract` reports them; reports in `{board.folder}/EXTRACTOR/`.",
        "",
    ]
    for index, rule in enumerate(board.rules):
        first = index == 0
        lines += [f"### Rule: {md_text(rule)}" + (" (ranks)" if first else ""), ""]
        gameable = MatchRule.parse(rule).gameable
        if gameable is not None:
            lines += [
                f"**Gameable** ({md_text(gameable)}): kept to compare with published numbers; "
                "do not rank systems by it.",
                "",
            ]
        header = [*(["rank"] if first else []), "extractor", *HEADLINE, "status"]
        rows = [
            [
                *([board.rank_label(entry)] if first else []),
                _code(entry.extractor),
                *(cell(entry.aggregate(rule, name)) for name in HEADLINE),
                _status(entry, rule),
            ]
            for entry in board.entries
        ]
        lines += _table(header, rows)
        notes = _undefined_notes(board, rule)
        if first:
            notes += [
                f"- **failed** {_code(e.extractor)}: {md_text(e.error)}"
                for e in board.entries
                if e.error
            ]
            notes += [f"- {_code(e.extractor)}: {md_text(e.note)}" for e in board.entries if e.note]
        if notes:
            lines += ["", *notes]
        lines.append("")
    lines += [f"- **rank**: {board.method()}.", ""]
    if board.ranking is not None and board.ranking.pairs:
        lines += [f"Pairs on {board.ranking.measure} under {board.rules[0]}:", ""]
        lines += _table(
            ["first", "second", "n", "delta", "p", "p (Holm)", "better"],
            [
                [
                    _code(p.first),
                    _code(p.second),
                    str(p.n),
                    number(p.delta),
                    number(p.p),
                    number(p.p_adjusted),
                    _code(p.better) if p.better else "–",
                ]
                for p in board.ranking.pairs
            ],
        )
        lines.append("")
    return lines


def _results_json(entry: Entry) -> dict[str, dict[str, dict[str, object]]]:
    if entry.report is None:
        return {}
    out: dict[str, dict[str, dict[str, object]]] = {}
    for scores in entry.report.results:
        why = entry.report.undefined.get(scores.rule, {})
        out[scores.rule] = {
            name: {
                "n": (a := scores.aggregate(name)).units,
                "macro": a.macro,
                "interval": list(a.macro_interval) if a.macro_interval else None,
                "micro": a.micro,
                "undefined": why.get(name),
            }
            for name in HEADLINE
        }
    return out


def board_json(board: Board) -> dict[str, object]:
    ranking: dict[str, object] | None = None
    if board.ranking is not None:
        ranking = {
            **board.ranking.to_json(),
            "rule": board.rules[0],
            "unit": ranked_unit(board.entries, board.rules[0], board.ranking.measure),
            "method": board.method(),
        }
    return {
        "ground_truth": board.truth.model_dump(mode="json", exclude={"loader"}),
        "folder": board.folder,
        "rules": list(board.rules),
        "headline": list(HEADLINE),
        "ranking": ranking,
        "extractors": [
            {
                "extractor": e.extractor,
                "system": e.report.output.system if e.report else None,
                "status": e.status,
                "error": e.error,
                "note": e.note,
                "rank": _rank_json(board, e),
                "report": f"{e.folder}/extraction.json" if e.report else None,
                "output": f"{e.folder}/output.json" if e.report else None,
                "missing_documents": len(e.report.results[0].missing_documents)
                if e.report and e.report.results
                else None,
                "results": _results_json(e),
            }
            for e in board.entries
        ],
    }


def _rank_json(board: Board, entry: Entry) -> dict[str, object] | None:
    if board.ranking is None or entry.report is None:
        return None
    standing = next(s for s in board.ranking.standings if s.system == entry.extractor)
    return {"low": standing.low, "high": standing.high, "label": standing.label}


def leaderboard_texts(boards: Sequence[Board], context: Mapping[str, str]) -> dict[str, str]:
    """File name -> text of extraction-leaderboard.md and .json; ``context`` (command,
    version, date, machine) heads both, as on the retrieval leaderboard."""
    lines = ["# recallbench extraction leaderboard", ""]
    lines += [f"- {md_text(key)}: {md_text(value)}" for key, value in context.items()]
    lines.append("")
    for board in boards:
        lines += board_markdown(board)
    document = {
        "format": LEADERBOARD_FORMAT,
        "context": dict(context),
        "ground_truths": [board_json(board) for board in boards],
    }
    return {
        "extraction-leaderboard.md": "\n".join(lines),
        "extraction-leaderboard.json": json.dumps(document, indent=2) + "\n",
    }


def render_board(board: Board, console: Console) -> None:
    """The first rule's table in the terminal: macro means only (the intervals are in the
    Markdown and JSON)."""
    from rich.markup import escape
    from rich.table import Table

    rule = board.rules[0]
    title = f"extraction on {board.truth.name} ({board.truth.documents} documents), rule {rule}"
    table = Table(title=title, caption=board.method(), caption_justify="left")
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("extractor", overflow="fold", min_width=16)
    for name in HEADLINE:
        table.add_column(SHORT[name], justify="right")
    table.add_column("status")
    for entry in board.entries:
        table.add_row(
            board.rank_label(entry),
            escape(entry.extractor),
            *(number(a.macro if (a := entry.aggregate(rule, n)) else None) for n in HEADLINE),
            entry.status,
        )
    console.print(table)
    gameable = MatchRule.parse(rule).gameable
    if gameable is not None:
        console.print(f"rule {escape(rule)} is gameable ({escape(gameable)}): do not rank by it")
    for entry in board.entries:
        if entry.error:
            console.print(f"  {escape(entry.extractor)} failed: {escape(entry.error)}")
