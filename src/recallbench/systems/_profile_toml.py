"""The profile ``systems init`` proposes, written as TOML with comments that say what was
guessed, how sure, and (when no working profile was found) why.

Every key and string is quoted and escaped as TOML requires (whatever a server names its
tools and arguments, or says in an error), and every comment line is one line of text: a
message that spans lines (a server's pretty-printed JSON error) becomes several comment
lines. The text is read back through :class:`~recallbench.systems._profile.Profile` before
it is written, so what lands on disk is a profile recallbench can load; when it does not
read back, :class:`UnreadableProfileError` says why and nothing is written.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from recallbench.core import RecallbenchError
from recallbench.systems._check import EXIT_NO_PROFILE, CheckLine
from recallbench.systems._profile import Ingest, Profile, Reset, Results, Search, Server
from recallbench.systems._profile_probe import Probed

BATCH_SIZE = 50
_RESULT_KEYS = {"source", "hits", "id", "text", "score", "match", "ranked"}


_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_MUST_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f\ud800-\udfff]')
"""Quotes, backslashes, control characters, and lone surrogates (which no TOML escape
holds: their ``\\uD800`` makes the read-back fail, with a clear error)."""
_NOT_IN_COMMENTS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\ud800-\udfff]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


class UnreadableProfileError(RecallbenchError):
    """The TOML written for a proposal does not load back as the same profile (a bug in
    this writer): nothing is written. Exit 1, as when no working profile was found."""

    exit_code = EXIT_NO_PROFILE


def toml_string(text: str) -> str:
    """``text`` as a TOML basic string: quotes, backslashes and control characters
    escaped, everything else (any Unicode character) as is."""
    return '"' + _MUST_ESCAPE.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04X}"


def toml_value(value: Any) -> str:
    """A JSON value as a TOML value (strings as basic strings, objects as inline tables).
    TOML has no null: None is refused (TypeError), as is anything that is not JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        inner = ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }"
    raise TypeError(f"no TOML value for {value!r}")


def toml_key(name: str) -> str:
    """A key, bare when TOML allows it (letters, digits, ``_``, ``-``), else quoted: a
    dot, space, quote, ``=`` or any other character cannot end or split the key."""
    return name if _BARE_KEY.fullmatch(name) else toml_string(name)


def comment_lines(lines: list[str]) -> list[str]:
    """``lines`` as TOML comments: each line break (``\\n``, ``\\r``, Unicode's) starts a
    new comment line (indented under the first), and the control characters a comment may
    not hold are shown escaped as Python would (``\\x00``)."""
    out = []
    for line in lines:
        first, *rest = line.splitlines() or [""]
        indent = " " * (len(first) - len(first.lstrip()) + 2)
        for part in [first, *(indent + part for part in rest)]:
            shown = _NOT_IN_COMMENTS.sub(lambda m: ascii(m.group())[1:-1], part)
            out.append(f"# {shown}".rstrip())
    return out


@dataclass
class Proposal:
    """Everything the written profile says."""

    name: str
    server: Server
    probed: Probed
    tools: int
    """How many tools the server listed."""
    check: list[CheckLine] = field(default_factory=list)
    passed: bool = False
    ingest_fallback: Any = None
    search_fallback: Any = None


def profile_of(proposal: Proposal) -> Profile | None:
    """The proposed profile: what probing confirmed, else the best guesses (None when
    there is no ingest or no search candidate at all)."""
    probed = proposal.probed
    ingest = probed.ingest or proposal.ingest_fallback
    search = probed.search or proposal.search_fallback
    if ingest is None or search is None:
        return None
    arguments = probed.arguments or search.template.arguments
    located = probed.located
    results = located.results(probed.empty) if located is not None else Results()
    batch: dict[str, Any] = {}
    if ingest.batch_field:
        limit = ingest.tool.properties.get(ingest.batch_field, {}).get("maxItems")
        size = min(BATCH_SIZE, limit) if isinstance(limit, int) and limit >= 1 else BATCH_SIZE
        batch = {"batch_size": size, "batch_field": ingest.batch_field}
    reset = probed.reset
    return Profile(
        name=proposal.name,
        description=f"proposed by recallbench systems init ({proposal.tools} tools listed)",
        server=proposal.server,
        ingest=Ingest(tool=ingest.tool.name, item=ingest.item, **batch),
        search=Search(tool=search.tool.name, arguments=arguments, max_k=search.max_k),
        results=results,
        reset=Reset(tool=reset.tool.name, arguments=reset.arguments) if reset else None,
    )


