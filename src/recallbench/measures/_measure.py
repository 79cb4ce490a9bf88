"""Measures as value objects: a family name plus a cutoff, with a canonical string.

``Measure.parse("nDCG@10")`` gives ``NDCG(cutoff=10)`` whose ``str`` is ``ndcg@10``; that
string is the measure's identity in reports, stores and comparisons.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from recallbench.core import UnknownMeasureError
from recallbench.measures._table import FloatArray, RankTable

_SYNTAX = re.compile(r"^\s*(?P<name>[A-Za-z][A-Za-z0-9_\-]*?)\s*(?:@\s*(?P<cutoff>\S+))?\s*$")


@dataclass(frozen=True)
class Measure(ABC):
    """A ranking measure. Subclasses set ``name`` and compute per-query values."""

    cutoff: int | None = None

    name: ClassVar[str]
    """Canonical family name (``ndcg``, ``mrr``, ...)."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other accepted spellings, matched case-insensitively."""
    cutoff_required: ClassVar[bool] = False
    cutoff_allowed: ClassVar[bool] = True
    summary: ClassVar[str]
    """One-line definition printed in reports."""

    def __post_init__(self) -> None:
        if self.cutoff is not None and (not self.cutoff_allowed or self.cutoff < 1):
            raise UnknownMeasureError(f"{self.name}: cutoff {self.cutoff} is not allowed")
        if self.cutoff is None and self.cutoff_required:
            raise UnknownMeasureError(f"{self.name} needs a cutoff, for example {self.name}@10")

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"

    @property
    def depth(self) -> float:
        """How many leading ranks the measure looks at (inf without a cutoff)."""
        return float("inf") if self.cutoff is None else float(self.cutoff)

    def definition(self) -> str:
        depth = "the whole ranking" if self.cutoff is None else f"the top {self.cutoff}"
        return f"{self.summary} Computed over {depth}."

    @abstractmethod
    def compute(self, table: RankTable) -> FloatArray:
        """Value for every query of ``table``, in its order."""

    @staticmethod
    def parse(text: str) -> Measure:
        """Parse ``name[@k]``; an unknown name lists the valid ones."""
        return parse_measure(text)


_REGISTRY: dict[str, type[Measure]] = {}


def register(cls: type[Measure]) -> type[Measure]:
    """Class decorator: make ``cls`` parseable by its name and aliases."""
    for spelling in (cls.name, *cls.aliases):
        _REGISTRY[spelling.lower()] = cls
    return cls


def measure_families() -> list[type[Measure]]:
    return sorted(set(_REGISTRY.values()), key=lambda cls: cls.name)


def parse_measure(text: str) -> Measure:
    match = _SYNTAX.match(text)
    family = _REGISTRY.get(match.group("name").lower()) if match else None
    if match is None or family is None:
        valid = ", ".join(
            f"{cls.name}@k" if cls.cutoff_required else cls.name for cls in measure_families()
        )
        raise UnknownMeasureError(f"unknown measure {text!r}; valid measures: {valid}")
    cutoff_text = match.group("cutoff")
    if cutoff_text is None:
        return family()
    if not cutoff_text.isdigit() or int(cutoff_text) < 1:
        raise UnknownMeasureError(
            f"measure {text!r}: the cutoff must be a positive integer, got {cutoff_text!r}"
        )
    return family(int(cutoff_text))


def parse_measures(texts: list[str] | tuple[str, ...]) -> tuple[Measure, ...]:
    """Parse several measures, dropping repeats (by canonical name), keeping order."""
    unique: dict[str, Measure] = {}
    for text in texts:
        measure = parse_measure(text)
        unique.setdefault(str(measure), measure)
    return tuple(unique.values())
