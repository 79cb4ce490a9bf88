"""A base for measures with one real-valued parameter (a recall level, a multiple of R)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from recallbench.core import UnknownMeasureError
from recallbench.measures._measure import Measure
from recallbench.measures._trec_extra import parse_float, two_decimals


@dataclass(frozen=True)
class FractionMeasure(Measure):
    """``name@x`` with x a real number, printed by trec_eval as ``<trec name>_x.xx``.

    Subclasses declare the dataclass field holding x and name it in ``parameter``.
    """

    cutoff_allowed = False
    parameter: ClassVar[str]
    """The field holding the value (``level``, ``multiple``)."""
    parameter_text: ClassVar[str]
    """What the value is, for messages and definitions ("a recall level")."""

    @property
    def value(self) -> float:
        number: float = getattr(self, self.parameter)
        return number

    def __str__(self) -> str:
        return f"{self.name}@{two_decimals(self.value)}"

    def trec_label(self) -> str:
        return f"{next(iter(self.trec_names))}_{self.value:.2f}"

    def definition(self) -> str:
        return f"{self.summary} {self.parameter_text.capitalize()}: {two_decimals(self.value)}."

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        if argument is None:
            raise UnknownMeasureError(
                f"{cls.name} needs {cls.parameter_text}, for example {cls.name}@0.5"
            )
        value: Any = parse_float(argument, f"measure {cls.name}@{argument}")
        return cls(**{cls.parameter: value})

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        return cls.from_argument(argument)
