"""`recallbench compare` and `power` on the inputs an independent check broke them with:
NaN in a report, one query, too few queries, intervals against corrected verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.measures import DEFAULT_MEASURES


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    systems = ["builtin-lexical", "builtin-hybrid", "builtin-dense"]
    result = CliRunner().invoke(
        main,
        [
            "run",
            *(arg for s in systems for arg in ("--system", s)),
            *(arg for m in DEFAULT_MEASURES for arg in ("-m", m)),  # not the dataset's own
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, " ".join(result.output.split())


def _edited(runs: Path, tmp_path: Path, system: str, edit) -> Path:  # type: ignore[no-untyped-def]
    report = json.loads((runs / system / "report.json").read_text())
    edit(report)
    path = tmp_path / system / "report.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(report))  # json writes NaN and Infinity, as others may
    return path


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_report_values_are_a_located_error(
    runs: Path, tmp_path: Path, bad: float
) -> None:
    def poison(report: dict) -> None:  # type: ignore[type-arg]
        report["queries"][12]["values"]["mrr@10"] = bad

    path = _edited(runs, tmp_path, "builtin-hybrid", poison)
    code, printed = _invoke("compare", str(runs / "builtin-lexical"), str(path))
    assert code == 2
    assert f'{path}: 1 problem queries[12].values["mrr@10"]: {bad} is not a finite number' in (
        printed
    )
    assert "Traceback" not in printed and "nan ***" not in printed


def _first(count: int):  # type: ignore[no-untyped-def]
    def keep(report: dict) -> None:  # type: ignore[type-arg]
        report["queries"] = [q for q in report["queries"] if q["included"]][:count]

    return keep


def test_one_query_gives_a_sentence_that_says_nothing_can_be_concluded(
    runs: Path, tmp_path: Path
) -> None:
    a = _edited(runs, tmp_path, "builtin-lexical", _first(1))
    b = _edited(runs, tmp_path, "builtin-hybrid", _first(1))
    code, printed = _invoke("compare", str(a), str(b), "-m", "mrr@10")
    assert code == 0, printed
    assert "builtin-hybrid vs builtin-lexical: ." not in printed
    assert "builtin-hybrid vs builtin-lexical: not tested on mrr@10" in printed
    assert "nothing can be concluded" in printed


def test_too_few_queries_are_said_to_never_reach_alpha(runs: Path, tmp_path: Path) -> None:
    a = _edited(runs, tmp_path, "builtin-lexical", _first(5))
    b = _edited(runs, tmp_path, "builtin-hybrid", _first(5))
    out = tmp_path / "cmp"
    code, printed = _invoke("compare", str(a), str(b), "-m", "ndcg@10", "--out", str(out))
    assert code == 0, printed
    assert "never significant at α 0.05 with the randomisation test" in printed
    row = json.loads((out / "comparison.json").read_text())["comparisons"][0]
    assert row["p_floor"] >= 2 / 2**5 >= 0.05
    assert row["verdict"] == "no significant difference"


@pytest.mark.parametrize("correction", ["holm", "westfall-young", "bh", "none"])
def test_intervals_follow_the_correction_and_p_is_shown_raw_and_adjusted(
    runs: Path, tmp_path: Path, correction: str
) -> None:
    """hybrid vs dense P@3 had a 95% interval excluding 0 beside "no significant
    difference" under Holm; the family's intervals now match its verdicts."""
    out = tmp_path / correction
    code, printed = _invoke(
        "compare",
        str(runs / "builtin-hybrid"),
        str(runs / "builtin-dense"),
        str(runs / "builtin-lexical"),
        "--correction",
        correction,
        "--out",
        str(out),
    )
    assert code == 0, printed
    document = json.loads((out / "comparison.json").read_text())
    rows = document["comparisons"]
    m = sum(1 for r in rows if r["p_randomisation"] is not None)
    levels = [r["ci_level"] for r in rows]
    if correction in ("holm", "westfall-young"):
        assert levels == pytest.approx([1 - 0.05 / m] * len(rows))
        assert "simultaneous" in document["methods"]["interval"]
    elif correction == "none":
        assert levels == pytest.approx([0.95] * len(rows))
    for r in rows:  # max-T draws its own resamples: its p may differ from raw by chance
        if correction != "westfall-young":
            assert r["p_adjusted"]["randomisation"] >= r["p_randomisation"] - 1e-12
    if correction in ("holm", "westfall-young"):
        dense = next(r for r in rows if r["system"] == "builtin-dense" and r["measure"] == "P@3")
        assert dense["verdict"] == "no significant difference"
        assert dense["ci"]["low"] <= 0 <= dense["ci"]["high"]
    markdown = (out / "comparison.md").read_text()
    assert "p rand. raw/adj." in markdown
    assert f"alpha {0.05 / m:.4g}" in document["methods"]["mde"] or correction == "none"


def test_power_for_a_family_and_below_the_floor() -> None:
    code, printed = _invoke("power", "--delta", "0.5", "--sd", "0.1")
    assert code == 0, printed
    assert "6 queries for the paired randomisation test" in printed
    assert "The t-test alone would need 3" in printed
    code, printed = _invoke("power", "--delta", "0.5", "--sd", "0.1", "--test", "t")
    assert "3 queries for the paired t-test" in printed
    code, printed = _invoke("power", "--delta", "0.05", "--sd", "0.15", "--comparisons", "8")
    assert "119 queries" in printed and "0.05/8 = 0.00625 per comparison" in printed
    code, printed = _invoke("power", "--queries", "5", "--sd", "0.1")
    assert code == 0
    assert "can never reach 0.05 with 5 queries: its smallest p is 0.0625" in printed
