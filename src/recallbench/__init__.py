"""recallbench: measure, compare and gate the retrieval quality of AI-agent memory systems.

``recallbench.evaluate(qrels, run, measures)`` is the one-call API; the subpackages hold
the rest (``datasets``, ``measures``, ``systems``, ``runner``, ``report``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports
from recallbench._version import __version__

if TYPE_CHECKING:
    from recallbench._api import evaluate

__all__ = ["__version__", "evaluate"]

# imported on first use: `import recallbench` stays instant; dir() lists them before
__getattr__ = lazy_exports(__name__, ("_api",), ["evaluate"])
