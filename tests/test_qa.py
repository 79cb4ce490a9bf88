"""`recallbench qa`: questions, contexts, verdicts, both conventions, the adversarial
questions apart, cache replay, agreement with a previous report, failures.

The endpoint is a stand-in whose rules are known to the test (our logic under test): the
reader answers with its first memory's text (or declines when it read none), the strict
judge says correct when the gold answer is in the answer, the lenient one when any word of
it is, and the abstention judge when the answer declines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_endpoint import closed_port, serve_prompts
from recallbench.cli import main
from recallbench.core import Dataset, Document, Query
from recallbench.qa._lexical import locomo_f1
from recallbench.qa._pipeline import full_context, memory_text, qa_questions, question_text

DECLINE = "Not mentioned in the memories."


def grader(system: str, user: str) -> str:
    if user.startswith("Memories:\n"):
        memories = user.split("Memories:\n", 1)[1].split("\n\nQuestion:\n", 1)[0]
        if memories == "(none)":
            return json.dumps({"answer": DECLINE})
        first = memories.split("\n\n")[0].split("] ", 1)[1]
        return json.dumps({"answer": first.split(") ", 1)[-1]})
    if "Gold answer:" in user:
        gold = user.split("Gold answer:\n", 1)[1].split("\n\nAgent's answer:\n", 1)[0].lower()
        answer = user.split("Agent's answer:\n", 1)[1].lower()
        lenient = "leniently" in system
        correct = any(w in answer for w in gold.split()) if lenient else gold in answer
        return json.dumps({"reasoning": "rule", "correct": correct})
    answer = user.split("Agent's answer:\n", 1)[1]
    return json.dumps({"reasoning": "rule", "abstained": answer.startswith("Not mentioned")})


def _dataset() -> Dataset:
    docs = [
        ("m1", "Alice moved to Paris in May 2023.", "1 May 2023"),
        ("m2", "Bob adopted a cat named Miso.", "3 May 2023"),
        ("m3", "Alice started learning the violin.", "9 June 2023"),
        ("m4", "Bob works as a nurse in Lyon.", "2 July 2023"),
        ("n1", "Carol likes tea.", None),
    ]
    documents = tuple(
        Document(id=i, text=t, metadata={"session_date": d} if d else {}) for i, t, d in docs
    )
    queries = (
        Query(id="q1", text="Where did Alice move?", category="single-hop",
              metadata={"answer": "Paris", "category_id": 4}),
        Query(id="q2", text="What is the name of Bob's cat?", category="single-hop",
              metadata={"answer": "Miso", "category_id": 4}),
        Query(id="q3", text="What instrument does Alice learn?", category="single-hop",
              metadata={"answer": "the violin", "category_id": 4}),
        Query(id="q4", text="Where does Bob work as a nurse?", category="multi-hop",
              metadata={"answer": "Lyon, France", "category_id": 1}),
        Query(id="q5", text="What did Alice say about her dog?", category="adversarial",
              answerable=False, tags=("adversarial",),
              metadata={"answer": "she loves it", "category_id": 5}),
        Query(id="q6", text="No gold here", category="single-hop"),
    )  # fmt: skip
    qrels = {"q1": {"m1": 3}, "q2": {"m2": 3}, "q3": {"m3": 3}, "q4": {"m4": 3}}
    return Dataset(name="tiny-qa", documents=documents, queries=queries, qrels=qrels)


@pytest.fixture
def dataset_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.json"
    path.write_text(_dataset().model_dump_json(), encoding="utf-8")
    return path


def _config(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{url}"\nmodel = "rule-judge"\nretries = 0\ntimeout = 5\n'
        f'price_in = 2.0\n[reader]\nbase_url = "{url}"\nmodel = "rule-reader"\nretries = 0\n',
        encoding="utf-8",
    )
    return path


def _qa(config: Path, dataset: Path, out: Path, *args: str) -> Any:
    return CliRunner().invoke(
        main,
        ["qa", "--dataset", str(dataset), "--system", "builtin-lexical", "--k", "2",
         "--config", str(config), "--out", str(out), *args],
    )  # fmt: skip


def test_questions_and_contexts() -> None:
    dataset = _dataset()
    questions = qa_questions(dataset)
    assert [q.query.id for q in questions] == ["q1", "q2", "q3", "q4", "q5"]  # q6: no gold
    assert [q.query.id for q in qa_questions(dataset, categories=("multi-hop",))] == ["q4"]
    q5 = questions[-1]
    assert q5.abstention and q5.trap == "she loves it" and q5.category_id == 5
    assert questions[0].trap is None
    assert memory_text(dataset.documents[0]) == "(1 May 2023) Alice moved to Paris in May 2023."
    assert memory_text(dataset.documents[4]) == "Carol likes tea."
    dated = Query(id="x", text="When?", metadata={"question_date": "2023/05/28"})
    assert question_text(dated) == "(asked on 2023/05/28) When?"
    context = full_context(dataset, questions)
    assert len(context["q1"]) == 5 and context["q1"] == context["q5"]  # no units: everything


def test_qa_answers_judges_and_replays(dataset_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    with serve_prompts(grader) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        result = _qa(config, dataset_file, tmp_path / "a", "--judge-cache", str(cache))
        assert result.exit_code == 0, result.output
        calls = endpoint.calls
    report = json.loads((tmp_path / "a" / "qa.json").read_text())
    rows = {row["query_id"]: row for row in report["questions"]}
    assert set(rows) == {"q1", "q2", "q3", "q4", "q5"}
    for row in rows.values():
        expected_strict = float(row["gold"].lower() in row["answer"].lower())
        if row["abstention"]:
            assert row["j_strict"] == row["j_lenient"] == float(row["abstained"])
            assert row["trap_taken"] is False and row["f1"] == locomo_f1(
                row["answer"], row["gold"], 5
            )
        else:
            assert row["j_strict"] == expected_strict
            assert row["f1"] == locomo_f1(row["answer"], row["gold"], row["category_id"])
            assert row["bleu1"] is not None and row["evidence_recall"] in (0.0, 1.0)
    (system,) = report["systems"]
    answerable = system["populations"]["answerable"]
    assert answerable["j_strict"]["n"] == 4
    assert answerable["j_strict"]["mean"] == pytest.approx(
        sum(rows[q]["j_strict"] for q in ("q1", "q2", "q3", "q4")) / 4
    )
    everything = system["populations"]["all"]
    assert everything["j_strict"]["n"] == 5
    assert system["adversarial"]["n"] == 1 and system["adversarial"]["trap_questions"] == 1
    assert report["category_map"] == {"1": "multi-hop", "4": "single-hop", "5": "adversarial"}
    tasks = {c["task"]: c for c in report["calls"]}
    assert set(tasks) == {"read", "strict", "lenient", "abstention", "trap"}
    assert tasks["read"]["model"] == "rule-reader" and tasks["strict"]["model"] == "rule-judge"
    assert tasks["strict"]["cost_usd"] > 0 and tasks["read"]["cost_usd"] == 0  # reader unpriced
    assert "J strict" in result.output and "category map: 1 multi-hop" in result.output
    # replayed through a closed port, strictly: the same numbers, nothing asked
    closed = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    again = _qa(
        closed, dataset_file, tmp_path / "b", "--judge-cache", str(cache), "--strict",
        "--previous", str(tmp_path / "a" / "qa.json"),
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    replay = json.loads((tmp_path / "b" / "qa.json").read_text())
    assert replay["systems"] == report["systems"] and replay["questions"] == report["questions"]
    assert all(c["calls"] == 0 for c in replay["calls"]) and calls > 0
    assert replay["agreement"]["share"] == 1.0 and replay["agreement"]["compared"] == 5


def test_a_closed_port_scores_neutral_and_exits_69(dataset_file: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    result = _qa(config, dataset_file, tmp_path / "out", "--judge-cache", "none")
    assert result.exit_code == 69, result.output
    report = json.loads((tmp_path / "out" / "qa.json").read_text())
    assert all(r["j_strict"] == r["j_lenient"] == 0.5 for r in report["questions"])
    assert all(r["failures"] == ["read: connection"] for r in report["questions"])
    assert [c["task"] for c in report["calls"]] == ["read"]  # nothing to judge without answers


def test_full_context_row_and_bad_input(dataset_file: Path, tmp_path: Path) -> None:
    with serve_prompts(grader) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        result = _qa(
            config, dataset_file, tmp_path / "out", "--full-context", "--judge-cache", "none"
        )
        assert result.exit_code == 0, result.output
    systems = {
        s["system"]: s for s in json.loads((tmp_path / "out" / "qa.json").read_text())["systems"]
    }
    assert set(systems) == {"builtin-lexical", "full-context"}
    assert systems["full-context"]["k"] is None
    no_gold = tmp_path / "plain.json"
    data = json.loads(dataset_file.read_text())
    for query in data["queries"]:
        query["metadata"] = {}
    no_gold.write_text(json.dumps(data), encoding="utf-8")
    bad = _qa(config, no_gold, tmp_path / "x")
    assert bad.exit_code == 2 and "no question with a gold answer" in bad.output
    not_qa = tmp_path / "other.json"
    not_qa.write_text('{"format": "something"}', encoding="utf-8")
    bad = _qa(config, dataset_file, tmp_path / "x", "--previous", str(not_qa))
    assert bad.exit_code == 2 and "not a recallbench QA report" in bad.output
    # issue 28 item 31: an unknown --unit was never named
    bad = _qa(config, dataset_file, tmp_path / "x", "--unit", "conv-30")
    assert bad.exit_code == 2 and "--unit 'conv-30': not in" in bad.output
    bad = _qa(config, dataset_file, tmp_path / "x", "--category", "nope")
    assert bad.exit_code == 2 and "--category 'nope': not in" in bad.output
    assert "single-hop" in bad.output
    assert not (tmp_path / "x").exists()


# ---------------------------------------------------------------- the committed live cache


@pytest.mark.parametrize("example", ["bundled", "locomo"])
def test_the_committed_qa_examples_replay_identically(example: str, tmp_path: Path) -> None:
    """The answers and verdicts SmolLM2-135M gave (`make record-judge-cache`, see
    tests/llama_server.py) replay through a closed port under --strict: nothing asked,
    the same numbers twice, every rule and the category map printed, failures counted."""
    from conftest import shared_data
    from llama_server import QA_CACHE, QA_EXAMPLES, judge_toml

    if example == "locomo":
        shared_data("locomo", "locomo10.json")
    cache = tmp_path / "cache.jsonl"
    cache.write_bytes(QA_CACHE.read_bytes())
    config = tmp_path / "recallbench.toml"
    config.write_text(judge_toml(f"http://127.0.0.1:{closed_port()}/v1"), encoding="utf-8")
    reports = []
    for name in ("a", "b"):
        result = CliRunner().invoke(
            main,
            ["qa", *QA_EXAMPLES[example], "--config", str(config), "--judge-cache", str(cache),
             "--strict", "--out", str(tmp_path / name)],
        )  # fmt: skip
        assert result.exit_code in (0, 69), result.output
        reports.append(json.loads((tmp_path / name / "qa.json").read_text()))
    first, second = reports
    assert first["systems"] == second["systems"] and first["questions"] == second["questions"]
    assert all(c["calls"] == 0 and c["replayed"] > 0 for c in first["calls"])
    assert cache.read_bytes() == QA_CACHE.read_bytes()
    assert {"J strict", "J lenient", "unanswerable"} <= set(first["rules"])
    populations = first["systems"][0]["populations"]
    assert populations["answerable"]["j_strict"]["n"] > 0
    assert populations["answerable"]["f1"]["mean"] is not None
    if example == "locomo":
        assert first["category_map"] == {
            "1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop",
            "5": "adversarial",
        }  # fmt: skip
        assert populations["all"]["j_strict"]["n"] > populations["answerable"]["j_strict"]["n"]
        assert first["systems"][0]["adversarial"]["trap_questions"] > 0
    assert result.exit_code == (69 if any(c["unreliable"] for c in first["calls"]) else 0)


def test_longmemeval_abstention_questions_are_scored_by_declining(tmp_path: Path) -> None:
    """LongMemEval's `_abs` questions (no answer in the history) are unanswerable: the
    right answer declines; F1 against their explanatory gold text is not computed."""
    from conftest import shared_data
    from recallbench.datasets import load_dataset

    path = shared_data("longmemeval", "longmemeval_s_sample28.json")
    dataset = load_dataset(f"longmemeval:{path}")
    questions = qa_questions(dataset)
    abstaining = [q for q in questions if q.abstention]
    assert abstaining and all(q.query.id.endswith("_abs") for q in abstaining)
    assert all(q.trap is None and q.category_id is None for q in abstaining)
    with serve_prompts(grader) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        ids = [q.query.unit or "" for q in abstaining[:2]]
        result = CliRunner().invoke(
            main,
            ["qa", "--dataset", f"longmemeval:{path}", *(f"--unit={u}" for u in ids),
             "--system", "builtin-lexical", "--k", "3", "--config", str(config),
             "--judge-cache", "none", "--out", str(tmp_path / "out")],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "out" / "qa.json").read_text())["questions"]
    assert len(rows) == 2 and all(r["abstention"] for r in rows)
    for row in rows:
        assert row["f1"] is None and row["bleu1"] is None and row["evidence_recall"] is None
        assert row["j_strict"] == row["j_lenient"] == float(row["abstained"])


# ---------------------------------------------------------------- accounting (issue 28)


def test_two_systems_with_the_same_answers_count_each_model_call_once(
    dataset_file: Path, tmp_path: Path
) -> None:
    """Two systems that retrieve the same memories give the same answers: each read and
    verdict is one call, billed once, and the report counts it once (it counted it once
    per system: twice the tokens and cost spent). A replay counts each answer once too."""
    made = CliRunner().invoke(
        main,
        ["run", "--dataset", str(dataset_file), "--system", "builtin-lexical", "--k", "2",
         "--no-store", "-q", "--out", str(tmp_path / "lexical")],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    copy = json.loads((tmp_path / "lexical" / "run.json").read_text())
    copy["spec"]["system"] = "lexical-copy"
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "run.json").write_text(json.dumps(copy), encoding="utf-8")
    runs = [str(tmp_path / "lexical"), str(tmp_path / "copy")]
    cache = tmp_path / "cache.jsonl"

    def qa(config: Path, out: str, *args: str) -> dict[str, Any]:
        result = CliRunner().invoke(
            main,
            ["qa", *runs, "--dataset", str(dataset_file), "--k", "2", "--config", str(config),
             "--judge-cache", str(cache), "--out", str(tmp_path / out), *args],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        report: dict[str, Any] = json.loads((tmp_path / out / "qa.json").read_text())
        return report

    with serve_prompts(grader) as endpoint:
        report = qa(_config(tmp_path, endpoint.base_url), "live")
    assert [s["system"] for s in report["systems"]] == ["builtin-lexical", "lexical-copy"]
    calls = {c["task"]: c for c in report["calls"]}
    assert sum(c["calls"] for c in calls.values()) == endpoint.calls
    assert sum(c["tokens_in"] for c in calls.values()) == endpoint.tokens_in
    assert sum(c["tokens_out"] for c in calls.values()) == endpoint.tokens_out
    judged_in = sum(c["tokens_in"] for name, c in calls.items() if name != "read")
    spent = sum(c["cost_usd"] for c in calls.values())
    assert spent == pytest.approx(2.0 * judged_in / 1e6)  # the judge's price_in; reader free
    rows = report["questions"]
    assert sum(r["tokens_in"] for r in rows) == calls["read"]["tokens_in"]
    closed = _config(tmp_path, f"http://127.0.0.1:{closed_port()}/v1")
    replay = qa(closed, "replay", "--strict")
    for task, again in ((c["task"], c) for c in replay["calls"]):
        assert again["calls"] == 0 and again["replayed"] == calls[task]["calls"]
        assert (again["tokens_in"], again["cost_usd"]) == (
            calls[task]["tokens_in"],
            calls[task]["cost_usd"],
        )


def test_two_run_files_of_one_system_are_two_rows(dataset_file: Path, tmp_path: Path) -> None:
    """Two RUN files of the same system (two versions, two k) were one row: the second
    silently replaced the first. Each is answered and named with its path."""
    folders = []
    for k in ("1", "3"):
        folder = tmp_path / f"lexical-k{k}"
        made = CliRunner().invoke(
            main,
            ["run", "--dataset", str(dataset_file), "--system", "builtin-lexical", "--k", k,
             "--no-store", "-q", "--out", str(folder)],
        )  # fmt: skip
        assert made.exit_code == 0, made.output
        folders.append(folder)
    with serve_prompts(grader) as endpoint:
        result = CliRunner().invoke(
            main,
            ["qa", *map(str, folders), "--dataset", str(dataset_file), "--k", "2",
             "--config", str(_config(tmp_path, endpoint.base_url)), "--judge-cache", "none",
             "--out", str(tmp_path / "out")],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "qa.json").read_text())
    names = [s["system"] for s in report["systems"]]
    assert len(names) == 2 and all(name.startswith("builtin-lexical (") for name in names)
    memories = {r["system"]: r["memories"] for r in report["questions"] if r["query_id"] == "q1"}
    assert sorted(memories.values()) == [1, 2]  # k 1 gave one memory, k 3 its top 2


def test_a_locomo_trap_is_its_adversarial_answer_and_never_a_decline(tmp_path: Path) -> None:
    """Issue 28 item 14: where a question carries both ``answer`` and
    ``adversarial_answer`` the loader took the correct answer as the trap; a trap reading
    "Not mentioned" counted a correct decline as taking it."""
    from recallbench.datasets._locomo import load_locomo

    turns = [{"dia_id": "D1:1", "speaker": "A", "text": "hello"}]
    questions = [
        {"question": "Did A move?", "answer": "No", "adversarial_answer": "Yes", "category": 5},
        {"question": "What did B say?", "adversarial_answer": "Not mentioned", "category": 5},
        {"question": "Why did A go?", "adversarial_answer": "to see B", "category": 5},
    ]
    sample = {"sample_id": "c1", "conversation": {"session_1": turns}, "qa": questions}
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    traps = [q.trap for q in qa_questions(load_locomo(path))]
    assert traps == ["Yes", None, "to see B"]


def test_the_real_locomo_traps(tmp_path: Path) -> None:
    from conftest import shared_data
    from recallbench.datasets._locomo import load_locomo

    questions = {q.query.id: q for q in qa_questions(load_locomo(shared_data("locomo")))}
    assert (questions["conv-26:q167"].gold, questions["conv-26:q167"].trap) == ("No", "Yes")
    assert questions["conv-26:q178"].trap == "Yes"
    assert questions["conv-30:q79"].trap is None and questions["conv-30:q103"].trap is None
    adversarial = [q for q in questions.values() if q.category_id == 5]
    assert len(adversarial) == 446
    assert sum(1 for q in adversarial if q.trap is not None) == 444


def test_a_failed_trap_verdict_scores_half_and_stays_counted(
    dataset_file: Path, tmp_path: Path
) -> None:
    """Failed trap verdicts were dropped from N (the earlier "0.870 of 24" was 20 of 23)."""

    def no_trap_verdict(system: str, user: str) -> str:
        if "Gold answer:\nshe loves it" in user:
            return "I cannot say."  # off the schema: the trap verdict fails
        return grader(system, user)

    with serve_prompts(no_trap_verdict) as endpoint:
        config = _config(tmp_path, endpoint.base_url)
        result = _qa(config, dataset_file, tmp_path / "a", "--judge-cache", "none")
    assert result.exit_code in (0, 69), result.output
    (system,) = json.loads((tmp_path / "a" / "qa.json").read_text())["systems"]
    adversarial = system["adversarial"]
    assert (adversarial["trap_questions"], adversarial["trap_unjudged"]) == (1, 1)
    assert adversarial["trap_taken"] == 0.5
    assert "0.500 of 1 (1 unjudged, 0.5 each)" in " ".join(result.output.split())
