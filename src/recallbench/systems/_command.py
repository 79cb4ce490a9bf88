"""A retriever in any language, as a long-running process speaking JSON lines.

recallbench writes one JSON object per line to its standard input and reads one per line
from its standard output:

    {"op": "ingest", "documents": [{"id": ..., "text": ..., "title": ..., "metadata": {}}]}
    -> {"ok": true}
    {"op": "search", "query": "...", "k": 10}
    -> {"hits": [{"id": "d1", "score": 2.5}, ...]}      or   {"error": "why"}
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Sequence
from typing import Any

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.systems._hits import to_hits

TIMEOUT = 60.0


class CommandSystem:
    def __init__(self, command: str, timeout: float = TIMEOUT) -> None:
        self.name = f"command:{command}"
        self._argv = shlex.split(command)
        self._timeout = timeout
        self._process: asyncio.subprocess.Process | None = None

    def settings(self) -> dict[str, Any]:
        return {"command": self._argv, "protocol": "json-lines"}

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()  # a second setup starts from a fresh store
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
        process.stdin.write(json.dumps(message).encode() + b"\n")
        await process.stdin.drain()
        try:
            line = await asyncio.wait_for(process.stdout.readline(), self._timeout)
        except TimeoutError:
            # a late answer would be read as the next query's: the process is stopped
            self._process = None
            process.kill()
            await process.wait()
            raise SystemUnderTestError(
                f"{self.name}: no answer within {self._timeout} s; the process was stopped"
            ) from None
        if not line:
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
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()
