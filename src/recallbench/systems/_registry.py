"""Systems by name: the built-in ones and those of installed plugins.

A third-party package adds a system with an entry point in the group
``recallbench.systems`` whose object is a callable returning a ``SystemUnderTest``
(typically the class). The built-in systems are registered here; a plugin cannot shadow
them.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
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
    """Built-in systems, shipped MCP profiles and plugins' systems."""
    from recallbench.systems._profile import shipped_profiles

    return sorted({*_factories(), *shipped_profiles()})


def create_system(name: str = DEFAULT_SYSTEM, **options: Any) -> SystemUnderTest:
    """Build the system registered as ``name``, a shipped MCP profile, or the profile in
    the TOML file ``name``."""
    from recallbench.systems._mcp import MCPSystem
    from recallbench.systems._profile import (
        is_http_profile,
        load_profile,
        read_profile,
        shipped_profiles,
    )

    factories = _factories()
    if name in factories:
        return factories[name](**options)
    kind, colon, target = name.partition(":")
    if colon and kind == "python":
        from recallbench.systems._python import PythonSystem

        return PythonSystem(target)
    if colon and kind == "command":
        from recallbench.systems._command import CommandSystem

        return CommandSystem(target, **options)
    profiles = shipped_profiles()
    if name in profiles or name.endswith(".toml"):
        path = profiles.get(name, Path(name))
        if is_http_profile(path):
            from recallbench.systems._http import HttpProfile, HttpSystem

            return HttpSystem(read_profile(path, HttpProfile))
        return MCPSystem(load_profile(path), **options)
    known = ", ".join(sorted({*factories, *profiles}))
    raise UnknownNameError(
        f"unknown system {name!r}; available: {known} (or a profile file NAME.toml, "
        "python:MODULE:FACTORY, command:COMMAND LINE)"
    )
