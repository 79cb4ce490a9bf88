"""The dashboard's annotation pages: the graded queue, blind pairwise choices, undo, the
annotator's name and the agreement of the judge with people. Every write goes through the
queue (:mod:`._queue`), which refuses a label written over one its author was not shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recallbench.core import ConfigError
from recallbench.serve import _agreement
from recallbench.serve._labels import LabelConflict, label_version

if TYPE_CHECKING:
    from starlette.responses import RedirectResponse

    from recallbench.core import Dataset
    from recallbench.serve._queue import Queue
    from recallbench.store import Store

ANNOTATOR_COOKIE = "recallbench_annotator"


class Dashboard(Protocol):
    """What the annotation pages use of the dashboard (:class:`._app.Dashboard`)."""

    store: Store
    dataset: Dataset | None
    queue: Queue

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        """A template rendered with the dashboard's context."""

    def who(self, request: Request) -> str:
        """The annotator's name, from the cookie or --annotator."""

    def back(self, path: str, note: str = "") -> RedirectResponse:
        """After a POST, back to a page."""


class Annotation:
    """The annotation routes of one dashboard (its store, queue and page renderer)."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def routes(self) -> list[Route]:
        return [
            Route("/annotate", self.annotate),
            Route("/annotate/grade", self.grade, methods=["POST"]),
            Route("/annotate/skip", self.skip, methods=["POST"]),
            Route("/pairwise", self.pairwise),
            Route("/pairwise/choose", self.choose, methods=["POST"]),
            Route("/pairwise/skip", self.skip_pairwise, methods=["POST"]),
            Route("/undo", self.undo, methods=["POST"]),
            Route("/annotator", self.set_annotator, methods=["POST"]),
            Route("/agreement", self.agreement),
        ]

    def agreement(self, request: Request) -> Response:
        return self.dashboard.page(
            request, "agreement.html.j2", **_agreement.agreement(self.dashboard.store)
        )

    def annotate(self, request: Request) -> Response:
        pair, left, total = self.dashboard.queue.pending(self.dashboard.who(request))
        return self.dashboard.page(
            request,
            "annotate.html.j2",
            pair=pair,
            left=left,
            total=total,
            dataset=self.dashboard.dataset,
            conflict=None,
            replaces="",
        )

    def conflict(self, request: Request, conflict: LabelConflict) -> Response:
        """The pair again, with the label written meanwhile (409): nothing was written,
        and a grade posted from this page replaces that label knowingly."""
        _, left, total = self.dashboard.queue.pending(self.dashboard.who(request))
        return self.dashboard.page(
            request,
            "annotate.html.j2",
            status=409,
            pair=self.dashboard.queue.pair(*conflict.key),
            left=left,
            total=total,
            dataset=self.dashboard.dataset,
            conflict=conflict,
            replaces=label_version(conflict.current),
        )

    def pairwise(self, request: Request) -> Response:
        item, left, total = self.dashboard.queue.pending_pairwise(self.dashboard.who(request))
        shown = self.dashboard.queue.shown_first()
        sides = []
        if item is not None:
            sides = [item.first, item.second] if shown == "first" else [item.second, item.first]
        return self.dashboard.page(
            request, "pairwise.html.j2", item=item, sides=sides, shown=shown, left=left, total=total
        )

    async def grade(self, request: Request) -> Response:
        form = await request.form()
        try:
            grade = int(str(form.get("grade", "")))
            await run_in_threadpool(
                self.dashboard.queue.grade,
                self.dashboard.who(request),
                str(form.get("query_id", "")),
                str(form.get("doc_id", "")),
                grade,
                str(form.get("replaces", "")),  # a form naming no label replaces none
            )
        except LabelConflict as conflict:
            return await run_in_threadpool(self.conflict, request, conflict)
        except (ConfigError, ValueError) as error:
            return self.dashboard.back("/annotate", str(error))
        return self.dashboard.back("/annotate")

    async def skip(self, request: Request) -> Response:
        form = await request.form()
        key = (str(form.get("query_id", "")), str(form.get("doc_id", "")))
        try:
            await run_in_threadpool(self.dashboard.queue.skip, self.dashboard.who(request), key)
        except ConfigError as error:
            return self.dashboard.back("/annotate", str(error))
        return self.dashboard.back("/annotate")

    async def choose(self, request: Request) -> Response:
        form = await request.form()
        shown = str(form.get("shown", ""))
        try:
            await run_in_threadpool(
                self.dashboard.queue.prefer,
                self.dashboard.who(request),
                str(form.get("item", "")),
                str(form.get("choice", "")),
                shown,  # checked by prefer
            )
        except ConfigError as error:
            return self.dashboard.back("/pairwise", str(error))
        return self.dashboard.back("/pairwise")

    async def skip_pairwise(self, request: Request) -> Response:
        form = await request.form()
        try:
            await run_in_threadpool(
                self.dashboard.queue.skip,
                self.dashboard.who(request),
                (str(form.get("item", "")),),
                True,
            )
        except ConfigError as error:
            return self.dashboard.back("/pairwise", str(error))
        return self.dashboard.back("/pairwise")

    async def undo(self, request: Request) -> Response:
        form = await request.form()
        where = "/pairwise" if form.get("next") == "pairwise" else "/annotate"
        try:
            undone = await run_in_threadpool(self.dashboard.queue.undo, self.dashboard.who(request))
        except ConfigError as error:
            return self.dashboard.back(where, str(error))
        return self.dashboard.back(where, "nothing to undo" if undone is None else undone.message)

    async def set_annotator(self, request: Request) -> Response:
        form = await request.form()
        name = str(form.get("annotator", "")).strip()
        where = "/pairwise" if form.get("next") == "pairwise" else "/annotate"
        response = self.dashboard.back(where)
        if name:
            response.set_cookie(ANNOTATOR_COOKIE, name, httponly=True, samesite="strict")
        return response
