"""A Python MCP server gets the ``mcp`` major it was written against: read from its
declared requirement (a lower bound only: that major), or ``[install] mcp``; never a pin
written into the profile by hand. The real install (agent-logbook, which imports
FastMCP from mcp 1.x and declares ``mcp>=1.2.0``) is in tests/test_examples.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallbench.core import DatasetError
from recallbench.systems._install import _metadata, _spec, mcp_constraints
from recallbench.systems._profile import Install, load_profile, shipped_profiles


def requires(
    lines: list[str], extras: set[str] | None = None
) -> dict[str, tuple[set[str], list[str]]]:
    return {"server": (extras or set(), lines)}


@pytest.mark.parametrize(
    ("lines", "installed", "needed"),
    [
        (["mcp>=1.2.0"], "2.3.0", ["mcp>=1.2.0,<2"]),  # written against 1.x, pip took 2.x
        (["mcp>=1.2.0"], "1.30.0", []),  # already the right major
        (["mcp>=1.2.0"], None, ["mcp>=1.2.0,<2"]),
        (["mcp (>=1.9)"], "2.0.0", ["mcp>=1.9,<2"]),  # the old parenthesised form
        (["mcp[cli]>=1.6; python_version >= '3.10'"], "2.3.0", ["mcp>=1.6,<2"]),
        (["mcp>=2.1"], "3.0.0", ["mcp>=2.1,<3"]),
        (["mcp<3,>=2"], "2.3.0", []),  # an upper bound: pip honours it already
        (["mcp~=1.9"], "1.9.4", []),
        (["mcp==1.9.4"], "1.9.4", []),
        (["mcp"], "2.3.0", []),  # no bound says nothing: [install] mcp is for that
        (["mcpx>=1.0", "numpy>=1"], "2.3.0", []),  # other packages
    ],
)
def test_the_major_of_a_lower_bound_is_kept(
    lines: list[str], installed: str | None, needed: list[str]
) -> None:
    assert mcp_constraints(requires(lines), installed) == needed


def test_a_requirement_of_an_extra_counts_only_when_the_extra_was_asked_for() -> None:
    lines = ["mcp>=1.2; extra == 'mcp'", "pytest>=8; extra == 'dev'"]
    assert mcp_constraints(requires(lines, {"mcp"}), "2.3.0") == ["mcp>=1.2,<2"]
    assert mcp_constraints(requires(lines), "2.3.0") == []


def test_requirements_are_read_from_the_installed_metadata(tmp_path: Path) -> None:
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    for name, version, lines in (
        ("agentrecall_db", "0.2.0", ["Requires-Dist: mcp>=1.2; extra == 'mcp'"]),
        ("mcp", "2.3.0", []),
    ):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        metadata = [f"Name: {name.replace('_', '-')}", f"Version: {version}", *lines]
        (info / "METADATA").write_text("Metadata-Version: 2.1\n" + "\n".join(metadata) + "\n")
    found, installed = _metadata(tmp_path / "venv", ["agentrecall-db[mcp]==0.2.0", "./local"])
    assert installed == "2.3.0"
    assert mcp_constraints(found, installed) == ["mcp>=1.2,<2"]


def test_a_declared_mcp_is_a_specifier_for_a_pip_install(tmp_path: Path) -> None:
    assert Install(pip=["x"], mcp="<2").mcp == "<2"
    assert Install(pip=["x"], mcp=">=1.9, <2").mcp == ">=1.9, <2"
    path = tmp_path / "p.toml"
    path.write_text(
        'name = "p"\n[install]\nnpm = "x"\nmcp = "two"\n[server]\ncommand = ["x"]\n'
        '[ingest]\ntool = "a"\nitem = {}\n[search]\ntool = "b"\narguments = {}\n'
    )
    with pytest.raises(DatasetError, match=r"install: .*pip requirements") as caught:
        load_profile(path)
    assert str(path) in str(caught.value)
    path.write_text(path.read_text().replace('npm = "x"', 'pip = ["x"]'))
    with pytest.raises(DatasetError, match="'two' is not a version specifier"):
        load_profile(path)


def test_profiles_without_the_key_keep_their_installed_spec() -> None:
    """The marker of an installed server is unchanged by the new key (no reinstall)."""
    profile = load_profile(shipped_profiles()["basic-memory"])
    assert _spec(profile) == '{"npm":null,"pip":["basic-memory==0.24.1"],"python":"3.12"}'
