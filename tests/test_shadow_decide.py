"""The graduation rule: graduates on a clear effect, not under the null, rolls back on a
worse treatment or a breached guardrail, never decides on a sample-ratio mismatch; mSPRT and
SPRT; the rule's JSON round trip and its located errors; from a real store (both engines)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from recallbench.core import ConfigError
from recallbench.online._shadow_decide import decide, decide_test
from recallbench.online._shadow_rule import GraduationRule, Margin, parse_guardrail
from recallbench.online._shadow_score import score_pairs
from recallbench.store import FeedbackEvent, open_store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DOCS = [f"d{i}" for i in range(10)]


def stream(
    n: int,
    seed: int,
    effect: float = 0.0,
    treatment_latency: float = 10.0,
    treatment_errors: float = 0.0,
    feedback_share: float = 0.8,
) -> tuple[list[dict[str, Any]], list[FeedbackEvent]]:
    """``n`` pairs, each shown to the agent interleaved (team draft: what makes its reads
    evidence about both lists); the agent reads one document per search
    (``feedback_share`` of them). The control puts it at a random rank 1-5; the treatment
    at rank 1 with probability ``effect`` more than the control does, else at the
    control's rank (so under effect 0 both are the same distribution, with many ties)."""
    from recallbench.stats._interleaving import team_draft

    rng = np.random.default_rng(seed)
    rows, events = [], []
    for i in range(n):
        target = DOCS[i % 10]
        others = [doc for doc in DOCS if doc != target]
        control_rank = int(rng.integers(0, 5))
        better = rng.random() < effect
        treatment_rank = 0 if better else int(rng.integers(0, 5))
        control = [*others[:control_rank], target, *others[control_rank:4]]
        treatment = [*others[:treatment_rank], target, *others[treatment_rank:4]]
        failed = rng.random() < treatment_errors
        query_id = f"q{seed}-{i}"
        drafted = team_draft(control, [] if failed else treatment, query_id)
        rows.append(
            {
                "query_id": query_id,
                "control_results": tuple(control),
                "treatment_results": () if failed else tuple(treatment),
                "control_latency_ms": float(rng.normal(10, 1)),
                "treatment_latency_ms": None if failed else float(rng.normal(treatment_latency, 1)),
                "control_error": None,
                "treatment_error": "timeout" if failed else None,
                "created_at": T0 + timedelta(seconds=i),
                "interleaved": tuple(zip(drafted.items, drafted.teams, strict=True)),
            }
        )
        if rng.random() < feedback_share:
            events.append(FeedbackEvent(query_id, "read_after_search", T0, doc_id=target))
    return rows, events


def run(rule: GraduationRule, rows: list[dict[str, Any]], events: list[FeedbackEvent]) -> Any:
    return decide(rule, rows, score_pairs(rows, events))


RULE = GraduationRule(measure="rr", min_queries=50)


def test_a_clear_effect_graduates_with_its_evidence() -> None:
    decision = run(RULE, *stream(600, seed=1, effect=0.4))
    assert decision.decision == "graduate", decision.reason
    assert decision.sequential == "accept_treatment"
    assert decision.pvalue is not None and decision.pvalue <= 0.05
    assert decision.interval is not None and decision.interval[0] > 0
    assert decision.n < 600  # stopped early: the mSPRT decided on its way
    assert all(check.passed for check in decision.guardrails)
    evidence = decision.to_dict()
    assert evidence["decision"] == "graduate" and evidence["rule"]["measure"] == "rr"
    assert evidence["secondary"]["rr"]["mean"] > 0


def test_under_the_null_the_rule_graduates_at_most_alpha_of_the_time() -> None:
    """100 null streams of 400 pairs, each checked as a whole (the mSPRT's path is the
    check after every pair): graduations stay within alpha plus Monte Carlo error."""
    graduated = sum(
        run(RULE, *stream(400, seed=seed)).decision == "graduate" for seed in range(100)
    )
    assert graduated <= 9  # alpha 0.05: P(Binomial(100, 0.05) > 9) < 0.03


def test_checking_after_every_batch_of_pairs_changes_nothing() -> None:
    """The rule looked at after every 20 pairs: the sequential test keeps its first
    crossing, so once it accepted the treatment every later look says so, and a stream is
    graduated at some look exactly when the whole stream is (peeking adds no false
    graduation). Null streams and streams with a small effect, so that both happen."""
    graduated = 0
    for seed in range(30):
        rows, events = stream(300, seed=100 + seed, effect=0.0 if seed % 2 else 0.2)
        scores = score_pairs(rows, events)
        looks = [decide(RULE, rows[:n], scores[:n]) for n in range(20, 301, 20)]
        whole = decide(RULE, rows, scores)
        said = [look.sequential for look in looks]
        if "accept_treatment" in said:
            first = said.index("accept_treatment")
            assert set(said[first:]) == {"accept_treatment"}, seed
            assert looks[first].n == whole.n and looks[first].pvalue == whole.pvalue, seed
        ever = any(look.decision == "graduate" for look in looks)
        assert ever == (whole.decision == "graduate"), seed
        graduated += ever
    assert 3 <= graduated <= 20  # both outcomes occur: the checks above are not vacuous


