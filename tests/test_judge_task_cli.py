"""`recallbench judge task`: faithfulness, merge and answer judgments over a JSON Lines
file, against a stand-in endpoint that answers each prompt by a fixed rule (our logic
under test: reading the inputs, the scores, failures, replay; not judgment quality)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_endpoint import closed_port, serve
from recallbench.cli import main


def by_task(user: str) -> str:
    """A schema-valid answer for each task's prompt, decided by what the input says."""
    if "Retrieved memories:" in user:  # faithfulness: one claim per sentence of the answer
        answer = user.split("Answer:\n", 1)[1].split("\n\nRetrieved memories:", 1)[0]
        memories = user.split("Retrieved memories:\n", 1)[1]
        claims = [
            {
                "claim": sentence,
                "label": "supported" if sentence.split()[0] in memories else "not",
                "memories": [1] if sentence.split()[0] in memories else [],
            }
            for sentence in filter(None, (part.strip() for part in answer.split(".")))
        ]
        return json.dumps({"claims": claims})
    if "Merged" in user or "merged" in user:
        return json.dumps(
            {
                "reasoning": "r",
                "expected_decision": "UPDATE",
                "kept_key_facts": "Paris" in user.rsplit("erged", 1)[1],
                "missing_facts": [],
            }
        )
    return json.dumps({"reasoning": "r", "correct": "Paris" in user.rsplit("nswer", 1)[1]})


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{url}"\nmodel = "rule"\nretries = 0\ntimeout = 5\n',
        encoding="utf-8",
    )
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


FAITHFULNESS = [
    {
        "question": "Where does Alice live?",
        "answer": "Alice lives in Paris. Bob visits weekly.",
        "memories": ["Alice moved to Paris in 2019."],
    },
    {"question": "Who?", "answer": "Alice.", "memories": ["Alice was there."]},
]


def test_faithfulness_scores_the_supported_share_and_replays(tmp_path: Path) -> None:
    inputs = _write(tmp_path / "answers.jsonl", FAITHFULNESS)
    cache = tmp_path / "cache.jsonl"
    with serve(by_task) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        args = ["judge", "task", "faithfulness", str(inputs), "--config", str(config)]
        result = CliRunner().invoke(main, [*args, "--judge-cache", str(cache)])
        assert result.exit_code == 0, result.output
        assert endpoint.calls == 2
    first = _lines(tmp_path / "answers.judged.jsonl")
    assert [line["line"] for line in first] == [1, 2]
    assert [line["score"] for line in first] == [0.5, 1.0]  # 1 of 2 claims, 1 of 1
    assert first[0]["value"]["claims"][1]["label"] == "not"
    assert "mean score" in result.output and "0.7500" in result.output
    closed = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    out = tmp_path / "again.jsonl"
    replay = CliRunner().invoke(
        main,
        ["judge", "task", "faithfulness", str(inputs), "--config", str(closed),
         "--judge-cache", str(cache), "--strict", "--out", str(out)],
    )  # fmt: skip
    assert replay.exit_code == 0, replay.output
    again = _lines(out)
    assert [(a["value"], a["score"]) for a in again] == [(f["value"], f["score"]) for f in first]
    assert all(line["cached"] for line in again)


def test_merge_and_answer_tasks(tmp_path: Path) -> None:
    merges = _write(
        tmp_path / "merges.jsonl",
        [
            {"original": "Alice lives in Lyon.", "incoming": "Alice moved to Paris.",
             "merged": "Alice lives in Paris.", "decision": "UPDATE"},
            {"original": "Alice lives in Lyon.", "incoming": "Alice moved to Paris.",
             "merged": "Alice lives somewhere.", "decision": "ADD"},
        ],
    )  # fmt: skip
    answers = _write(
        tmp_path / "qa.jsonl",
        [
            {"question": "Where?", "gold": "Paris", "answer": "In Paris."},
            {"question": "Where?", "gold": "Paris", "answer": "In Rome."},
        ],
    )
    with serve(by_task) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        for name, path in (("merge", merges), ("answer", answers)):
            result = CliRunner().invoke(
                main, ["judge", "task", name, str(path), "--config", str(config),
                       "--judge-cache", "none"],
            )  # fmt: skip
            assert result.exit_code == 0, result.output
    merged = _lines(tmp_path / "merges.judged.jsonl")
    assert merged[0]["value"]["kept_key_facts"] and merged[0]["value"]["decision_correct"]
    assert not merged[1]["value"]["decision_correct"]
    assert merged[0]["score"] > merged[1]["score"]
    assert [line["score"] for line in _lines(tmp_path / "qa.judged.jsonl")] == [1.0, 0.0]


def test_failures_score_neutral_and_exit_69(tmp_path: Path) -> None:
    inputs = _write(tmp_path / "answers.jsonl", FAITHFULNESS)
    config = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    result = CliRunner().invoke(
        main, ["judge", "task", "faithfulness", str(inputs), "--config", str(config),
               "--judge-cache", "none"],
    )  # fmt: skip
    assert result.exit_code == 69, result.output
    lines = _lines(tmp_path / "answers.judged.jsonl")
    assert [(line["score"], line["failure"]) for line in lines] == [(0.5, "connection")] * 2


@pytest.mark.parametrize(
    ("content", "messages"),
    [
        ('{"question": "q", "answer": "a", "memories": "one"}\n', ["2: memories"]),
        ('{"question": "q", "answer": "a"}\n', ["2: memories: Field required"]),
        ('{"question": "q", "answer": "a", "memories": [], "extra": 1}\n', ["2: unknown field"]),
        ("not json\n", ["2: invalid JSON"]),
    ],
)
def test_bad_lines_are_refused_with_their_place(
    tmp_path: Path, content: str, messages: list[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(FAITHFULNESS[0]) + "\n" + content, encoding="utf-8")
    config = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    result = CliRunner().invoke(
        main, ["judge", "task", "faithfulness", str(path), "--config", str(config)]
    )
    assert result.exit_code == 2
    for message in messages:
        assert f"{path}:{message}" in result.output, result.output
    assert not (tmp_path / "in.judged.jsonl").exists()
