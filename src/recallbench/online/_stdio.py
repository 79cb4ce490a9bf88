"""The proxy's own standard input and output on the event loop, for the SDK's stdio server
and for the relay (:mod:`recallbench.online._relay`, which reads and writes the bytes).

The SDK reads each line of standard input and writes (then flushes) each answer in a worker
thread: three hops between threads per call, each a wake-up of the loop, which cost more
than everything else the proxy does (issue 22: 2.5 ms added per call). When standard input
and output are pipes or sockets (as an MCP client starts a server), the proxy reads and
writes them as asyncio pipes instead: the SDK's transport is the same, given these two
objects in place of its thread-backed files. Otherwise (a terminal, a file) the SDK's own
are used.

As the SDK does, descriptors 0 and 1 are pointed at the null device and at standard error
while serving (a stray print cannot corrupt the protocol) and restored afterwards; the
proxy works on private duplicates.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

LIMIT = 1 << 30
"""Longest line read (an agent may write a large memory; the HTTP proxy takes 256 MiB)."""


def pipes() -> bool:
    """Whether standard input and output are pipes or sockets (:func:`loop_stdio` serves
    them on the event loop)."""
    return _is_pipe(0) and _is_pipe(1)


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class LineReader:
    """``async for line in reader``: text lines (UTF-8, bad bytes replaced), as the SDK's
    file gives them."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    @property
    def stream(self) -> asyncio.StreamReader:
        """The bytes underneath (the relay reads lines as bytes)."""
        return self._stream

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        line = await self._stream.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class LineWriter:
    """``await write(text)`` then ``await flush()``, as the SDK calls its file."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: Any) -> None:
        self._transport = transport
        self._writer = asyncio.StreamWriter(transport, protocol, None, asyncio.get_running_loop())

    @property
    def writer(self) -> asyncio.StreamWriter:
        """The bytes underneath (the relay writes lines as bytes)."""
        return self._writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()  # waits only when the client reads slower than we write


@contextlib.asynccontextmanager
async def loop_stdio() -> AsyncIterator[tuple[LineReader, LineWriter] | None]:
    """(reader, writer) on private duplicates of descriptors 0 and 1, or None when either
    is not a pipe or socket (the caller then uses the SDK's own)."""
    if not pipes():
        yield None
        return
    loop = asyncio.get_running_loop()
    restore_in, restore_out = os.dup(0), os.dup(1)
    wire_in, wire_out = os.dup(0), os.dup(1)  # closed with their transports
    quiet = os.open(os.devnull, os.O_RDONLY)
    os.dup2(quiet, 0)
    os.close(quiet)
    os.dup2(2, 1)
    transports: list[asyncio.BaseTransport] = []
    try:
        stream = asyncio.StreamReader(limit=LIMIT)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(wire_in, "rb", 0)
        )
        transports.append(read_transport)
        write_transport, protocol = await loop.connect_write_pipe(
            _WriteProtocol, os.fdopen(wire_out, "wb", 0)
        )
        transports.append(write_transport)
        yield LineReader(stream), LineWriter(write_transport, protocol)
    finally:
        for transport in transports:
            transport.close()
        for fd, saved in ((0, restore_in), (1, restore_out)):
            with contextlib.suppress(OSError):
                os.set_blocking(saved, True)  # asyncio made the shared description non-blocking
                os.dup2(saved, fd)
            os.close(saved)


class _WriteProtocol(asyncio.streams.FlowControlMixin, asyncio.Protocol):
    """Flow control for the writer (``drain``), as asyncio's own subprocess pipes have."""
