"""Helpers shared by the judgment-aware and parameterised trec_eval measures.

trec_eval sorts every returned document into one of four kinds: judged relevant (grade at
least the relevance level), judged non-relevant (grade 0 up to the level), "in the pool but
unjudged" (a negative grade in the qrels) and "not in the pool" (no judgment at all, which
here also covers a repeated document). :func:`kinds` gives those masks over a
:class:`RankTable`; the rest are the small numeric conventions the measures share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._table import BoolArray, FloatArray, IntArray, RankTable

MIN_GEO_MEAN = 1e-5
"""trec_eval's floor for a query's value before taking logs (``MIN_GEO_MEAN``)."""


@dataclass(frozen=True, eq=False)
class Kinds:
    """trec_eval's relevance kind of every returned document."""

    relevant: BoolArray
    """Judged with grade >= the relevance level."""
    nonrelevant: BoolArray
    """Judged with 0 <= grade < the relevance level."""
    unjudged: BoolArray
    """In the qrels with a negative grade: pooled but not judged (``RELVALUE_UNJUDGED``)."""


def kinds(table: RankTable) -> Kinds:
    threshold = table.relevance_threshold
    return Kinds(  # rows are judged returned documents; unpooled ones are not rows
        relevant=table.relevant,
        nonrelevant=(table.grade >= 0) & (table.grade < threshold),
        unjudged=table.grade < 0,
    )


def judged_nonrelevant(table: RankTable) -> IntArray:
    """Per query: judgments with 0 <= grade < the relevance level (returned or not)."""
    chosen = (table.judged_grade >= 0) & (table.judged_grade < table.relevance_threshold)
    return np.bincount(table.judged_query[chosen], minlength=table.num_queries).astype(np.int64)


def geometric_mean(values: FloatArray) -> float:
    """trec_eval's geometric mean: ``exp(mean(log(max(v, MIN_GEO_MEAN))))``, the logs taken
    by the C library (numpy's vectorised log may differ in the last bit) and summed left to
    right as trec_eval does."""
    if not len(values):
        return float("nan")
    total = 0.0
    for value in values.tolist():
        total += math.log(max(value, MIN_GEO_MEAN))
    return math.exp(total / len(values))


def lround(values: FloatArray) -> IntArray:
    """C's ``lround``: to the nearest integer, halves away from zero."""
    magnitude = np.abs(values)
    whole = np.floor(magnitude)
    rounded = whole + (magnitude - whole >= 0.5)
    result: IntArray = (np.sign(values) * rounded).astype(np.int64)
    return result


def parse_float(text: str, what: str) -> float:
    """A finite float, or :class:`UnknownMeasureError` naming ``what``."""
    try:
        value = float(text)
    except ValueError:
        raise UnknownMeasureError(f"{what}: {text!r} is not a number") from None
    if not math.isfinite(value):
        raise UnknownMeasureError(f"{what}: {text!r} is not a finite number")
    return value


def parse_floats(text: str, what: str) -> tuple[float, ...]:
    """Comma-separated floats (``0.25,0.5,0.75``)."""
    return tuple(parse_float(part.strip(), what) for part in text.split(","))


def two_decimals(value: float) -> str:
    """``0.10`` style (trec_eval's ``%3.2f``) when that is exact, else the shortest repr."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)


def shortest(value: float) -> str:
    """``2``, ``-1``, ``0.5``: ``%g`` when that is exact, else the shortest repr."""
    text = f"{value:g}"
    return text if float(text) == value else repr(value)
