"""Feature flags with a percentage rollout: which variant (memory profile) a unit — a
session, a user, a workspace — gets, deterministically.

A unit's bucket is a pure function of the flag's name and the unit's id,

    bucket(name, unit) = (first 8 bytes of sha256(name NUL unit), big-endian) mod 10^6 / 10^4,

a number in [0, 100) with steps of 0.0001; the unit gets the flag's ``variant`` when
``bucket < percent`` and the flag's ``fallback`` otherwise. So the same unit always gets the
same variant for a given percent; raising the percent only moves units from the fallback to
the variant (a unit in at 10% stays in at 50%), and different flags bucket independently
(the name is hashed in). The same scheme as the proxy's sampling of searches for
shadowing, keyed by the flag's name as well.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from recallbench.core._errors import ConfigError

if TYPE_CHECKING:
    from recallbench.store import FeatureFlag

OFF: Final = "off"
"""The variant of a unit outside the rollout of a flag without a fallback, or of a flag
that was never set."""


def bucket(name: str, unit_id: str) -> float:
    """The unit's bucket in [0, 100) for the flag ``name`` (module docstring)."""
    digest = hashlib.sha256(f"{name}\x00{unit_id}".encode()).digest()
    return (int.from_bytes(digest[:8], "big") % 1_000_000) / 10_000


def flag_variant(
    flags: Iterable[FeatureFlag] | Mapping[str, FeatureFlag],
    name: str,
    unit_id: str,
    default: str = OFF,
) -> str:
    """The variant of the flag ``name`` for the unit ``unit_id``: the flag's variant when
    the unit's bucket is below its percent, else its fallback (``default`` when it has none);
    ``default`` when there is no such flag. ``flags``: the flags' current states, as
    :meth:`Store.flags` gives them (a sequence; the last state of a name counts) or by name."""
    if not isinstance(unit_id, str) or not unit_id:
        raise ConfigError(f"flag {name}: the unit id must be a non-empty string, got {unit_id!r}")
    flag = flags.get(name) if isinstance(flags, Mapping) else _last(flags, name)
    if flag is None:
        return default
    if bucket(name, unit_id) < flag.percent:
        return flag.variant
    return flag.fallback if flag.fallback is not None else default


def variant_at(
    history: Sequence[FeatureFlag], name: str, unit_id: str, at: datetime, default: str = OFF
) -> str:
    """The variant the unit had at time ``at``: by the flag's state then (its latest state
    with ``updated_at <= at``; ``default`` before the first)."""
    then = [flag for flag in history if flag.name == name and flag.updated_at <= at]
    return flag_variant(then[-1:], name, unit_id, default)


def flag_json(flag: FeatureFlag) -> dict[str, Any]:
    """A flag's state as JSON (``recallbench flags list --format json``)."""
    return {
        "name": flag.name,
        "variant": flag.variant,
        "percent": flag.percent,
        "fallback": flag.fallback,
        "updated_at": flag.updated_at.isoformat(),
    }


def _last(flags: Iterable[FeatureFlag], name: str) -> FeatureFlag | None:
    found = None
    for flag in flags:
        if flag.name == name:
            found = flag
    return found
