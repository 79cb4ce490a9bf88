"""Import every public module of this package, so each measure file registers itself."""

from __future__ import annotations

import importlib
import pkgutil


def load_measure_modules() -> None:
    """Measures live one per module; adding a file is enough to make a measure parseable."""
    package = __name__.rpartition(".")[0]
    path = importlib.import_module(package).__path__
    for module in pkgutil.iter_modules(path):
        if not module.name.startswith("_"):
            importlib.import_module(f"{package}.{module.name}")
