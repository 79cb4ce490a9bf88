"""`dir()` of recallbench and of its lazily exporting packages lists the public API before
any of it is imported (issue 32, item 6.5)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import recallbench

PACKAGES = ["recallbench", "recallbench.core", "recallbench.measures", "recallbench.datasets"]


@pytest.mark.parametrize("package", PACKAGES)
def test_dir_lists_every_public_name_without_importing_it(package: str) -> None:
    code = (
        "import importlib, json, sys\n"
        f"module = importlib.import_module({package!r})\n"
        "before = set(sys.modules)\n"
        "listed = dir(module)\n"
        "print(json.dumps({'listed': listed, 'all': module.__all__,"
        " 'imported': sorted(set(sys.modules) - before)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    found = json.loads(out)
    assert set(found["all"]) <= set(found["listed"])
    assert found["listed"] == sorted(found["listed"])
    assert found["imported"] == []  # listing imports nothing


def test_recallbench_dir_has_the_one_call_api() -> None:
    listed = dir(recallbench)
    assert "evaluate" in listed and "__version__" in listed
    assert callable(recallbench.evaluate)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        recallbench.nope  # noqa: B018
