"""The adjudication view (``/adjudicate``): the pairs whose annotators disagree, one at a
time, with every annotator's label, the query and the memory; keys 0-3 choose the resolved
grade, ``s`` skips, ``u`` undoes.

The resolved grade goes to the store's ``adjudications`` table with who resolved it and
when, a history event ``adjudicate``, and the pair's ``manual`` judgment, whose annotator is
then ``NAME (adjudicated)``. The form names the version of the pair as shown (every label
and the adjudication, :func:`._labels.pair_version`): when any of them changed meanwhile,
nothing is written and the page shows the pair as it is now (409).
``/adjudicate?query_id=Q&doc_id=D`` opens one pair (from the Agreement page's list), also
one adjudicated before, to adjudicate it again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from recallbench.core import ConfigError
from recallbench.serve._labels import AdjudicationConflict

if TYPE_CHECKING:
    from starlette.responses import RedirectResponse

    from recallbench.serve._labels import PairState
    from recallbench.serve._queue import Queue


class Pages(Protocol):
    """What the adjudication view uses of the dashboard."""

    queue: Queue

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        """A template rendered with the dashboard's context."""

    def who(self, request: Request) -> str:
        """The annotator's name, from the cookie or --annotator."""

    def back(self, path: str, note: str = "") -> RedirectResponse:
        """After a POST, back to a page."""


class Adjudication:
    """The adjudication routes of one dashboard."""

    def __init__(self, dashboard: Pages) -> None:
        self.dashboard = dashboard

    def routes(self) -> list[Route]:
        return [
            Route("/adjudicate", self.adjudicate),
            Route("/adjudicate/resolve", self.resolve, methods=["POST"]),
            Route("/adjudicate/skip", self.skip, methods=["POST"]),
        ]

    def adjudicate(self, request: Request) -> Response:
        queue = self.dashboard.queue
        state, left = queue.pending_adjudication(self.dashboard.who(request))
        query_id, doc_id = request.query_params.get("query_id"), request.query_params.get("doc_id")
        if query_id is not None and doc_id is not None:
            state = queue.state(query_id, doc_id)
            if not state.labels and state.adjudicated is None:
                return self.dashboard.back("/adjudicate", f"({query_id}, {doc_id}) has no label")
        return self._page(request, state, left, None)

    def _page(
        self,
        request: Request,
        state: PairState | None,
        left: int,
        conflict: AdjudicationConflict | None,
    ) -> Response:
        pair = self.dashboard.queue.shown(*state.key) if state is not None else None
        return self.dashboard.page(
            request,
            "adjudicate.html.j2",
            status=409 if conflict is not None else 200,
            state=state,
            pair=pair,
            left=left,
            conflict=conflict,
        )

    async def resolve(self, request: Request) -> Response:
        form = await request.form()
        try:
            grade = int(str(form.get("grade", "")))
            await run_in_threadpool(
                self.dashboard.queue.adjudicate,
                self.dashboard.who(request),
                str(form.get("query_id", "")),
                str(form.get("doc_id", "")),
                grade,
                str(form.get("replaces", "")),
            )
        except AdjudicationConflict as conflict:
            return await run_in_threadpool(self._conflict, request, conflict)
        except (ConfigError, ValueError) as error:
            return self.dashboard.back("/adjudicate", str(error))
        return self.dashboard.back("/adjudicate")

    def _conflict(self, request: Request, conflict: AdjudicationConflict) -> Response:
        _, left = self.dashboard.queue.pending_adjudication(self.dashboard.who(request))
        return self._page(request, conflict.state, left, conflict)

    async def skip(self, request: Request) -> Response:
        form = await request.form()
        key = ("adjudicate", str(form.get("query_id", "")), str(form.get("doc_id", "")))
        try:
            await run_in_threadpool(
                self.dashboard.queue.skip, self.dashboard.who(request), key, "skip-adjudicate"
            )
        except ConfigError as error:
            return self.dashboard.back("/adjudicate", str(error))
        return self.dashboard.back("/adjudicate")
