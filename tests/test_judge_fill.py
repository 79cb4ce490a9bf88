"""`recallbench judge` (fill): the pool of unjudged results, labels with their sources,
cache and strict replay, failures, and the committed cache recorded from the live model.

The HTTP endpoint here is a stand-in that grades by a fixed rule, to test our own logic
(pooling, provenance, replay, exit codes); the live model is exercised by
``make test-llm`` (tests/test_judge_live.py), whose answers are the committed cache that
the last tests replay.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge_endpoint import Endpoint, serve
from llama_server import CACHE, EXAMPLE_ARGS, free_port, judge_toml
from recallbench.cli import main
from recallbench.core import Dataset, DatasetError, Document, Hit, Query, QueryResult, Run, RunSpec
from recallbench.datasets import load_dataset
from recallbench.datasets._json_v1 import validated_dataset
from recallbench.judges._fill import unjudged_pool, with_labels, without_labels
from recallbench.judges._judgment import Judgment
from recallbench.judges._summary import label_counts
from recallbench.judges._task_kinds import Relevance

# ---------------------------------------------------------------- the pool


def _dataset() -> Dataset:
    documents = tuple(Document(id=i, text=f"memory {i}") for i in ("a", "b", "c", "d", "é/1"))
    queries = (
        Query(id="q1", text="first"),
        Query(id="q2", text="second"),
        Query(id="q3", text="nothing to find", answerable=False),
    )
    return Dataset(
        name="pool", documents=documents, queries=queries, qrels={"q1": {"a": 2, "b": -1}}
    )


def _run(system: str, rankings: dict[str, list[str]], failed: tuple[str, ...] = ()) -> Run:
    results = [
        QueryResult(query_id=q, hits=tuple(Hit(doc_id=d) for d in docs))
        for q, docs in rankings.items()
    ]
    results += [QueryResult(query_id=q, error="boom") for q in failed]
    return Run(spec=RunSpec(system=system), results=tuple(results))


def test_the_pool_holds_each_unjudged_pair_once_with_its_best_rank_and_systems() -> None:
    one = _run("one", {"q1": ["a", "c", "c", "b", "d"], "q2": ["é/1", "x", "d"], "q3": ["a"]})
    two = _run("two", {"q1": ["d", "c"], "q2": ["d"]})
    pool = unjudged_pool(_dataset(), [one, two], depth=3)
    found = [(i.query_id, i.doc_id, i.rank, i.systems) for i in pool.items]
    # q1: a and b judged (b negatively), the duplicate c once; d only within two's depth
    assert found == [
        ("q1", "d", 1, ("two",)),
        ("q1", "c", 2, ("one", "two")),
        ("q2", "d", 1, ("one", "two")),  # in the order the runs were given
        ("q2", "é/1", 1, ("one",)),
    ]
    assert pool.unknown == 1  # "x" names no memory of the dataset
    assert pool.skipped_queries == 1  # q3 is unanswerable


def test_failed_results_and_missing_queries_add_nothing_to_the_pool() -> None:
    run = _run("one", {"q2": ["c"]}, failed=("q1",))
    pool = unjudged_pool(_dataset(), [run], depth=10)
    assert [(i.query_id, i.doc_id) for i in pool.items] == [("q2", "c")]
    with pytest.raises(ValueError, match="depth"):
        unjudged_pool(_dataset(), [run], depth=0)


def _judgment(grade: int | None) -> Judgment[Relevance]:
    if grade is None:
        return Judgment(None, 0.5, "timeout", "no answer")
    return Judgment(Relevance(grade, 0.75, "why"), grade / 3, model="judge-m")


def test_labels_carry_their_source_and_removing_them_restores_the_dataset() -> None:
    dataset = _dataset()
    run = _run("one", {"q1": ["c", "d"], "q2": ["c"]})
    pool = unjudged_pool(dataset, [run], depth=5)
    judgments = [_judgment(3), _judgment(None), _judgment(0)]
    judged = with_labels(dataset, pool.items, judgments, "relevance v1")
    assert judged.qrels == {"q1": {"a": 2, "b": -1, "c": 3}, "q2": {"c": 0}}
    source = judged.label_sources["q1"]["c"]
    assert (source.source, source.by, source.prompt, source.confidence) == (
        "llm", "judge-m", "relevance v1", 0.75,
    )  # fmt: skip
    assert "d" not in judged.label_sources["q1"]  # failed: no label, still unjudged
    assert label_counts(judged) == {"dataset": 2, "llm": 2}
    assert judged.sha256 != dataset.sha256
    assert without_labels(judged).sha256 == dataset.sha256


def test_a_label_source_without_a_grade_is_refused_where_it_is() -> None:
    data = json.loads(_dataset().model_dump_json())
    data["label_sources"] = {"q2": {"a": {"source": "llm", "by": "m"}}}
    with pytest.raises(DatasetError) as caught:
        validated_dataset(data, "judged.json")
    assert 'label_sources["q2"]["a"]' in str(caught.value) or "label_sources.q2.a" in str(
        caught.value
    )


# ---------------------------------------------------------------- the command


def grade_of(user_message: str) -> int:
    memory = user_message.rsplit("Memory:\n", 1)[-1]
    return hashlib.sha256(memory.encode()).digest()[0] % 4


def rule_grader(user: str) -> str:
    """A grade fixed by the memory's text: known to the test, not to the code under it."""
    return json.dumps({"reasoning": "rule", "grade": grade_of(user), "confidence": 0.5})


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[Endpoint, str]]:
    with serve(rule_grader) as running:
        yield running, running.base_url


