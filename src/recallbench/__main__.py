"""``python -m recallbench``: the command line, with a short way for plain evaluations.

``recallbench evaluate`` on small files finishes in about the time Python takes to start;
click alone would add a fifth to that. So a plain invocation (trec_eval's flags, the trec
layout, two plain files the compiled engine takes) is evaluated here without importing the
command line; anything else, every error and every note included, goes to the click
command, which prints exactly the same for what is taken here.
"""

from __future__ import annotations

import os
import sys

FLAGS = {"-q": "per_query", "-n": "no_summary", "-c": "complete", "-J": "judged_only"}
VALUED = {"-m", "--measure", "-l", "-M", "--format"}


def _plain_evaluate(args: list[str]) -> bool:
    """Evaluate ``args`` (what follows ``evaluate``) when they are plain, writing what the
    click command writes; False when the click command must take them."""
    flags: set[str] = set()
    specs: list[str] = []
    values: dict[str, str] = {}
    paths: list[str] = []
    tokens = iter(args)
    for token in tokens:
        if token in FLAGS:
            flags.add(FLAGS[token])
        elif token in VALUED:
            value = next(tokens, None)
            if value is None:
                return False
            if token in ("-m", "--measure"):
                specs.append(value)
            else:
                values[token] = value
        elif token.startswith("-"):
            return False  # combined flags, --help, --judged-only, "--": click parses them
        else:
            paths.append(token)
    if len(paths) != 2 or values.get("--format", "trec") != "trec":
        return False
    numbers = {k: int(v) for k, v in values.items() if k in ("-l", "-M") and v.isdecimal()}
    if len(numbers) != len(values) - ("--format" in values) or numbers.get("-M", 1) < 1:
        return False  # not a plain count: click's own conversion and message
    if not (os.path.isfile(paths[0]) and os.path.isfile(paths[1])):
        return False
    from recallbench.measures._trec_native import evaluate_files_text

    compiled = evaluate_files_text(
        paths[0],
        paths[1],
        specs,
        relevance_level=numbers.get("-l", 1),
        complete="complete" in flags,
        max_docs=numbers.get("-M"),
        judged_only="judged_only" in flags,
        per_query="per_query" in flags,
        summary="no_summary" not in flags,
    )
    if compiled is None:
        return False  # the Python engine, behind the click command
    sys.stdout.write(compiled[0])
    return True


def run() -> None:
    """The command line, short-cut for plain evaluations."""
    if sys.argv[1:2] == ["evaluate"] and _plain_evaluate(sys.argv[2:]):
        return
    from recallbench.cli import main

    main()


if __name__ == "__main__":
    run()
