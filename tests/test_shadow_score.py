"""Scoring shadow pairs: implicit feedback on both lists, labels to nDCG, rank differences,
team-draft credit, guardrails; from hand-made rows and from a real store (both engines)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recallbench.core import ConfigError
from recallbench.online._shadow_score import (
    clicked_documents,
    guardrails,
    label_grades,
    ndcg,
    pairs_of,
    parse_measure,
    score_pairs,
    score_test,
    team_credit,
)
from recallbench.stats._interleaving import team_draft
from recallbench.store import FeedbackEvent, Judgment, open_store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def row(query_id: str, control: list[str], treatment: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "query_id": query_id,
        "control_results": tuple(control),
        "treatment_results": tuple(treatment),
        "control_latency_ms": 10.0,
        "treatment_latency_ms": 12.0,
        "control_error": None,
        "treatment_error": None,
        "created_at": T0,
        **extra,
    }


def read(query_id: str, doc: str, kind: str = "read_after_search") -> FeedbackEvent:
    return FeedbackEvent(query_id, kind, T0, doc_id=doc)  # type: ignore[arg-type]


def test_feedback_gives_both_sides_reciprocal_rank_and_hit_from_the_same_clicks() -> None:
    rows = [
        row("q1", ["a", "b", "c"], ["c", "a", "b"]),  # c read: rank 3 vs 1
        row("q2", ["a", "b"], ["x", "y"]),  # a read: treatment never returned it
        row("q3", ["a", "b"], ["a", "b"]),  # no feedback at all
    ]
    events = [read("q1", "c"), read("q2", "a"), FeedbackEvent("q3", "re_search", T0)]
    q1, q2, q3 = score_pairs(rows, events, k=2)
    assert q1.rr == (pytest.approx(1 / 3), 1.0) and q1.hit == (0.0, 1.0)
    assert q1.difference("rr") == pytest.approx(2 / 3)
    assert q2.rr == (1.0, 0.0) and q2.difference("hit@2") == -1.0
    assert q3.rr is None and q3.difference("rr") is None  # missing, not a tie


def test_a_validation_as_not_useful_takes_a_read_back() -> None:
    events = [read("q", "a"), read("q", "b"), read("q", "a", "validated_not_useful")]
    assert clicked_documents(events) == {"q": {"b"}}
    [scored] = score_pairs([row("q", ["a", "b"], ["b"])], events)
    assert scored.clicked == ("b",) and scored.rr == (0.5, 1.0)


def test_labels_give_ndcg_with_manual_over_judge_labels() -> None:
    labels = [
        Judgment("q", "a", 3, "manual", T0),
        Judgment("q", "a", 0, "llm", T0),  # overridden by the manual label
        Judgment("q", "b", 1, "llm", T0),
        Judgment("q", "c", 3, "implicit", T0),  # not a label source
    ]
    assert label_grades(labels) == {"q": {"a": 3, "b": 1}}
    [scored] = score_pairs([row("q", ["b", "a"], ["a", "b"])], labels=labels, k=10)
    ideal = 3 + 1 / math.log2(3)
    assert scored.ndcg == (
        pytest.approx((1 + 3 / math.log2(3)) / ideal),
        pytest.approx(1.0),
    )
    assert ndcg(["x"], {"a": 0}, 5) is None  # no positive label: no value
    # a repeat keeps its first rank and takes no slot (as the rank differences count it)
    assert ndcg(["a", "a", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1.0)
    assert ndcg(["a", "x", "b"], {"a": 1, "b": 1}, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_every_pair_gets_its_rank_difference_including_ties_and_empty_lists() -> None:
    same, empty, moved = score_pairs(
        [
            row("same", ["a", "b", "c"], ["a", "b", "c"]),
            row("empty", [], []),
            row("moved", ["a", "b"], ["b", "a"]),
        ]
    )
    assert (same.kendall_tau, same.jaccard, same.top1_changed) == (1.0, 1.0, False)
    assert same.rank_class == "identical"
    assert empty.jaccard == 1.0 and not empty.top1_changed
    assert moved.top1_changed and moved.kendall_tau == -1.0


def test_a_failed_side_is_scored_as_an_empty_list() -> None:
    failed = row("q", ["a"], ["a"], treatment_error="timeout")
    [scored] = score_pairs([failed], [read("q", "a")])
    assert scored.treatment == () and scored.rr == (1.0, 0.0)


def test_interleaved_pairs_credit_the_team_that_placed_each_read_document() -> None:
    drafted = team_draft(["a", "b", "c"], ["c", "d", "a"], "q1")
    shown = list(zip(drafted.items, drafted.teams, strict=True))
    owner = dict(shown)
    treatment_doc = next(doc for doc, team in shown if team == "treatment")
    rows = [
        row("q1", ["a", "b", "c"], ["c", "d", "a"], interleaved=shown),
        row("q2", ["a"], ["b"], interleaved=[("a", "control"), ("b", "treatment")]),
        row("q3", ["a"], ["b"], interleaved=[("b", "treatment"), ("a", "control")]),
    ]
    events = [read("q1", treatment_doc), read("q2", "a"), read("q2", "b")]
    q1, q2, q3 = score_pairs(rows, events)
    assert owner[treatment_doc] == "treatment"
    assert q1.outcome == "win" and q1.difference("interleaving") == 1.0
    assert q2.credit == (1, 1) and q2.outcome == "tie"
    assert q3.outcome is None and q3.difference("interleaving") is None  # no click
    assert team_credit([("a", "control")], ["a"]) == ((1, 0), "loss")


def test_guardrails_per_side() -> None:
    rows = [
        row(f"q{i}", ["a"], ["a"] if i % 4 else [], control_latency_ms=float(i))
        for i in range(1, 21)
    ]
    rows.append(row("err", ["a"], ["a"], treatment_error="boom", treatment_latency_ms=None))
    sides = guardrails(rows)
    control, treatment = sides["control"], sides["treatment"]
    assert control.latency_median == 10.0  # the 11th of 1..20 and the failed pair's 10
    assert control.error_rate == 0 and treatment.error_rate == pytest.approx(1 / 21)
    assert treatment.empty_rate == pytest.approx(5 / 20)  # of the 20 that answered
    assert treatment.latency_p95 == pytest.approx(12.0) and treatment.tokens_mean is None
    nothing = guardrails([])
    assert nothing["control"].error_rate is None and nothing["control"].latency_p95 is None


@pytest.mark.parametrize(
    ("measure", "parsed"),
    [
        ("rr", ("rr", 10)),
        ("hit@3", ("hit", 3)),
        ("NDCG@5", ("ndcg", 5)),
        ("interleaving", ("interleaving", 10)),
    ],
)
def test_measure_names(measure: str, parsed: tuple[str, int]) -> None:
    assert parse_measure(measure) == parsed


@pytest.mark.parametrize("measure", ["mrr", "ndcg@0", "ndcg@", ""])
def test_an_unknown_measure_is_refused(measure: str) -> None:
    with pytest.raises(ConfigError, match="shadow measure"):
        parse_measure(measure)


def test_a_malformed_row_is_refused_where_it_is() -> None:
    with pytest.raises(ConfigError, match="shadow_runs row 1"):
        score_pairs([row("q", ["a"], ["a"]), {"query_id": "bad"}])


def test_a_test_scores_only_its_own_pairs_from_the_store(db_url: str) -> None:
    with open_store(db_url) as store:
        test = store.start_shadow_test("t", "A", "B", "rr", {}, at=T0)
        before = {"created_at": T0 - timedelta(hours=1)}
        for query_id, extra in [
            ("old", before),
            ("mine", {"control": "A", "treatment": "B", "session_id": "s1"}),
            ("unnamed", {}),
            ("other", {"control": "A", "treatment": "C"}),
        ]:
            at = extra.pop("created_at", T0 + timedelta(minutes=1))
            store.log_shadow_run(
                {
                    "query_id": query_id,
                    "control_results": ["a", "b"],
                    "treatment_results": ["b", "a"],
                    "created_at": at,
                    **extra,
                }
            )
        store.log(feedback=[read("mine", "b")])
        store.log(judgments=[Judgment("unnamed", "a", 2, "manual", T0)])
        assert [r["query_id"] for r in pairs_of(store, test)] == ["mine", "unnamed"]
        rows, scores = score_test(store, test)
    mine, unnamed = scores
    assert mine.rr == (0.5, 1.0) and mine.session_id == "s1" and mine.ndcg is None
    assert unnamed.rr is None and unnamed.ndcg == (1.0, pytest.approx(1 / math.log2(3)))
    assert len(rows) == 2
