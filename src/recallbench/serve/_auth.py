"""Who may use the dashboard: whoever holds its token.

The dashboard reads agents' queries and memories and writes labels, so every request needs
the token, as Jupyter does it: the URL printed at start carries ``?token=...``; the first
request with it sets an HttpOnly, SameSite=Strict cookie and is redirected to the same page
without the token (so it does not stay in the address bar or the history). Later requests
carry the cookie; scripts may send ``Authorization: Bearer TOKEN`` instead. Anything else
gets 403. Tokens are compared in constant time.

A POST must carry the token too (the cookie or the header; never the URL: a link cannot
write), and a POST whose ``Origin`` is not the dashboard's own is refused: SameSite=Strict
already keeps the cookie off another site's requests, this refuses them outright.

Every response that leaves the gate (pages, static files, redirects, its own 403s) carries
the security headers of :data:`SECURITY_HEADERS`: a Content-Security-Policy that runs only
the dashboard's own script files (the pages' data travels in JSON blocks the scripts
read), frames nothing and is framed by nothing, plus nosniff, same-origin referrers and
X-Frame-Options. A page that must differ (the full comparison's self-contained report
page, whose inline scripts are allowed by their hashes) sets its own policy, which the
gate keeps.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

COOKIE = "recallbench_serve_token"
TOKEN_ENV = "RECALLBENCH_SERVE_TOKEN"
_SAFE = frozenset({"GET", "HEAD"})
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
"""The dashboard's Content-Security-Policy: its own files only, no inline script or style."""
SECURITY_HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
)
"""Added to every response, unless the response already sets the header."""


class TokenGate:
    """ASGI middleware: the token from the URL (once), the cookie or the bearer header."""

    def __init__(self, app: Any, token: str) -> None:
        if not token:
            raise ValueError("the dashboard's token must not be empty")
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self._gate(scope, receive, _secured(send))

    async def _gate(self, scope: Any, receive: Any, send: Any) -> None:
        headers = {key.lower(): value for key, value in scope.get("headers") or ()}
        method = scope["method"]
        if method not in _SAFE and not self._same_origin(headers):
            await _reply(send, 403, "cross-origin request refused")
            return
        if self._held(headers):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for key, value in query if key == "token"]
        if method in _SAFE and given and self._matches(given[-1].encode()):
            rest = urlencode([(key, value) for key, value in query if key != "token"])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={given[-1]}; Path=/; HttpOnly; SameSite=Strict"
            await _reply(
                send, 303, "", [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        await _reply(send, 403, "a token is required: open the URL `recallbench serve` printed")

    def _matches(self, given: bytes) -> bool:
        return hmac.compare_digest(given, self.token)

    def _held(self, headers: dict[bytes, bytes]) -> bool:
        scheme, _, bearer = headers.get(b"authorization", b"").partition(b" ")
        if scheme.lower() == b"bearer" and self._matches(bearer.strip()):
            return True
        cookies = SimpleCookie()
        try:
            cookies.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:  # a malformed Cookie header holds no token
            return False
        held = cookies.get(COOKIE)
        return held is not None and self._matches(held.value.encode())

    @staticmethod
    def _same_origin(headers: dict[bytes, bytes]) -> bool:
        """No Origin (not a browser, or a same-origin form in some browsers), or the
        dashboard's own host and port."""
        origin = headers.get(b"origin")
        if origin is None:
            return True
        _, _, host = origin.decode("latin-1").partition("://")
        return host.rstrip("/").lower() == headers.get(b"host", b"").decode("latin-1").lower()


def _secured(send: Any) -> Any:
    """``send`` with :data:`SECURITY_HEADERS` added to the response's start."""

    async def secured(message: Any) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers") or ())
            present = {bytes(key).lower() for key, _ in headers}
            headers += [(key, value) for key, value in SECURITY_HEADERS if key not in present]
            message = {**message, "headers": headers}
        await send(message)

    return secured


async def _reply(send: Any, status: int, message: str, extra: list[Any] | None = None) -> None:
    body = (message + "\n").encode() if message else b""
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *(extra or [])]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
