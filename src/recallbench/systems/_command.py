"""A retriever in any language, as a long-running process speaking JSON lines.

recallbench writes one JSON object per line to its standard input and reads one per line
from its standard output:

    {"op": "ingest", "documents": [{"id": ..., "text": ..., "title": ..., "metadata": {}}]}
    -> {"ok": true}
    {"op": "search", "query": "...", "k": 10}
    -> {"hits": [{"id": "d1", "score": 2.5}, ...]}      or   {"error": "why"}

Each answer must come within the call timeout (60 s unless ``run --timeout`` says
otherwise). A process that does not answer in time is stopped (a late answer would be read
as the next query's), and one that ended says so: the runner then starts it again and
ingests the corpus anew (``needs_restart``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
from collections.abc import Sequence
from typing import Any

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.systems._hits import to_hits

TIMEOUT = 60.0
"""Seconds an answer may take, by default."""


class CommandSystem:
    def __init__(self, command: str, timeout: float = TIMEOUT) -> None:
        self.name = f"command:{command}"
        self._argv = shlex.split(command)
        self.call_timeout = timeout
        self._process: asyncio.subprocess.Process | None = None
        self._started = False
        self._in_flight = False

    @property
    def needs_restart(self) -> bool:
        """Set up once, the process is now stopped (it hung) or ended on its own."""
        process = self._process
        return self._started and (process is None or process.returncode is not None)

    def settings(self) -> dict[str, Any]:
        return {"command": self._argv, "protocol": "json-lines"}

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()  # a second setup starts from a fresh store
        self._started = True
        try:
            self._process = await asyncio.create_subprocess_exec(
                *self._argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=1 << 26,
            )
        except OSError as exc:
            raise SystemUnderTestError(f"{self.name}: cannot start it ({exc})") from None
        await self._ask(
            {"op": "ingest", "documents": [d.model_dump(mode="json") for d in documents]}
        )

    async def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise SystemUnderTestError(f"{self.name}: not running")
        self._in_flight = True
        try:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            await process.stdin.drain()
            line = await asyncio.wait_for(process.stdout.readline(), self.call_timeout)
        except TimeoutError:
            # a late answer would be read as the next query's: the process is stopped
            self._process = None
            await _kill(process)
            raise SystemUnderTestError(
                f"{self.name}: no answer within {self.call_timeout} s; the process was stopped"
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        self._in_flight = False
        if not line:  # its output closed: the process ended, or is of no more use
            self._process = None
            await _kill(process, grace=ENDING_GRACE)
            raise SystemUnderTestError(
                f"{self.name}: the process ended (exit {process.returncode})"
            )
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            raise SystemUnderTestError(f"{self.name}: not JSON: {line[:120]!r}") from None
        if not isinstance(answer, dict):
            raise SystemUnderTestError(f"{self.name}: expected an object, got {line[:120]!r}")
        if "error" in answer:
            raise SystemUnderTestError(f"{self.name}: {answer['error']}")
        return answer

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        answer = await self._ask({"op": "search", "query": query.text, "k": k})
        return to_hits(answer.get("hits", []), "command")[:k]

    async def close(self) -> None:
        """Close the process's input and let it end (5 s at most); one still busy with a
        question (the run was interrupted) is killed at once."""
        process, self._process = self._process, None
        in_flight, self._in_flight = self._in_flight, False
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            if in_flight:
                raise TimeoutError
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            await _kill(process)


ENDING_GRACE = 2.0
"""Seconds a process whose output closed gets to be reaped before it is killed."""


async def _kill(process: asyncio.subprocess.Process, grace: float = 0.0) -> None:
    """Stop ``process`` and reap it. A process that already ended is first given ``grace``
    seconds to be reaped by asyncio: ``kill()`` on an ended but unreaped process reaps it
    inside subprocess.Popen (its ``poll()``), and asyncio's watcher, finding no child, then
    reports exit 255 instead of the real status."""
    if grace > 0 and process.returncode is None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(process.wait()), grace)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()
