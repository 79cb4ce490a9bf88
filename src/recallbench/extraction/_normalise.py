"""Text normalisation for the deterministic matching rules.

``normalise(text)`` is, in order:

1. Unicode NFKD, combining marks removed (``café`` -> ``cafe``), then casefold
   (``Straße`` -> ``strasse``).
2. Dates to ISO 8601: ``8 May, 2023``, ``May 8th 2023``, ``8th of May 2023`` and
   ``2023-5-8`` become ``2023-05-08``; a day and month without a year (``April 1st``)
   becomes ``--04-01`` (ISO 8601's notation for a date without its year). Slashed dates
   (``3/4/2023``) are ambiguous between day-first and month-first and stay as numbers.
3. Numbers: thousands separators dropped (``1,000`` -> ``1000``), ordinal suffixes dropped
   (``3rd`` -> ``3``), leading zeros dropped (``007`` -> ``7``), number words zero to
   twenty and the tens to ninety become digits (``two`` -> ``2``; compounds such as
   ``twenty-one`` become ``20 1``, the same on both sides).
4. Tokens: ISO dates, decimal numbers and runs of letters and digits (``\\w``); everything
   else (punctuation, symbols, underscores) separates tokens. The normalised text is the
   tokens joined by one space.

No stop words are removed and no stemming is done: every rule sees the same tokens, and
the rule's name says all that was done.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s*(\d{4}))?"
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}")
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY}\b{_YEAR}")
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_ORDINAL = re.compile(r"\b(\d+)(?:st|nd|rd|th)\b")
_TOKEN = re.compile(r"\d{4}-\d{2}-\d{2}|--\d{2}-\d{2}|\d+(?:\.\d+)?|[^\W_]+")
_WORDS = {
    word: str(value)
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ]
    )
} | {
    word: str(10 * tens)
    for tens, word in enumerate(
        ["thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 3
    )
}


def _date(year: str | None, month: int, day: str) -> str:
    if not 1 <= int(day) <= 31:
        return f"{day} {month}"  # not a day of the month: leave the numbers
    return f"{year}-{month:02d}-{int(day):02d}" if year else f"--{month:02d}-{int(day):02d}"


def _dates(text: str) -> str:
    text = _ISO.sub(lambda m: f"{m[1]}-{int(m[2]):02d}-{int(m[3]):02d}", text)
    text = _DAY_MONTH.sub(lambda m: _date(m[3], _MONTHS[m[2]], m[1]), text)
    return _MONTH_DAY.sub(lambda m: _date(m[3], _MONTHS[m[1]], m[2]), text)


def _number(token: str) -> str:
    if token in _WORDS:
        return _WORDS[token]
    if token.isdigit():
        return str(int(token))
    return token


@lru_cache(maxsize=65536)
def tokens(text: str) -> tuple[str, ...]:
    """The normalised tokens of ``text`` (see the module's rules)."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    plain = _THOUSANDS.sub("", plain)
    plain = _dates(plain)
    plain = _ORDINAL.sub(r"\1", plain)
    return tuple(_number(token) for token in _TOKEN.findall(plain))


def normalise(text: str) -> str:
    """``text`` normalised: its :func:`tokens` joined by single spaces."""
    return " ".join(tokens(text))
