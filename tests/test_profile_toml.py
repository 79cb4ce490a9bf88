"""The TOML `systems init` writes: every key and string quoted and escaped as TOML wants,
every comment one line, whatever a server names its tools and arguments or says in its
errors (dots, spaces, quotes, ``=``, newlines, control characters, any Unicode); a text that
does not read back is a clear error, not a crash."""

from __future__ import annotations

import json
import math
import re
import tomllib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.core import RecallbenchError
from recallbench.systems._check import EXIT_NO_PROFILE, CheckLine
from recallbench.systems._profile import Ingest, Profile, Reset, Results, Search, Server
from recallbench.systems._profile_probe import Probed
from recallbench.systems._profile_toml import (
    Proposal,
    UnreadableProfileError,
    comment_lines,
    read_back,
    render,
    toml_key,
    toml_value,
)

ODD = ("a.b", "two words", 'say "hi"', "it's", "k=v", "=", "", "é日本🙂", "a\nb", "\r\n",
       "#", "[t]", "{x}", "\\", "\\u0041", "\x00", "\x7f", "\t", "\u2028", "\x85",
       "\x1b[0m")  # fmt: skip
texts = st.one_of(
    st.sampled_from(ODD),
    st.text(),
    st.text(alphabet=".= \"'\n\r\t\\#[]{}é\x00\x1f\x7f\u2028", max_size=12),
)


def _objects(floats: st.SearchStrategy[float]) -> st.SearchStrategy[dict[str, Any]]:
    integers = st.integers(min_value=-(2**63), max_value=2**63 - 1)
    scalars = st.one_of(texts, st.booleans(), integers, floats)
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
        max_leaves=8,
    )
    return st.dictionaries(texts, values, max_size=4)


objects = _objects(st.floats(allow_nan=False))
finite_objects = _objects(st.floats(allow_nan=False, allow_infinity=False))
"""A profile's values are finite (its model refuses inf)."""


@given(objects)
def test_keys_and_values_read_back_as_written(value: dict[str, Any]) -> None:
    lines = [f"{toml_key(key)} = {toml_value(item)}" for key, item in value.items()]
    assert tomllib.loads("\n".join(lines)) == value
    assert tomllib.loads(f"inline = {toml_value(value)}") == {"inline": value}


@pytest.mark.parametrize("key", ["a.b", "a b", "a=b", '"', "", "é", "a\nb"])
def test_a_key_that_is_not_bare_is_quoted(key: str) -> None:
    assert tomllib.loads(f"{toml_key(key)} = 1") == {key: 1}
    assert toml_key("memory_storeKnowledge") == "memory_storeKnowledge"


def test_floats_that_json_cannot_say_are_toml_floats() -> None:
    assert tomllib.loads(f"x = {toml_value(math.inf)}")["x"] == math.inf
    assert tomllib.loads(f"x = {toml_value(-math.inf)}")["x"] == -math.inf
    assert math.isnan(tomllib.loads(f"x = {toml_value(math.nan)}")["x"])
    with pytest.raises(TypeError, match="no TOML value for None"):
        toml_value({"a": None})


@given(st.lists(texts, max_size=5))
def test_comments_stay_comments(lines: list[str]) -> None:
    written = comment_lines(lines)
    assert all(line.startswith("#") for line in written)
    assert tomllib.loads("\n".join(written) + "\nafter = 1\n") == {"after": 1}


def test_a_multi_line_error_becomes_several_comment_lines() -> None:
    error = json.dumps({"error": "VALIDATION_ERROR", "message": "Title is required"}, indent=2)
    written = comment_lines([f"  - memory_storeKnowledge: failed: {error}"])
    assert written[0] == "#   - memory_storeKnowledge: failed: {"
    assert written[1] == '#       "error": "VALIDATION_ERROR",'
    assert written[-1] == "#     }"


def _proposal(name: str, reasons: list[str], check: list[str]) -> Proposal:
    server = Server(command=["node", "index.js"])
    probed = Probed(reasons=list(reasons))
    lines = [CheckLine(False, text) for text in check]
    return Proposal(name=name, server=server, probed=probed, tools=3, check=lines)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["ai-devkit-memory", "é.memory", "a b", "x=y"]),
    words=st.lists(texts, min_size=8, max_size=8),
    item=finite_objects,
    arguments=finite_objects,
    env=st.dictionaries(texts, texts, max_size=3),
)
def test_every_proposed_profile_reads_back(
    name: str,
    words: list[str],
    item: dict[str, Any],
    arguments: dict[str, Any],
    env: dict[str, str],
) -> None:
    profile = Profile(
        name=name,
        description=words[0],
        server=Server(command=["node", words[1]], env=env),
        ingest=Ingest(tool=words[2] or "store", item=item),
        search=Search(tool=words[3], arguments={words[4]: "{query}", **arguments}),
        results=Results(hits=words[5], id=words[6], score=words[7], empty=[re.escape(words[0])]),
        reset=Reset(tool=words[3] or "forget", arguments=arguments),
    )
    text = render(_proposal(name, words, words), profile)
    assert Profile.model_validate(tomllib.loads(text)) == profile


def test_a_text_that_does_not_read_back_is_a_clear_error() -> None:
    profile = Profile(
        name="kg",
        server=Server(command=["node", "index.js"]),
        ingest=Ingest(tool="store", item={"content": "{text}"}),
        search=Search(tool="search", arguments={"query": "{query}"}),
    )
    with pytest.raises(UnreadableProfileError, match=r"'kg' does not read back \(TOML") as caught:
        read_back('name = "kg"\nbad key = 1\n', profile)
    assert isinstance(caught.value, RecallbenchError)
    assert caught.value.exit_code == EXIT_NO_PROFILE
    with pytest.raises(UnreadableProfileError, match="loads as a different profile"):
        read_back(render(_proposal("kg", [], []), profile).replace("store", "other"), profile)


def test_a_null_in_a_value_is_a_clear_error() -> None:
    profile = Profile(
        name="kg",
        server=Server(command=["node", "index.js"]),
        ingest=Ingest(tool="store", item={"content": "{text}", "kind": None}),
        search=Search(tool="search", arguments={"query": "{query}"}),
    )
    with pytest.raises(UnreadableProfileError, match="TOML has no null"):
        render(_proposal("kg", [], []), profile)
