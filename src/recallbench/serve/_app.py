"""The dashboard as a Starlette application: pages rendered on the server from Jinja2
templates, one static script (``serve.js``: the keyboard, the side panel, filters and sort)
and Chart.js (the copy the HTML reports vendor) for trends. No page holds an inline script
or style (the Content-Security-Policy allows none): data for the scripts travels in JSON
blocks. Every request goes through :class:`TokenGate`, which adds the security headers.

Regression debugging reads the runs' recorded folders (:mod:`._regression`): one query side
by side at ``/compare/query?a=&b=&q=`` (one run's at ``/runs/ID/query?q=``), the report page
of `recallbench compare` at ``/compare/full``.

Store calls are blocking (SQLAlchemy Core): GET pages are plain functions, which Starlette
runs in its thread pool; POST handlers read the form and then do the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from recallbench._version import __version__
from recallbench.core import ConfigError
from recallbench.serve import _regression, _telemetry_views, _views
from recallbench.serve._annotation import ANNOTATOR_COOKIE, Annotation
from recallbench.serve._auth import CSP, TokenGate
from recallbench.serve._labels import GRADE_WORDS
from recallbench.serve._pool_pages import PoolPages
from recallbench.serve._queue import Pair, Queue

if TYPE_CHECKING:
    from recallbench.core import Dataset
    from recallbench.store import Store

STATIC = {
    "chart.js": ("recallbench.render", "static/chart.umd.min.js", "text/javascript"),
    "serve.js": ("recallbench.serve", "static/serve.js", "text/javascript"),
    "serve.css": ("recallbench.serve", "static/serve.css", "text/css"),
}
"""The files the pages load, by the name they load them under: nothing from a CDN."""


@cache
def _static(name: str) -> tuple[bytes, str]:
    package, path, media = STATIC[name]
    return (resources.files(package) / path).read_bytes(), media


def _templates() -> Jinja2Templates:
    import jinja2

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("recallbench.serve", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    environment.filters["num"] = _number
    environment.filters["signed"] = _signed
    environment.globals["grade_words"] = GRADE_WORDS
    environment.globals["version"] = __version__
    return Jinja2Templates(env=environment)


def _number(value: float | None, digits: int = 4) -> str:
    """``0.1234``; "–" for no value (never ``nan``)."""
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 4) -> str:
    """``+0.1234``; "–" for no value (never ``+nan``)."""
    return "–" if value is None or not math.isfinite(value) else f"{value:+.{digits}f}"


class Dashboard:
    """The pages over one store; ``app`` is the ASGI application behind the token."""

    def __init__(
        self,
        store: Store,
        token: str,
        annotator: str | None = None,
        dataset: Dataset | None = None,
        labels_per_pair: int = 1,
        sources: Sequence[Callable[[], Iterable[Pair]]] = (),
    ) -> None:
        self.store = store
        self.dataset = dataset
        self.annotator = annotator
        self.queue = Queue(store, dataset, sources, labels_per_pair)
        self.templates = _templates()
        routes = [
            Route("/", self.home),
            Route("/runs/{run_id:int}", self.run),
            Route("/compare", self.compare),
            Route("/compare/full", self.compare_full),
            Route("/compare/query", self.compare_query),
            Route("/runs/{run_id:int}/query", self.run_query),
            Route("/shadow", self.shadow),
            Route("/telemetry", self.telemetry),
            Route("/telemetry/{query_id:path}", self.telemetry_query),
            Route("/feedback", self.feedback),
            *Annotation(self).routes(),
            *PoolPages(self).routes(),
            Route("/static/{name}", self.static),
        ]
        self.starlette = Starlette(routes=routes)
        self.app = TokenGate(self.starlette, token)

    # -- helpers ----------------------------------------------------------------------

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        context.setdefault("note", request.query_params.get("note", ""))
        return self.templates.TemplateResponse(
            request,
            name,
            {
                "store": self.store.url,
                "workspace": self.store.workspace,
                "annotator": self.who(request),
                **context,
            },
            status_code=status,
        )

    def who(self, request: Request) -> str:
        return request.cookies.get(ANNOTATOR_COOKIE) or self.annotator or ""

    def missing(self, request: Request, message: str) -> Response:
        return self.page(request, "missing.html.j2", status=404, message=message)

    @staticmethod
    def back(path: str, note: str = "") -> RedirectResponse:
        """After a POST, back to a page (303: the browser GETs it)."""
        return RedirectResponse(path + (f"?{urlencode({'note': note})}" if note else ""), 303)

    # -- pages ------------------------------------------------------------------------

    def home(self, request: Request) -> Response:
        data = _views.history(self.store, _page(request))
        charts = {s["id"]: s["chart"] for s in data["series"]}
        return self.page(request, "home.html.j2", charts=_views.chart_json(charts), **data)

    def run(self, request: Request) -> Response:
        try:
            data = _views.run_detail(self.store, request.path_params["run_id"], self.dataset)
        except ConfigError as error:
            return self.missing(request, str(error))
        return self.page(request, "run.html.j2", **data)

    def compare(self, request: Request) -> Response:
        runs = [_views.run_summary(run) for run in self.store.runs()]
        try:
            first = int(request.query_params.get("a", ""))
            second = int(request.query_params.get("b", ""))
        except ValueError:
            return self.page(request, "compare.html.j2", runs=runs, data=None, full=False)
        try:
            focus = request.query_params.get("m", "")
            data = _views.compare(self.store, first, second, self.dataset, focus)
        except ConfigError as error:
            return self.missing(request, str(error))
        sources = [_regression.source(self.store, run_id) for run_id in (first, second)]
        missing = [s.reason for s in sources if s.report is None]
        return self.page(
            request, "compare.html.j2", runs=runs, data=data, full=not missing, missing=missing
        )

    def compare_query(self, request: Request) -> Response:
        """One query as two runs answered it, side by side (from their recorded folders)."""
        try:
            first = int(request.query_params.get("a", ""))
            second = int(request.query_params.get("b", ""))
            sources = [_regression.source(self.store, run_id) for run_id in (first, second)]
        except (ConfigError, ValueError) as error:
            return self.missing(request, str(error) or "give ?a=RUN&b=RUN&q=QUERY")
        return self._query_page(request, sources)

    def run_query(self, request: Request) -> Response:
        """One query as one run answered it (from its recorded folder)."""
        try:
            sources = [_regression.source(self.store, request.path_params["run_id"])]
        except ConfigError as error:
            return self.missing(request, str(error))
        return self._query_page(request, sources)

    def _query_page(self, request: Request, sources: list[_regression.Source]) -> Response:
        query_id = request.query_params.get("q", "")
        reasons = [s.reason for s in sources if s.reason]
        detail = _regression.query_sides(sources, query_id, self.dataset)
        if detail is None and not reasons:
            return self.missing(request, f"no query {query_id!r} in the runs' reports")
        return self.page(
            request,
            "compare_query.html.j2",
            query_id=query_id,
            runs=[s.run_id for s in sources],
            detail=detail,
            reasons=reasons,
        )

    def compare_full(self, request: Request) -> Response:
        """comparison.html of render/_html.py, when both runs' recorded sources are
        report or run files still on disk (the store keeps values, not rankings)."""
        from recallbench.compare import build_comparison, load_compared
        from recallbench.measures import parse_measures
        from recallbench.render._html import dataset_for_texts, render_comparison_html

        try:
            first = int(request.query_params.get("a", ""))
            second = int(request.query_params.get("b", ""))
            sources = [_regression.source(self.store, run_id) for run_id in (first, second)]
            reasons = [s.reason for s in sources if s.report is None]
            if reasons:
                return self.missing(request, "; ".join(reasons))
            paths = [Path(self.store.get(run_id).source or "") for run_id in (first, second)]
            names = [m for m in self.store.get(first).means if m in self.store.get(second).means]
            compared = load_compared(paths, parse_measures(names))
            comparison = build_comparison(compared, names)
        except (ConfigError, ValueError) as error:
            return self.missing(request, str(error))
        dataset = dataset_for_texts(comparison.dataset)
        page = render_comparison_html(comparison, compared, dataset)
        return Response(
            page, media_type="text/html", headers={"content-security-policy": _inline_policy(page)}
        )

    def shadow(self, request: Request) -> Response:
        return self.page(request, "shadow.html.j2", **_views.shadow(self.store))

    def telemetry(self, request: Request) -> Response:
        page = _page(request)
        search = request.query_params.get("q", "")
        return self.page(
            request, "telemetry.html.j2", **_telemetry_views.telemetry(self.store, page, search)
        )

    def telemetry_query(self, request: Request) -> Response:
        query_id = request.path_params["query_id"]
        data = _telemetry_views.telemetry_query(self.store, query_id)
        if data is None:
            return self.missing(request, f"no logged query {query_id!r}")
        return self.page(request, "query.html.j2", **data)

    def feedback(self, request: Request) -> Response:
        kind = request.query_params.get("kind", "")
        return self.page(
            request,
            "feedback.html.j2",
            **_telemetry_views.feedback(self.store, kind, _page(request)),
        )

    def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse("not found\n", 404)
        body, media = _static(name)
        return Response(body, media_type=media, headers={"cache-control": "no-cache"})


def _page(request: Request) -> int:
    try:
        return max(0, int(request.query_params.get("page", "0")))
    except ValueError:
        return 0


def _inline_policy(page: str) -> str:
    """The Content-Security-Policy of a self-contained report page: the dashboard's, with
    the page's own inline scripts and styles allowed by their SHA-256 hashes (nothing else
    inline runs)."""
    import base64
    import hashlib
    import re

    def hashes(tag: str) -> str:
        found = re.findall(rf"<{tag}(?![^>]*\bsrc=)[^>]*>(.*?)</{tag}>", page, re.DOTALL)
        return " ".join(
            f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'"
            for body in found
        )

    return CSP.replace("script-src 'self'", f"script-src 'self' {hashes('script')}").replace(
        "style-src 'self'", f"style-src 'self' {hashes('style')}"
    )
