"""Lazy re-exports (PEP 562): a package's public names are imported on first use, and
``dir(package)`` lists them before they are."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any


def lazy_exports(
    package: str, modules: Sequence[str], names: Sequence[str]
) -> Callable[[str], Any]:
    """A module ``__getattr__`` that finds each of ``names`` in the first of the package's
    private ``modules`` that defines it, imports it then, and caches it.

    Called from the package's ``__init__`` (``__getattr__ = lazy_exports(__name__, ...)``),
    it also gives the package a ``__dir__`` (unless it has its own): the names it holds and
    ``names``, so that ``dir()`` and tab completion show the public API before anything is
    imported.
    """
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

    module = sys.modules.get(package)
    if module is not None:
        namespace = module.__dict__

        def __dir__() -> list[str]:
            return sorted({*namespace, *public})

        namespace.setdefault("__dir__", __dir__)
    return __getattr__
