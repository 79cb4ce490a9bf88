"""A shadow test's progress: everything its decision reads from the pairs, kept as the pairs
arrive in their order, so that a later decision adds only the pairs since.

:func:`recallbench.online._shadow_decide.decide` is this progress over all the pairs at
once; ``shadow status`` resumes a progress the store kept (a checkpoint,
:mod:`recallbench.online._shadow_checkpoint`) and adds the pairs settled since. Both give one
decision to the bit: every part of it is a running quantity whose update does not depend on
how the stream was cut:

* each measure's observations (:class:`~recallbench.online._shadow_units.Track`: a unit's
  first value, never revised);
* the betting or empirical-Bernstein confidence sequence, fed the primary measure's
  observations as they come (:meth:`BoundedCS.snapshot`); the mSPRT and SPRT are O(n) and
  are run again on the kept observations;
* the guardrails' per-pair columns (:class:`~recallbench.online._shadow_guard.GuardColumns`:
  their medians, p95s and sequences are read from the whole columns);
* counts: pairs, first picks of interleaved lists, interleaving outcomes, lists of unequal
  length, and whether a session held several query units (the validity warning).

A progress is saved as one ``.npz`` document of arrays (:meth:`Progress.dump`, no pickle: a
store's contents are not code), its unit lists apart and read only when pairs are added.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.online._shadow_guard import GuardColumns
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import PairScore, parse_measure
from recallbench.online._shadow_units import Track
from recallbench.stats._bounded_cs import BoundedCsSettings
from recallbench.stats._bounded_stream import BoundedCS

FORMAT: Final = 1
"""Version of :meth:`Progress.dump`'s document; another version is not read (rebuilt)."""
_OUTCOMES: Final = ("win", "tie", "loss")


def secondary_names(rule: GraduationRule) -> tuple[str, ...]:
    """The measures a decision reports beside its primary, at the primary's cutoff
    (:mod:`recallbench.online._shadow_secondary`)."""
    k = parse_measure(rule.measure)[1]
    return ("rr", f"hit@{k}", f"ndcg@{k}", "interleaving")


def tracked_measures(rule: GraduationRule) -> tuple[str, ...]:
    """The measures a decision reports: the primary, then the secondary ones
    (:mod:`recallbench.online._shadow_secondary`), each once."""
    return tuple(dict.fromkeys((rule.measure, *secondary_names(rule))))


def bounded_settings(rule: GraduationRule) -> BoundedCsSettings:
    """The confidence sequence of a rule whose method is ``betting`` or
    ``empirical_bernstein``."""
    return BoundedCsSettings(
        alpha=rule.alpha,
        method="betting" if rule.method == "betting" else "empirical_bernstein",
        max_samples=rule.max_queries,
    )


