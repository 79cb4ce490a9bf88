"""Replying with JSON from the small HTTP servers the tests stand up."""

from __future__ import annotations

import json
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(
    handler: BaseHTTPRequestHandler,
    status: int,
    payload: Any,
    headers: Mapping[str, str] | None = None,
) -> None:
    """``payload`` (bytes as they are, anything else as JSON) with its length. A client
    that gave up (its timeout passed) is no error of the server's."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    try:
        handler.wfile.write(data)
    except BrokenPipeError:
        return
