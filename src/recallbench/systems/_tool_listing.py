"""The tools an MCP server lists, with their descriptions and input schemas.

The MCP adapter (:class:`~recallbench.systems._mcp.MCPSystem`) needs to know which tools
to call before it starts a server; ``systems init`` does not, so it lists them first with
this one short connection: the server is started as the adapter starts it (the profile's
command and environment, ``{workdir}`` a fresh temporary folder), asked for its tools, and
stopped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from recallbench.core import SystemUnderTestError
from recallbench.core._net import free_port
from recallbench.systems._answers import fill
from recallbench.systems._mcp_stdout import GuardedReadStream, silence_parse_tracebacks
from recallbench.systems._profile import Server


@dataclass(frozen=True, slots=True)
class ListedTool:
    """One tool as the server lists it."""

    name: str
    description: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    """Its input JSON Schema (``{"type": "object", "properties": ...}``)."""

    @property
    def properties(self) -> dict[str, dict[str, Any]]:
        """The schema's top-level properties (name -> schema)."""
        found = self.schema.get("properties")
        return {k: v for k, v in found.items() if isinstance(v, dict)} if found else {}

    @property
    def required(self) -> list[str]:
        """The names of the required properties."""
        found = self.schema.get("required")
        return [str(name) for name in found] if isinstance(found, list) else []


def _listed(tool: Any) -> ListedTool:
    schema = getattr(tool, "input_schema", None)
    if schema is None:  # mcp 1.x
        schema = getattr(tool, "inputSchema", None)
    return ListedTool(
        name=str(tool.name),
        description=str(getattr(tool, "description", None) or ""),
        schema=dict(schema) if isinstance(schema, dict) else {},
    )


async def list_tools(name: str, server: Server) -> list[ListedTool]:
    """Start the stdio server ``name`` as ``server`` says, list its tools, stop it.
    ``{workdir}`` and ``{port}`` are filled as the adapter fills them. SystemUnderTestError
    (with the end of the server's standard error) when it does not start or answer."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    workdir = Path(tempfile.mkdtemp(prefix=f"recallbench-init-{name}-"))
    log = workdir / "server.log"
    places = {"workdir": str(workdir), "port": str(free_port())}
    command = [fill(part, places) for part in server.command]
    env = {**os.environ, **{key: fill(value, places) for key, value in server.env.items()}}
    parameters = StdioServerParameters(
        command=command[0], args=command[1:], env=env, cwd=str(workdir)
    )
    silence_parse_tracebacks()
    guard: GuardedReadStream | None = None
    try:
        async with AsyncExitStack() as stack:
            errlog = stack.enter_context(log.open("w"))
            read, write = await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
            guard = GuardedReadStream(read)
            session = await stack.enter_async_context(ClientSession(guard, write))
            with anyio.fail_after(server.startup_timeout):
                await session.initialize()
                listed = await session.list_tools()
            return [_listed(tool) for tool in listed.tools]
    except Exception as error:
        garbage = guard.explain(name) if guard is not None else None
        if garbage is not None:
            raise SystemUnderTestError(garbage) from None
        said = _tail(log)
        if isinstance(error, TimeoutError):
            reason = f"did not start within {server.startup_timeout:g} s"
        else:
            leaf = _leaf(error)
            reason = f"failed to start or ended: {leaf or type(leaf).__name__}"
        raise SystemUnderTestError(f"{name}: the server {reason}{said}") from None
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _leaf(error: BaseException) -> BaseException:
    """The first error inside task-group wrappers (what actually failed)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()[-3:]
    except OSError:
        return ""
    return (" (server said: " + " / ".join(lines) + ")") if lines else ""
