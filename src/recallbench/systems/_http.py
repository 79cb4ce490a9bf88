"""A search endpoint over HTTP, described by a profile with ``kind = "http"``.

Requests are JSON templates (``{query}``, ``{k}``, ``{id}``, ``{text}``...); header values
may name environment variables (``${TOKEN}``), so secrets stay out of profile files, and
their values are redacted from every error text (an endpoint may echo the header in its
error reply, which would otherwise reach run.json, the reports, a recording and the
terminal). Answers are read with the same selectors as MCP results.

A profile may start the service itself (``[http] start``: before the first ingest, waited
for until it answers, stopped after the run) and empty it (``[http] reset``, a command, or
``[reset]``, a request): between units, and when the system closes after ingesting, so a
``systems check`` leaves none of its test documents behind. An endpoint that cannot be
reached fails the command with exit 69 (EX_UNAVAILABLE), naming the URL and what was
being done.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field, JsonValue

from recallbench.core import Document, Hit, Query, SystemUnderTestError
from recallbench.core._model import Record
from recallbench.core._net import free_port
from recallbench.core._secrets import redact
from recallbench.systems._answers import fill, select
from recallbench.systems._launch import log_tail, run_command, start_process, stop_process
from recallbench.systems._profile import FromFile, ProfileName, Results

_ENV = re.compile(r"\$\{(\w+)\}")


def _no_sniffio_search() -> None:
    """httpcore tries ``import sniffio`` for every lock it makes (a few per request); when
    sniffio is not installed each try searches the whole ``sys.path`` again (failed imports
    are not cached), about a third of a request's CPU time. Marking it absent in
    ``sys.modules`` makes the same ImportError immediate; httpcore then assumes asyncio,
    as it did."""
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


class EndpointUnavailableError(SystemUnderTestError):
    """The endpoint could not be reached (refused, unresolved, timed out while
    connecting): a service is down, not the input wrong; exit 69 (EX_UNAVAILABLE)."""

    exit_code = 69


class Endpoint(Record):
    method: Literal["GET", "POST", "PUT", "DELETE"] = "POST"
    path: str
    body: dict[str, JsonValue] | None = None
    """JSON body template (POST, PUT)."""
    params: dict[str, JsonValue] | None = None
    """Query-string template (GET)."""


class HttpIngest(Endpoint):
    batch_size: int = Field(default=1, ge=1)
    batch_field: str | None = None
    item: dict[str, JsonValue]


class HttpReset(Endpoint):
    """A request that empties the service's store (``[reset]``): ``{ids}`` in ``body`` or
    ``params`` is the list of ids ingested since it was last emptied."""

    method: Literal["GET", "POST", "PUT", "DELETE"] = "DELETE"


class HttpSettings(Record):
    base_url: str
    """The service's address; ``{port}`` is the free port given to ``start``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """``${NAME}`` is replaced by the environment variable NAME (an error when unset)."""
    timeout: float = Field(default=30.0, gt=0)
    start: list[str] = Field(default_factory=list)
    """A command that starts the service (stopped when the run ends), run in the profile's
    folder: ``{port}`` is a free local port, ``{workdir}`` a fresh temporary folder,
    ``{python}`` the interpreter running recallbench. Empty: the service is already up."""
    startup_timeout: float = Field(default=30.0, gt=0)
    """Seconds ``start``'s service has to answer ``ready_path``."""
    ready_path: str = "/"
    """Requested (GET) until the started service answers: any status when it is "/",
    else a status below 400. Without ``start``, asked once before a profile without
    ``[ingest]`` searches, to say early when the endpoint is down."""
    reset: list[str] = Field(default_factory=list)
    """A command that empties the service's store (``{base_url}``, ``{port}``,
    ``{workdir}``, ``{python}`` replaced), run in the profile's folder between units and
    when the run ends, if anything was ingested."""


class HttpProfile(FromFile):
    name: ProfileName
    kind: Literal["http"]
    description: str = ""
    http: HttpSettings
    ingest: HttpIngest | None = None
    """Omitted when the endpoint searches a corpus it already holds."""
    search: Endpoint
    results: Results = Field(default_factory=Results)
    reset: HttpReset | None = None
    """A request that empties the store, when and as ``[http] reset`` (both may be given:
    the command runs first)."""


