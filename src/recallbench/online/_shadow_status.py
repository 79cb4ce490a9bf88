"""What a shadow test is now (``recallbench shadow status``): the rule's decision on the
pairs stored so far, and the outcomes of the sessions each system served over the test's
window; with their JSON documents and those of the decisions taken
(``recallbench shadow history``).

A session's system is the variant the test's feature flag
(:func:`~recallbench.online._shadow_tests.flag_of`) gave it when it started
(:func:`recallbench.telemetry._flags.variant_at`); when the flag was never set, it is
``interleaved`` for a session whose searches were shown interleaved, else the control (in
shadow mode the agent sees the control's answers).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from recallbench.online._shadow_tests import find_test, flag_of

if TYPE_CHECKING:
    from recallbench.online._sessions import SessionSummary, VariantOutcomes
    from recallbench.online._shadow_decision import Decision
    from recallbench.store import ShadowDecision, ShadowTest, Store


@dataclass(frozen=True, slots=True)
class ShadowStatus:
    """A test, what its rule decides now, and its session outcomes per system (empty when
    no session of its window recorded an outcome)."""

    test: ShadowTest
    decision: Decision
    sessions: list[VariantOutcomes]

    def to_dict(self) -> dict[str, Any]:
        """The test (:func:`shadow_test_json`), the decision as ``now`` and the outcomes as
        ``sessions`` (non-finite numbers as null)."""
        return {
            **shadow_test_json(self.test),
            "now": self.decision.to_dict(),
            "sessions": [outcomes_json(group) for group in self.sessions],
        }


def shadow_statuses(store: Store, name: str | None = None) -> list[ShadowStatus]:
    """The status of the test ``name`` (ConfigError when there is none), or of every test
    of the store's workspace."""
    from recallbench.online._shadow_checkpoint import Reads
    from recallbench.online._shadow_decide import decide_test

    tests = [find_test(store, name)] if name else store.shadow_tests()
    read = Reads()  # the late rows and counts, read once for every test
    return [
        ShadowStatus(test, decide_test(store, test, read=read), session_outcomes(store, test))
        for test in tests
    ]


def session_outcomes(store: Store, test: ShadowTest) -> list[VariantOutcomes]:
    """Session outcomes per system over the test's window, when any were recorded (module
    docstring); empty otherwise."""
    from recallbench.online._sessions import outcomes_by_variant, session_summaries
    from recallbench.online._shadow_score import pairs_of
    from recallbench.telemetry._flags import variant_at

    if not store.count("session_outcomes"):  # no session has one: spare reading the log
        return []
    summaries = session_summaries(store, since=test.started_at, until=test.stopped_at)
    if not any(s.outcome is not None or s.success is not None for s in summaries):
        return []
    flag = flag_of(test)
    history = store.flag_history(flag)
    interleaved = {
        row["session_id"] for row in pairs_of(store, test) if row.get("interleaved") is not None
    }

    def variant_of(summary: SessionSummary) -> str:
        if history:
            return variant_at(history, flag, summary.session_id, summary.started_at, test.control)
        return "interleaved" if summary.session_id in interleaved else test.control

    return outcomes_by_variant(summaries, variant_of)


def shadow_test_json(test: ShadowTest) -> dict[str, Any]:
    """A test as JSON: names, measure, alpha, its window and its rule."""
    return {
        "name": test.name,
        "status": test.status,
        "control": test.control,
        "treatment": test.treatment,
        "measure": test.measure,
        "alpha": test.alpha,
        "started_at": test.started_at.isoformat(),
        "stopped_at": None if test.stopped_at is None else test.stopped_at.isoformat(),
        "rule": test.rule,
    }


def outcomes_json(group: VariantOutcomes) -> dict[str, Any]:
    """One system's session outcomes as JSON, a non-finite number as null."""
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v)
        for k, v in asdict(group).items()
    }


def decision_json(decision: ShadowDecision) -> dict[str, Any]:
    """A decision taken on a test as JSON: when, which, by whom, on what evidence."""
    return {
        "at": decision.at.isoformat(),
        "decision": decision.decision,
        "actor": decision.actor,
        "evidence": decision.evidence,
    }
