"""A shadow test's checkpoint (online._shadow_checkpoint) gives the decision computed from
scratch, whatever is written between two reads: new pairs, feedback and labels arriving
after their pair settled, a label replaced in place or withdrawn, a pair inserted late into
the covered window; and it is used (not rebuilt) when only new pairs came."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recallbench.core._query_key import query_key
from recallbench.online import _shadow_checkpoint
from recallbench.online._shadow_checkpoint import unit_keys
from recallbench.online._shadow_decide import decide, decide_test
from recallbench.online._shadow_progress import Progress
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import score_test, window_end
from recallbench.online._shadow_verdict import decision_from_json, decision_json
from recallbench.stats._interleaving import team_draft
from recallbench.store import FeedbackEvent, Judgment, Store, open_store

T0 = datetime(2026, 3, 1, tzinfo=UTC)
SETTLE = 300.0
DOCS = [f"d{i}" for i in range(6)]
WRITES = (
    "pairs",
    "late_feedback",
    "label",
    "relabel",
    "withdraw",
    "late_pair",
    "gap",
    "fill",
    "none",
)
TABLES = (
    "shadow_checkpoints",
    "shadow_decisions",
    "shadow_tests",
    "shadow_runs",
    "feedback_events",
    "judgments",
)


def rule_of(measure: str, unit: str, method: str) -> GraduationRule:
    return GraduationRule(
        measure=measure, unit=unit, method=method, min_queries=5, settle_seconds=SETTLE
    )


class Traffic:
    """Pairs, feedback and labels drawn from one seed, written as time goes on."""

    def __init__(self, store: Store, seed: int) -> None:
        self.store = store
        self.rng = random.Random(seed)
        self.clock = T0 + timedelta(seconds=1)
        self.pairs: list[tuple[str, datetime]] = []
        self.count = 0
        self.holes: list[int] = []

    def pair(self, at: datetime) -> dict[str, Any]:
        rng = self.rng
        self.count += 1
        query_id = f"q{self.count:04d}-{rng.randrange(10**6)}"
        control = rng.sample(DOCS, rng.randint(0, 4))
        treatment = rng.sample(DOCS, rng.randint(0, 4))
        row: dict[str, Any] = {
            "query_id": query_id,
            "control_results": control,
            "treatment_results": treatment,
            "control_latency_ms": round(rng.uniform(5, 50), 1) if rng.random() > 0.1 else None,
            "treatment_latency_ms": round(rng.uniform(5, 60), 1),
            "created_at": at,
            "session_id": f"s{rng.randrange(6)}" if rng.random() > 0.2 else None,
            "query_key": query_key(f"text {rng.randrange(8)}"),
            "control": "A",
            "treatment": "B",
        }
        if rng.random() < 0.1:
            row["treatment_error"] = "timeout"
        if rng.random() < 0.7:
            drafted = team_draft(control, treatment, query_id)
            row["interleaved"] = list(zip(drafted.items, drafted.teams, strict=True))
            row["interleaved_credited"] = len(drafted.items)
        self.pairs.append((query_id, at))
        return row

    def feedback(self, query_id: str, at: datetime) -> list[FeedbackEvent]:
        kinds = ("read_after_search", "validated_useful", "validated_not_useful", "reference")
        return [
            FeedbackEvent(query_id, self.rng.choice(kinds), at, doc_id=self.rng.choice(DOCS))
            for _ in range(self.rng.randint(0, 2))
        ]

    def new_pairs(self, n: int) -> None:
        rows, events = [], []
        for _ in range(n):
            self.clock += timedelta(seconds=self.rng.choice((0, 1, 7)))  # ties in created_at
            row = self.pair(self.clock)
            rows.append(row)
            events += self.feedback(row["query_id"], self.clock + timedelta(seconds=5))
        self.store.log_shadow_runs(rows)
        self.store.log(feedback=events)

    def old_pair(self) -> tuple[str, datetime]:
        return self.rng.choice(self.pairs)

    def write(self, kind: str) -> None:
        store, rng = self.store, self.rng
        if kind == "pairs":
            self.new_pairs(rng.randint(1, 12))
        elif kind == "late_feedback" and self.pairs:
            query_id, at = self.old_pair()
            store.log(feedback=[FeedbackEvent(query_id, "read_after_search", at, rng.choice(DOCS))])
        elif kind in ("label", "relabel") and self.pairs:
            query_id, at = self.old_pair()
            doc = "d0" if kind == "relabel" else rng.choice(DOCS)
            # a relabel replaces the stored one in place, stamped later
            stamp = self.clock + timedelta(seconds=rng.randint(0, 30))
            store.log(judgments=[Judgment(query_id, doc, rng.randint(0, 3), "manual", stamp)])
        elif kind == "withdraw" and self.pairs:
            query_id, _ = self.old_pair()
            store.delete_judgment(query_id, "d0")
        elif kind in ("gap", "fill") and store.url.startswith("postgresql") and self.pairs:
            self.out_of_order(kind)
        elif kind == "late_pair" and self.pairs:
            _, at = self.old_pair()  # into the covered window, after it settled
            store.log_shadow_runs([self.pair(at)])

    def out_of_order(self, kind: str) -> None:
        """PostgreSQL hands ids out at insert: an event of a transaction open meanwhile
        commits later below the largest id. "gap" leaves ids unused (the open transaction's)
        and "fill" commits one of them, about a settled pair."""
        with self.store._engine.begin() as connection:
            if kind == "gap":
                top = connection.exec_driver_sql(
                    "SELECT setval('feedback_events_id_seq', "
                    "(SELECT coalesce(max(id), 0) FROM feedback_events) + 3)"
                ).scalar_one()
                self.holes += [top - 2, top - 1]
                self.store.log(feedback=self.feedback(self.pairs[-1][0], self.clock))
            elif self.holes:
                query_id, at = self.pairs[0]
                hole = self.holes.pop()
                connection.exec_driver_sql(
                    "INSERT INTO feedback_events (id, workspace_id, query_id, kind, doc_id, "
                    "created_at, event_id) VALUES (%(id)s, 'default', %(q)s, "
                    "'read_after_search', 'd1', %(at)s, %(e)s)",
                    {"id": hole, "q": query_id, "at": at, "e": f"hole{hole}"},
                )

    def now(self) -> datetime:
        """A moment by which the pairs up to a few seconds ago, or all, have settled; the
        pairs after it come later (a late pair is written as one)."""
        now = self.clock + timedelta(seconds=SETTLE + self.rng.choice((-20, -3, 0, 60)))
        self.clock = max(self.clock, now)
        return now


def from_scratch(store: Store, test: Any, now: datetime) -> dict[str, Any]:
    """The decision as computed without a checkpoint: every pair scored again."""
    rule = GraduationRule.of_test(test)
    end = window_end(test, now - timedelta(seconds=rule.settle_seconds))
    rows, scores = score_test(store, test, end)
    return as_json(decide(rule, rows, scores, None, unit_keys(store, test, rows, end)))


def as_json(decision: Any) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(decision.to_dict(), default=str))
    return loaded


@pytest.fixture
def small_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_shadow_checkpoint, "REFRESH_PAIRS", 5)  # checkpoints move often


@pytest.mark.usefixtures("small_refresh")
@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 10**6),
    writes=st.lists(st.sampled_from(WRITES), min_size=3, max_size=9),
    measure=st.sampled_from(["rr", "interleaving", "ndcg@3", "hit@2"]),
    unit=st.sampled_from(["session", "query"]),
    method=st.sampled_from(["betting", "empirical_bernstein", "msprt"]),
)
def test_a_checkpointed_decision_is_the_one_from_scratch(
    db_url: str, seed: int, writes: list[str], measure: str, unit: str, method: str
) -> None:
    rule = rule_of(measure, unit, method)
    with open_store(db_url) as store:
        with store._engine.begin() as connection:  # one store for every example drawn
            for table in TABLES:
                connection.exec_driver_sql(f"DELETE FROM {table}")
        test = store.start_shadow_test(
            f"t{seed}", "A", "B", rule.measure, rule.to_dict(), rule.to_dict()["guardrails"], at=T0
        )
        traffic = Traffic(store, seed)
        traffic.new_pairs(20)
        for kind in [*writes, "none"]:
            now = traffic.now()
            decision = decide_test(store, test, now=now)
            assert as_json(decision) == from_scratch(store, test, now)
            assert decision_from_json(decision_json(decision)) == decision  # kept losslessly
            traffic.write(kind)


def test_the_checkpoint_is_read_when_only_new_pairs_came(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without this, a checkpoint that is always rebuilt would pass the test above."""
    monkeypatch.setattr(_shadow_checkpoint, "REFRESH_PAIRS", 5)
    started = []
    start = Progress.start.__func__  # type: ignore[attr-defined]

    def counted(cls: type[Progress], rule: GraduationRule) -> Progress:
        started.append(rule)
        return start(cls, rule)  # type: ignore[no-any-return]

    monkeypatch.setattr(Progress, "start", classmethod(counted))
    rule = rule_of("rr", "session", "betting")
    with open_store(db_url) as store:
        test = store.start_shadow_test("t", "A", "B", "rr", rule.to_dict(), {}, at=T0)
        traffic = Traffic(store, 1)
        traffic.new_pairs(30)
        decide_test(store, test, now=traffic.now())
        assert len(started) == 1  # built once
        for _ in range(3):
            traffic.new_pairs(8)  # past the refresh: a new checkpoint, still not rebuilt
            now = traffic.now()
            assert as_json(decide_test(store, test, now=now)) == from_scratch(store, test, now)
        assert len(started) == 1 + 3  # from_scratch starts its own each time
        query_id, at = traffic.pairs[0]  # feedback on a settled pair: rebuilt
        store.log(feedback=[FeedbackEvent(query_id, "reference", at, doc_id="d1")])
        now = traffic.now()
        assert as_json(decide_test(store, test, now=now)) == from_scratch(store, test, now)
        assert len(started) == 4 + 2
        kept = store.shadow_checkpoint(test.id)
        earlier = T0 + timedelta(seconds=SETTLE + 10)  # a decision as it stood back then
        assert as_json(decide_test(store, test, now=earlier)) == from_scratch(store, test, earlier)
        assert store.shadow_checkpoint(test.id) == kept  # the later checkpoint stays
