"""Text embedders for the built-in dense channel: wordllama (static, torch-free, weights
inside its wheel) or a deterministic hashing stub for fast tests."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from recallbench.core import SystemUnderTestError, UnknownNameError

Matrix = npt.NDArray[np.float32]
_WORD = re.compile(r"\w+", re.UNICODE)


class Embedder(Protocol):
    """Texts in, one unit-length row per text out."""

    name: str

    def embed(self, texts: Sequence[str]) -> Matrix: ...


def normalise(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    result: Matrix = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return result


class WordLlamaEmbedder:
    """wordllama's 256-dimensional static embeddings (about 30 ms per 1,000 texts here).

    Loaded from the package's own folder with downloads disabled: nothing leaves the
    machine (the plain ``disable_download=True`` looks in the wrong folder).
    """

    name = "wordllama"

    def __init__(self) -> None:
        self._model = _load_wordllama()

    def embed(self, texts: Sequence[str]) -> Matrix:
        vectors = np.asarray(self._model.embed(list(texts), norm=False), dtype=np.float32)
        return normalise(vectors.reshape(len(texts), -1))


@cache
def _load_wordllama() -> Any:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError:  # pragma: no cover - wordllama is a dependency
        raise SystemUnderTestError(
            "the dense channel needs wordllama: pip install wordllama"
        ) from None
    finally:
        # wordllama calls logging.basicConfig(level=INFO) on import, which would print
        # every HTTP request of the judge and the servers; the application owns logging
        for handler in root.handlers[len(handlers) :]:
            root.removeHandler(handler)
        root.setLevel(level)
    return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


class StubEmbedder:
    """Feature hashing of lower-cased words into 256 dimensions: deterministic, no model,
    for tests that exercise the dense plumbing, not its quality."""

    name = "stub"
    dimensions = 256

    def embed(self, texts: Sequence[str]) -> Matrix:
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                vectors[row, int.from_bytes(digest[:4], "little") % self.dimensions] += (
                    1.0 if digest[4] & 1 else -1.0
                )
        return normalise(vectors)


def make_embedder(name: str) -> Embedder:
    """The embedder called ``name`` (``wordllama`` or ``stub``)."""
    if name == "wordllama":
        return WordLlamaEmbedder()
    if name == "stub":
        return StubEmbedder()
    raise UnknownNameError(f"unknown embedder {name!r}; available: stub, wordllama")