def test_a_worse_treatment_is_rolled_back() -> None:
    rows, events = stream(600, seed=2, effect=0.4)
    swapped = [
        {
            **row,
            "control_results": row["treatment_results"],
            "treatment_results": row["control_results"],
        }
        for row in rows
    ]
    decision = run(RULE, swapped, events)
    assert decision.decision == "rollback" and decision.sequential == "accept_control"


def test_too_few_pairs_continue_whatever_the_effect() -> None:
    decision = run(GraduationRule(min_queries=500), *stream(100, seed=3, effect=0.9))
    assert decision.decision == "continue" and "of the 500 measured" in decision.reason


def test_a_breached_guardrail_rolls_back_even_a_better_treatment() -> None:
    slow = run(RULE, *stream(600, seed=4, effect=0.4, treatment_latency=20.0))
    assert slow.decision == "rollback" and "latency_p95" in slow.reason
    [latency] = [check for check in slow.guardrails if check.name == "latency_p95"]
    assert latency.passed is False and latency.treatment > latency.limit
    failing = run(RULE, *stream(600, seed=5, effect=0.4, treatment_errors=0.10))
    assert failing.decision == "rollback" and "error_rate" in failing.reason
    # 5% errors against none is beyond the +1pt margin, but 600 pairs do not show it with
    # always-valid confidence yet (a point estimate alone rolled equal sides back 35% of
    # the time when checked after every pair); 1,200 do
    early = run(RULE, *stream(600, seed=5, effect=0.4, treatment_errors=0.05))
    [errors] = [check for check in early.guardrails if check.name == "error_rate"]
    assert errors.treatment > errors.limit and errors.passed and not errors.evidence
    later = run(RULE, *stream(1200, seed=5, effect=0.4, treatment_errors=0.05))
    assert later.decision == "rollback" and "error_rate" in later.reason


def test_equal_sides_checked_after_every_pair_rarely_breach_a_guardrail() -> None:
    """Issue 29 item 6: guardrails judged on point estimates at every check rolled equal
    sides back in 0.72 of simulated streams. 40 null streams, each checked
    from 100 to 600 (every 50): rollbacks by a guardrail within alpha + Monte Carlo error
    (judged on the point estimates alone: 28 of these 40)."""
    # the primary's test does not matter here: the faster of the two bounded sequences
    rule = GraduationRule(measure="rr", min_queries=100, method="empirical_bernstein")
    breached = 0
    for seed in range(40):
        rows, events = stream(600, seed=300 + seed, treatment_latency=10.0)
        rng = np.random.default_rng(seed)
        for row in rows:  # each side comes back empty or fails 5% of the time, alike
            for side in ("control", "treatment"):
                if rng.random() < 0.05:
                    row[f"{side}_results"] = ()
                if rng.random() < 0.05:
                    row[f"{side}_error"] = "timeout"
        scores = score_pairs(rows, events)
        looks = [decide(rule, rows[:n], scores[:n]) for n in range(100, 601, 50)]
        breached += any(check.passed is False for look in looks for check in look.guardrails)
    assert breached <= 5  # P(Binomial(40, 0.05) > 5) < 0.05


def test_a_wider_margin_lets_the_same_slow_treatment_graduate() -> None:
    rule = GraduationRule(min_queries=50, guardrails={"latency_p95": Margin("relative", 1.5)})
    assert (
        run(rule, *stream(600, seed=4, effect=0.4, treatment_latency=20.0)).decision == "graduate"
    )


def test_a_sample_ratio_mismatch_blocks_graduation() -> None:
    rows, events = stream(600, seed=6, effect=0.4)
    # interleaved lists whose first pick is always the treatment's: no fair coin did that
    for row in rows:
        row["interleaved"] = [(row["treatment_results"][0], "treatment")]
    decision = run(RULE, rows, events)
    assert decision.decision == "continue" and "sample ratio mismatch" in decision.reason
    [check] = decision.srm
    assert check.mismatch and check.observed == (0, 600)
    sampled = GraduationRule(min_queries=50, sample_percent=10)
    plain, _ = stream(600, seed=6, effect=0.4)
    fine = decide(sampled, plain, score_pairs(plain, events), sampled=(600, 5400))
    off = decide(sampled, plain, score_pairs(plain, events), sampled=(600, 400))  # 60% mirrored
    assert fine.decision == "graduate" and not any(check.mismatch for check in fine.srm)
    assert off.decision == "continue"
    assert [check.name for check in off.srm if check.mismatch] == ["sampled query texts"]


