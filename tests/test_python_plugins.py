"""`python:` plugins (issue 32, item 6.1): a plugin's exception is the plugin's fault, shown
with its own frames and exit 3; the current folder is importable; documents reach
``ingest`` as documented plain dicts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Document, SystemUnderTestError
from recallbench.systems import create_system
from recallbench.systems._python import PluginError, PythonStore

PLUGIN = """\
SEEN = []


def helper(text):
    raise ValueError("cannot parse " + text)


class Store:
    def ingest(self, documents):
        SEEN.extend(documents)

    def search(self, text, k):
        return helper(text)


def make():
    return Store()


def broken_ingest():
    class Broken:
        def ingest(self, documents):
            return {}["missing"]

        def search(self, text, k):
            return []

    return Broken()


def fine(text, k):
    return {"PostgreSQL": ["check-1"], "Fridays": ["check-2"]}.get(text, [])
"""


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A plugin module in the current folder, importable without PYTHONPATH=."""
    name = f"plugin_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return name


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"COLUMNS": "300"}).invoke(main, list(args))
    assert not isinstance(result.exception, AssertionError)
    return result.exit_code, result.output


def test_a_module_in_the_current_folder_is_importable(plugin: str) -> None:
    system = create_system(f"python:{plugin}:fine")
    assert system.name == f"python:{plugin}:fine"
    code, out = _invoke("systems", "check", f"python:{plugin}:fine")
    assert code == 0, out


def test_a_missing_module_says_where_it_was_looked_for(plugin: str) -> None:
    code, out = _invoke("systems", "check", "python:no_such_plugin_module:make")
    assert code == 3, out
    assert "no module named 'no_such_plugin_module' in the current folder" in out


def test_systems_check_reports_the_plugins_fault_with_its_frames(plugin: str) -> None:
    code, out = _invoke("systems", "check", f"python:{plugin}:make")
    assert code == 3, out  # the system under test failed, not 70 "internal error"
    assert "internal error" not in out and "please report" not in out
    assert f"python:{plugin}:make: the plugin's search raised ValueError: cannot parse" in out
    assert f'{plugin}.py", line 13, in search' in out
    assert f'{plugin}.py", line 5, in helper' in out
    assert "_python.py" not in out and "_off_loop.py" not in out  # our frames stay out


def test_ingest_failure_in_a_run_is_the_plugins_fault(plugin: str, tmp_path: Path) -> None:
    spec = f"python:{plugin}:broken_ingest"
    code, out = _invoke("run", "--system", spec, "--no-store", "--out", str(tmp_path / "o"))
    assert code == 3, out
    assert "the plugin's ingest raised KeyError: 'missing'" in out
    assert f'{plugin}.py", line 23, in ingest' in out


def test_failed_queries_of_a_run_name_the_plugins_frames(plugin: str, tmp_path: Path) -> None:
    spec = f"python:{plugin}:make"
    code, out = _invoke("run", "--system", spec, "--no-store", "--out", str(tmp_path / "o"))
    assert code == 3, out
    assert "every query of 120 failed" in out
    assert "first error (q001): ValueError: cannot parse" in out
    assert f"(in the plugin at {plugin}.py:13 in search, {plugin}.py:5 in helper)" in out


def test_plugin_error_is_a_system_failure() -> None:
    def fail() -> None:
        raise RuntimeError("boom")

    try:
        fail()
    except RuntimeError as error:
        wrapped = PluginError("python:m:f", "search", error)
    assert isinstance(wrapped, SystemUnderTestError) and wrapped.exit_code == 3
    assert wrapped.brief.startswith("RuntimeError: boom (in the plugin at test_python_plugins.py")


def test_ingest_receives_documented_plain_dicts(plugin: str) -> None:
    system = create_system(f"python:{plugin}:make")
    documents = [Document(id="d1", text="alpha", metadata={"tier": "hot"})]

    async def go() -> None:
        await system.setup(documents)
        await system.close()

    asyncio.run(go())
    seen = sys.modules[plugin].SEEN
    assert seen == [{"id": "d1", "text": "alpha", "title": None, "metadata": {"tier": "hot"}}]
    assert type(seen[0]) is dict
    seen[0]["text"] = "changed"  # the plugin's copy: the dataset is not changed
    assert documents[0].text == "alpha"
    documented = PythonStore.ingest.__doc__ or ""
    assert "plain dicts" in documented and "PluginDocument" in documented
