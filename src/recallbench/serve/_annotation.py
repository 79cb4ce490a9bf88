"""The dashboard's annotation pages: the graded queue, adjudication of conflicts
(:mod:`._adjudicate`), blind pairwise choices, undo, the annotator's name and the Agreement
page (people with each other, and the judge with people). Every write goes through the
queue (:mod:`._queue`), which refuses a write naming a version that is no longer current.

The annotation page is blind: a pair still to label shows no one else's label. Once the
annotator labelled it, the page says how the others labelled it (on the next page, and on
``/annotate?query_id=Q&doc_id=D``, where they may also relabel it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recallbench.core import ConfigError
from recallbench.serve import _agreement
from recallbench.serve._adjudicate import Adjudication
from recallbench.serve._labels import LabelConflict, label_version

if TYPE_CHECKING:
    from starlette.responses import RedirectResponse

    from recallbench.core import Dataset
    from recallbench.serve._labels import PairState
    from recallbench.serve._queue import Pair, Queue
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
            *Adjudication(self.dashboard).routes(),
        ]

    def agreement(self, request: Request) -> Response:
        store = self.dashboard.store
        return self.dashboard.page(
            request,
            "agreement.html.j2",
            team=_agreement.team(store),
            labels_per_pair=self.dashboard.queue.labels_per_pair,
            **_agreement.agreement(store),
        )

    def annotate(self, request: Request) -> Response:
        """The next pair of the annotator's queue, or the pair the URL names (to see how
        the others labelled it once one did, and relabel it)."""
        queue, who = self.dashboard.queue, self.dashboard.who(request)
        pair, left, total = queue.pending(who)
        query_id, doc_id = request.query_params.get("query_id"), request.query_params.get("doc_id")
        if query_id is None or doc_id is None:
            return self._page(request, pair, left, total, None, last=queue.last_labelled(who))
        try:
            pair = queue.pair(query_id, doc_id)
        except ConfigError as error:
            return self.dashboard.back("/annotate", str(error))
        return self._page(request, pair, left, total, None)

    def _page(
        self,
        request: Request,
        pair: Pair | None,
        left: int,
        total: int,
        conflict: LabelConflict | None,
        last: PairState | None = None,
    ) -> Response:
        queue, who = self.dashboard.queue, self.dashboard.who(request)
        own = queue.own(who, *pair.key) if pair is not None and who else None
        mine = own if own is not None and own.grade is not None else None
        others = []
        if pair is not None and mine is not None:  # blind until one labelled it
            others = [x for x in queue.state(*pair.key).labels if x.annotator != who]
        return self.dashboard.page(
            request,
            "annotate.html.j2",
            status=409 if conflict is not None else 200,
            pair=pair,
            left=left,
            total=total,
            dataset=self.dashboard.dataset,
            conflict=conflict,
            replaces=label_version(own),
            mine=mine,
            others=others,
            last=last,
            last_mine=last.of(who) if last is not None else None,
            labels_per_pair=queue.labels_per_pair,
        )

    def conflict(self, request: Request, conflict: LabelConflict) -> Response:
        """The pair again, with the annotator's own label as another tab wrote it (409):
        nothing was written, and a grade posted from this page replaces it knowingly."""
        _, left, total = self.dashboard.queue.pending(self.dashboard.who(request))
        pair = self.dashboard.queue.pair(*conflict.key)
        return self._page(request, pair, left, total, conflict)

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
                "skip-pairwise",
            )
        except ConfigError as error:
            return self.dashboard.back("/pairwise", str(error))
        return self.dashboard.back("/pairwise")

    async def undo(self, request: Request) -> Response:
        form = await request.form()
        where = _next(form.get("next"))
        try:
            undone = await run_in_threadpool(self.dashboard.queue.undo, self.dashboard.who(request))
        except ConfigError as error:
            return self.dashboard.back(where, str(error))
        return self.dashboard.back(where, "nothing to undo" if undone is None else undone.message)

    async def set_annotator(self, request: Request) -> Response:
        form = await request.form()
        name = str(form.get("annotator", "")).strip()
        where = _next(form.get("next"))
        response = self.dashboard.back(where)
        if name:
            response.set_cookie(ANNOTATOR_COOKIE, name, httponly=True, samesite="strict")
        return response


def _next(page: object) -> str:
    """Where a POST goes back to: the page it came from."""
    return {"pairwise": "/pairwise", "adjudicate": "/adjudicate"}.get(str(page), "/annotate")
