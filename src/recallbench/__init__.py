"""recallbench: measure, compare and gate the retrieval quality of AI-agent memory systems.

``recallbench.evaluate(qrels, run, measures)`` scores a run in one call;
``recallbench.compare(a, b, measures=...)`` compares two systems' runs or reports with
paired statistics, as ``recallbench compare`` does; the subpackages hold the rest
(``datasets``, ``measures``, ``systems``, ``runner``, ``report``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from recallbench._lazy import lazy_exports
from recallbench._version import __version__

if TYPE_CHECKING:
    from recallbench._api import evaluate

__all__ = ["__version__", "compare", "evaluate"]

# imported on first use: `import recallbench` stays instant; dir() lists them before
_exports = lazy_exports(__name__, ("_api",), ["compare", "evaluate"])


def __getattr__(name: str) -> Any:
    if name == "compare":  # the subpackage, callable as recallbench.compare(a, b, ...)
        return importlib.import_module("recallbench.compare")
    return _exports(name)
