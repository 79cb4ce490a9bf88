"""A system under test behind an MCP server, driven by a profile, over stdio.

The official ``mcp`` SDK performs the handshake (initialize, initialized), lists the tools,
then ingests and searches with the profile's tools and argument templates. Results are read
from structured content, JSON in a text block, or one text block per hit, and mapped to the
dataset's documents by id or by content; a hit that maps to nothing is counted. A server
that only reads a folder is given the corpus as files (``[ingest] files``, see
``_ingest_files``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.systems._answers import (
    answer_texts,
    fill,
    hit_text,
    normalise,
    raw_hits,
    select,
)
from recallbench.systems._ingest_files import (
    document_values,
    remove_files,
    wait_until_found,
    write_files,
)
from recallbench.systems._launch import (
    profile_places,
    require_installed,
    run_command,
    stop_process,
)
from recallbench.systems._mcp_stdout import GuardedReadStream, silence_parse_tracebacks
from recallbench.systems._profile import Profile


async def wait_for_listener(
    url: str, timeout: float, process: asyncio.subprocess.Process | None = None
) -> None:
    """Poll the URL's host and port until something accepts connections (the server has
    started); SystemUnderTestError if ``process`` ends first, TimeoutError after
    ``timeout`` seconds."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            if process is not None and process.returncode is not None:
                raise SystemUnderTestError(f"the server exited ({process.returncode})") from None
            if time.monotonic() > deadline:
                raise TimeoutError from None
            await asyncio.sleep(0.1)
            continue
        writer.close()
        await writer.wait_closed()
        return


def profile_settings(profile: Profile) -> dict[str, Any]:
    """The profile as recorded in a run's settings; keys added later are left out while
    they hold their defaults, so that runs of an unchanged profile record the same."""
    settings = profile.model_dump(mode="json")
    if profile.reset is None:
        del settings["reset"]
    for key in ("files", "index", "ready"):
        if settings["ingest"][key] is None:
            del settings["ingest"][key]
    if profile.install.mcp is None:
        del settings["install"]["mcp"]
    if profile.server.concurrency == 1:
        del settings["server"]["concurrency"]
    if profile.ingest.on_error == "fail":
        del settings["ingest"]["on_error"]
    return settings


def refused_call(ids: Sequence[str], batch: int, batches: int, batched: bool) -> str:
    """Which documents a refused ingest call carried: ``document 'd1'``, or ``batch 3 of
    7 (documents 'd1', 'd2' and 30 more)``."""
    if not batched:
        return f"document {ids[0]!r}"
    shown = ", ".join(map(repr, ids[:5])) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return f"batch {batch} of {batches} (document{'s' if len(ids) > 1 else ''} {shown})"


