"""A stdio MCP server's output, watched for lines that are not the protocol.

Over stdio a server's standard output carries JSON-RPC and nothing else. A server that
prints anything else there (a banner, a log line) is broken: the SDK logs a validation
traceback for the line and leaves the request waiting until its timeout, which then reads
as "the server did not start". Here the first such line ends the connection at once (every
pending request fails) and is kept, so the adapter can say what the server wrote.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from anyio.abc import ObjectReceiveStream

_SDK_LOGGER = "mcp.client.stdio"
_PARSE_FAILURE = "Failed to parse JSONRPC message"


class _WithoutParseTracebacks(logging.Filter):
    """Drops the SDK's traceback for a line it cannot parse: the adapter reports it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(_PARSE_FAILURE)


def silence_parse_tracebacks() -> None:
    """Install the filter on the SDK's stdio logger, once."""
    logger = logging.getLogger(_SDK_LOGGER)
    if not any(isinstance(f, _WithoutParseTracebacks) for f in logger.filters):
        logger.addFilter(_WithoutParseTracebacks())


def _offending_text(error: Exception) -> str:
    """The line the SDK could not parse (pydantic keeps it as the error's input)."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        for detail in errors():
            if isinstance(detail.get("input"), str):
                return str(detail["input"])
    return str(error)


class GuardedReadStream(ObjectReceiveStream[Any]):
    """The SDK's read stream, ended at the first line that is not JSON-RPC."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.garbage: str | None = None
        """The first non-protocol line, when one came."""

    async def receive(self) -> Any:
        if self.garbage is not None:
            raise anyio.EndOfStream
        item = await self._inner.receive()
        if isinstance(item, Exception):
            self.garbage = _offending_text(item)
            raise anyio.EndOfStream
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    @property
    def last_context(self) -> Any:
        """The sender's context of the last message, as the SDK's own stream keeps it."""
        return getattr(self._inner, "last_context", None)

    def explain(self, name: str) -> str | None:
        """What to tell the user when the server wrote non-protocol output; else None."""
        if self.garbage is None:
            return None
        shown = self.garbage.encode("utf-8", "replace")[:120]
        return (
            f"{name}: the server wrote non-protocol output on stdout (an MCP stdio server "
            f"may write only JSON-RPC there; logs belong on stderr): {shown!r}"
        )
