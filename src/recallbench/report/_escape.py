"""Text from datasets, systems and users in the Markdown outputs (report.md, the
leaderboards, comparison.md, the QA and extraction reports).

Dataset and system text is data, never Markup: a query text ``<img src=x onerror=...>``
must render as those characters, not as an image with a handler, in a renderer that allows
raw HTML (GitHub, most Markdown previews); and a ``|`` or a line break in a memory id must
not end its table cell or its line. :func:`md_text` is the one escape every such text goes
through; :func:`md_code` shows an id as code when a code span can hold it unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_INLINE = re.compile(r"[\\`*\[\]|~$<]|&(?=#?[0-9A-Za-z]+;)|(?<![^\W_])_|_(?![^\W_])")
"""What has a meaning anywhere in a line of CommonMark/GFM text: backslash, code, emphasis
(``_`` only where it is not inside a word: ``cold_start`` cannot emphasise), links and
images, table cells, strikethrough, math (GitHub), HTML and autolinks (``<``: with it
escaped no tag can open, so ``>`` stays as it is) and entities (``&`` before ``name;`` or
``#123;`` only)."""
_ENTITIES = {"<": "&lt;", "&": "&amp;"}
_BLOCK_START = re.compile(r"^(?:#{1,6}(?= |$)|[-+](?= |$)|-(?=[- ]*$)|>)")
"""What makes the start of a line (or of a list item's text) a heading, a list item, a
thematic break or a quote."""
_NUMBERED = re.compile(r"^(\d{1,9})(?=[.)](?: |$))")
"""The start of a numbered list item."""


def md_text(text: str) -> str:
    """``text`` as Markdown inline text that renders as the same visible characters.

    Line breaks and runs of white space become one space (a line or a table cell stays
    one); ``<`` becomes ``&lt;`` (so no tag or attribute can open, whatever the renderer's
    HTML setting) and an ``&`` that would start an entity ``&amp;``; the other characters
    with a meaning inside a line (``\\ ` * _ [ ] | ~ $``) are backslash-escaped, which
    CommonMark and GFM (table cells included) render as the character itself; a start
    that would make a heading, a list item, a thematic break or a quote of the line is
    escaped too.
    """
    flat = " ".join(text.split())
    escaped = _INLINE.sub(lambda m: _ENTITIES.get(m.group(), "\\" + m.group()), flat)
    escaped = _BLOCK_START.sub(lambda m: "\\" + m.group(), escaped)
    return _NUMBERED.sub(lambda m: m.group(1) + "\\", escaped)


def md_code(text: str) -> str:
    """``text`` as a code span (an id, a path) when one shows it unchanged: no backtick,
    no ``|`` (it would end a table cell), no line break or edge space; else
    :func:`md_text`. Code spans show HTML as text."""
    if text and "`" not in text and "|" not in text and text == " ".join(text.split()):
        return f"`{text}`"
    return md_text(text)


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines of a Markdown table of plain-text cells, each escaped with :func:`md_text`
    (names, query texts and dataset text are data)."""
    return [
        "| " + " | ".join(map(md_text, header)) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(map(md_text, row)) + " |" for row in rows),
    ]
