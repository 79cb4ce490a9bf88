"""The dashboard's pool page (``/pool``): how far people have labelled the judging pool of
runs (:mod:`._pool`), overall, per run and per depth. The pool is the :class:`~._pool.Pool`
among the queue's sources; without one the page says how to start the dashboard with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from starlette.routing import Route

from recallbench.serve._pool import Pool

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from recallbench.serve._queue import Queue
    from recallbench.store import Store

MANUAL = "manual"


class Dashboard(Protocol):
    """What the pool page uses of the dashboard (:class:`._app.Dashboard`)."""

    store: Store
    queue: Queue

    def page(self, request: Request, name: str, status: int = 200, **context: Any) -> Response:
        """A template rendered with the dashboard's context."""


class PoolPages:
    """The pool's routes of one dashboard."""

    def __init__(self, dashboard: Dashboard) -> None:
        self.dashboard = dashboard

    def routes(self) -> list[Route]:
        return [Route("/pool", self.pool)]

    def pool(self, request: Request) -> Response:
        pool = pool_of(self.dashboard.queue)
        progress = None
        if pool is not None:
            # a pair counts once anyone labelled it: a conflict, or a pair waiting for
            # more annotators under --labels-per-pair, has people's labels already
            store = self.dashboard.store
            labelled = {(j.query_id, j.doc_id) for j in store.judgments(source=MANUAL)}
            labelled |= {label.key for label in store.labels() if label.grade is not None}
            progress = pool.progress(labelled)
        return self.dashboard.page(request, "pool.html.j2", pool=pool, progress=progress)


def pool_of(queue: Queue) -> Pool | None:
    """The judging pool among the queue's sources, if there is one."""
    return next((source for source in queue.sources if isinstance(source, Pool)), None)
