"""Lazy re-exports (PEP 562): a package's public names are imported on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any


def lazy_exports(
    package: str, modules: Sequence[str], names: Sequence[str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that finds each of ``names`` in the first of the package's
    private ``modules`` that defines it, imports it then, and caches it."""
    public = set(names)

    def __getattr__(name: str) -> Any:
        if name in public:
            namespace = importlib.import_module(package).__dict__
            for module in modules:
                loaded = importlib.import_module(f"{package}.{module}")
                if hasattr(loaded, name):
                    namespace[name] = getattr(loaded, name)
                    return namespace[name]
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
