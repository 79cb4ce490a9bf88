"""Who may talk to the Streamable HTTP proxy: the agent's memory is readable and writable
through it, and what it logs becomes golden data, so by default a request needs the
proxy's bearer token (``Authorization: Bearer TOKEN``, compared in constant time; 401
without it) and a request that carries an ``Origin`` (a browser page) is refused (403)
unless that origin is allowed explicitly. Clients that are not browsers send no Origin.

The token is generated at start and printed once to standard error (as Jupyter does), or
given with ``--token`` / :data:`TOKEN_ENV`; ``--no-auth`` turns the check off.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Iterable
from typing import Any

TOKEN_ENV = "RECALLBENCH_PROXY_TOKEN"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def normal_origin(origin: str) -> str:
    """An origin as browsers send it: no trailing slash, scheme and host lower-cased."""
    return origin.strip().rstrip("/").lower()


class Guard:
    """ASGI middleware in front of the MCP app: Origin first (403), then the token (401)."""

    def __init__(self, app: Any, token: str | None, origins: Iterable[str]) -> None:
        self.app = app
        self.token = token.encode() if token is not None else None
        self.origins = frozenset(normal_origin(origin) for origin in origins)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            refusal = self.refusal(dict(scope.get("headers") or ()))
            if refusal is not None:
                status, message, extra = refusal
                await _reply(send, status, message, extra)
                return
        await self.app(scope, receive, send)

    def refusal(self, headers: dict[bytes, bytes]) -> tuple[int, str, list[Any]] | None:
        """(status, message, extra headers) for a request that must be refused."""
        origin = headers.get(b"origin")
        if origin is not None and normal_origin(origin.decode("latin-1")) not in self.origins:
            return 403, "origin not allowed (see recallbench proxy --allow-origin)", []
        if self.token is None:
            return None
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token):
            return 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")]
        return None


async def _reply(send: Any, status: int, message: str, extra: list[Any]) -> None:
    body = (message + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *extra]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
