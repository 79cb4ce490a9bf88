"""One identity for a query's text, wherever queries are grouped: the shadow's sampling
(which searches are mirrored), the unit of a shadow test's analysis (repeats of a text are
one observation), harvest's de-duplication, and the fingerprint stored when texts are
withheld. One normalisation for all of them, so that "Kestrel decision" and "kestrel
decision?" are one query everywhere, never sampled as one and counted as two.

``words(text)``: the lower-cased ``\\w+`` runs joined by single spaces (case, punctuation
and spacing do not matter); ``query_key(text)``: the first 16 hex digits of its sha256,
which is also the fingerprint a withheld text is stored as
(``[withheld sha256:KEY N chars]``), so a withheld entry keeps its key.
"""

from __future__ import annotations

import hashlib
import re

_WORDS = re.compile(r"\w+")
WITHHELD = re.compile(r"\[withheld sha256:([0-9a-f]+) \d+ chars\]")
"""What is stored for a query whose text is withheld (:func:`recallbench.telemetry.
_privacy.withheld`): its key, then its length. Harvest pools such queries by the key alone,
as it pools the words of queries with texts."""


def words(text: str) -> str:
    """``text`` normalised: its lower-cased words, one space apart."""
    return " ".join(_WORDS.findall(text.lower()))


def query_digest(text: str) -> bytes:
    """The sha256 of ``text``'s words (the sampling hash reads its first bytes)."""
    return hashlib.sha256(words(text).encode()).digest()


def query_key(text: str) -> str:
    """The key of ``text``'s query: the stored fingerprint of a withheld text, else the
    first 16 hex digits of the sha256 of its words."""
    withheld = WITHHELD.fullmatch(text)
    if withheld:
        return withheld.group(1)
    return query_digest(text).hex()[:16]
