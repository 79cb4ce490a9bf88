"""Removing secrets from text before it is stored or printed.

Endpoints echo what they were sent: an error body may quote the ``Authorization`` header,
an exception may name a header value. Every error text built from such a source goes
through :func:`redact` with the secrets of that call (the judge's API key, the ``${ENV}``
values of an HTTP profile's headers) at the point where it is made, so that no later
writer (run files, reports, recordings, judged outputs, the terminal, the judge cache) has
to know which secrets exist.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"
"""What a secret is replaced by."""


def spellings(secret: str) -> list[str]:
    """The ways an echo may spell ``secret``: as sent, JSON-escaped, in a Python repr
    (exception messages quote bytes that way) and URL-encoded."""
    forms = {
        secret,
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(secret)[1:-1],
        repr(secret)[1:-1],
        repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
    }
    return sorted(form for form in forms if form)


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every spelling of every non-empty secret replaced by ``[redacted]``.

    Any non-empty value counts, however short: a value the user marked secret (by putting it
    in an environment variable for a key or a header) is not ours to judge.
    """
    forms = sorted({form for secret in secrets if secret for form in spellings(secret)}, key=len)
    if not forms:
        return text
    # One pass, longest spelling first: a replacement is never searched again.
    pattern = "|".join(re.escape(form) for form in reversed(forms))
    return re.sub(pattern, REDACTED, text)