def _config(folder: Path, base_url: str, extra: str = "") -> Path:
    path = folder / "recallbench.toml"
    path.write_text(
        f'[judge]\nbase_url = "{base_url}"\nmodel = "rule-judge"\nretries = 0\ntimeout = 5\n'
        f"price_in = 1.0\nprice_out = 2.0\n{extra}",
        encoding="utf-8",
    )
    return path


def _judge(config: Path, *args: str, cache: Path | None = None, out: Path) -> Any:
    command = [
        "judge", "--system", "builtin-lexical", "--depth", "2", "-m", "ndcg@10",
        "--config", str(config), "--out", str(out), "--no-store",
        *(["--judge-cache", str(cache)] if cache is not None else []), *args,
    ]  # fmt: skip
    return CliRunner().invoke(main, command)


def test_judge_fills_the_pool_then_replays_it_identically(
    endpoint: tuple[Endpoint, str], tmp_path: Path
) -> None:
    state, url = endpoint
    cache = tmp_path / "cache.jsonl"
    before = state.calls
    first = _judge(_config(tmp_path, url), cache=cache, out=tmp_path / "a")
    assert first.exit_code == 0, first.output
    report = json.loads((tmp_path / "a" / "judge.json").read_text())
    pairs = report["pool"]["pairs"]
    assert pairs > 0 and state.calls - before == pairs and report["called"] == pairs
    assert report["judge"]["labelled"] == pairs and report["judge"]["failures"] == {}
    # every label is the endpoint's, with its source; tokens and cost at the prices
    judged = load_dataset(str(tmp_path / "a" / "dataset.json"))
    sample = load_dataset("agent-memory-sample")
    texts = {d.id: d.text for d in sample.documents}
    for pair in report["judgments"]:
        q, d = pair["query_id"], pair["doc_id"]
        assert judged.qrels[q][d] == pair["grade"]
        assert judged.label_sources[q][d].source == "llm"
        assert pair["grade"] == grade_of(texts[d]) or sample.documents_by_id[d].title
    tokens_in = sum(pair["tokens_in"] for pair in report["judgments"])
    tokens_out = sum(pair["tokens_out"] for pair in report["judgments"])
    assert report["judge"]["tokens_in"] == tokens_in > 0 and tokens_out > 0
    assert report["judge"]["cost_usd"] == pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6)
    per_judgment = sum(pair["cost_usd"] for pair in report["judgments"])
    assert per_judgment == pytest.approx(report["judge"]["cost_usd"])
    change = report["runs"][0]
    # every pooled pair is labelled: only the unanswerable queries' results stay unjudged
    assert 0 < change["after"]["noise@2"] < change["before"]["noise@2"]
    assert report["pool"]["skipped_queries"] == 9
    assert judged.metadata["judge"]["model"] == "rule-judge"
    # replayed through a closed port under --strict: nothing asked, the same dataset
    closed = _config(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    again = _judge(closed, "--strict", cache=cache, out=tmp_path / "b")
    assert again.exit_code == 0, again.output
    assert (tmp_path / "a" / "dataset.json").read_bytes() == (
        tmp_path / "b" / "dataset.json"
    ).read_bytes()
    replay = json.loads((tmp_path / "b" / "judge.json").read_text())
    assert (replay["cached"], replay["called"], replay["spent_usd"]) == (pairs, 0, 0.0)
    assert replay["judge"] == report["judge"]


def test_a_closed_port_scores_every_judgment_neutral_and_exits_69(tmp_path: Path) -> None:
    config = _config(tmp_path, f"http://127.0.0.1:{free_port()}/v1")
    result = _judge(config, cache=tmp_path / "cache.jsonl", out=tmp_path / "out")
    assert result.exit_code == 69, result.output
    assert "of judgments failed" in result.output and "Traceback" not in result.output
    report = json.loads((tmp_path / "out" / "judge.json").read_text())
    judgments = report["judgments"]
    assert judgments and all(j["score"] == 0.5 and j["failure"] == "connection" for j in judgments)
    assert report["judge"]["failures"] == {"connection": len(judgments)}
    assert report["judge"]["unreliable"] and report["runs"][0]["judge_score"] == 0.5
    judged = load_dataset(str(tmp_path / "out" / "dataset.json"))
    assert judged.qrels == load_dataset("agent-memory-sample").qrels  # no label was made up
    assert not (tmp_path / "cache.jsonl").exists()  # errors without an answer are not cached


def test_strict_with_judgments_missing_from_the_cache_writes_nothing(
    endpoint: tuple[Endpoint, str], tmp_path: Path
) -> None:
    state, url = endpoint
    before = state.calls
    config = _config(tmp_path, url)
    result = _judge(config, "--strict", cache=tmp_path / "c.jsonl", out=tmp_path / "o")
    assert result.exit_code == 2, result.output
    assert "not in the judge cache" in result.output and "--strict" in result.output
    assert state.calls == before and not (tmp_path / "o").exists()


def test_labels_enter_the_store_beside_manual_ones(
    endpoint: tuple[Endpoint, str], tmp_path: Path
) -> None:
    from recallbench.judges._labels import resolved_grades
    from recallbench.store import Judgment as StoredJudgment
    from recallbench.store import open_store

    _, url = endpoint
    store_url = f"sqlite:///{tmp_path / 'store.db'}"
    command = [
        "judge", "--system", "builtin-lexical", "--depth", "1", "--config",
        str(_config(tmp_path, url)), "--out", str(tmp_path / "o"), "--store", store_url,
    ]  # fmt: skip
    result = CliRunner().invoke(main, command)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "o" / "judge.json").read_text())
    first = report["judgments"][0]
    with open_store(store_url) as store:
        labels = store.judgments(source="llm")
        assert len(labels) == report["pool"]["pairs"]
        assert {label.annotator for label in labels} == {"lookup-judge"}
        manual_grade = 3 - first["grade"]
        store.log(
            judgments=[
                StoredJudgment(
                    query_id=first["query_id"], doc_id=first["doc_id"], grade=manual_grade,
                    source="manual", created_at=labels[0].created_at,
                )
            ]
        )  # fmt: skip
        resolved = resolved_grades(store)[(first["query_id"], first["doc_id"])]
        assert (resolved.source, resolved.grade) == ("manual", manual_grade)
        # and the judge's cache sat in the same store
        assert store.count("judge_cache") == report["pool"]["pairs"]


