"""`recallbench serve`: a local dashboard over the history and telemetry store.

Runs and their trends, any two runs compared, shadow tests, the query log and feedback,
an annotation queue (graded labels and blind pairwise preferences, from the keyboard) and
the judge's agreement with people. Served by uvicorn on 127.0.0.1 only; every request needs
the token printed at start (see ``_auth``).

Names are imported on first use (PEP 562): listing the commands (``recallbench --help``)
imports the command's module, which must not load Starlette, Jinja2 and the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallbench._lazy import lazy_exports

if TYPE_CHECKING:
    from recallbench.serve._app import Dashboard

__all__ = ["Dashboard"]

__getattr__ = lazy_exports(__name__, ("_app",), __all__)
