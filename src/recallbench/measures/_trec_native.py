"""trec_eval's measures through the compiled engine (:mod:`recallbench.measures._ctrec`).

The compiled module is a port of trec_eval's own code for the families in
:data:`FAMILIES` (every family of ``-m all_trec``); it reads plain TREC files or in-memory
dicts and computes every value (and for files prints trec_eval's text) without numpy, so
that a small evaluation costs about what Python's start does. It takes only what it can
evaluate exactly as the Python engine does and declines everything else (None here):
recallbench's own measure names, parameters the Python engine refuses or reads otherwise
than trec_eval (see :func:`families`), files that are not plain. The Python engine then
evaluates, with the same results and messages. Where no C compiler was found at install,
the module is missing and the Python engine takes everything.

Nothing here imports numpy or the measure modules.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from itertools import pairwise
from os import PathLike
from typing import Any

from recallbench.measures._trec_names import ALL_TREC, OFFICIAL, TABLE_ORDER

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
    "relstring": 16,
    "infAP": 17,
    "gm_bpref": 18,
    "Rprec_mult": 19,
    "utility": 20,
    "11pt_avg": 21,
    "binG": 22,
    "G": 23,
    "ndcg_rel": 24,
    "Rndcg": 25,
    "relative_P": 26,
    "set_P": 27,
    "set_relative_P": 28,
    "set_recall": 29,
    "set_map": 30,
    "set_F": 31,
    "num_nonrel_judged_ret": 32,
    "rbp": 33,
    "rbp_resid": 34,
    "unj": 35,
}
_TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
CUTOFFS = {  # families with integer cutoffs, and trec_eval's defaults
    "P": _TREC_CUTOFFS,
    "recall": _TREC_CUTOFFS,
    "ndcg_cut": _TREC_CUTOFFS,
    "map_cut": _TREC_CUTOFFS,
    "success": (1, 5, 10),
    "relative_P": _TREC_CUTOFFS,
    "unj": (5, 10, 20),
}
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""iprec_at_recall's and 11pt_avg's default recall levels."""
LEVELS = {  # families with one value a real parameter (printed %3.2f), their defaults
    "iprec_at_recall": RECALL_LEVELS,
    "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
WHOLE = {  # families whose parameters are one measure, labelled with them verbatim
    "utility": (1.0, -1.0, 0.0, 0.0),
    "11pt_avg": RECALL_LEVELS,
    "set_F": (1.0,),
    "rbp": (0.9,),
    "rbp_resid": (0.9,),
    "relstring": (10.0,),
}
MAX_VALUES = 64
"""Values a family may print here (the compiled engine's fixed arrays); more: declined."""
MAX_RELSTRING = 100
"""relstring's longest string here: a character takes a value of every query's row."""


def _cutoff_list(params: str) -> bool:
    """Cutoffs as the Python engine takes them without a message: positive, no sign, no
    leading zero, at most 9 digits (anything else is left to it, to refuse or to read;
    no regular expression: compiling one costs more than this whole check)."""
    return all(
        0 < len(part) < 10 and part.isdigit() and part.isascii() and part[0] != "0"
        for part in params.split(",")
    )


def _decimal(text: str) -> float | None:
    """A number that Python's float() and C's atof() read alike: an optional sign, digits
    with at most one point, at most 15 digits (else None: the Python engine reads it)."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    bare = digits.replace(".", "", 1)
    if not (0 < len(bare) <= 15 and bare.isdigit() and bare.isascii()):
        return None
    return float(text)


def _decimals(params: str) -> list[float] | None:
    """Comma-separated :func:`_decimal` numbers, None when any is not one."""
    numbers = []
    for part in params.split(","):
        number = _decimal(part)
        if number is None:
            return None
        numbers.append(number)
    return numbers


def _levels(family: str, given: str | None) -> tuple[float, ...] | None:
    """iprec_at_recall's recall levels or Rprec_mult's multiples, ascending (as trec_eval
    sorts them); None for what the Python engine refuses (out of range, a duplicate)."""
    if given is None:
        return LEVELS[family]
    values = _decimals(given)
    if values is None or len(set(values)) < len(values):
        return None
    if family == "iprec_at_recall" and not all(0.0 <= v <= 1.0 for v in values):
        return None
    if family == "Rprec_mult" and not all(0.0 < v <= 1e6 for v in values):
        return None
    return tuple(sorted(values))


def _whole(family: str, given: str) -> tuple[float, ...] | None:
    """The parameters of a family labelled with them (``utility_1,-1,0,0``) as the Python
    engine reads them, or None where it refuses them or reads them otherwise than
    trec_eval does."""
    if family == "relstring":  # the Python engine reads relstring.5,10 as two measures
        one = "," not in given and _cutoff_list(given) and int(given) <= MAX_RELSTRING
        return (float(given),) if one else None
    if family in ("rbp", "rbp_resid"):  # p=0.95 pairs (other names: gains, refused)
        persistence = None
        for pair in given.split(","):
            name, equals, value = pair.partition("=")
            persistence = _decimal(value) if name == "p" and equals else None
            if persistence is None or not 0.0 <= persistence < 1.0:
                return None
        return (persistence,) if persistence is not None else None
    values = _decimals(given)
    if values is None:
        return None
    if family == "utility":
        return tuple(values) if len(values) == 4 else None
    if family == "set_F":  # trec_eval and the Python engine read the first
        return (values[0],) if values[0] >= 0.0 else None
    # 11pt_avg: trec_eval walks the levels as given, expecting them ascending
    ascending = all(a <= b for a, b in pairwise(values))
    if not ascending or len(values) > MAX_VALUES or not all(0.0 <= v <= 1.0 for v in values):
        return None
    return tuple(values)


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
    cutoffs and levels print ascending. Parameters are taken in the forms that the Python
    engine reads as trec_eval does: cutoffs, recall levels and multiples, utility's four
    coefficients, 11pt_avg's levels ascending, set_F's weight, rbp's ``p=``, one relstring
    length; everything else (the gain maps of ndcg, G and the like, which the Python
    engine refuses, numbers in other spellings) is declined."""
    marked: dict[str, str | None] = {}
    runid = False
    for spec in specs:
        names = OFFICIAL if spec == "official" else ALL_TREC if spec == "all_trec" else (spec,)
        for name in names:
            if name == "runid":
                runid = True
                continue
            family, dot, params = name.partition(".")
            if family not in FAMILIES:
                return None
            if dot and family in CUTOFFS and not _cutoff_list(params):
                return None
            if dot and family not in CUTOFFS and family not in LEVELS and family not in WHOLE:
                return None  # the Python engine refuses or reads otherwise (ndcg.5)
            if marked.get(family) is None:
                marked[family] = params if dot else None
    chosen: list[Family] = []
    for family in sorted(marked, key=TABLE_ORDER.index):
        given = marked[family]
        code = FAMILIES[family]
        if family in CUTOFFS:
            cutoffs = CUTOFFS[family] if given is None else tuple(map(int, given.split(",")))
            if len(set(cutoffs)) < len(cutoffs) or len(cutoffs) > MAX_VALUES:
                return None  # the Python engine names the duplicate
            ordered = sorted(cutoffs)
            labels = tuple(f"{family}_{k}" for k in ordered)
            chosen.append((code, tuple(map(float, ordered)), labels))
        elif family in LEVELS:
            levels = _levels(family, given)
            if levels is None or len(levels) > MAX_VALUES:
                return None
            chosen.append((code, levels, tuple(f"{family}_{v:3.2f}" for v in levels)))
        elif family in WHOLE:
            values = WHOLE[family] if given is None else _whole(family, given)
            if values is None:
                return None
            label = family if given is None else f"{family}_{given}"
            chosen.append((code, values, (label,)))
        else:
            chosen.append((code, (), (family,)))
    return chosen, runid


STREAM_THRESHOLD = 256 * 2**20
"""Runs larger than this (bytes) must be streamed: read a block at a time, each query's
lines evaluated as read, in memory bounded by the largest query (plus the qrels, read
whole, and a few numbers a query), instead of ~70 bytes a run line; so they must be grouped
by query (each query's lines together). Smaller runs are streamed too when grouped (it
measured faster at every size: 0.13 s against 0.17 s of CPU on 1M lines), and read whole
when not, in any order."""
STREAM_BLOCK = 4 * 2**20
"""Bytes read at a time when streaming."""
STREAM_BLOCK_VARIABLE = "RECALLBENCH_STREAM_BLOCK"
"""An environment variable that, set to a number of bytes, streams every run with blocks of
that size and refuses any not grouped (tests use tiny blocks to put a block's end at every
byte of a file); set to 0, reads every run whole (benchmarks compare the two)."""


def stream_block(run: str | PathLike[str]) -> int | None:
    """Bytes to read at a time from ``run`` (it must be grouped), 0 to read it whole, or
    None for a run that is streamed when grouped and read whole otherwise (small)."""
    forced = os.environ.get(STREAM_BLOCK_VARIABLE, "").strip()
    if forced.isdigit():
        return int(forced)
    try:
        size = os.stat(run).st_size
    except OSError:
        return 0  # the engine declines it, and the line reader says why
    return STREAM_BLOCK if size > STREAM_THRESHOLD else None


def _blocks(run: str | PathLike[str], block: int | None) -> list[int]:
    """The blocks to try in turn (see :func:`stream_block`): a small run not grouped is
    read whole after its streaming stopped where a query came back."""
    chosen = stream_block(run) if block is None else block
    return [STREAM_BLOCK, 0] if chosen is None else [chosen]


GROUP_COMMAND = "LC_ALL=C sort -s -k1,1b {run} > {run}.grouped"
"""Groups a run's lines by query, keeping each query's lines in their order (stable)."""


def not_grouped(run: str | PathLike[str], line: int, query: str) -> Exception:
    """The error for a streamed run whose query ``query`` comes back at ``line`` (raised by
    the Python engine's reader, recallbench.measures._files)."""
    from recallbench.core import Problem, RunFileError

    command = GROUP_COMMAND.format(run=_shell_word(str(run)))
    return RunFileError(
        str(run),
        [
            Problem(
                f"{run}:{line}",
                f"query {query!r} comes back after its lines ended: a run of more than "
                f"{STREAM_THRESHOLD // 2**20} MiB is evaluated a query at a time and must "
                f"have each query's lines together. Group them with\n    {command}\n  "
                "(the same results; only -m runid's tag, the last line's, can change if "
                "the run's lines have different tags)",
            )
        ],
    )


def _shell_word(text: str) -> str:
    import shlex

    return shlex.quote(text)


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
    block: int | None = None,
) -> tuple[str, str] | None:
    """trec_eval's output (its ``-q``, ``-n``, ``-l``, ``-c``, ``-M``, ``-J``) for two plain
    files and the run's tag, or None when the compiled engine declines them (see the module
    doc). ``block``: bytes of the run read at a time (0: whole; None: :func:`stream_block`).

    A run that must be streamed but is not grouped by query is declined too: the Python
    engine's reader finds the same line and reports it (:func:`not_grouped`), so that
    every error is reported in one place, whichever way the command was started."""
    chosen = families(specs or ("official",))
    if chosen is None or not _takes(relevance_level, max_docs):
        return None
    blocks = _blocks(run, block)
    for attempt in blocks:
        done = _ctrec.evaluate_files(
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
            attempt,
        )
        if done is None or not isinstance(done[0], int):
            return done
    return None


