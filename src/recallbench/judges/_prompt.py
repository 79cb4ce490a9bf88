"""Versioned prompt files: ``prompts/<task>.v<N>.md``, package data read at run time.

A prompt file is Markdown so that people review it as prose: a front matter (``task``,
``version``, ``scale``), then ``## System`` and ``## User`` (the messages, with ``$field``
placeholders filled from the task's input), ``## Answer schema`` (one fenced JSON Schema:
what the parser accepts, also sent to the provider) and ``## Sources`` (citations, never
sent). A changed prompt is a new file with a new version, never an edit in place: the
version is part of every cached judgment's key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from recallbench.judges._provider import Message

_SECTIONS = ("System", "User", "Answer schema", "Sources")
_FENCE = re.compile(r"```json\n(.*?)\n```", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt file, parsed."""

    task: str
    version: str
    scale: str
    """The scale in words, for reports and reviewers."""
    system: str
    user: Template
    schema: Mapping[str, Any]
    sources: str

    def messages(self, fields: Mapping[str, str]) -> list[Message]:
        """The chat messages for one input; a placeholder without a field is a KeyError
        (a task and its prompt out of step is a bug, not a judgment to score)."""
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": self.user.substitute(fields)},
        ]


@cache
def load_prompt(task: str, version: str) -> Prompt:
    """``prompts/<task>.v<version>.md`` from the installed package."""
    name = f"{task}.v{version}.md"
    text = resources.files("recallbench.judges").joinpath("prompts", name).read_text("utf-8")
    prompt = parse_prompt(text, name)
    if (prompt.task, prompt.version) != (task, version):
        raise ValueError(f"{name}: its front matter names {prompt.task} v{prompt.version}")
    return prompt


def parse_prompt(text: str, name: str) -> Prompt:
    """A prompt file's text as a :class:`Prompt`; ValueError naming the file otherwise."""
    front, _, body = text.removeprefix("---\n").partition("\n---\n")
    meta = dict(line.split(": ", 1) for line in front.splitlines() if line.strip())
    missing = [key for key in ("task", "version", "scale") if key not in meta]
    if missing or not text.startswith("---\n"):
        raise ValueError(f"{name}: the front matter needs task, version and scale")
    parts = re.split(r"^## (.+)\n", body, flags=re.MULTILINE)
    sections = {
        title.strip(): content.strip()
        for title, content in zip(parts[1::2], parts[2::2], strict=True)
    }
    if tuple(sections) != _SECTIONS:
        raise ValueError(f"{name}: sections must be {', '.join(_SECTIONS)}; got {list(sections)}")
    fenced = _FENCE.search(sections["Answer schema"])
    if fenced is None:
        raise ValueError(f"{name}: the answer schema must be one ```json block")
    return Prompt(
        task=meta["task"],
        version=meta["version"],
        scale=meta["scale"],
        system=sections["System"],
        user=Template(sections["User"]),
        schema=json.loads(fenced.group(1)),
        sources=sections["Sources"],
    )
