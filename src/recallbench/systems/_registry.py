"""Systems by name: the built-in ones and those of installed plugins.

A third-party package adds a system with an entry point in the group
``recallbench.systems`` whose object is a callable returning a ``SystemUnderTest``
(typically the class). The built-in systems are registered here; a plugin cannot shadow
them.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from recallbench.core import UnknownNameError
from recallbench.systems._protocol import SystemUnderTest

ENTRY_POINT_GROUP = "recallbench.systems"
DEFAULT_SYSTEM = "builtin"

Factory = Callable[..., SystemUnderTest]


def _builtin(channels: tuple[str, ...], name: str) -> Factory:
    def factory(**options: Any) -> SystemUnderTest:
        from recallbench.systems._builtin import BuiltinSystem

        return BuiltinSystem(channels=channels, name=name, **options)

    return factory


BUILTINS = {
    "builtin": ("lexical", "dense"),
    "builtin-hybrid": ("lexical", "dense"),
    "builtin-lexical": ("lexical",),
    "builtin-dense": ("dense",),
}
"""The built-in systems and their channels (``builtin`` is the hybrid)."""


def _factories() -> dict[str, Factory]:
    found: dict[str, Factory] = {name: _builtin(c, name) for name, c in BUILTINS.items()}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(entry.name, _lazy(entry.load))
    return found


def _lazy(load: Callable[[], Any]) -> Factory:
    def factory(**options: Any) -> SystemUnderTest:
        system: SystemUnderTest = load()(**options)
        return system

    return factory


def system_names() -> list[str]:
    return sorted(_factories())


def create_system(name: str = DEFAULT_SYSTEM, **options: Any) -> SystemUnderTest:
    """Build the system registered as ``name``."""
    factories = _factories()
    if name not in factories:
        known = ", ".join(sorted(factories))
        raise UnknownNameError(f"unknown system {name!r}; available: {known}")
    return factories[name](**options)