def text_lines(text: str) -> list[tuple[str, str, str]]:
    """trec_eval's lines as (label, query id or ``all``, value), as
    :func:`recallbench.measures._trec_output.trec_lines` gives them."""
    lines = []
    for line in text.split("\n")[:-1]:  # not splitlines(): ids may hold U+0085 or U+2028
        label, qid, value = line.split("\t")
        lines.append((label.rstrip(" "), qid, value))
    return lines


GEOMETRIC = {"gm_map": "map", "gm_bpref": "bpref"}
"""Families summarised by a geometric mean, and the family of their per-query value in an
Evaluation (the compiled engine's own value is its log, for trec_eval's summary)."""


def per_query_families(chosen: list[Family]) -> list[Family]:
    """``chosen`` computing what an Evaluation holds per query: gm_map's average precision,
    gm_bpref's bpref (the geometric mean is taken over the queries)."""
    base = {FAMILIES[name]: FAMILIES[of] for name, of in GEOMETRIC.items()}
    return [(base.get(code, code), params, labels) for code, params, labels in chosen]


def measure_columns(
    chosen: list[Family], columns: list[list[float]]
) -> list[tuple[list[float], list[str] | None]]:
    """The values of each printed label of ``chosen``, from the compiled engine's columns,
    with relstring's strings (its value NaN, as the Python engine gives it): relstring
    takes a column a character, each a character's code, 0 past the end."""
    measured: list[tuple[list[float], list[str] | None]] = []
    slot = 0
    for code, params, labels in chosen:
        if code == FAMILIES["relstring"]:
            width = int(params[0])
            rows = zip(*columns[slot : slot + width], strict=True)
            texts = [bytes(map(int, row)).rstrip(b"\0").decode("ascii") for row in rows]
            measured.append(([float("nan")] * len(texts), texts))
            slot += width
            continue
        for _ in labels:
            measured.append((columns[slot], None))
            slot += 1
    return measured


Values = tuple[list[str], list[list[float]], list[bool], list[int], int]
"""Per-query results: query ids in trec_eval's order, one list of values a slot (see
:func:`measure_columns`),
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
        for attempt in _blocks(run, None):  # not grouped: declined, as above
            done = _ctrec.evaluate_file_values(str(qrels), str(run), *args, attempt)
            if done is None or len(done) != 2:
                return None if done is None else done[:5]
    return None