def _table(name: str, values: dict[str, JsonValue | None]) -> list[str]:
    lines = [f"[{name}]"]
    lines.extend(f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items() if v is not None)
    return lines


def guess_lines(proposal: Proposal) -> list[str]:
    """What was guessed and how sure, one line each (for the comments and the terminal)."""
    probed = proposal.probed
    lines = []
    ingest = probed.ingest or proposal.ingest_fallback
    search = probed.search or proposal.search_fallback
    if ingest is not None:
        lines.append(str(ingest.guess) + ("" if probed.ingest else " [not confirmed]"))
        lines.append("  item: " + "; ".join(ingest.notes))
    if search is not None:
        lines.append(str(search.guess) + ("" if probed.search else " [not confirmed]"))
        notes = list(search.template.notes)
        for name, value in probed.arguments.items():
            if search.template.arguments.get(name) != value:
                notes.append(f"{name} = {toml_value(value)} (the answer without it was unreadable)")
        lines.append("  arguments: " + "; ".join(notes))
    if probed.located is not None:
        lines.append(
            f"results: {probed.located.describe()} (found by ingesting 3 documents and "
            "searching for one; sure)"
        )
        scored = probed.located.score
        lines.append(
            f"  ranked: {'yes, scores at ' + repr(scored) if scored else 'no scores, so no'}"
            " (a guess: check the server's documentation)"
        )
        if probed.nothing is not None:
            lines.append(f"  empty: {probed.nothing}")
    else:
        lines.append("results: not found (the [results] below are the defaults; a guess)")
    if probed.reset is not None:
        lines.append(f"reset: {probed.reset.tool.name} ({probed.reset.why}; checked: sure)")
    else:
        lines.append("reset: none found (each unit of a dataset starts a fresh server)")
    return lines


def render(proposal: Proposal, profile: Profile) -> str:
    """The profile's TOML text, with the comments; checked to load back as ``profile``
    (UnreadableProfileError when it does not, or holds a value TOML cannot say)."""
    try:
        text = _text(proposal, profile)
    except TypeError as error:  # a null in a schema's value: TOML has none
        raise UnreadableProfileError(
            f"systems init: the profile proposed for {profile.name!r} holds a value TOML "
            f"cannot write ({error}; TOML has no null); nothing was written"
        ) from None
    read_back(text, profile)
    return text


def _text(proposal: Proposal, profile: Profile) -> str:
    verdict = "passed" if proposal.passed else "FAILED: this is a best guess, see the reasons below"
    head = [
        f"{profile.name}: proposed by `recallbench systems init` from the {proposal.tools} "
        "tools the server listed.",
        f"The check (as `recallbench systems check`) {verdict}.",
        "",
        "What was guessed, and how sure:",
        *[f"  {line}" for line in guess_lines(proposal)],
    ]
    if proposal.check:
        head += ["", "The check:", *[f"  {line}" for line in proposal.check]]
    if not proposal.passed and proposal.probed.reasons:
        head += ["", "Why no working profile was found:"]
        head += [f"  - {reason}" for reason in proposal.probed.reasons[:12]]
    data = profile.model_dump(mode="json", exclude_defaults=True)
    server = data["server"]
    lines = comment_lines(head)
    lines += [
        f"name = {toml_value(profile.name)}",
        f"description = {toml_value(profile.description)}",
    ]
    lines += ["", *_table("server", server)]
    keys = _RESULT_KEYS | ({"empty"} if profile.results.empty else set())
    data["results"] = profile.results.model_dump(mode="json", include=keys)
    for table in ("ingest", "search", "results", "reset"):
        if table in data:
            lines += ["", *_table(table, data[table])]
    return "\n".join(lines) + "\n"


def read_back(text: str, profile: Profile) -> None:
    """Load ``text`` as a profile: UnreadableProfileError unless it is ``profile``."""
    try:
        loaded = Profile.model_validate(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValueError) as error:
        why = f"{type(error).__name__}: {error}"
    else:
        if loaded == profile:
            return
        why = "it loads as a different profile"
    raise UnreadableProfileError(
        f"systems init: the TOML written for {profile.name!r} does not read back ({why}); "
        "nothing was written. This is a bug in recallbench: please report it with the "
        "server's command."
    )