@dataclass(slots=True)
class Progress:
    """What a decision on ``rule`` reads from the pairs added so far (module docstring)."""

    rule: GraduationRule
    tracks: dict[str, Track]
    columns: GuardColumns
    pairs: int = 0
    first: list[int] = field(default_factory=lambda: [0, 0, 0])
    """Interleaved lists opened by the control's team, the treatment's, and all of them."""
    interleaved: int = 0
    unequal: int = 0
    """Interleaved pairs whose two lists differed in length."""
    outcomes: list[int] = field(default_factory=lambda: [0, 0, 0])
    """Interleaving wins, ties and losses of the treatment."""
    shared: bool = False
    """A session held searches of several query units (with query units only)."""
    sessions: dict[str, str] = field(default_factory=dict)
    """Session -> the query unit of its first search, until ``shared``."""
    sequential: BoundedCS | None = None
    """The bounded confidence sequence, fed the primary's observations (betting, EB)."""
    fed: int = 0
    """Primary observations fed to :attr:`sequential`."""
    _index: bytes | None = None
    """The saved unit lists and sessions, not yet read (:meth:`load`)."""

    @classmethod
    def start(cls, rule: GraduationRule) -> Progress:
        """No pair yet."""
        bounded = rule.method in ("betting", "empirical_bernstein")
        return cls(
            rule=rule,
            tracks={m: Track(m, rule.unit) for m in tracked_measures(rule)},
            columns=GuardColumns.of([]),
            sequential=BoundedCS(bounded_settings(rule)) if bounded else None,
        )

    @property
    def primary(self) -> Track:
        return self.tracks[self.rule.measure]

    def add(
        self,
        rows: Sequence[Mapping[str, Any]],
        scores: Sequence[PairScore],
        keys: Mapping[str, str],
    ) -> None:
        """Add the next pairs ``rows`` (as :meth:`Store.shadow_runs` gives them, oldest
        first) with their ``scores``; ``keys``: query id -> query unit key."""
        if len(rows) != len(scores):
            raise ConfigError(f"shadow progress: {len(rows)} rows but {len(scores)} scores")
        if not rows:
            return
        self._read_index()
        for track in self.tracks.values():
            track.add(scores, keys)
        self.columns = self.columns.extended(GuardColumns.of(rows))
        self.pairs += len(rows)
        for row in rows:
            shown = row.get("interleaved")
            if shown:
                team = shown[0][1]
                self.first[2] += 1
                if team in ("control", "treatment"):
                    self.first[int(team == "treatment")] += 1
        for score in scores:
            if score.interleaved:
                self.interleaved += 1
                self.unequal += score.unequal_lengths
            if score.outcome is not None:
                self.outcomes[_OUTCOMES.index(score.outcome)] += 1
        if self.rule.unit == "query" and not self.shared:
            self._sessions(scores, keys)
        values = self.primary.values
        if self.sequential is not None and len(values) > self.fed:
            self.sequential.update(values[self.fed :])
            self.fed = len(values)

    def _sessions(self, scores: Sequence[PairScore], keys: Mapping[str, str]) -> None:
        for score in scores:
            if score.session_id:
                key = keys.get(score.query_id, score.query_id)
                if self.sessions.setdefault(score.session_id, key) != key:
                    self.shared = True
                    self.sessions = {}
                    return

    # -- saving ------------------------------------------------------------------------

    def dump(self) -> bytes:
        """This progress as an ``.npz`` document (module docstring)."""
        arrays: dict[str, Any] = {}
        for name, track in self.tracks.items():
            arrays[f"values.{name}"] = np.asarray(track.values, dtype=np.float64)
        for item in fields(GuardColumns):
            arrays[f"columns.{item.name}"] = getattr(self.columns, item.name)
        meta: dict[str, Any] = {
            "format": FORMAT,
            "rule": self.rule.to_dict(),
            "pairs": self.pairs,
            "first": self.first,
            "interleaved": self.interleaved,
            "unequal": self.unequal,
            "outcomes": self.outcomes,
            "shared": self.shared,
            "fed": self.fed,
            "tracks": {
                name: [track.measured, track.repeats, track.exposed]
                for name, track in self.tracks.items()
            },
        }
        if self.sequential is not None:
            snapshot = self.sequential.snapshot()
            meta["decision"] = snapshot.pop("decision")
            arrays.update({f"cs.{name}": value for name, value in snapshot.items()})
        self._read_index()
        index = {
            "units": {name: track.units for name, track in self.tracks.items()},
            "sessions": self.sessions,
        }
        arrays["meta"] = _text(meta)
        arrays["index"] = _text(index)
        out = io.BytesIO()
        np.savez(out, allow_pickle=False, **arrays)
        return out.getvalue()

    @classmethod
    def load(cls, rule: GraduationRule, document: bytes) -> Progress | None:
        """The progress :meth:`dump` wrote for ``rule``; None when it was written in another
        format or for another rule (it is then rebuilt)."""
        try:
            arrays = np.load(io.BytesIO(document), allow_pickle=False)
            meta = json.loads(bytes(arrays["meta"]).decode())
        except (OSError, ValueError, KeyError):
            return None
        if meta.get("format") != FORMAT or meta.get("rule") != rule.to_dict():
            return None
        tracks = {}
        for name, (measured, repeats, exposed) in meta["tracks"].items():
            values = arrays[f"values.{name}"].tolist()
            tracks[name] = Track(name, rule.unit, values, [], measured, repeats, exposed)
        if set(tracks) != set(tracked_measures(rule)):
            return None
        columns = GuardColumns(*(arrays[f"columns.{item.name}"] for item in fields(GuardColumns)))
        sequential = None
        if "decision" in meta:
            snapshot: dict[str, Any] = {
                name[3:]: arrays[name] for name in arrays.files if name.startswith("cs.")
            }
            snapshot["decision"] = meta["decision"]
            sequential = BoundedCS.restore(bounded_settings(rule), snapshot)
        return cls(
            rule=rule,
            tracks=tracks,
            columns=columns,
            pairs=meta["pairs"],
            first=meta["first"],
            interleaved=meta["interleaved"],
            unequal=meta["unequal"],
            outcomes=meta["outcomes"],
            shared=meta["shared"],
            sequential=sequential,
            fed=meta["fed"],
            _index=bytes(arrays["index"]),
        )

    def _read_index(self) -> None:
        """Read the unit lists :meth:`load` left aside (needed to add pairs)."""
        if self._index is None:
            return
        index = json.loads(self._index.decode())
        self._index = None
        for name, units in index["units"].items():
            track = self.tracks[name]
            track.units = units
            track._seen = None
        self.sessions = index["sessions"]


def _text(value: Any) -> np.ndarray[Any, np.dtype[np.uint8]]:
    return np.frombuffer(json.dumps(value, separators=(",", ":")).encode(), dtype=np.uint8)
