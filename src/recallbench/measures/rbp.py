"""Rank-biased precision and its residual (the most unjudged documents could add)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from recallbench.core import UnknownMeasureError
from recallbench.measures._gains import judged_sizes, returned_gain
from recallbench.measures._measure import Measure, register
from recallbench.measures._table import FloatArray, RankTable
from recallbench.measures._trec_extra import parse_float, shortest

DEFAULT_PERSISTENCE = 0.9


@dataclass(frozen=True)
class _Persistent(Measure):
    """A measure of a user who moves to the next rank with probability ``persistence``."""

    persistence: float = DEFAULT_PERSISTENCE
    trec_params: str | None = field(default=None, compare=False)
    """trec_eval's parameter text as given (it prints it verbatim in the label)."""

    cutoff_allowed = False
    trec_params_whole = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.persistence < 1.0:
            raise UnknownMeasureError(
                f"{self.name}: the persistence must be in [0, 1), got {self.persistence}"
            )

    def _trec_name(self) -> str:
        return next(iter(self.trec_names))

    def __str__(self) -> str:
        if self.persistence == DEFAULT_PERSISTENCE:
            return self.name
        return f"{self.name}@{shortest(self.persistence)}"

    def trec_label(self) -> str:
        if self.trec_params is not None:
            return f"{self._trec_name()}_{self.trec_params}"
        if self.persistence == DEFAULT_PERSISTENCE:
            return self._trec_name()
        return f"{self._trec_name()}_p={shortest(self.persistence)}"

    def definition(self) -> str:
        return f"{self.summary} Persistence p = {shortest(self.persistence)}."

    @classmethod
    def from_argument(cls, argument: str | None) -> Measure:
        if argument is None:
            return cls()
        return cls(persistence=parse_float(argument, f"measure {cls.name}@{argument}"))

    @classmethod
    def from_trec_argument(cls, argument: str) -> Measure:
        """trec_eval's ``name=value`` pairs; only ``p=`` (the persistence) is supported."""
        what = f"trec_eval measure {next(iter(cls.trec_names))}.{argument}"
        persistence = DEFAULT_PERSISTENCE
        for pair in argument.split(","):
            key, equals, value = pair.partition("=")
            if key.strip() != "p" or not equals:
                raise UnknownMeasureError(
                    f"{what}: recallbench supports only the persistence parameter, p=0.95"
                )
            persistence = parse_float(value.strip(), what)
        return cls(persistence=persistence, trec_params=argument)

    def powers(self, table: RankTable) -> FloatArray:
        """``p^k`` for k = 0 .. the longest ranking's length.

        Products of p taken one rank at a time (``cur_p = cur_p * p`` in trec_eval's m_rbp.c
        and m_rbp_resid.c; ``np.cumprod`` multiplies in that order), not ``p ** k``: the two
        differ in the last bits, enough to flip a printed 4th decimal (0.0094 for 0.0095).
        """
        longest = int(table.num_ret.max(initial=0))
        steps = np.full(longest + 1, self.persistence)
        steps[0] = 1.0
        result: FloatArray = np.cumprod(steps)
        return result

    def weights(self, table: RankTable) -> FloatArray:
        """``p^(rank - 1)`` for every returned document (1-based rank)."""
        result: FloatArray = self.powers(table)[table.rank]
        return result


@register
@dataclass(frozen=True)
class RBP(_Persistent):
    """rbp@p: rank-biased precision, the expected gain per rank of a persistent user.

    ``RBP = (1 - p) * sum_i g_i * p^(i-1)`` over ranks i, with g the grade divided by the
    query's highest judged grade when that exceeds 1 (gains scaled to [0, 1]; 0 for
    unjudged documents and negative grades); p = 0.9 by default. The relevance level plays
    no part (trec_eval ``rbp``; Moffat and Zobel, "Rank-biased precision for measurement of
    retrieval effectiveness", ACM TOIS 27(1), 2008).
    """

    name = "rbp"
    aliases = ("rank_biased_precision",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"rbp": ()}
    summary = "(1 - p) times the sum of each rank's gain times p^(rank-1); gains in [0, 1]."

    def compute(self, table: RankTable) -> FloatArray:
        # Judgments are sorted best first, so each query's first one holds its top grade.
        sizes = judged_sizes(table)
        has = sizes > 0
        top = np.zeros(table.num_queries, dtype=np.int64)
        top[has] = table.judged_grade[(np.cumsum(sizes) - sizes)[has]]
        scale = np.maximum(top, 1).astype(np.float64)
        gains = returned_gain(table) / scale[table.query]
        # summed in rank order (np.bincount adds in array order), as m_rbp.c's loop does
        return (1.0 - self.persistence) * table.per_query_sum(gains * self.weights(table))


@register
@dataclass(frozen=True)
class RBPResidual(_Persistent):
    """rbp_resid@p: how much RBP could still rise if every unjudged document were relevant.

    ``rbp_resid = p^n + (1 - p) * sum_{i unjudged} p^(i-1)`` over the n returned documents,
    the first term being the weight of the ranks past the end; 0 when every returned
    document is judged. A document is unjudged when the qrels lack it or give it a negative
    grade; a repeated document counts as unjudged (trec_eval ``rbp_resid``; Moffat and
    Zobel, ACM TOIS 27(1), 2008, §5).
    """

    name = "rbp_resid"
    aliases = ("rbp_residual",)
    trec_names: ClassVar[dict[str, tuple[str, ...]]] = {"rbp_resid": ()}
    summary = "The most RBP could rise if every unjudged document had full gain."

    def compute(self, table: RankTable) -> FloatArray:
        # The unjudged ranks are not rows of the table: every rank of every query, the
        # judged ones weighing 0. The weights are added one by one in rank order (np.bincount
        # adds in array order), as trec_eval does, rather than taken from 1 - p^n.
        p = self.persistence
        powers = self.powers(table)
        judged = table.grade >= 0
        starts = np.cumsum(table.num_ret) - table.num_ret
        every_query = np.repeat(np.arange(table.num_queries), table.num_ret)
        weights = powers[np.arange(len(every_query)) - np.repeat(starts, table.num_ret)]
        weights[starts[table.query[judged]] + table.rank[judged]] = 0.0
        weight = np.bincount(every_query, weights=weights, minlength=table.num_queries)
        counted = table.num_ret - table.per_query_count(judged)
        result: FloatArray = np.where(counted > 0, powers[table.num_ret] + (1 - p) * weight, 0.0)
        return result
