"""`recallbench serve` started as a process for the browser tests: on port 0 (any free
port) over a store, the URL it prints (with its token) read from its output, stopped by
SIGTERM afterwards."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 60.0


@contextlib.contextmanager
def serving(
    tmp_path: Path, store: str, annotator: str | None = None, *options: str
) -> Iterator[str]:
    """The printed URL of a dashboard over ``store`` (extra command-line ``options``)."""
    log = tmp_path / "serve.log"
    env = {**os.environ, "RECALLBENCH_HOME": str(tmp_path / "home")}
    env.pop("RECALLBENCH_SERVE_TOKEN", None)
    command = [sys.executable, "-m", "recallbench", "serve", "--store", store, "--port", "0"]
    if annotator is not None:
        command += ["--annotator", annotator]
    with log.open("w") as output:
        process = subprocess.Popen([*command, *options], stdout=output, stderr=output, env=env)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        url = None
        while url is None:
            found = re.search(r"open (http://127\.0\.0\.1:\d+/\?token=\S+)", log.read_text())
            if found:
                url = found.group(1)
            elif process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"recallbench serve did not start:\n{log.read_text()}")
            else:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
