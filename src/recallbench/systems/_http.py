"""A search endpoint over HTTP, described by a profile with ``kind = "http"``.

Requests are JSON templates (``{query}``, ``{k}``, ``{id}``, ``{text}``...); header values
may name environment variables (``${TOKEN}``), so secrets stay out of profile files, and
their values are redacted from every error text (an endpoint may echo the header in its
error reply, which would otherwise reach run.json, the reports, a recording and the
terminal). Answers are read with the same selectors as MCP results.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, Literal

import httpx
from pydantic import Field, JsonValue

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.core._model import Record
from recallbench.core._secrets import redact
from recallbench.systems._answers import fill, select
from recallbench.systems._profile import ProfileName, Results

_ENV = re.compile(r"\$\{(\w+)\}")


def _no_sniffio_search() -> None:
    """httpcore tries ``import sniffio`` for every lock it makes (a few per request); when
    sniffio is not installed each try searches the whole ``sys.path`` again (failed imports
    are not cached), about a third of a request's CPU time. Marking it absent in
    ``sys.modules`` makes the same ImportError immediate; httpcore then assumes asyncio,
    as it did."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


class Endpoint(Record):
    method: Literal["GET", "POST", "PUT"] = "POST"
    path: str
    body: dict[str, JsonValue] | None = None
    """JSON body template (POST, PUT)."""
    params: dict[str, JsonValue] | None = None
    """Query-string template (GET)."""


class HttpIngest(Endpoint):
    batch_size: int = Field(default=1, ge=1)
    batch_field: str | None = None
    item: dict[str, JsonValue]


class HttpSettings(Record):
    base_url: str
    headers: dict[str, str] = Field(default_factory=dict)
    """``${NAME}`` is replaced by the environment variable NAME (an error when unset)."""
    timeout: float = Field(default=30.0, gt=0)


class HttpProfile(Record):
    name: ProfileName
    kind: Literal["http"]
    description: str = ""
    http: HttpSettings
    ingest: HttpIngest | None = None
    """Omitted when the endpoint searches a corpus it already holds."""
    search: Endpoint
    results: Results = Field(default_factory=Results)


def _headers(headers: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The headers with ``${NAME}`` filled in, and the values filled in (the secrets)."""
    secrets: list[str] = []

    def value(match: re.Match[str]) -> str:
        if match.group(1) not in os.environ:
            raise SystemUnderTestError(f"header needs the environment variable {match.group(1)}")
        secrets.append(os.environ[match.group(1)])
        return secrets[-1]

    return {name: _ENV.sub(value, text) for name, text in headers.items()}, secrets


class HttpSystem:
    max_concurrency: int | None = None
    """Requests are independent: the runner may send any number at once (``--concurrency``)."""

    def __init__(self, profile: HttpProfile) -> None:
        self.profile, self.name = profile, profile.name
        self._client: httpx.AsyncClient | None = None
        self._ids: set[str] = set()
        self._secrets: list[str] = []
        self.call_timeout = profile.http.timeout
        """Seconds a request may take (the profile's ``http.timeout``; ``run --timeout``)."""

    def settings(self) -> dict[str, Any]:
        safe = self.profile.model_dump(mode="json")
        safe["http"]["headers"] = sorted(self.profile.http.headers)  # names, never values
        return {"profile": safe, "ranked": self.profile.results.ranked}

    async def setup(self, documents: Sequence[Document]) -> None:
        await self.close()  # a second setup starts from a fresh store
        http = self.profile.http
        _no_sniffio_search()
        headers, self._secrets = _headers(http.headers)
        self._client = httpx.AsyncClient(
            base_url=http.base_url, timeout=self.call_timeout, headers=headers
        )
        self._ids = {doc.id for doc in documents}
        ingest = self.profile.ingest
        if ingest is None:
            return
        items = [
            fill(ingest.item, {"id": d.id, "text": d.text, "title": d.title or ""})
            for d in documents
        ]
        size = ingest.batch_size if ingest.batch_field else 1
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            body = {ingest.batch_field: chunk} if ingest.batch_field else chunk[0]
            await self._request(ingest.model_copy(update={"body": body}), {})

    async def _request(self, endpoint: Endpoint, values: dict[str, Any]) -> Any:
        if self._client is None:
            raise RuntimeError(f"{self.name}: request before setup")
        body = fill(endpoint.body, values) if endpoint.body is not None else None
        params = fill(endpoint.params, values) if endpoint.params is not None else None
        try:
            response = await self._client.request(
                endpoint.method, endpoint.path, json=body, params=params
            )
        except httpx.HTTPError as exc:
            raise self._error(f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise self._error(f"HTTP {response.status_code}: {self._text(response)[:200]}")
        try:
            return response.json()
        except ValueError:
            raise self._error(f"not JSON: {self._text(response)[:120]!r}") from None

    def _text(self, response: httpx.Response) -> str:
        """The response's text without the secrets (before it is cut: a cut secret would
        no longer be recognised)."""
        return redact(response.text, self._secrets)

    def _error(self, message: str) -> SystemUnderTestError:
        return SystemUnderTestError(f"{self.name}: {redact(message, self._secrets)}")

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        answer = await self._request(self.profile.search, {"query": query.text, "k": k})
        spec = self.profile.results
        found = select(answer, spec.hits)
        hits = []
        for item in found if isinstance(found, list) else []:
            doc_id = select(item, spec.id) if spec.id else None
            if doc_id is None or str(doc_id) not in self._ids:
                continue
            score = select(item, spec.score) if spec.score else None
            hits.append(
                Hit(
                    doc_id=str(doc_id),
                    channels=("http",),
                    score=float(score) if isinstance(score, int | float) else None,
                )
            )
        return hits[:k]

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