def test_max_queries_ends_an_undecided_test_with_a_rollback() -> None:
    rule = GraduationRule(min_queries=50, max_queries=80)
    decision = run(rule, *stream(400, seed=7))
    assert decision.sequential == "inconclusive" and decision.decision == "rollback"
    assert decision.n == 80 and decision.measured > 80


def test_the_sprt_is_an_option() -> None:
    rule = GraduationRule(method="sprt", min_queries=50, effect=0.1)
    decision = run(rule, *stream(600, seed=8, effect=0.4))
    assert decision.decision == "graduate" and decision.llr is not None
    assert decision.pvalue is None and decision.interval is None


def test_interleaving_credit_as_the_primary_measure() -> None:
    rows, events = stream(600, seed=9, effect=0.4)
    from recallbench.stats._interleaving import team_draft

    for row in rows:
        drafted = team_draft(row["control_results"], row["treatment_results"], row["query_id"])
        row["interleaved"] = list(zip(drafted.items, drafted.teams, strict=True))
    decision = run(GraduationRule(measure="interleaving", min_queries=50), rows, events)
    assert decision.interleaving is not None
    assert decision.interleaving["wins"] > decision.interleaving["losses"]
    assert not decision.srm[0].mismatch  # a fair coin picked first
    assert decision.decision == "graduate", decision.reason


def test_empty_pairs_and_no_feedback_continue() -> None:
    assert run(RULE, [], []).decision == "continue"
    rows, _ = stream(200, seed=10, effect=0.5)
    decision = run(RULE, rows, [])  # no feedback: no difference to test
    assert decision.n == 0 and decision.decision == "continue"


def test_the_rule_round_trips_through_json() -> None:
    rule = GraduationRule(
        measure="ndcg@5",
        method="sprt",
        min_queries=30,
        guardrails={"error_rate": Margin("absolute", 0.01)},
        sample_percent=10,
        flag="memory",
    )
    assert GraduationRule.from_dict(rule.to_dict()) == rule


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"alpha": 2}, "rule.alpha: expected in"),
        ({"min_queries": 1}, "rule.min_queries"),
        ({"measure": "mrr"}, "unknown shadow measure"),
        ({"method": "bayes"}, "rule.method"),
        ({"colour": "red"}, r"unknown keys \['colour'\]"),
        ({"guardrails": {"latency_p95": {"kind": "relative"}}}, "rule.guardrails.latency_p95"),
        ({"guardrails": {"speed": {"kind": "relative", "margin": 0.1}}}, "unknown guardrail"),
        ({"max_queries": 10, "min_queries": 20}, "rule.max_queries"),
    ],
)
def test_a_bad_rule_is_refused_where_it_is_wrong(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GraduationRule.from_dict(data)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("latency_p95:+20%", ("latency_p95", Margin("relative", 0.2))),
        ("error_rate:+1pt", ("error_rate", Margin("absolute", 0.01))),
        ("empty_rate=0.05", ("empty_rate", Margin("absolute", 0.05))),
    ],
)
def test_guardrail_options(text: str, parsed: tuple[str, Margin]) -> None:
    name, margin = parse_guardrail(text)
    assert name == parsed[0] and margin.kind == parsed[1].kind
    assert margin.margin == pytest.approx(parsed[1].margin)


@pytest.mark.parametrize("text", ["latency", "speed:+5%", "error_rate:-1pt"])
def test_a_bad_guardrail_option_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="--guardrail"):
        parse_guardrail(text)


def test_a_stored_test_is_decided_on_its_stored_pairs(db_url: str) -> None:
    rows, events = stream(300, seed=11, effect=0.5)
    rule = GraduationRule(min_queries=50)
    with open_store(db_url) as store:
        test = store.start_shadow_test(
            "t",
            "A",
            "B",
            rule.measure,
            rule.to_dict(),
            rule.to_dict()["guardrails"],
            alpha=rule.alpha,
            at=T0 - timedelta(seconds=1),
        )
        for row in rows:
            store.log_shadow_run({**row, "control": "A", "treatment": "B"})
        store.log(feedback=events)
        decision = decide_test(store, test)
        stored = store.shadow_test("t")
    assert stored is not None and GraduationRule.of_test(stored) == rule
    expected = decide(rule, rows, score_pairs(rows, events))
    assert decision.decision == expected.decision == "graduate"
    assert decision.pvalue == pytest.approx(expected.pvalue)
    assert decision.n == expected.n


