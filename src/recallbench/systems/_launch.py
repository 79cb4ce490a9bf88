"""Starting a profile's server: what the MCP adapter and the MCP proxy both do; and the
commands profiles run beside it (an HTTP service's ``start`` and ``reset``, an indexer's
``[ingest.index] command``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from recallbench.core import SystemUnderTestError
from recallbench.core._net import free_port
from recallbench.systems._install import install_folder, is_installed
from recallbench.systems._profile import Profile


def require_installed(profile: Profile) -> None:
    """SystemUnderTestError saying how to install a profile's server that is not installed."""
    needs_install = bool(profile.install.npm or profile.install.pip)
    if needs_install and not is_installed(profile):
        raise SystemUnderTestError(
            f"{profile.name} is not installed: run `recallbench systems install {profile.name}`"
        )


def profile_places(profile: Profile, workdir: Path) -> dict[str, str]:
    """What ``{workdir}``, ``{install}`` and ``{port}`` stand for in a profile."""
    return {
        "workdir": str(workdir),
        "install": str(install_folder(profile)),
        "port": str(free_port()),
    }


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """Terminate a server process, killing it when it does not end within 5 s."""
    if process.returncode is None:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()


def log_tail(log: Path, lines: int = 3) -> str:
    """`` (it said: a / b / c)``: the last lines a process wrote to ``log``, or ""."""
    try:
        tail = log.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return ""
    return (" (it said: " + " / ".join(tail) + ")") if tail else ""


async def start_process(
    command: Sequence[str], cwd: Path, log: Path, env: dict[str, str] | None = None
) -> asyncio.subprocess.Process:
    """Start ``command`` in ``cwd``, its output to ``log``, its input closed;
    SystemUnderTestError naming the command when it cannot start."""
    with log.open("w") as out:
        try:
            return await asyncio.create_subprocess_exec(
                *command,
                cwd=str(cwd),
                env={**os.environ, **(env or {})},
                stdout=out,
                stderr=out,
                stdin=asyncio.subprocess.DEVNULL,
            )
        except OSError as error:
            raise SystemUnderTestError(
                f"cannot start `{' '.join(command)}`: {error.strerror or error}"
            ) from None


async def run_command(
    command: Sequence[str],
    cwd: Path,
    log: Path,
    timeout: float,
    env: dict[str, str] | None = None,
) -> None:
    """Run ``command`` to its end; SystemUnderTestError naming it when it fails, or does
    not end within ``timeout`` seconds (it is then stopped)."""
    process = await start_process(command, cwd, log, env)
    try:
        await asyncio.wait_for(process.wait(), timeout)
    except TimeoutError:
        await stop_process(process)
        raise SystemUnderTestError(
            f"`{' '.join(command)}` did not end within {timeout} s{log_tail(log)}"
        ) from None
    if process.returncode != 0:
        raise SystemUnderTestError(
            f"`{' '.join(command)}` failed (exit {process.returncode}){log_tail(log)}"
        )
