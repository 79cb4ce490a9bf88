"""recallbench: measure, compare and gate the retrieval quality of AI-agent memory systems."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("recallbench")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
