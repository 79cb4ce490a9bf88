"""Starting a profile's server: what the MCP adapter and the MCP proxy both do."""

from __future__ import annotations

import asyncio
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
