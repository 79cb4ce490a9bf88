"""A system's name as a folder name (``--out DIR/<system>``, ``--record DIR/<system>``).

A name becomes a single path part: anything but letters, digits, ``_``, ``.`` and ``-``
turns into ``_`` (``command:python x.py`` -> ``command_python_x.py``), and a name made of
dots only (``..``) is refused, so no system can write outside the folder it was given.
"""

from __future__ import annotations

import re

from recallbench.core import ConfigError

_UNSAFE = re.compile(r"[^\w.\-]+")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a profile's name (it names folders as it is), or None."""
    if not name.strip():
        return "must not be empty"
    if "/" in name or "\\" in name or "\0" in name:
        return f"{name!r} must not contain a path separator"
    if set(name) == {"."}:
        return f"{name!r} must not be '.' or '..'"
    return None


def folder_for(name: str) -> str:
    """The folder name for system ``name``; ConfigError for a name of dots only."""
    safe = _UNSAFE.sub("_", name) or "system"
    if set(safe) == {"."}:
        raise ConfigError(
            f"system {name!r}: its name cannot name a folder under --out or --record "
            "(a name of dots only would leave the folder given)"
        )
    return safe
