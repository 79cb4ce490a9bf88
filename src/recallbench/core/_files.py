"""Atomic file writes: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process's umask (reading it means setting it, so briefly and under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _temporary_beside(path: Path, text: str, mode: int) -> str:
    """``text`` in a synced temporary file in ``path``'s folder, with ``mode``; its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        handle, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
    except OSError as error:
        raise _about(error, path) from None
    try:
        # mkstemp creates 0600; a report is an ordinary file and follows the umask
        os.fchmod(handle, mode)
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(error, OSError):  # a full disk: named by the file asked for
            raise _about(error, path) from None
        raise
    return temporary


def _about(error: OSError, path: Path) -> OSError:
    """``error`` naming ``path``, the file the user asked for, instead of the temporary
    file beside it (whose name means nothing to them)."""
    return type(error)(error.errno, error.strerror, str(path))


def atomic_write_texts(files: Mapping[Path, str]) -> None:
    """Write every file, or none: each text goes to a temporary file beside its path
    first, and only when all are written are they renamed into place.

    An interrupt or crash before the renames leaves every path untouched and removes the
    temporary files. Files get the mode an ordinary new file gets (0666 less the umask).
    """
    mode = 0o666 & ~_umask()
    written: list[tuple[str, Path]] = []
    try:
        for path, text in files.items():
            written.append((_temporary_beside(path, text, mode), path))
        for temporary, path in written:
            try:
                os.replace(temporary, path)
            except OSError as error:
                raise _about(error, path) from None
    except BaseException:
        for temporary, _ in written:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, flush it to disk, then rename.

    An interrupt or crash before the rename leaves ``path`` untouched and removes the
    temporary file. The file gets the mode an ordinary new file gets (0666 less the umask).
    """
    atomic_write_texts({path: text})
