"""What the proxy tells an observer of its sessions: :class:`SessionObserver`, the calls
the proxy makes while it serves the agent, on either way of serving (the SDK's server,
:mod:`recallbench.online._proxy`, or the relay, :mod:`recallbench.online._relayed`).

Shadowing (:class:`recallbench.online._shadow.Shadow`) is such an observer. The proxy
knows it only through this interface, and the shadow knows nothing of the proxy; the
serving code (:mod:`recallbench.online._serve`) starts both and hands one to the other.

The calls are made on the proxy's event loop, but for :attr:`~SessionObserver.closed` and
:meth:`~SessionObserver.missed`, which the relay's path may ask from the proxy's logging
thread (it hands each answered call to the loop, unless the observer is closed). None of
them may fail the agent's call: an observer counts and says its own failures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol


class SessionObserver(Protocol):
    """The calls the proxy makes to an observer of the agent's calls (see the module)."""

    def attach(self, submit: Callable[[Callable[[], None]], None]) -> None:
        """The proxy's logging thread: ``submit`` runs a job there, after the calls already
        answered are logged (the observer's own records go that way)."""
        ...

    def calls_started(self) -> None:
        """One of the agent's calls is forwarded to the server (in flight)."""
        ...

    def calls_ended(self) -> None:
        """One of the agent's calls in flight was answered (or failed)."""
        ...

    def begin(
        self, tool: str, arguments: Mapping[str, Any], query_id: str, session_id: str | None
    ) -> Any:
        """Before a call goes to the server (SDK path): a token when the observer takes
        part in the answer (:meth:`shown` or :meth:`failed` follow), else None."""
        ...

    async def shown(
        self, pending: Any, answer: dict[str, Any], latency_ms: float
    ) -> dict[str, Any]:
        """The answer the agent is given for the call of ``pending`` (the server's ``answer``,
        or the observer's rewriting of it)."""
        ...

    def failed(self, pending: Any, latency_ms: float, error: BaseException) -> None:
        """The call of ``pending`` failed at the server with ``error``."""
        ...

    def observe(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        answer: dict[str, Any] | None,
        latency_ms: float,
        query_id: str | None,
        error: BaseException | None = None,
        session_id: str | None = None,
    ) -> None:
        """A call of the agent's was answered (or failed with ``error``, ``answer`` None),
        ``query_id`` being the id its search is logged under, in ``session_id``."""
        ...

    def missed(self, tool: str, arguments: Mapping[str, Any]) -> None:
        """A call answered once the observer was closed (or the loop had stopped): it is
        not observed, only counted."""
        ...

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (calls handed over now are :meth:`missed`)."""
        ...

    async def drain(self, grace: float, settle: Callable[[], None] | None = None) -> None:
        """The proxy stops: the observer gets ``grace`` seconds to finish its work (and
        that of the calls ``settle``, run in a thread, still hands over)."""
        ...

    def close(self) -> None:
        """No more calls: what is unfinished is given up (counted)."""
        ...

    def finish(self) -> None:
        """The logging thread has stopped: write what is left, say the summary."""
        ...
