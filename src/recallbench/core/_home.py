"""recallbench's data directory: installed servers, the history store."""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    """``$RECALLBENCH_HOME``, else ``$XDG_DATA_HOME/recallbench`` (~/.local/share)."""
    if "RECALLBENCH_HOME" in os.environ:
        return Path(os.environ["RECALLBENCH_HOME"]).resolve()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return (Path(base) / "recallbench").resolve()
