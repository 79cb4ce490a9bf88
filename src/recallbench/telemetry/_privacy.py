"""What of the agent's texts reaches the store: everything (the default), the texts with
the matches of ``redact`` patterns replaced by :data:`REDACTED`, or (``store_texts=False``)
no text at all: a query becomes a fingerprint of its words and its length, memory texts are
left out (their ids stay). Applied on the caller's thread, before a record is queued, so no
text the caller chose to hide ever sits in memory waiting for the writer or in the store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from recallbench.core._errors import ConfigError
from recallbench.core._query_key import query_key

REDACTED = "[redacted]"


@dataclass(frozen=True, slots=True)
class TextPolicy:
    store_texts: bool = True
    redact: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, store_texts: bool, redact: Iterable[str | re.Pattern[str]]) -> TextPolicy:
        """ConfigError naming the pattern when one does not compile."""
        patterns = []
        for pattern in redact:
            if isinstance(pattern, re.Pattern):
                patterns.append(pattern)
                continue
            try:
                patterns.append(re.compile(pattern))
            except re.error as error:
                raise ConfigError(f"redact pattern {pattern!r}: {error}") from None
            if patterns[-1].search(""):
                raise ConfigError(f"redact pattern {pattern!r} matches the empty string")
        return cls(store_texts, tuple(patterns))

    @property
    def keeps_everything(self) -> bool:
        return self.store_texts and not self.redact

    def query(self, text: str) -> str:
        if not self.store_texts:
            return withheld(text)
        return self._redacted(text)

    def texts(self, texts: Mapping[str, str]) -> dict[str, str]:
        if not self.store_texts:
            return {}
        return {doc_id: self._redacted(text) for doc_id, text in texts.items()}

    def _redacted(self, text: str) -> str:
        for pattern in self.redact:
            text = pattern.sub(REDACTED, text)
        return text


def withheld(text: str) -> str:
    """What is stored for a query when texts are withheld: the key of its words
    (:func:`recallbench.core._query_key.query_key`: queries that differ only in case and
    punctuation share it, so harvest still merges them and a shadow test still counts them
    as one) and its length in characters."""
    return f"[withheld sha256:{query_key(text)} {len(text)} chars]"
