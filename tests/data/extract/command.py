"""A command extractor and decider for the tests of command: systems, good and faulty.

    python command.py MODE     reads one JSON document (or decision case) on stdin

Modes: ``extract`` (one event: the first line), ``decide`` (NOOP on the first memory),
``fail`` (exit 1 with a message on stderr), ``hang`` (sleeps), ``prose`` (not JSON)."""

from __future__ import annotations

import json
import sys
import time


def main(mode: str) -> int:
    given = json.load(sys.stdin)
    if mode == "extract":
        line = given["text"].strip().splitlines()[0]
        print(json.dumps({"events": [{"description": line}], "observations": [{"text": line}]}))
    elif mode == "decide":
        existing = given["existing"]
        target = existing[0]["id"] if existing else None
        print(json.dumps({"action": "NOOP" if existing else "ADD", "target": target}))
    elif mode == "fail":
        print("the model file is missing", file=sys.stderr)
        return 1
    elif mode == "hang":
        time.sleep(60)
    elif mode == "prose":
        print("Here are the events I found: none.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
