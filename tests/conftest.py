"""Shared fixtures. Real data lives in ../shared/data beside the repository; tests that need
it fail (not skip) when it is missing, so CI cannot pass without it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def shared_data(*parts: str) -> Path:
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.fail(f"shared test data missing: {path} (CI clones ../shared beside the repo)")
    return path


@pytest.fixture(scope="session", autouse=True)
def history_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Runs made by the tests go to a throwaway history store, never the user's."""
    import os

    url = f"sqlite:///{tmp_path_factory.mktemp('store') / 'history.db'}"
    os.environ["RECALLBENCH_STORE"] = url
    return url


@pytest.fixture
def trec_tests() -> Path:
    """trec_eval's own reference test files (usnistgov/trec_eval test/)."""
    return shared_data("trec_eval_tests")


@pytest.fixture(scope="session")
def installed_servers() -> Path:
    """RECALLBENCH_HOME with the npm memory servers installed (real, from the registry).

    Kept in the repository's .cache so that later runs reuse it; fails without npm."""
    import os
    import shutil

    from recallbench.systems._install import install
    from recallbench.systems._profile import load_profile, shipped_profiles

    if shutil.which("npm") is None:
        pytest.fail("npm is required: the MCP tests start the real @modelcontextprotocol server")
    home = ROOT / ".cache" / "recallbench-home"
    os.environ["RECALLBENCH_HOME"] = str(home)
    for name in SERVERS:
        install(load_profile(shipped_profiles()[name]))
    return home


SERVERS = ("server-memory", "mcp-memory-libsql", "agentrecall", "basic-memory")
"""The shipped profiles whose servers come from npm or PyPI (installed by the fixture)."""
