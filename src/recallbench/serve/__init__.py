"""`recallbench serve`: a local dashboard over the history and telemetry store.

Runs and their trends, any two runs compared, shadow tests, the query log and feedback,
an annotation queue (graded labels and blind pairwise preferences, from the keyboard) and
the judge's agreement with people. Served by uvicorn on 127.0.0.1 only; every request needs
the token printed at start (see ``_auth``). Starlette and uvicorn are imported with this
package, not with ``recallbench``.
"""

from __future__ import annotations

from recallbench.serve._app import Dashboard

__all__ = ["Dashboard"]
