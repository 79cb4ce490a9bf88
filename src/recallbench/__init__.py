"""recallbench: measure, compare and gate the retrieval quality of AI-agent memory systems.

``recallbench.evaluate(qrels, run, measures)`` is the one-call API; the subpackages hold
the rest (``datasets``, ``measures``, ``systems``, ``runner``, ``report``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recallbench._version import __version__

if TYPE_CHECKING:
    from recallbench._api import evaluate


def __getattr__(name: str) -> Any:
    if name == "evaluate":  # imported on first use: `import recallbench` stays instant
        from recallbench._api import evaluate

        return evaluate
    raise AttributeError(f"module 'recallbench' has no attribute {name!r}")


__all__ = ["__version__", "evaluate"]
