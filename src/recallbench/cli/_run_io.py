"""Where `recallbench run` writes: a standard output that may be closed by its reader, and
output folders checked before the run so a bad one fails at once, not after the run."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

from recallbench.core import ConfigError


class ReaderMayLeave:
    """Standard output that goes quiet when its reader leaves (`recallbench run | head`):
    the rest of the output is dropped and the command goes on and exits as it would have.

    Once the pipe is found closed, the file descriptor is pointed at the null device, so
    the interpreter's last flush at exit has somewhere to go too.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._silence()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._silence()

    def _silence(self) -> None:
        self.reader_left = True
        with contextlib.suppress(OSError, ValueError):  # not a real file (tests)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno... as the stream's
        return getattr(self._stream, name)


def writable_folder(folder: Path, flag: str) -> None:
    """ConfigError naming ``folder`` and the system's reason when files cannot be created
    in it: checked before a run, so that none is run in vain. Folders made for the probe
    are removed again, so a run that then fails leaves nothing behind."""
    missing = []
    for ancestor in (folder, *folder.parents):
        if ancestor.exists():
            break
        missing.append(ancestor)
    made: list[Path] = []
    try:
        for part in reversed(missing):
            part.mkdir()
            made.append(part)
        handle, probe = tempfile.mkstemp(prefix=".recallbench-probe-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise ConfigError(f"{flag} {folder}: cannot write there ({_reason(error)})") from None
    finally:
        for part in reversed(made):
            with contextlib.suppress(OSError):
                part.rmdir()


def distinct_folders(
    named: Iterable[tuple[str, str]], folder_of: Callable[[str], str], parent: Path, what: str
) -> None:
    """ConfigError when two of ``named`` (given as, name) would write into one folder under
    ``parent`` (systems ``a b`` and ``a_b`` both become ``a_b``; two LoCoMo files both named
    ``locomo10``): one would overwrite the other's reports without a word."""
    seen: dict[str, tuple[str, str]] = {}
    for given, name in named:
        folder = folder_of(name)
        first = seen.setdefault(folder, (given, name))
        if first != (given, name):
            raise ConfigError(
                f"{what} {first[0]!r} and {given!r} would both write to {parent / folder} "
                f"(named {first[1]!r} and {name!r}): give them distinct names, or one would "
                "overwrite the other's reports"
            )


def written(action: str, folder: Path, error: OSError) -> ConfigError:
    """The error for files that could not be written after all (disk full...)."""
    return ConfigError(f"{action} {folder}: cannot write there ({_reason(error)})")


def _reason(error: OSError) -> str:
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}"


@contextlib.contextmanager
def staged(folder: Path, flag: str) -> Iterator[Path]:
    """A hidden folder inside ``folder`` to write every file into; when the block ends
    well, each file is moved to its place in ``folder`` (a rename, on one file system),
    else the staging folder is removed and ``folder`` is as it was (folders made for it
    removed too): a failure halfway writes nothing."""
    missing = [a for a in (folder, *folder.parents) if not a.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=".recallbench-staged-", dir=folder))
    except OSError as error:
        raise written(flag, folder, error) from None
    try:
        yield stage
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            target = folder / path.relative_to(stage)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        for made in missing:  # nearest first
            with contextlib.suppress(OSError):
                made.rmdir()
        raise
    shutil.rmtree(stage, ignore_errors=True)
