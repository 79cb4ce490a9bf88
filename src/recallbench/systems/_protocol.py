"""What recallbench needs from a system under test."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from recallbench.core import Document, Hit, Query


@runtime_checkable
class SystemUnderTest(Protocol):
    """A memory system: ingest a corpus, answer searches, release resources.

    Methods are async because most systems talk to a process or a network. ``search``
    returns hits in the system's own order; recallbench never reorders them.
    """

    name: str
    """Registered name, recorded in runs."""

    def settings(self) -> dict[str, Any]:
        """The settings that shaped the results, recorded in the run spec."""
        ...

    async def setup(self, documents: Sequence[Document]) -> None:
        """Ingest the corpus into a fresh store. Called again (datasets with units), it
        discards the previous store first."""
        ...

    async def search(self, query: Query, k: int) -> Sequence[Hit]:
        """At most ``k`` hits for ``query``, best first."""
        ...

    async def close(self) -> None:
        """Release processes, files and connections."""
        ...