def test_bad_input_is_refused_before_anything_is_asked(
    endpoint: tuple[Endpoint, str], tmp_path: Path
) -> None:
    state, url = endpoint
    config = _config(tmp_path, url)
    before = state.calls
    no_table = tmp_path / "empty.toml"
    no_table.write_text("", encoding="utf-8")
    cases = [
        (["--config", str(no_table), "--system", "builtin-lexical"], "no [judge] table"),
        (["--config", str(config)], "nothing to judge"),
        (["--config", str(config), str(tmp_path / "nowhere")], "nowhere"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, ["judge", *args, "--no-store"])
        assert result.exit_code == 2 and message in result.output, result.output
    bad_cache = tmp_path / "bad.jsonl"
    bad_cache.write_text('{"cache_key": "k"}\nnot json\n', encoding="utf-8")
    result = _judge(config, cache=bad_cache, out=tmp_path / "o")
    assert result.exit_code == 2
    assert f"{bad_cache}:1" in result.output and f"{bad_cache}:2" in result.output
    assert state.calls == before


# ---------------------------------------------------------------- the committed cache


def test_the_committed_live_model_cache_replays_the_example_identically(tmp_path: Path) -> None:
    """The cache `make record-judge-cache` recorded from SmolLM2-135M (see
    tests/llama_server.py) replays the example through a closed port: every judgment
    comes from it, twice the same; the tiny model's failures stay counted."""
    recorded = {}
    for line in CACHE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        recorded[entry["cache_key"]] = entry
    cache = tmp_path / "cache.jsonl"
    shutil.copy(CACHE, cache)
    config = tmp_path / "recallbench.toml"
    config.write_text(judge_toml(f"http://127.0.0.1:{free_port()}/v1"), encoding="utf-8")
    outputs = []
    for name in ("a", "b"):
        command = [
            "judge", *EXAMPLE_ARGS, "--config", str(config), "--judge-cache", str(cache),
            "--strict", "--no-store", "--out", str(tmp_path / name),
        ]  # fmt: skip
        result = CliRunner().invoke(main, command)
        assert result.exit_code in (0, 69), result.output
        outputs.append((tmp_path / name / "dataset.json").read_bytes())
    assert outputs[0] == outputs[1]
    assert cache.read_bytes() == CACHE.read_bytes()  # a replay adds nothing
    report = json.loads((tmp_path / "a" / "judge.json").read_text())
    assert report["called"] == 0 and report["cached"] == report["pool"]["pairs"] > 0
    # each pair's label is the recorded answer to exactly the question it asks
    from recallbench.gates import load_config
    from recallbench.judges._fill import PoolItem, relevance_inputs
    from recallbench.judges._run import judgment_key
    from recallbench.judges._setup import call_params
    from recallbench.judges._task_kinds import RelevanceTask

    judge_config = load_config(config).config.judge
    assert judge_config is not None
    items = [PoolItem(j["query_id"], j["doc_id"], j["rank"], ()) for j in report["judgments"]]
    inputs = relevance_inputs(load_dataset("agent-memory-sample"), items)
    params = call_params(judge_config)
    for pair, item in zip(report["judgments"], inputs, strict=True):
        entry = recorded[judgment_key(RelevanceTask(), item, judge_config.model, params).digest]
        value = None if entry["value"] is None else json.loads(entry["value"])["grade"]
        assert pair["grade"] == value and (pair["failure"] is None) == (entry["failure"] is None)
    failed = sum(1 for pair in report["judgments"] if pair["failure"] is not None)
    assert report["judge"]["judged"] - report["judge"]["labelled"] == failed
    assert result.exit_code == (69 if report["judge"]["unreliable"] else 0)


def test_the_committed_cache_replays_calibration_on_people_s_labels(tmp_path: Path) -> None:
    """`judge calibrate` on the bundled dataset's human labels, from SmolLM2-135M's
    recorded answers: kappa, the confusion matrix and tau with intervals, nothing asked."""
    from llama_server import CALIBRATION_ARGS, CALIBRATION_SYSTEMS

    runs = tmp_path / "runs"
    made = CliRunner().invoke(
        main,
        ["run", *(f"--system={s}" for s in CALIBRATION_SYSTEMS), "--no-store", "-q",
         "--out", str(runs)],
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    cache = tmp_path / "cache.jsonl"
    shutil.copy(CACHE, cache)
    config = tmp_path / "recallbench.toml"
    config.write_text(judge_toml(f"http://127.0.0.1:{free_port()}/v1"), encoding="utf-8")
    result = CliRunner().invoke(
        main,
        ["judge", "calibrate", *(str(runs / s) for s in CALIBRATION_SYSTEMS),
         *CALIBRATION_ARGS, "--config", str(config), "--judge-cache", str(cache), "--strict",
         "--out", str(tmp_path / "out")],
    )  # fmt: skip
    # docs/judges.md's example: 27.2% of judgments failed, so unreliable, as in `judge fill`
    assert result.exit_code == 69, result.output
    assert "unreliable: 27.2% of judgments failed" in result.output
    calibration = json.loads((tmp_path / "out" / "calibration.json").read_text())
    assert calibration["coverage"]["pairs"] == 375
    assert "κ" in result.output and "0 made" in result.output
    assert any(k["low"] is not None and k["high"] is not None for k in calibration["kappas"])
    assert len(calibration["confusion"]) == 4
    ranking = calibration["ranking"]
    assert ranking["tau"] is not None and len(ranking["systems"]) == 3
    # tau 1.0 beside kappa about 0, and 10 people's queries: both warned about
    assert ranking["tau"] == pytest.approx(1.0) and abs(ranking["kappa_quadratic"]) < 0.05
    codes = [w["code"] for w in calibration["warnings"]]
    assert codes == ["tau-without-agreement", "small-human-sample"]
    assert calibration["spent"] == {
        "calls": 0, "replayed": 375, "tokens_in": 0, "tokens_out": 0, "cost_usd": None,
    }  # fmt: skip
    assert "spent now: 0 calls made, 375 replayed" in " ".join(result.output.split())
    assert cache.read_bytes() == CACHE.read_bytes()