def _connection_lost(error: Exception) -> bool:
    """The SDK's error for a connection that ended (the server exited, or its output
    closed): no later call can succeed on it."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    return isinstance(error, MCPError) and error.code == CONNECTION_CLOSED


class MCPSystem:
    """A memory MCP server started from a profile, a fresh store per run."""

    def __init__(self, profile: Profile, keep: bool = False) -> None:
        self.profile = profile
        self.name = profile.name
        self.keep = keep
        self.store_dir: Path | None = None
        """A lasting store folder to use as ``{workdir}`` (kept, never removed), for writing
        into an agent's own memory; None: a fresh temporary folder per setup."""
        self.unmatched = 0
        """Hits that mapped to no dataset document (counted, not scored)."""
        self.returned = 0
        """Hits the searches returned, matched or not."""
        self.scored = 0
        """Hits the searches returned with a score, matched or not."""
        self.refused: dict[tuple[str, ...], str] = {}
        """Documents the server refused to store (``[ingest] on_error = "skip"``): the ids
        of each refused call, with the error."""
        self._stack: AsyncExitStack | None = None
        self._session: Any = None
        self._workdir: Path | None = None
        self._by_content: dict[str, str] = {}
        self._contents: list[str] = []
        self._kept: Path | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._ids: set[str] = set()
        self._ingested: list[str] = []
        """Ids ingested since the server started or its store was emptied (``{ids}``)."""
        self.call_timeout = profile.server.call_timeout
        """Seconds a tool call may take (the profile's ``call_timeout``; ``run --timeout``)."""
        self._guard: GuardedReadStream | None = None
        self._broken = False
        self._places: dict[str, str] = {}
        self._env: dict[str, str] = {}
        self._written: list[Path] = []
        """Files written by ``[ingest] files`` and not yet removed."""
        self._where = str(profile.source_file) if profile.source_file else None
        """The profile's file, named in an error that asks for an edit of it."""

    @property
    def max_concurrency(self) -> int:
        """The profile's ``[server] concurrency``: searches the server answers at once."""
        return self.profile.server.concurrency

    @property
    def needs_restart(self) -> bool:
        """The server stopped answering (a call timed out) or the connection ended."""
        return self._broken

    def settings(self) -> dict[str, Any]:
        return {
            "profile": profile_settings(self.profile),
            "transport": self.profile.server.transport,
            "ranked": self.profile.results.ranked,
            "unmatched_results": self.unmatched,
            **(self._unmatched_settings() if self.unmatched else {}),
            **({"not_ingested": self._not_ingested()} if self.refused else {}),
            **({"kept_store": str(self._kept)} if self._kept else {}),
        }

    def _unmatched_settings(self) -> dict[str, Any]:
        """With unmatched hits, what a report needs to say why: all hits returned, those
        with a score, and the profile's file (where ``[results] id`` / ``match`` are)."""
        return {
            "returned_results": self.returned,
            "scored_results": self.scored,
            **({"profile_file": self._where} if self._where else {}),
        }

    def _not_ingested(self) -> list[dict[str, Any]]:
        return [{"ids": list(ids), "error": error} for ids, error in self.refused.items()]

    async def setup(self, documents: Sequence[Document]) -> None:
        if await self._emptied():  # the next unit: same server, empty store
            await self._ingest(documents)
            return
        await self.close()  # a second setup starts from a fresh store
        self._broken = False
        require_installed(self.profile)
        if self.store_dir is not None:
            self.store_dir.mkdir(parents=True, exist_ok=True)
            self._workdir = self.store_dir.resolve()
        else:
            self._workdir = Path(tempfile.mkdtemp(prefix=f"recallbench-{self.name}-"))
        server = self.profile.server
        places = self._places = profile_places(self.profile, self._workdir)
        command = [fill(part, places) for part in server.command]
        self._env = {k: fill(v, places) for k, v in server.env.items()}
        env = {**os.environ, **self._env}
        if self.profile.ingest.files is not None:  # an indexer that scans at start sees them
            await self._write(documents)
        self._stack = AsyncExitStack()
        try:
            if server.transport == "stdio":
                tools = await self._connect_stdio(command, env)
            else:
                tools = await self._connect_http(command, env, fill(server.url, places))
        except Exception as error:
            log = self._log_tail()
            garbage = self._guard.explain(self.name) if self._guard is not None else None
            await self.close()
            if garbage is not None:
                raise SystemUnderTestError(garbage) from None
            if isinstance(error, TimeoutError):
                raise SystemUnderTestError(
                    f"{self.name}: server did not start within {server.startup_timeout} s{log}"
                ) from None
            raise SystemUnderTestError(
                f"{self.name}: server failed to start: {error}{log}"
            ) from None
        reset, index = self.profile.reset, self.profile.ingest.index
        needed = [self.profile.ingest.tool, self.profile.search.tool]
        needed += [reset.tool] if reset is not None and reset.tool else []
        needed += [index.tool] if index is not None and index.tool else []
        for tool in filter(None, needed):
            if tool not in tools:
                await self.close()
                raise SystemUnderTestError(
                    f"{self.name}: the server has no tool {tool!r} (it has {sorted(tools)})"
                )
        await self._ingest(documents)

    async def _connect_stdio(self, command: list[str], env: dict[str, str]) -> set[str]:
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        assert self._stack is not None
        assert self._workdir is not None
        parameters = StdioServerParameters(
            command=command[0], args=command[1:], env=env, cwd=str(self._workdir)
        )
        silence_parse_tracebacks()
        # the SDK's task groups live as long as the connection: only the handshake is timed
        read, write = await self._stack.enter_async_context(
            stdio_client(parameters, errlog=self._stack.enter_context(self._log.open("w")))
        )
        self._guard = GuardedReadStream(read)
        return await self._handshake(self._stack, self._guard, write)

    async def _connect_http(self, command: list[str], env: dict[str, str], url: str) -> set[str]:
        """Start the server process (if the profile has one), wait until it listens, then
        connect over Streamable HTTP."""
        from mcp.client.streamable_http import streamable_http_client

        assert self._stack is not None
        assert self._workdir is not None
        if command:
            log = self._stack.enter_context(self._log.open("w"))
            self._process = await asyncio.create_subprocess_exec(
                *command,
                env=env,
                cwd=str(self._workdir),
                stdout=log,
                stderr=log,
                stdin=asyncio.subprocess.DEVNULL,
            )
        await self._wait_for_listener(url)
        streams = await self._stack.enter_async_context(streamable_http_client(url))
        return await self._handshake(self._stack, streams[0], streams[1])

    async def _wait_for_listener(self, url: str) -> None:
        await wait_for_listener(url, self.profile.server.startup_timeout, self._process)

    async def _handshake(self, stack: AsyncExitStack, read: Any, write: Any) -> set[str]:
        from mcp import ClientSession

        self._session = await stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(self.profile.server.startup_timeout):
            await self._session.initialize()
            return {tool.name for tool in (await self._session.list_tools()).tools}

    @property
    def _log(self) -> Path:
        """The server's standard error, kept in its work directory."""
        assert self._workdir is not None
        return self._workdir / "server.log"

    def _log_tail(self) -> str:
        try:
            lines = self._log.read_text(errors="replace").strip().splitlines()[-3:]
        except (OSError, AssertionError):
            return ""
        return (" (server said: " + " / ".join(lines) + ")") if lines else ""

    async def _emptied(self) -> bool:
        """Empty the running server's store with the profile's ``[reset]``; False (the
        caller restarts the server) when there is none, nothing is running, the server
        broke, the store is to be kept (``keep``, ``store_dir``), or emptying failed."""
        reset = self.profile.reset
        if reset is None or self._session is None or self._broken or self.keep:
            return False
        if self.store_dir is not None or self._workdir is None:
            return False
        try:
            if reset.tool is not None:
                await self._call(reset.tool, fill(reset.arguments, {"ids": self._ingested}))
            for pattern in reset.files:
                for path in self._workdir.glob(pattern):
                    if path.is_dir():
                        shutil.rmtree(path)
                    else:
                        path.unlink()
            remove_files(self._written)
            self._written = []
        except Exception:  # a fresh server instead
            return False
        self._ingested = []
        return not self._broken

    async def _write(self, documents: Sequence[Document]) -> None:
        """Write the documents as files (``[ingest] files``) into their folder."""
        spec = self.profile.ingest.files
        assert spec is not None
        folder = Path(fill(spec.folder, self._places))
        self._written = write_files(spec, folder, documents)

    async def _ingest_files(self, documents: Sequence[Document]) -> None:
        """Files written (before the server started, or now for a later unit), have the
        server index them (``[ingest.index]``), then wait until a search finds the last
        one (``[ingest.ready]``)."""
        ingest = self.profile.ingest
        if not self._written and documents:
            await self._write(documents)
        index, ready = ingest.index, ingest.ready
        if index is not None and index.command:
            assert self._workdir is not None
            command = [fill(part, self._places) for part in index.command]
            timeout = ready.timeout if ready is not None else self.call_timeout
            try:
                await run_command(
                    command, self._workdir, self._workdir / "index.log", timeout, self._env
                )
            except SystemUnderTestError as error:
                raise SystemUnderTestError(f"{self.name}: indexing: {error}") from None
        if index is not None and index.tool:
            await self._call(index.tool, fill(index.arguments, document_values(documents[-1])))
        if ready is not None and documents:
            await wait_until_found(self.name, ready, documents[-1], self._found)

    async def _found(self, query: str) -> set[str]:
        """The ids of the dataset documents a search for ``query`` returns (the probe of
        ``[ingest.ready]``: hits that map to nothing are not counted)."""
        search = self.profile.search
        limit = min(10, search.max_k) if search.max_k else 10
        result = await self._call(search.tool, fill(search.arguments, {"query": query, "k": limit}))
        raw = raw_hits(result, self.profile.results, self.name, self._where)
        return {doc_id for item in raw if (doc_id := self._map(item)) is not None}

    async def _ingest(self, documents: Sequence[Document]) -> None:
        ingest = self.profile.ingest
        self._ingested.extend(doc.id for doc in documents)
        self._ids = {doc.id for doc in documents}
        self._by_content = {normalise(doc.text): doc.id for doc in documents}
        self._contents = list(self._by_content)
        if ingest.files is not None:
            await self._ingest_files(documents)
            return
        items = [
            fill(
                ingest.item,
                {
                    "id": doc.id,
                    "text": doc.text,
                    "title": doc.title or "",
                    **{f"metadata.{k}": v for k, v in doc.metadata.items()},
                },
            )
            for doc in documents
        ]
        size = ingest.batch_size if ingest.batch_field else 1
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            arguments = {ingest.batch_field: chunk} if ingest.batch_field else chunk[0]
            ids = tuple(doc.id for doc in documents[start : start + size])
            try:
                await self._call(ingest.tool, arguments)
            except Exception as error:
                text = str(error) or type(error).__name__
                if ingest.on_error == "skip" and not self._broken:
                    self.refused[ids] = text
                    continue
                which = refused_call(ids, start // size + 1, -(-len(items) // size), size > 1)
                raise SystemUnderTestError(f"{self.name}: {which} not stored: {text}") from None

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        """Call a tool of the running server with the adapter's timeout and failure
        handling (for a tool beyond search and ingest: reading back what was extracted)."""
        return await self._call(tool, arguments)

    async def tool_names(self) -> set[str]:
        """The tools the running server lists now."""
        if self._session is None:
            raise SystemUnderTestError(f"{self.name}: not running")
        with anyio.fail_after(self.call_timeout):
            listed = await self._session.list_tools()
        return {tool.name for tool in listed.tools}

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        if self._session is None:
            raise SystemUnderTestError(f"{self.name}: not running")
        try:
            with anyio.fail_after(self.call_timeout):
                result = await self._session.call_tool(tool, arguments)
        except TimeoutError:
            self._broken = True
            raise SystemUnderTestError(
                f"{self.name}: {tool}: no answer within {self.call_timeout} s"
            ) from None
        except Exception as error:
            garbage = self._guard.explain(self.name) if self._guard is not None else None
            self._broken = self._broken or garbage is not None or _connection_lost(error)
            if garbage is not None:
                raise SystemUnderTestError(garbage) from None
            raise
        texts = answer_texts(result)
        if getattr(result, "is_error", getattr(result, "isError", False)):
            raise SystemUnderTestError(f"{tool} failed: {' '.join(texts)[:300]}")
        for pattern in self.profile.results.error_patterns:
            if any(re.search(pattern, text) for text in texts):
                raise SystemUnderTestError(f"{tool} reported an error: {' '.join(texts)[:300]}")
        return result

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        search = self.profile.search
        limit = min(k, search.max_k) if search.max_k else k
        result = await self._call(
            search.tool, fill(search.arguments, {"query": query.text, "k": limit})
        )
        return self._hits(result)[:k]

    def _hits(self, result: Any) -> list[Hit]:
        spec = self.profile.results
        raw = raw_hits(result, spec, self.name, self._where)
        hits = []
        for item in raw:
            doc_id = self._map(item)
            score = select(item, spec.score) if spec.score else None
            score = float(score) if isinstance(score, int | float) else None
            self.returned += 1
            self.scored += score is not None
            if doc_id is None:
                self.unmatched += 1
                continue
            hits.append(Hit(doc_id=doc_id, score=score, channels=("mcp",)))
        return hits

    def _map(self, item: Any) -> str | None:
        spec = self.profile.results
        if spec.match == "id":
            value = select(item, spec.id) if spec.id else None
            values = value if isinstance(value, list) else [value]  # the first known id
            return next((str(v) for v in values if v is not None and str(v) in self._ids), None)
        text = normalise(hit_text(item, spec.text))
        exact = self._by_content.get(text)
        if exact is not None or spec.match == "content":
            return exact
        from rapidfuzz import fuzz, process

        best = process.extractOne(
            text, self._contents, scorer=fuzz.ratio, score_cutoff=spec.fuzzy_cutoff
        )
        return self._by_content[best[0]] if best else None

    async def close(self) -> None:
        self._ingested = []
        stack, self._stack, self._session = self._stack, None, None
        self._guard = None
        process, self._process = self._process, None
        if process is not None:
            await stop_process(process)
        if stack is not None:
            with contextlib.suppress(Exception):  # a crashed server must not hide the results
                await stack.aclose()
        if not self.keep:
            remove_files(self._written)
        self._written = []
        if self._workdir is not None and self.store_dir is None:  # an agent's store stays
            if self.keep:
                self._kept = self._workdir
            else:
                shutil.rmtree(self._workdir, ignore_errors=True)
        self._workdir = None
