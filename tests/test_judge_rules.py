"""Rules the four commands that call models share (`judge fill`, `judge task`,
`judge calibrate`, `qa`): one exit code for "unreliable", stated word for word in each
--help, and a cost that says what was spent now beside what was recorded, so that a replay
never passes off the recorded cost as money spent.

The endpoints are tests/judge_endpoint.py's scripted OpenAI-compatible servers, and a
closed port where every call fails."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_endpoint import (
    MODEL,
    Endpoint,
    closed_port,
    dataset_grades,
    lookup_grader,
    serve,
)
from recallbench.cli import main
from recallbench.cli._judge import EXIT_UNRELIABLE, UNRELIABLE_RULE
from recallbench.core import Dataset, Document, Query
from recallbench.datasets import DEFAULT_DATASET, load_dataset

COMMANDS = (["judge", "fill"], ["judge", "task"], ["judge", "calibrate"], ["qa"])
PRICES = "price_in = 1000000.0\nprice_out = 2000000.0\n"
"""USD per million tokens: a dollar a token in, two out, so every cost shows in $0.0000."""


def _flat(text: str) -> str:
    return " ".join(text.split())


def _config(folder: Path, url: str, extra: str = "") -> Path:
    path = folder / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{url}"\nmodel = "{MODEL}"\nretries = 0\ntimeout = 5\n{extra}',
        encoding="utf-8",
    )
    return path


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def _unreliable_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("unreliable: "))


# ---------------------------------------------------------------- one exit-code rule


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_states_the_same_rule_in_its_help(command: list[str]) -> None:
    result = _invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert _flat(UNRELIABLE_RULE) in _flat(result.output)
    assert EXIT_UNRELIABLE == 69


def _qa_dataset(folder: Path) -> Path:
    documents = (Document(id="m1", text="Alice moved to Paris."),)
    queries = (
        Query(id="q1", text="Where did Alice move?", metadata={"answer": "Paris"}),
        Query(id="q2", text="Who moved?", metadata={"answer": "Alice"}),
    )
    dataset = Dataset(name="tiny-qa", documents=documents, queries=queries, qrels={"q1": {"m1": 3}})
    path = folder / "tiny.json"
    path.write_text(dataset.model_dump_json(), encoding="utf-8")
    return path


def _closed_port_run(command: str, tmp_path: Path) -> tuple[Any, Path]:
    """``command`` against a closed port: (result, the output it must write first)."""
    config = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    common = ["--config", str(config), "--judge-cache", "none"]
    out = tmp_path / "out"
    if command == "fill":
        args = ["judge", "fill", "--system", "builtin-lexical", "--depth", "1", "--no-store"]
        return _invoke(*args, *common, "--out", str(out)), out / "judge.json"
    if command == "task":
        inputs = tmp_path / "answers.jsonl"
        inputs.write_text(
            json.dumps({"question": "Where?", "gold": "Paris", "answer": "Paris"}) + "\n",
            encoding="utf-8",
        )
        judged = tmp_path / "answers.judged.jsonl"
        return _invoke("judge", "task", "answer", str(inputs), *common), judged
    if command == "calibrate":
        return _invoke("judge", "calibrate", *common, "--out", str(out)), out / "calibration.json"
    dataset = _qa_dataset(tmp_path)
    args = ["qa", "--dataset", str(dataset), "--system", "builtin-lexical", "--k", "1"]
    return _invoke(*args, *common, "--out", str(out)), out / "qa.json"


@pytest.mark.parametrize("command", ["fill", "task", "calibrate", "qa"])
def test_every_command_exits_69_when_unreliable_with_one_line_after_writing(
    command: str, tmp_path: Path
) -> None:
    result, written = _closed_port_run(command, tmp_path)
    assert result.exit_code == EXIT_UNRELIABLE, result.output
    line = _unreliable_line(result.output)
    assert "100.0% of" in line and "failed, more than max_failure_rate 0.1 allows" in line
    assert written.exists() and "Traceback" not in result.output


@pytest.fixture(scope="module")
def bundled() -> Dataset:
    return load_dataset(DEFAULT_DATASET)


def _dropping(bundled: Dataset, every: int) -> Iterator[Endpoint]:
    """The lookup judge, answering prose (unparseable) for one pair people labelled in
    ``every``."""
    grades = dataset_grades(bundled)
    kept = {key: grade for index, (key, grade) in enumerate(grades.items()) if index % every}
    with serve(lookup_grader(kept)) as running:
        yield running


@pytest.fixture(scope="module")
def third_fail(bundled: Dataset) -> Iterator[Endpoint]:
    yield from _dropping(bundled, 3)


@pytest.fixture(scope="module")
def few_fail(bundled: Dataset) -> Iterator[Endpoint]:
    yield from _dropping(bundled, 40)


def test_calibrate_with_a_third_of_judgments_failed_is_unreliable_and_exits_69(
    tmp_path: Path, third_fail: Endpoint
) -> None:
    """docs/judges.md's case (SmolLM2, 27.2% failed) exited 0 while `judge fill`, `judge task`
    and `qa` exit 69 on the same failure rate."""
    config = _config(tmp_path, third_fail.base_url)
    out = tmp_path / "out"
    result = _invoke("judge", "calibrate", "--config", str(config), "--judge-cache", "none",
                     "--out", str(out))  # fmt: skip
    assert result.exit_code == EXIT_UNRELIABLE, result.output
    data = json.loads((out / "calibration.json").read_text(encoding="utf-8"))
    coverage = data["coverage"]
    assert coverage["unreliable"] and 0.3 < coverage["failure_rate"] < 0.4
    assert data["kappas"]  # computed on the pairs judged, and written before the exit
    line = _unreliable_line(result.output)
    assert f"{coverage['failure_rate']:.1%} of judgments failed" in line
    assert f"unparseable {coverage['failed']['unparseable']}" in line


def test_calibrate_with_failures_under_the_limit_exits_0(
    tmp_path: Path, few_fail: Endpoint
) -> None:
    config = _config(tmp_path, few_fail.base_url)
    result = _invoke("judge", "calibrate", "--config", str(config), "--judge-cache", "none")
    assert result.exit_code == 0, result.output
    assert "unparseable" in result.output and "unreliable" not in result.output


# ---------------------------------------------------------------- cost: spent now, recorded


def _answer_grader(user: str) -> str:
    return json.dumps({"reasoning": "rule", "correct": "Paris" in user.rsplit("nswer", 1)[1]})


def _relevance_grader(user: str) -> str:
    return json.dumps({"reasoning": "rule", "grade": 1, "confidence": 0.5})


def _spent_and_recorded(output: str) -> tuple[str, str]:
    line = next(line for line in _flat_lines(output) if line.startswith("cost: spent now "))
    spent = line.removeprefix("cost: spent now ").split(" ", 1)[0]
    recorded = line.split("; recorded ", 1)[1].split(" ", 1)[0]
    return spent, recorded


def _flat_lines(output: str) -> list[str]:
    return [_flat(line) for line in output.splitlines()]


def test_task_on_a_replay_spends_nothing_now_and_shows_what_was_recorded(tmp_path: Path) -> None:
    inputs = tmp_path / "answers.jsonl"
    rows = [
        {"question": "Where?", "gold": "Paris", "answer": "In Paris."},
        {"question": "Where?", "gold": "Paris", "answer": "In Rome."},
    ]
    inputs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    cache = tmp_path / "cache.jsonl"
    with serve(_answer_grader) as endpoint:
        config = _config(tmp_path, endpoint.base_url, PRICES)
        args = ["judge", "task", "answer", str(inputs), "--config", str(config)]
        first = _invoke(*args, "--judge-cache", str(cache))
        assert first.exit_code == 0, first.output
        cost = endpoint.tokens_in + 2 * endpoint.tokens_out
        assert _spent_and_recorded(first.output) == (f"${cost:.4f}", f"${cost:.4f}")
        assert "(2 calls made, 0 replayed)" in first.output
        again = _invoke(*args, "--judge-cache", str(cache), "--strict")
        assert again.exit_code == 0, again.output
        assert _spent_and_recorded(again.output) == ("$0.0000", f"${cost:.4f}")
        assert "(0 calls made, 2 replayed)" in again.output and endpoint.calls == 2


def test_fill_on_a_replay_spends_nothing_now_and_shows_what_was_recorded(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache.jsonl"
    with serve(_relevance_grader) as endpoint:
        config = _config(tmp_path, endpoint.base_url, PRICES)
        args = ["judge", "fill", "--system", "builtin-lexical", "--depth", "1", "--no-store",
                "--config", str(config), "--judge-cache", str(cache)]  # fmt: skip
        first = _invoke(*args, "--out", str(tmp_path / "a"))
        assert first.exit_code == 0, first.output
        calls = endpoint.calls
        cost = endpoint.tokens_in + 2 * endpoint.tokens_out
        assert calls > 0 and _spent_and_recorded(first.output) == (f"${cost:.4f}",) * 2
        again = _invoke(*args, "--strict", "--out", str(tmp_path / "b"))
        assert again.exit_code == 0, again.output
        assert _spent_and_recorded(again.output) == ("$0.0000", f"${cost:.4f}")
        assert f"(0 calls made, {calls} replayed)" in _flat(again.output)
    report = json.loads((tmp_path / "b" / "judge.json").read_text(encoding="utf-8"))
    assert report["spent_usd"] == 0.0 and report["judge"]["cost_usd"] == pytest.approx(cost)
