"""The grades of the first N returned documents, as a string (trec_eval relstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable

NOT_IN_POOL = "-"
"""A returned document absent from the qrels."""


def _character(grade: int) -> str:
    if grade > 9:
        return ">"
    if grade >= 0:
        return str(grade)
    return "."  # any negative grade: in the pool but not judged (trec_eval RELVALUE_UNJUDGED)


@register
@dataclass(frozen=True)
class RelString(Measure):
    """relstring@n: one character per returned document among the first n (default 10).

    The grade when 0-9, ``>`` above 9, ``-`` for a document absent from the qrels (not in
    the pool), ``.`` for a negative grade (pooled but not judged: trec_eval reads every
    negative grade as its RELVALUE_UNJUDGED, so its ``<`` never shows);
    shorter when fewer were returned. A string, so it has no mean: printed per
    query only (trec_eval ``relstring``; Buckley, trec_eval 9 documentation, 2008).
    """

    cutoff: int | None = 10
    explicit: bool = field(default=False, compare=False)
    """Whether the length was given (trec_eval then prints ``relstring_N``)."""

    name = "relstring"
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"relstring": ()}
    textual = True
    summary = "The grades of the first n returned documents as characters."

    def trec_label(self) -> str:
        return f"relstring_{self.cutoff}" if self.explicit else "relstring"

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        measure = super().from_trec_argument(argument)
        return cls(measure.cutoff, explicit=True)

    def compute(self, table: RankTable) -> FloatArray:
        return np.full(table.num_queries, np.nan)

    def texts(self, table: RankTable) -> list[str] | None:
        length = self.cutoff or 0
        shown = np.minimum(table.num_ret, length)
        rows = np.flatnonzero(table.rank < length)
        strings = [[NOT_IN_POOL] * int(n) for n in shown]
        for query, rank, grade in zip(
            table.query[rows].tolist(),
            table.rank[rows].tolist(),
            table.grade[rows].tolist(),
            strict=True,
        ):
            strings[query][rank] = _character(grade)
        return ["".join(characters) for characters in strings]
