"""Install a profile's server into recallbench's data directory with the registries'
ordinary clients (npm, pip), once; ``{install}`` in a profile is that folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from recallbench.core import SystemUnderTestError
from recallbench.core._home import data_home
from recallbench.systems._profile import Profile

MARKER = ".recallbench-installed"


def install_folder(profile: Profile) -> Path:
    return data_home() / "servers" / profile.name


def _spec(profile: Profile) -> str:
    return profile.install.model_dump_json()


def is_installed(profile: Profile) -> bool:
    marker = install_folder(profile) / MARKER
    return marker.is_file() and marker.read_text() == _spec(profile)


def install(profile: Profile, quiet: bool = True) -> Path:
    """Install the profile's server unless the same spec is already installed."""
    folder = install_folder(profile)
    if is_installed(profile):
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    if profile.install.npm:
        npm = shutil.which("npm")
        if npm is None:
            raise SystemUnderTestError(f"{profile.name}: installing it needs npm (Node.js)")
        _run(
            [
                npm,
                "install",
                "--prefix",
                str(folder),
                "--no-audit",
                "--no-fund",
                *(["--silent"] if quiet else []),
                profile.install.npm,
            ],
            profile,
        )
    if profile.install.pip:
        python = find_python(profile.install.python) if profile.install.python else sys.executable
        _run([python, "-m", "venv", str(folder / "venv")], profile)
        _run(
            [
                str(folder / "venv" / "bin" / "python"),
                "-m",
                "pip",
                "install",
                *(["-q"] if quiet else []),
                *profile.install.pip,
            ],
            profile,
        )
    (folder / MARKER).write_text(_spec(profile))
    return folder


def find_python(version: str) -> str:
    """An interpreter for ``version`` ("3.12"): pyenv's installed versions first (its shims
    refuse versions that are not selected), then ``python3.12`` on the PATH."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = sorted(root.glob(f"versions/{version}*/bin/python{version}"))
    if found:
        return str(found[-1])
    candidate = shutil.which(f"python{version}")
    if candidate:
        probe = subprocess.run([candidate, "--version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return candidate
    raise SystemUnderTestError(f"Python {version} is needed and was not found (pyenv or PATH)")


def _run(command: list[str], profile: Profile) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise SystemUnderTestError(
            f"{profile.name}: `{' '.join(command[:3])} ...` failed ({done.returncode}): "
            + " / ".join(tail)
        )
