"""Linear set utility over the retrieved / relevant contingency table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import kinds, parse_floats, shortest

DEFAULT_COEFFICIENTS = (1.0, -1.0, 0.0, 0.0)


@register
@dataclass(frozen=True)
class Utility(Measure):
    """utility@a,b,c,d: a weighted count of the retrieved / relevant contingency table.

    ``utility = a * RR + b * (N - RR) + c * (R - RR) + d * (D + RR - N - R)`` with N the
    documents returned, R the relevant ones, RR the relevant returned and D the collection
    size, taken as 0 like trec_eval without ``-N`` (so d weighs ``RR - N - R``). Defaults
    a, b, c, d = 1, -1, 0, 0: relevant retrieved minus non-relevant retrieved (trec_eval
    ``utility``; Lewis, "The TREC-4 filtering track", TREC-4, 1995).
    """

    coefficients: tuple[float, float, float, float] = DEFAULT_COEFFICIENTS
    trec_params: str | None = field(default=None, compare=False)
    """trec_eval's parameter text as given (it prints it verbatim in the label)."""

    name = "utility"
    cutoff_allowed = False
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"utility": ()}
    trec_params_whole = True
    summary = (
        "a * relevant retrieved + b * non-relevant retrieved + c * relevant missed "
        "+ d * non-relevant missed (collection size taken as 0)."
    )

    def _coefficients_text(self) -> str:
        return ",".join(shortest(value) for value in self.coefficients)

    def __str__(self) -> str:
        if self.coefficients == DEFAULT_COEFFICIENTS:
            return self.name
        return f"{self.name}@{self._coefficients_text()}"

    def trec_label(self) -> str:
        if self.trec_params is not None:
            return f"utility_{self.trec_params}"
        if self.coefficients == DEFAULT_COEFFICIENTS:
            return "utility"
        return f"utility_{self._coefficients_text()}"

    def definition(self) -> str:
        return f"{self.summary} a, b, c, d = {self._coefficients_text()}."

    @classmethod
    def _parse(cls, text: str, what: str) -> tuple[float, float, float, float]:
        values = parse_floats(text, what)
        if len(values) != 4:
            raise UnknownMeasureError(f"{what}: utility takes 4 coefficients a,b,c,d")
        return (values[0], values[1], values[2], values[3])

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        if argument is None:
            return cls()
        return cls(coefficients=cls._parse(argument, f"measure {cls.name}@{argument}"))

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        what = f"trec_eval measure utility.{argument}"
        return cls(coefficients=cls._parse(argument, what), trec_params=argument)

    def compute(self, table: RankTable) -> FloatArray:
        a, b, c, d = self.coefficients
        returned = table.num_ret.astype(np.float64)
        relevant = table.num_rel.astype(np.float64)
        found = table.per_query_count(kinds(table).relevant).astype(np.float64)
        values: FloatArray = (
            a * found
            + b * (returned - found)
            + c * (relevant - found)
            + d * (found - returned - relevant)
        )
        return values
