"""The unit of analysis of a shadow test: what one observation of its sequential test is.

Agents search the same text again (a retry, a follow-up, a loop), and every logged search
is a pair. Counting each pair as an independent observation counts one query's difference
R times, which no sequential test allows: the null false-positive rate rose to 0.20, 0.39
and 0.68 with every text searched 2, 3 and 5 times. So a test's observations are units,
chosen when the test starts and stored with its rule:

* ``session`` (default): one observation per agent session (pairs without a session are
  their own query unit). Searches of one session share its task, its agent and its
  memories, so their differences are correlated: with a session effect, one observation
  per query rejected an equal treatment 0.087 of the time at alpha 0.05 in simulation
  (``benchmarks/shadow_validity.py``), one per session 0.017;
* ``query``: one observation per distinct query text, normalised as the sampling hash
  normalises it (:mod:`recallbench.core._query_key`: lower-cased words, so "Kestrel
  decision" and "kestrel decision?" are one unit; a text logged withheld keeps its key).
  For traffic whose sessions are short or unrelated; it decides with fewer sessions.

Repeats are aggregated by taking the **first** pair of the unit that has a value of the
measure; later pairs of the unit are counted as repeats and left out. The first, because
a sequential test reads its observations in one fixed order and never revises one: the
mean or the last of a unit's pairs would change an observation already tested, which the
always-valid guarantee does not cover.

Exposure: without interleaving the agent saw only the control's list, so it could only
read, validate or reference what the control showed, and ``rr`` or ``hit`` from its
feedback favour the control (equal and better candidates were rolled back in every one of
400 simulated streams). Click measures therefore take interleaved pairs only; label
measures (``ndcg@k`` from manual or judge labels of both lists) and the interleaving
credit take what applies to them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from recallbench.online._shadow_score import PairScore, parse_measure

Unit = Literal["query", "session"]
UNITS: Final[tuple[Unit, ...]] = ("query", "session")
CLICK_MEASURES: Final = frozenset({"rr", "hit"})
"""Measures read from the agent's feedback on one side's list."""
EXPOSURE_HELP: Final = (
    "the agent could only read what the control showed, so {measure} from its reads "
    "favours the control; run the proxy with --interleave (both lists shown, merged), or "
    "measure with labels of both lists (--measure ndcg@10 from manual or judge labels)"
)


@dataclass(frozen=True, slots=True)
class Observations:
    """The sequential test's observations: one paired difference per unit."""

    values: tuple[float, ...]
    """Per unit, in the order each unit was first measured."""
    units: tuple[str, ...]
    measured_pairs: int
    """Pairs with a value of the measure (before units were formed)."""
    repeats: int
    """Of those, pairs of a unit already observed (left out)."""
    not_interleaved: int
    """Pairs a click measure could not use: not interleaved (exposure)."""


def unit_of(score: PairScore, keys: Mapping[str, str], unit: Unit) -> str:
    """The unit of the pair ``score``: its session, or its text's key (``keys``: query id
    -> :func:`recallbench.core._query_key.query_key` of its logged text; a query whose text
    is unknown is a unit of its own)."""
    if unit == "session" and score.session_id:
        return f"session:{score.session_id}"
    return f"query:{keys.get(score.query_id, score.query_id)}"


@dataclass(slots=True)
class Track:
    """The observations of one measure, formed as the pairs arrive in order (module
    docstring): what :func:`observations` returns, kept so that later pairs can be added."""

    measure: str
    unit: Unit
    values: list[float] = field(default_factory=list)
    units: list[str] = field(default_factory=list)
    """The unit of each value, in order: the units already observed."""
    measured: int = 0
    repeats: int = 0
    exposed: int = 0
    _seen: set[str] | None = None

    def add(self, scores: Iterable[PairScore], keys: Mapping[str, str]) -> None:
        """Observe ``scores`` (the next pairs, oldest first)."""
        clicks = parse_measure(self.measure)[0] in CLICK_MEASURES
        if self._seen is None:
            self._seen = set(self.units)
        seen = self._seen
        for score in scores:
            difference = score.difference(self.measure)
            if difference is None:
                continue
            if clicks and not score.interleaved:
                self.exposed += 1
                continue
            self.measured += 1
            key = unit_of(score, keys, self.unit)
            if key in seen:
                self.repeats += 1
                continue
            seen.add(key)
            self.values.append(difference)
            self.units.append(key)

    def observations(self) -> Observations:
        return Observations(
            tuple(self.values), tuple(self.units), self.measured, self.repeats, self.exposed
        )


def observations(
    scores: Sequence[PairScore], measure: str, keys: Mapping[str, str], unit: Unit = "session"
) -> Observations:
    """The observations of ``measure`` over ``scores`` (oldest first): the first value of
    each unit, click measures on interleaved pairs only (module docstring)."""
    track = Track(measure, unit)
    track.add(scores, keys)
    return track.observations()
