"""trec_eval's common measures through the compiled engine (:mod:`recallbench.measures._ctrec`).

The compiled module is a port of trec_eval's own code for the families in
:data:`FAMILIES`; it reads plain TREC files or in-memory dicts and computes every value
(and for files prints trec_eval's text) without numpy, so that a small evaluation costs
about what Python's start does. It takes only what it can evaluate exactly as the Python
engine does and declines everything else (None here): measures outside these families or
with parameters other than cutoffs, files that are not plain, a query whose judgments are
all below 0. The Python engine then evaluates, with the same results and messages. Where
no C compiler was found at install, the module is missing and the Python engine takes
everything.

Nothing here imports numpy or the measure modules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike
from typing import Any

from recallbench.measures._trec_names import OFFICIAL, TABLE_ORDER

try:
    from recallbench.measures import _ctrec
except ImportError:  # built without a C compiler
    _ctrec = None  # type: ignore[assignment]

FAMILIES = {  # trec_eval name -> the compiled engine's family code
    "num_q": 0,
    "num_ret": 1,
    "num_rel": 2,
    "num_rel_ret": 3,
    "map": 4,
    "gm_map": 5,
    "Rprec": 6,
    "bpref": 7,
    "recip_rank": 8,
    "iprec_at_recall": 9,
    "P": 10,
    "recall": 11,
    "ndcg": 12,
    "ndcg_cut": 13,
    "map_cut": 14,
    "success": 15,
}
CUTOFFS = {  # families with integer cutoffs, and trec_eval's defaults
    "P": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "recall": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "ndcg_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "map_cut": (5, 10, 15, 20, 30, 100, 200, 500, 1000),
    "success": (1, 5, 10),
}
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""iprec_at_recall's levels (only its defaults are taken here)."""


def _cutoff_list(params: str) -> bool:
    """Cutoffs as the Python engine takes them without a message: positive, no sign, no
    leading zero, at most 9 digits (anything else is left to it, to refuse or to read;
    no regular expression: compiling one costs more than this whole check)."""
    return all(
        0 < len(part) < 10 and part.isdigit() and part.isascii() and part[0] != "0"
        for part in params.split(",")
    )


Family = tuple[int, tuple[float, ...], tuple[str, ...]]


def available() -> bool:
    """Whether the compiled engine was built."""
    return _ctrec is not None


def _takes(relevance_level: int, max_docs: int | None) -> bool:
    """Whether the compiled engine is built and the options fit its C longs."""
    in_range = max_docs is None or 0 < max_docs < 2**62
    return _ctrec is not None and -(2**62) < relevance_level < 2**62 and in_range


def families(specs: Iterable[str]) -> tuple[list[Family], bool] | None:
    """``-m`` arguments as the compiled engine's families, in trec_eval's print order, and
    whether ``runid`` is asked for; None when any is outside what it computes.

    As :func:`recallbench.measures._trec_sets.expand_trec_measures`: a family named with
    parameters takes those of the first ``-m`` that gives any, else its defaults, and
    cutoffs print ascending."""
    marked: dict[str, str | None] = {}
    runid = False
    for spec in specs:
        for name in OFFICIAL if spec == "official" else (spec,):
            if name == "runid":
                runid = True
                continue
            family, dot, params = name.partition(".")
            if family not in FAMILIES or (dot and family not in CUTOFFS):
                return None
            if dot and not _cutoff_list(params):
                return None
            if marked.get(family) is None:
                marked[family] = params if dot else None
    chosen: list[Family] = []
    for family in sorted(marked, key=TABLE_ORDER.index):
        given = marked[family]
        if family in CUTOFFS:
            cutoffs = CUTOFFS[family] if given is None else tuple(map(int, given.split(",")))
            if len(set(cutoffs)) < len(cutoffs):
                return None  # the Python engine names the duplicate
            ordered = sorted(cutoffs)
            labels = tuple(f"{family}_{k}" for k in ordered)
            chosen.append((FAMILIES[family], tuple(map(float, ordered)), labels))
        elif family == "iprec_at_recall":
            labels = tuple(f"{family}_{level:3.2f}" for level in RECALL_LEVELS)
            chosen.append((FAMILIES[family], RECALL_LEVELS, labels))
        else:
            chosen.append((FAMILIES[family], (), (family,)))
    return chosen, runid


def evaluate_files_text(
    qrels: str | PathLike[str],
    run: str | PathLike[str],
    specs: Sequence[str],
    *,
    relevance_level: int = 1,
    complete: bool = False,
    max_docs: int | None = None,
    judged_only: bool = False,
    per_query: bool = False,
    summary: bool = True,
) -> tuple[str, str] | None:
    """trec_eval's output (its ``-q``, ``-n``, ``-l``, ``-c``, ``-M``, ``-J``) for two plain
    files and the run's tag, or None when the compiled engine declines them (see the module
    doc)."""
    chosen = families(specs or ("official",))
    if chosen is None or not _takes(relevance_level, max_docs):
        return None
    return _ctrec.evaluate_files(
        str(qrels),
        str(run),
        chosen[0],
        relevance_level,
        max_docs or 0,
        judged_only,
        complete,
        per_query,
        summary,
        chosen[1],
    )


def text_lines(text: str) -> list[tuple[str, str, str]]:
    """trec_eval's lines as (label, query id or ``all``, value), as
    :func:`recallbench.measures._trec_output.trec_lines` gives them."""
    lines = []
    for line in text.split("\n")[:-1]:  # not splitlines(): ids may hold U+0085 or U+2028
        label, qid, value = line.split("\t")
        lines.append((label.rstrip(" "), qid, value))
    return lines


Values = tuple[list[str], list[list[float]], list[bool], list[int], int]
"""Per-query results: query ids in trec_eval's order, one list of values a family slot,
which queries the run lacks (-c), each query's relevant judgments, and the judgments
graded above 0 (-c's num_rel)."""


def evaluate_values(
    qrels: Any,
    run: Any,
    chosen: list[Family],
    *,
    relevance_level: int,
    complete: bool,
    max_docs: int | None,
    judged_only: bool,
) -> Values | None:
    """Per-query values of ``{query: {doc: grade}}`` and ``{query: {doc: score}}`` dicts in
    form, or of two plain files (paths), or None when the compiled engine declines them."""
    if not _takes(relevance_level, max_docs):
        return None
    args = (chosen, relevance_level, max_docs or 0, judged_only, complete)
    if isinstance(qrels, dict) and isinstance(run, dict):
        return _ctrec.evaluate_dicts(qrels, run, *args)
    if isinstance(qrels, str | PathLike) and isinstance(run, str | PathLike):
        done = _ctrec.evaluate_file_values(str(qrels), str(run), *args)
        return None if done is None else done[:5]
    return None
