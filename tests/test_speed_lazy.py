"""Lazy loading of measures: the catalog says truly which module registers which name, and
`evaluate` on official measures loads neither the agent-memory measures nor pydantic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from recallbench.measures import _catalog, measure_families
from recallbench.measures._measure import _REGISTRY, _TREC_REGISTRY


def _fresh(code: str) -> str:
    """Run ``code`` in a new interpreter (no measure module imported yet)."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout


def test_the_catalog_matches_what_each_module_registers() -> None:
    scanned = json.loads(
        _fresh(
            "import json; from recallbench.measures._measure import scan_catalog; "
            "print(json.dumps(scan_catalog()))"
        )
    )
    assert {m: tuple(n) for m, n in scanned[0].items()} == _catalog.SPELLINGS
    assert {m: tuple(n) for m, n in scanned[1].items()} == _catalog.TREC_NAMES


def test_every_registered_name_is_catalogued() -> None:
    measure_families()  # imports every module
    assert set(_REGISTRY) == set(_catalog.MODULE_OF)
    assert set(_TREC_REGISTRY) == set(_catalog.TREC_MODULE_OF)


def test_each_name_is_found_in_a_fresh_process() -> None:
    code = (
        "import json\n"
        "from recallbench.measures._measure import _family, trec_family\n"
        "from recallbench.measures._catalog import MODULE_OF, TREC_MODULE_OF\n"
        "names = {n: _family(n).__qualname__ for n in sorted(MODULE_OF)}\n"
        "trec = {n: trec_family(n)[0].__qualname__ for n in sorted(TREC_MODULE_OF)}\n"
        "print(json.dumps([names, trec]))\n"
    )
    names, trec = json.loads(_fresh(code))
    measure_families()
    assert names == {n: cls.__qualname__ for n, cls in _REGISTRY.items()}
    assert trec == {n: cls.__qualname__ for n, (cls, _) in _TREC_REGISTRY.items()}


def test_unknown_names_still_list_every_measure() -> None:
    out = _fresh(
        "from recallbench.measures import parse_measure\n"
        "try:\n    parse_measure('nope@3')\nexcept Exception as e:\n    print(e)\n"
    )
    assert "must_surface@k" in out and "ndcg" in out


def test_evaluate_official_loads_only_what_it_needs(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 c 2 1.0 t\n")
    code = (
        "import sys\n"
        "from recallbench.cli import main\n"
        f"sys.argv = ['recallbench', 'evaluate', {str(qrels)!r}, {str(run)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', "
        "'recallbench.measures.'))), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = eval(done.stderr.strip().splitlines()[-1])
    assert "map" in done.stdout
    assert not [m for m in loaded if m.startswith("pydantic")]
    assert "recallbench.measures._context" not in loaded
    assert "recallbench.measures.must_surface" not in loaded
