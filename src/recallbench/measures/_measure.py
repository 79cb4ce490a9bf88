"""Measures as value objects: a family name plus a cutoff, with a canonical string.

``Measure.parse("nDCG@10")`` gives ``NDCG(cutoff=10)`` whose ``str`` is ``ndcg@10``; that
string is the measure's identity in reports, stores and comparisons.
"""

from __future__ import annotations

import importlib
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar, Literal, TypeVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures import _catalog
from recallbench.measures._table import FloatArray, RankTable

TREC_CUTOFFS = ("5", "10", "15", "20", "30", "100", "200", "500", "1000")
"""trec_eval's default cutoffs for P, recall, ndcg_cut, map_cut, relative_P."""


def sequential_sum(values: FloatArray) -> float:
    """``values`` added one after the other from the first (np.cumsum is sequential)."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


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
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {}
    """trec_eval's names for the family, each with the parameters trec_eval uses when it is
    named without any (``{"P": ("5", "10", ...)}``; ``ndcg`` and ``ndcg_cut`` are one family)."""
    trec_params_whole: ClassVar[bool] = False
    """trec_eval parameters form one measure (``utility.2,-1,0,0``) instead of one each."""
    shown_per_query: ClassVar[bool] = True
    """Whether trec_eval prints a per-query value (gm_map, num_q: only the aggregate)."""
    integer: ClassVar[bool] = False
    """Counts are printed as integers."""
    textual: ClassVar[bool] = False
    """A per-query string rather than a number (relstring): no aggregate."""
    higher_is_better: ClassVar[bool] = True
    kind: ClassVar[Literal["graded", "exact", "judge"]] = "graded"
    """How a query is scored: graded (ranking measures), exact (yes or no per query: hit@k,
    recall_all@k, false_surface) or judge (an LLM judge's score). Gates allow a different
    relative drop per kind, exact checks moving in larger steps per query."""
    population: ClassVar[Literal["answerable", "unanswerable"]] = "answerable"
    """Which queries the means take: those with a relevant document (every ranking
    measure) or those without one (abstention measures)."""

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

    def texts(self, table: RankTable) -> list[str] | None:
        """Per-query strings for a textual measure; None for numeric ones."""
        return None

    def aggregate(self, values: FloatArray) -> float:
        """The value over all queries: the arithmetic mean unless the measure says otherwise,
        summed left to right in query order as trec_eval's ``+=`` does (numpy's pairwise
        ``mean`` differs in the last bits, enough to flip a printed 4th decimal)."""
        return sequential_sum(values) / len(values) if len(values) else float("nan")

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        """Build from the text after ``@``: a positive integer cutoff here."""
        if argument is None:
            return cls()
        if not argument.strip().isdigit() or int(argument) < 1:
            raise UnknownMeasureError(
                f"measure {cls.name}@{argument}: the cutoff must be a positive integer, "
                f"got {argument!r}"
            )
        return cls(int(argument))

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        """Build from a trec_eval parameter; cutoffs are read as C longs (``23.4`` is 23)."""
        try:
            cutoff = int(float(argument))
        except ValueError:
            raise UnknownMeasureError(
                f"trec_eval measure {cls.name} with parameter {argument!r}: recallbench "
                "supports a numeric cutoff only"
            ) from None
        return cls.from_argument(str(cutoff))

    def trec_label(self) -> str:
        """The name trec_eval prints for this measure (``P_5``, ``ndcg_cut_10``, ``map``):
        the family's first trec_eval name, the last one when cut (``map`` / ``map_cut_10``)."""
        names = list(self.trec_names) or [self.name]
        return names[0] if self.cutoff is None else f"{names[-1]}_{self.cutoff}"

    def format_value(self, value: float) -> str:
        """trec_eval's rendering (``%6.4f``): 4 decimals, integers for counts, and NaN as
        glibc's printf shows the NaN of 0/0, ``  -nan`` (its sign bit is set on x86)."""
        if math.isnan(value):
            return f"{'-nan':>6}"
        return str(round(value)) if self.integer else f"{value:.4f}"

    @staticmethod
    def parse(text: str) -> Measure:
        """Parse ``name[@k]``; an unknown name lists the valid ones."""
        return parse_measure(text)


_REGISTRY: dict[str, type[Measure]] = {}
_TREC_REGISTRY: dict[str, tuple[type[Measure], tuple[str, ...]]] = {}

MeasureT = TypeVar("MeasureT", bound=type[Measure])


