"""A JSON-lines retriever that misbehaves on purpose, for tests/test_run_robust*.py.

    robust_command.py MODE [MARKER]

MODE: ``error`` answers every search with an error; ``odd`` fails every other search;
``die`` exits on every search; ``slow`` takes 0.2 s per search; ``hang`` never answers a
search. MARKER, when given, is a file created when the first search arrives (the test then
knows queries are being asked).

``sleepy_search`` is the same retriever as a ``python:`` system (a blocking search of 0.2 s;
the marker is named by $ROBUST_MARKER).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def sleepy_search(text: str, k: int) -> list[str]:
    Path(os.environ["ROBUST_MARKER"]).touch()
    time.sleep(0.2)
    return []


def main() -> None:
    mode = sys.argv[1]
    marker = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    searches = 0
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "ingest":
            print(json.dumps({"ok": True}), flush=True)
            continue
        searches += 1
        if marker is not None:
            marker.touch()
        if mode == "die":
            sys.exit(4)
        if mode == "slow":
            time.sleep(0.2)
        if mode == "hang":
            time.sleep(3600)
        if mode == "error" or (mode == "odd" and searches % 2):
            print(json.dumps({"error": "index unavailable"}), flush=True)
            continue
        print(json.dumps({"hits": []}), flush=True)


if __name__ == "__main__":
    main()
