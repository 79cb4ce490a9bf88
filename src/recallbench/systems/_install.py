"""Install a profile's server into recallbench's data directory with the registries'
ordinary clients (npm, pip), once; ``{install}`` in a profile is that folder.

A Python server gets the major version of the ``mcp`` SDK it was written against: a
package that declares ``mcp>=1.2`` imports 1.x (``mcp.server.fastmcp``), which 2.x no
longer has, while pip would pick the newest. Its declared requirement is read from the
installed metadata and, when it has no upper bound, the major of its lower bound is
installed (``mcp>=1.2,<2``); ``[install] mcp`` says it when the package does not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from importlib.metadata import distributions
from pathlib import Path

from recallbench.core import SystemUnderTestError
from recallbench.core._home import data_home
from recallbench.systems._profile import Profile

MARKER = ".recallbench-installed"


def install_folder(profile: Profile) -> Path:
    return data_home() / "servers" / profile.name


def _spec(profile: Profile) -> str:
    # a profile without [install] mcp records what it did before that key existed
    unset = {"mcp"} if profile.install.mcp is None else set()
    return profile.install.model_dump_json(exclude=unset)


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
        pip = [str(folder / "venv" / "bin" / "python"), "-m", "pip", "install"]
        pip += ["-q"] if quiet else []
        declared = [f"mcp{profile.install.mcp}"] if profile.install.mcp else []
        _run([*pip, *profile.install.pip, *declared], profile)
        if not declared:
            needed = mcp_constraints(*_metadata(folder / "venv", profile.install.pip))
            if needed:
                _run([*pip, *needed], profile)
    (folder / MARKER).write_text(_spec(profile))
    return folder


_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^\]]*)\])?"
    r"\s*\(?(?P<spec>[^;()]*)\)?\s*(?:;(?P<marker>.*))?$"
)
_EXTRA = re.compile(r"""extra\s*==\s*['"]([^'"]+)['"]""")
_CLAUSE = re.compile(r"^\s*(~=|===?|!=|<=|>=|<|>)\s*([0-9][^\s,]*)\s*$")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(requirement: str) -> tuple[str, set[str], str, str] | None:
    """Name (canonical), extras, specifier and marker of a requirement, or None for one
    that is not a plain name (a URL, a path)."""
    found = _REQUIREMENT.match(requirement)
    if found is None:
        return None
    extras = {_canonical(e) for e in (found["extras"] or "").split(",") if e.strip()}
    return _canonical(found["name"]), extras, found["spec"].strip(), found["marker"] or ""


def _major(version: str) -> int | None:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else None


def mcp_constraints(
    requires: dict[str, tuple[set[str], list[str]]], installed: str | None
) -> list[str]:
    """The ``mcp`` requirements to install so that each package gets the SDK major it
    declares: ``requires`` maps each requested package to the extras requested and its
    ``Requires-Dist`` lines; ``installed`` is the ``mcp`` version pip chose (None: none).

    A requirement with an upper bound (``<2``, ``==``, ``~=``) is honoured by pip already,
    and one without any bound says nothing: neither adds anything. One with only a lower
    bound (``mcp>=1.2``) adds ``mcp>=1.2,<2`` when the installed major is higher."""
    needed: list[str] = []
    for extras, lines in requires.values():
        for line in lines:
            parsed = _parse(line)
            if parsed is None or parsed[0] != "mcp":
                continue
            extra = _EXTRA.search(parsed[3])
            if extra is not None and _canonical(extra.group(1)) not in extras:
                continue
            clauses = [_CLAUSE.match(c) for c in parsed[2].split(",") if c.strip()]
            ops = {c.group(1) for c in clauses if c is not None}
            if ops & {"<", "<=", "==", "===", "~="} or not ops & {">=", ">"}:
                continue
            majors = [_major(c.group(2)) for c in clauses if c is not None and ">" in c.group(1)]
            major = max((m for m in majors if m is not None), default=None)
            now = _major(installed) if installed else None
            if major is not None and (now is None or now > major):
                needed.append(f"mcp{parsed[2].replace(' ', '')},<{major + 1}")
    return needed


def _metadata(
    venv: Path, requested: Iterable[str]
) -> tuple[dict[str, tuple[set[str], list[str]]], str | None]:
    """For each requested package installed in ``venv``: its requested extras and its
    ``Requires-Dist``; and the ``mcp`` version installed there (None: none)."""
    sites = [str(path) for path in sorted(venv.glob("lib/python*/site-packages"))]
    found = {_canonical(d.metadata["Name"]): d for d in distributions(path=sites)}
    requires: dict[str, tuple[set[str], list[str]]] = {}
    for requirement in requested:
        parsed = _parse(requirement)
        if parsed is not None and parsed[0] in found:
            requires[parsed[0]] = (parsed[1], list(found[parsed[0]].requires or []))
    mcp = found.get("mcp")
    return requires, (mcp.version if mcp is not None else None)


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