def register(cls: MeasureT) -> MeasureT:
    """Class decorator: make ``cls`` parseable by its name, aliases and trec_eval name."""
    for spelling in (cls.name, *cls.aliases):
        _REGISTRY[spelling.lower()] = cls
    for trec_name, defaults in cls.trec_names.items():
        _TREC_REGISTRY[trec_name] = (cls, defaults)
    return cls


_loaded_all = False


def _load(module: str | None) -> None:
    """Import the measure module ``module`` (it registers its measures), or every one when
    None: the catalog does not know the name, which a new, uncatalogued module may define."""
    global _loaded_all
    if module is not None:
        importlib.import_module(f"recallbench.measures.{module}")
    elif not _loaded_all:
        for name in _catalog.modules():
            importlib.import_module(f"recallbench.measures.{name}")
        _loaded_all = True


def _family(spelling: str) -> type[Measure] | None:
    """The measure class registered under ``spelling`` (lower case), its module imported
    first if need be."""
    if spelling not in _REGISTRY:
        _load(_catalog.MODULE_OF.get(spelling))
    return _REGISTRY.get(spelling)


def trec_family(name: str) -> tuple[type[Measure], tuple[str, ...]] | None:
    """The measure class trec_eval calls ``name`` (case-sensitive, as trec_eval), with the
    parameters trec_eval uses by default."""
    if name not in _TREC_REGISTRY:
        _load(_catalog.TREC_MODULE_OF.get(name))
    return _TREC_REGISTRY.get(name)


def scan_catalog() -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(SPELLINGS, TREC_NAMES) of :mod:`recallbench.measures._catalog` as the modules
    define them: each module imported in turn, credited with what it newly registers.
    Meaningful in a process that has imported no measure module yet."""
    spellings: dict[str, tuple[str, ...]] = {}
    trec_names: dict[str, tuple[str, ...]] = {}
    for module in _catalog.modules():
        before, trec_before = set(_REGISTRY), set(_TREC_REGISTRY)
        importlib.import_module(f"recallbench.measures.{module}")
        spellings[module] = tuple(sorted(set(_REGISTRY) - before))
        trec_names[module] = tuple(sorted(set(_TREC_REGISTRY) - trec_before))
    return spellings, trec_names


def measure_families() -> list[type[Measure]]:
    """Every measure family, all measure modules imported."""
    _load(None)
    return sorted(set(_REGISTRY.values()), key=lambda cls: cls.name)


def parse_measure(text: str) -> Measure:
    match = _SYNTAX.match(text)
    family = _family(match.group("name").lower()) if match else None
    if match is None or family is None:
        valid = ", ".join(
            f"{cls.name}@k" if cls.cutoff_required else cls.name for cls in measure_families()
        )
        raise UnknownMeasureError(f"unknown measure {text!r}; valid measures: {valid}")
    return family.from_argument(match.group("cutoff"))


def parse_measures(texts: list[str] | tuple[str, ...]) -> tuple[Measure, ...]:
    """Parse several measures, dropping repeats (by canonical name), keeping order."""
    unique: dict[str, Measure] = {}
    for text in texts:
        measure = parse_measure(text)
        unique.setdefault(str(measure), measure)
    return tuple(unique.values())


def parse_trec_measure(spec: str) -> list[Measure]:
    """Parse a trec_eval ``-m`` argument: ``P.5,10``, ``ndcg_cut``, ``recip_rank``.

    A family without parameters takes trec_eval's defaults (``P`` = P at 5, 10, ..., 1000).
    Our own names (``ndcg@10``) are accepted too; a family recallbench lacks raises
    :class:`UnknownMeasureError` listing the supported ones.
    """
    name, dot, params = spec.partition(".")
    if dot and not params and trec_family(name) is not None:
        # trec_eval: "improper measure in parameter"; reading it as no parameters would
        # evaluate what trec_eval refuses
        raise UnknownMeasureError(
            f"trec_eval measure {spec!r}: nothing after the '.' (trec_eval refuses it as an "
            f"improper parameter); give parameters ({name}.5,10) or none ({name})"
        )
    found = trec_family(name)
    if found is None:
        if "@" in spec or _family(name.lower()) is not None:
            return [parse_measure(spec)]
        _load(None)
        known = ", ".join(sorted(_TREC_REGISTRY))
        raise UnknownMeasureError(
            f"unknown or unsupported trec_eval measure {spec!r}; supported: {known}"
        )
    family, defaults = found
    arguments = [params] if params else list(defaults)
    if family.trec_params_whole or not arguments:
        return [family.from_trec_argument(arguments[0]) if arguments else family()]
    return [
        family.from_trec_argument(argument) for chunk in arguments for argument in chunk.split(",")
    ]
