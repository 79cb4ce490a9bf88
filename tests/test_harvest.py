"""Harvest: logged queries and feedback become a golden dataset (rules on constructed logs;
then the whole path through a real store, the CLI, and `recallbench run`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from click.testing import CliRunner

from recallbench.cli import main
from recallbench.online._harvest import harvest, normalise
from recallbench.store._telemetry import FeedbackEvent, Judgment, QueryLogEntry

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
TEXTS = {
    "m1": "Never run migrations on Friday.",
    "m2": "Webhooks retry six times over 33 hours.",
    "m3": "The ledger moved to PostgreSQL after INC-0112.",
    "m4": "Sprint goals for the week.",
}


def _entry(
    qid: str, text: str, results: list[str], minutes: int, intent: str | None = None
) -> QueryLogEntry:
    return QueryLogEntry(
        query_id=qid,
        text=text,
        created_at=T0 + timedelta(minutes=minutes),
        results=tuple(results),
        intent=intent,
        texts={doc: TEXTS[doc] for doc in results if doc in TEXTS},
    )


def _event(qid: str, kind: str, doc: str | None, rank: int | None = None) -> FeedbackEvent:
    return FeedbackEvent(query_id=qid, kind=kind, doc_id=doc, rank=rank, created_at=T0)  # type: ignore[arg-type]


ENTRIES = [
    _entry("a1", "Why no migrations on Friday?", ["m1", "m3", "m4"], 0, "find_decision"),
    _entry("a2", "why no migrations on friday", ["m3", "m1"], 5, "find_decision"),  # duplicate
    _entry("b1", "webhook retry policy", ["m2", "m4"], 10, "find_spec"),
    _entry("c1", "what is the sprint about", ["m4"], 20, None),  # never read: no evidence
    _entry("d1", "ledger database history", ["m3", "m9"], 30, "understand"),  # m9 has no text
]
FEEDBACK = [
    _event("a1", "read_after_search", "m1", 1),
    _event("a1", "scroll_past", "m4", 3),
    _event("a2", "validated_not_useful", "m3", 1),
    _event("b1", "validated_useful", "m2", 1),
    _event("b1", "re_search", None),
    _event("c1", "scroll_past", "m4", 1),
    _event("d1", "read_after_search", "m3", 1),
    _event("d1", "read_after_search", "m9", 2),
]


def test_grades_dedup_and_provenance() -> None:
    judgments = [Judgment("d1", "m3", 1, "manual", T0, annotator="priya")]
    dataset, stats = harvest(ENTRIES, FEEDBACK, judgments)
    # c1 was never read; d1's only read memory (m9) has no text and a manual grade 1 for m3
    assert (stats.logged, stats.unique, stats.sampled, stats.without_evidence) == (5, 4, 4, 2)
    assert stats.documents_without_text == 1  # m9
    texts = [q.text for q in dataset.queries]
    assert texts == ["Why no migrations on Friday?", "webhook retry policy"]
    first, second = dataset.queries
    # pooled over a1 and a2: m1 read (2), m3 validated not useful (0), m4 shown only (1)
    assert dataset.qrels[first.id] == {"m1": 2, "m3": 0, "m4": 1}
    assert dataset.qrels[second.id] == {"m2": 3, "m4": 1}
    assert first.metadata["logged_query_ids"] == ["a1", "a2"]
    provenance = first.metadata["provenance"]
    assert provenance["m1"] == {"source": "implicit", "events": ["read_after_search"]}  # type: ignore[index]
    assert provenance["m4"] == {"source": "bootstrapped", "events": ["scroll_past"]}  # type: ignore[index]
    assert dataset.relevance_threshold == 2
    assert {d.id: d.text for d in dataset.documents} == {
        k: TEXTS[k] for k in ("m1", "m2", "m3", "m4")
    }
    assert stats.logged_ids == ("a1", "a2", "b1")


def test_manual_judgment_wins_and_unread_queries_are_left_out() -> None:
    judgments = [Judgment("d1", "m3", 3, "manual", T0)]
    dataset, stats = harvest(ENTRIES[4:], FEEDBACK, judgments)
    (query,) = dataset.queries
    assert dataset.qrels[query.id] == {"m3": 3}
    assert query.metadata["provenance"]["m3"]["source"] == "manual"  # type: ignore[index, call-overload]
    empty, stats = harvest(ENTRIES[3:4], FEEDBACK, [])
    assert (len(empty.queries), stats.without_evidence) == (0, 1)


def test_sample_per_intent_is_seeded_and_bounded() -> None:
    entries = [
        _entry(f"q{i}", f"question number {i}", ["m1"], i, "fix_bug" if i % 2 else "understand")
        for i in range(20)
    ]
    feedback = [_event(f"q{i}", "read_after_search", "m1", 1) for i in range(20)]
    first, _ = harvest(entries, feedback, [], sample_per_intent=3, seed=7)
    again, _ = harvest(entries, feedback, [], sample_per_intent=3, seed=7)
    other, _ = harvest(entries, feedback, [], sample_per_intent=3, seed=8)
    intents = [q.intent for q in first.queries]
    assert sorted(intents) == ["fix_bug"] * 3 + ["understand"] * 3
    assert [q.text for q in first.queries] == [q.text for q in again.queries]
    assert [q.text for q in first.queries] != [q.text for q in other.queries]


def test_normalise() -> None:
    assert normalise("  Why NO migrations, on Friday?! ") == "why no migrations on friday"


def _log_into(url: str) -> None:
    from recallbench.store import open_store

    with open_store(url) as store:
        store.log(queries=ENTRIES, feedback=FEEDBACK)


def test_harvest_cli_then_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    _log_into(url)
    out = tmp_path / "golden.json"
    result = CliRunner().invoke(
        main, ["harvest", "--store", url, "--out", str(out), "--mark-golden", "--name", "mine"]
    )
    assert result.exit_code == 0, result.output
    # no manual judgment here: d1's read of m3 makes it a harvested query too
    assert "5 logged queries, 4 unique, 4 sampled; 3 with evidence" in result.output
    data = json.loads(out.read_text())
    assert data["name"] == "mine" and data["metadata"]["harvest"]["store"].startswith("sqlite")
    from recallbench.store import open_store

    with open_store(url) as store:
        golden = {entry.query_id for entry in store.query_log() if entry.golden}
    assert golden == {"a1", "a2", "b1", "d1"}
    run = CliRunner().invoke(
        main,
        [
            "run",
            "--dataset",
            str(out),
            "--system",
            "builtin-lexical",
            "--no-store",
            "--out",
            str(tmp_path / "run"),
            "-q",
        ],
    )
    assert run.exit_code == 0, run.output
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["counts"]["evaluated"] == 3 and report["means"]["mrr@10"] is not None
    since = CliRunner().invoke(
        main,
        [
            "harvest",
            "--store",
            url,
            "--out",
            str(tmp_path / "late.json"),
            "--since",
            "2026-11-20T09:08:00",
        ],
    )
    assert since.exit_code == 0, since.output
    assert "3 logged queries" in since.output
    bad = CliRunner().invoke(
        main, ["harvest", "--store", url, "--out", str(tmp_path / "x.json"), "--since", "yesterday"]
    )
    assert bad.exit_code == 2 and "not an ISO date" in bad.output
    assert not (tmp_path / "x.json").exists()


# ---------------------------------------------------------------- texts withheld (issue 28, 26)


def _withheld(entry: QueryLogEntry) -> QueryLogEntry:
    """``entry`` as a store holds it when logged with --no-texts / store_texts=False."""
    from dataclasses import replace

    from recallbench.telemetry._privacy import TextPolicy

    policy = TextPolicy(store_texts=False)
    return replace(entry, text=policy.query(entry.text), texts=policy.texts(entry.texts))


def test_queries_with_texts_withheld_are_counted_apart_from_no_evidence() -> None:
    from recallbench.online._harvest import nothing_harvested

    dataset, stats = harvest([_withheld(e) for e in ENTRIES], FEEDBACK, [])
    assert dataset.queries == () and stats.without_evidence == 0
    assert (stats.logged, stats.unique, stats.withheld, stats.sampled) == (5, 4, 4, 0)
    assert stats.withheld_feedback == len(FEEDBACK)
    said = nothing_harvested(stats, "the store")
    assert "all 4 unique queries were logged with their texts withheld" in said
    assert "--no-texts" in said and "8 feedback events stay in the store" in said
    assert "evidence" not in said  # they had evidence: what they lack is texts


def test_queries_logged_with_texts_are_still_harvested_beside_withheld_ones() -> None:
    entries = [*ENTRIES[:3], *(_withheld(e) for e in ENTRIES[3:])]
    dataset, stats = harvest(entries, FEEDBACK, [], sample_per_intent=5)
    assert [q.text for q in dataset.queries] == [
        "Why no migrations on Friday?",
        "webhook retry policy",
    ]
    assert (stats.unique, stats.withheld, stats.sampled, stats.without_evidence) == (4, 2, 2, 0)
    assert dataset.metadata["harvest"]["left_out_texts_withheld"] == 2  # type: ignore[index]


def _log_with_the_sdk(url: str, store_texts: bool) -> None:
    """Two searches with reads and validations, through the real logger."""
    from recallbench.telemetry import TelemetryLogger

    with TelemetryLogger(url, store_texts=store_texts) as log:
        for text, results in (("Why no migrations on Friday?", ["m1", "m3"]), ("webhooks", ["m2"])):
            qid = log.log_search(text, [{"id": d, "text": TEXTS[d]} for d in results])
            log.log_feedback(qid, "read_after_search", doc_id=results[0], rank=1)
            log.log_validation(qid, results[0], True)


def test_harvest_of_a_log_without_texts_says_so_and_writes_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    _log_with_the_sdk(url, store_texts=False)
    out = tmp_path / "golden.json"
    result = CliRunner().invoke(
        main, ["harvest", "--store", url, "--out", str(out), "--mark-golden"]
    )
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "all 2 unique queries were logged with their texts withheld" in said
    assert "drop --no-texts" in said and "Nothing written to" in said
    assert "without evidence" not in said and "Traceback" not in said
    assert not out.exists()
    from recallbench.store import open_store

    with open_store(url) as store:
        assert not any(entry.golden for entry in store.query_log())
    _log_with_the_sdk(url, store_texts=True)  # what can still be harvested: logged with texts
    result = CliRunner().invoke(main, ["harvest", "--store", url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "2 with evidence of a useful memory" in said
    assert "2 with their texts withheld, left out" in said
    assert len(json.loads(out.read_text())["queries"]) == 2


def test_harvest_that_finds_nothing_writes_no_empty_dataset(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'telemetry.db'}"
    _log_into(url)
    out = tmp_path / "golden.json"
    late = CliRunner().invoke(
        main, ["harvest", "--store", url, "--out", str(out), "--since", "2030-01-01"]
    )
    assert late.exit_code == 2 and "no logged queries in" in late.output
    assert "since 2030-01-01" in late.output
    from recallbench.store import open_store

    with open_store(url) as store:
        store.log(queries=[_entry("z1", "a question nobody read", ["m4"], 90)])
    unread = CliRunner().invoke(
        main, ["harvest", "--store", url, "--out", str(out), "--since", "2026-11-20T10:00:00"]
    )
    assert unread.exit_code == 2, unread.output
    said = " ".join(unread.output.split())
    assert "the one sampled query was without evidence of a useful memory" in said
    assert not out.exists()