def test_the_sampling_check_counts_distinct_query_texts_from_the_store(db_url: str) -> None:
    """The proxy mirrors a search when the hash of its text falls in the sample; each text
    is searched three times (repeats all in or all out): distinct texts match the plan."""
    from recallbench.online._shadow_calls import sampled
    from recallbench.store import QueryLogEntry

    texts = [f"where is note {i}" for i in range(400)]
    with open_store(db_url) as store:
        rule = GraduationRule(min_queries=50, sample_percent=10)
        fair = store.start_shadow_test(
            "fair", "A", "B", "rr", rule.to_dict(), rule.to_dict()["guardrails"], at=T0
        )
        wrong = GraduationRule(min_queries=50, sample_percent=50)
        skewed = store.start_shadow_test(
            "skewed", "A", "B", "rr", wrong.to_dict(), wrong.to_dict()["guardrails"], at=T0
        )
        entries = []
        for repeat in range(3):
            for i, text in enumerate(texts):
                query_id = f"q{repeat}-{i}"
                when = T0 + timedelta(seconds=repeat * 1000 + i)
                entries.append(QueryLogEntry(query_id, text, when, ("a",), session_id="s"))
                if sampled(text, 10):
                    store.log_shadow_run(
                        {
                            "query_id": query_id,
                            "control_results": ["a"],
                            "treatment_results": ["a"],
                            "created_at": when,
                        }
                    )
        store.log(queries=entries)
        ok, off = decide_test(store, fair), decide_test(store, skewed)
    mirrored = sum(sampled(text, 10) for text in texts)
    [check] = ok.srm
    assert check.observed == (mirrored, 400 - mirrored) and not check.mismatch
    assert off.srm[0].mismatch


def test_young_pairs_wait_for_their_feedback(tmp_path: Any) -> None:
    rows, events = stream(300, seed=12, effect=0.5)
    rule = GraduationRule(min_queries=50, settle_seconds=600)
    with open_store(f"sqlite:///{tmp_path}/s.db") as store:
        test = store.start_shadow_test(
            "t", "A", "B", "rr", rule.to_dict(), rule.to_dict()["guardrails"], at=T0
        )
        for row in rows:  # one pair a second from T0
            store.log_shadow_run(row)
        store.log(feedback=events)
        early = decide_test(store, test, now=T0 + timedelta(seconds=700))
        late = decide_test(store, test, now=T0 + timedelta(seconds=2000))
    assert early.pairs == 101  # logged by 100 s: the rest may still get their reads
    assert late.pairs == 300


def test_status_reports_how_often_interleaved_lists_differed_in_length() -> None:
    """Issue 29 item 5: lists of unequal length are credited to the depth both reach, and
    the decision says how often they differed."""
    from recallbench.stats._interleaving import team_draft_common_depth

    rows, events = stream(100, seed=13)
    for i, row in enumerate(rows):
        if i % 4 == 0:
            row["treatment_results"] = row["treatment_results"][:2]
        drafted = team_draft_common_depth(
            row["control_results"], row["treatment_results"], row["query_id"]
        )
        row["interleaved"] = tuple(zip(drafted.items, drafted.teams, strict=True))
        row["interleaved_credited"] = drafted.credited
    decision = run(GraduationRule(measure="interleaving", min_queries=50), rows, events)
    assert decision.interleaving is not None
    assert decision.interleaving["unequal_lengths"] == pytest.approx(0.25)


@pytest.mark.parametrize("method", ["betting", "empirical_bernstein", "msprt"])
def test_the_reported_interval_always_contains_the_reported_estimate(method: str) -> None:
    """Issue 29 item 4: status showed mean -0.1594 with interval [-0.1127, -0.0051] (the
    mSPRT's running interval and the plain mean of the pairs used)."""
    for seed in range(40):
        rows, events = stream(300, seed=200 + seed, effect=0.1 * (seed % 3))
        scores = score_pairs(rows, events)
        for n in (60, 150, 300):
            decision = decide(
                GraduationRule(measure="rr", method=method, min_queries=50), rows[:n], scores[:n]
            )
            assert decision.interval is not None and decision.estimate is not None
            low, high = decision.interval
            assert low <= decision.estimate <= high, (seed, n, decision)


def test_every_result_states_what_its_test_assumes() -> None:
    rows, events = stream(200, seed=14)
    scores = score_pairs(rows, events)
    bounded = decide(GraduationRule(measure="rr", min_queries=50), rows, scores)
    assert bounded.method == "betting" and bounded.assumption.startswith("none")
    msprt = decide(GraduationRule(measure="rr", method="msprt", min_queries=50), rows, scores)
    assert "only asymptotic" in msprt.assumption
