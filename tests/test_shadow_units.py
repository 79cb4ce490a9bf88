"""The unit of a shadow test's analysis (issue 29): a text searched again is one
observation, however it is spelled; click measures only where the agent saw both lists.

The null streams here are the issue's reproduction: each query text searched R times in a
row, every search a pair, the rule checked after every pair. Counting each pair made the
false-positive rate 0.20 / 0.39 / 0.68 for R = 2 / 3 / 5."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from recallbench.core import ConfigError
from recallbench.core._query_key import query_key, words
from recallbench.online._shadow_calls import sampled
from recallbench.online._shadow_decide import decide
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import score_pairs
from recallbench.online._shadow_units import observations
from recallbench.store import FeedbackEvent
from recallbench.telemetry._privacy import withheld
from test_shadow_decide import stream


def repeated(
    n_texts: int, repeats: int, seed: int
) -> tuple[list[dict[str, Any]], Any, dict[str, str]]:
    """A null stream of ``n_texts`` texts, each searched ``repeats`` times in a row (the
    same lists, the same read), and each search's text key."""
    rows, events = stream(n_texts, seed=seed)
    by_id = {event.query_id: event for event in events}
    out_rows, out_events, keys = [], [], {}
    for row in rows:
        for again in range(repeats):
            query_id = f"{row['query_id']}-r{again}"
            out_rows.append({**row, "query_id": query_id})
            keys[query_id] = query_key(f"Text of {row['query_id']}" + "?" * again)
            if row["query_id"] in by_id:
                event = by_id[row["query_id"]]
                out_events.append(
                    FeedbackEvent(query_id, event.kind, event.created_at, event.doc_id)
                )
    return out_rows, out_events, keys


def test_spellings_of_one_text_are_one_key_and_one_sampling_draw() -> None:
    spellings = ["Kestrel decision", "kestrel decision?", "  KESTREL   decision!!"]
    assert {words(text) for text in spellings} == {"kestrel decision"}
    assert len({query_key(text) for text in spellings}) == 1
    for percent in (1, 10, 50):
        assert len({sampled(text, percent) for text in spellings}) == 1
    # a text stored withheld keeps its key
    assert query_key(withheld("Kestrel decision")) == query_key("kestrel decision?")


def test_repeats_are_one_observation_the_first() -> None:
    rows, events, keys = repeated(40, 3, seed=1)
    scores = score_pairs(rows, events)
    observed = observations(scores, "rr", keys)
    measured = sum(1 for score in scores if score.difference("rr") is not None)
    assert observed.measured_pairs == measured
    assert len(observed.values) * 3 == measured and observed.repeats == measured * 2 // 3
    # the observation of a unit is its first pair's difference
    first = [s.difference("rr") for s in scores[::3] if s.difference("rr") is not None]
    assert list(observed.values) == first


@pytest.mark.parametrize("repeats", [2, 3, 5])
def test_repeated_searches_do_not_inflate_the_false_positive_rate(repeats: int) -> None:
    """60 null streams of 150 texts each searched ``repeats`` times: graduations within
    alpha + Monte Carlo error (P(Binomial(60, 0.05) > 7) < 0.01)."""
    rule = GraduationRule(measure="rr", min_queries=30, unit="query")
    graduated = 0
    for seed in range(60):
        rows, events, keys = repeated(150, repeats, seed=1000 * repeats + seed)
        decision = decide(rule, rows, score_pairs(rows, events), keys=keys)
        assert decision.units <= 150 and decision.repeats > 0
        graduated += decision.decision == "graduate"
    assert graduated <= 7


def test_session_units_take_one_observation_per_session() -> None:
    rows, events = stream(120, seed=3)
    rows = [{**row, "session_id": f"s{i // 10}"} for i, row in enumerate(rows)]
    observed = observations(score_pairs(rows, events), "rr", {}, unit="session")
    assert len(observed.values) == 12 and observed.units[0] == "session:s0"


def test_click_measures_refuse_pairs_the_agent_saw_one_side_of() -> None:
    rows, events = stream(200, seed=4, effect=0.5)
    mirrored = [{**row, "interleaved": None} for row in rows]
    decision = decide(
        GraduationRule(measure="rr", min_queries=30), mirrored, score_pairs(mirrored, events)
    )
    assert decision.decision == "continue" and decision.n == 0
    assert decision.not_interleaved > 0 and "--interleave" in decision.reason
    assert decision.secondary["rr"].n == 0  # no biased number shown either
    with pytest.raises(ConfigError, match="without interleaving is refused"):
        GraduationRule(measure="rr", interleaved=False)
    labelled = GraduationRule(measure="ndcg@10", interleaved=False)  # labels: either design
    assert labelled.measure == "ndcg@10"


def test_a_rule_stored_before_units_existed_still_reads() -> None:
    old = {"measure": "rr", "method": "msprt", "alpha": 0.05, "min_queries": 100}
    rule = GraduationRule.from_dict(old)
    assert rule.unit == "session" and rule.interleaved is None  # the valid default


def test_observations_never_drop_a_unit_that_only_later_has_a_value() -> None:
    rows, events = stream(10, seed=5)
    keys = {row["query_id"]: "same" for row in rows}
    no_first = [e for e in events if e.query_id != rows[0]["query_id"]]
    observed = observations(score_pairs(rows, no_first), "rr", keys)
    assert len(observed.values) == 1  # the first pair of the unit that has a value
    assert np.isfinite(observed.values[0])


def test_the_decision_warns_where_the_options_failed_the_validity_suite() -> None:
    rows, events = stream(200, seed=6)
    rows = [{**row, "session_id": f"s{i // 10}"} for i, row in enumerate(rows)]
    scores = score_pairs(rows, events)
    by_query = decide(GraduationRule(measure="rr", unit="query", min_queries=30), rows, scores)
    assert any("share a session" in warning for warning in by_query.warnings)
    by_session = decide(GraduationRule(measure="rr", min_queries=30), rows, scores)
    assert by_session.warnings == ()
    from recallbench.online._shadow_warnings import validity_warnings as _warnings

    msprt = GraduationRule(measure="hit@1", method="msprt", unit="session")
    skewed = [0.95] * 3 + [-0.05] * 57  # the validity suite's skewed null
    assert [w.split(":")[0] for w in _warnings(msprt, False, skewed)] == [
        "the differences are skewed (skewness +4.1)"
    ]
    assert _warnings(msprt, False, [0.1, -0.1] * 30) == ()
    assert _warnings(GraduationRule(measure="hit@1"), False, skewed) == ()  # betting holds