_SINCE = {"start": [], "startup_timeout": 30.0, "ready_path": "/", "reset": []}
"""Keys added to ``[http]`` later, left out of the recorded settings at their default."""


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
        self._ingested: list[str] = []
        """Ids ingested since the store was last emptied (``{ids}`` of ``[reset]``)."""
        self._secrets: list[str] = []
        self._process: asyncio.subprocess.Process | None = None
        self._workdir: Path | None = None
        self._places: dict[str, str] = {}
        self.call_timeout = profile.http.timeout
        """Seconds a request may take (the profile's ``http.timeout``; ``run --timeout``)."""
        self.returned = self.scored = self.unmatched = 0
        """Results returned, those with a score, and those that matched no document (every
        search): counted as the MCP adapter counts them, so a wrong ``[results] id`` shows
        in the report instead of every measure quietly reading 0."""

    @property
    def _resets(self) -> bool:
        return bool(self.profile.http.reset or self.profile.reset)

    def settings(self) -> dict[str, Any]:
        safe = self.profile.model_dump(mode="json")
        safe["http"]["headers"] = sorted(self.profile.http.headers)  # names, never values
        for key, default in _SINCE.items():
            if safe["http"][key] == default:
                del safe["http"][key]
        if self.profile.reset is None:
            del safe["reset"]
        counts = {  # only when some result matched nothing: unchanged runs record the same
            "unmatched_results": self.unmatched,
            "returned_results": self.returned,
            "scored_results": self.scored,
        }
        return {
            "profile": safe,
            "ranked": self.profile.results.ranked,
            **(counts if self.unmatched else {}),
        }

    async def setup(self, documents: Sequence[Document]) -> None:
        """Start the service if the profile does and it is not running, else empty the
        store of the previous unit (``reset``; without one, a service started here is
        started anew); then ingest."""
        http = self.profile.http
        running = self._process is not None and self._process.returncode is None
        if http.start and (not running or (self._ingested and not self._resets)):
            self._ingested = []  # a fresh store: the service started anew
            await self._stop()
            try:
                await self._start()
            except BaseException:
                await self._stop()
                raise
        if self._client is None:
            _no_sniffio_search()
            headers, self._secrets = _headers(http.headers)
            self._client = httpx.AsyncClient(
                base_url=self._base_url, timeout=self.call_timeout, headers=headers
            )
        elif self._ingested and self._resets:
            await self._reset("emptying the store before the next unit")
        self._ids = {doc.id for doc in documents}
        ingest = self.profile.ingest
        if ingest is None:
            if not http.start:
                await self._probe()
            return
        items = [
            fill(ingest.item, {"id": d.id, "text": d.text, "title": d.title or ""})
            for d in documents
        ]
        size = ingest.batch_size if ingest.batch_field else 1
        doing = f"ingesting {len(items)} documents"
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            body = {ingest.batch_field: chunk} if ingest.batch_field else chunk[0]
            self._ingested.extend(d.id for d in documents[start : start + size])
            await self._request(ingest.model_copy(update={"body": body}), {}, doing)

    @property
    def _base_url(self) -> str:
        return str(fill(self.profile.http.base_url, self._places))

    async def _start(self) -> None:
        """Run ``[http] start`` and wait until the service answers ``ready_path``."""
        http = self.profile.http
        self._workdir = Path(tempfile.mkdtemp(prefix=f"recallbench-{self.name}-"))
        self._places = {
            "port": str(free_port()),
            "workdir": str(self._workdir),
            "python": sys.executable,
        }
        self._places["base_url"] = self._base_url
        command = [str(fill(part, self._places)) for part in http.start]
        log = self._workdir / "service.log"
        self._process = await start_process(command, self.profile.folder, log)
        deadline = time.monotonic() + http.startup_timeout
        async with httpx.AsyncClient(base_url=self._base_url, timeout=2) as client:
            while True:
                try:
                    answer = await client.get(http.ready_path)
                    if http.ready_path == "/" or answer.status_code < 400:
                        return
                except httpx.TransportError:
                    pass
                if self._process.returncode is not None:
                    raise SystemUnderTestError(
                        f"{self.name}: the service of `{' '.join(command)}` exited "
                        f"({self._process.returncode}) before answering{log_tail(log)}"
                    )
                if time.monotonic() > deadline:
                    raise EndpointUnavailableError(
                        f"{self.name}: the service of `{' '.join(command)}` did not answer "
                        f"{self._base_url}{http.ready_path} within {http.startup_timeout} s"
                        f"{log_tail(log)}"
                    )
                await asyncio.sleep(0.1)

    async def _probe(self) -> None:
        """One request before searching a corpus the endpoint holds: any answer will do,
        an unreachable endpoint fails the run at once (exit 69), not each query."""
        assert self._client is not None
        ready = self.profile.http.ready_path
        try:
            await self._client.get(ready)
        except httpx.TransportError as exc:
            raise self._unavailable(f"GET {ready}", "checking that it answers", exc) from None

    async def _reset(self, doing: str) -> None:
        """Empty the store: the ``[http] reset`` command, then the ``[reset]`` request."""
        http, ids = self.profile.http, list(self._ingested)
        self._ingested = []
        if http.reset:
            places = {**self._places, "base_url": self._base_url}
            workdir = self._workdir or Path(tempfile.gettempdir())
            command = [str(fill(part, places)) for part in http.reset]
            with tempfile.NamedTemporaryFile(suffix=".log", dir=workdir) as log:
                try:
                    await run_command(command, self.profile.folder, Path(log.name), http.timeout)
                except SystemUnderTestError as error:
                    raise SystemUnderTestError(f"{self.name}: {doing}: {error}") from None
        if self.profile.reset is not None:
            await self._request(self.profile.reset, {"ids": ids}, doing)

    async def _request(
        self, endpoint: Endpoint, values: dict[str, Any], doing: str = "searching"
    ) -> Any:
        if self._client is None:
            raise RuntimeError(f"{self.name}: request before setup")
        body = fill(endpoint.body, values) if endpoint.body is not None else None
        params = fill(endpoint.params, values) if endpoint.params is not None else None
        request = f"{endpoint.method} {endpoint.path}"
        try:
            response = await self._client.request(
                endpoint.method, endpoint.path, json=body, params=params
            )
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise self._unavailable(request, doing, exc) from None
        except httpx.TimeoutException:
            raise self._error(
                f"{doing}: {request}: no answer within {self.call_timeout} s"
            ) from None
        except httpx.HTTPError as exc:
            raise self._error(f"{doing}: {request}: {type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise self._error(
                f"{doing}: {request}: HTTP {response.status_code}: {self._text(response)[:200]}"
            )
        if endpoint is self.profile.reset and not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise self._error(f"{doing}: not JSON: {self._text(response)[:120]!r}") from None

    def _unavailable(self, request: str, doing: str, exc: Exception) -> EndpointUnavailableError:
        reason = str(exc) or type(exc).__name__
        hint = "" if self.profile.http.start else " (is the service running?)"
        return EndpointUnavailableError(
            f"{self.name}: cannot reach {self._base_url} while {doing} ({request}): "
            f"{redact(reason, self._secrets)}{hint}"
        )

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
            score = select(item, spec.score) if spec.score else None
            score = float(score) if isinstance(score, int | float) else None
            self.returned += 1
            self.scored += score is not None
            if doc_id is None or str(doc_id) not in self._ids:
                self.unmatched += 1
                continue
            hits.append(Hit(doc_id=str(doc_id), channels=("http",), score=score))
        return hits[:k]

    async def close(self) -> None:
        """Empty the store when something was ingested and the profile says how (the
        service stays as it was found), then stop a started service."""
        try:
            if self._ingested and self._resets and self._client is not None:
                await self._reset("emptying the store after the run")
        finally:
            await self._stop()

    async def _stop(self) -> None:
        """Close the client and stop a started service (its store goes with it)."""
        self._ingested = []
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        process, self._process = self._process, None
        if process is not None:
            await stop_process(process)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
