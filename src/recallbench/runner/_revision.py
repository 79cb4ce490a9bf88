"""The git revision of the working directory, when there is one."""

from __future__ import annotations

import subprocess
from functools import cache


@cache
def git_revision() -> str | None:
    """``git rev-parse HEAD`` of the current directory (``+dirty`` when modified), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head or None
