"""The judge runner and cache on both store engines, with a deterministic fake provider
(our own logic only: cache hit and miss, strict replay, failures scored 0.5 and counted,
the unreliable flag, labels into ``judgments``). The live model is ``make test-llm``'s."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy.exc import IntegrityError

from recallbench.judges._cache import JudgeCache, JudgeCacheMissError
from recallbench.judges._labels import record_llm_labels, resolved_grades
from recallbench.judges._provider import (
    Completion,
    JsonSchema,
    Message,
    ProviderError,
    ProviderTimeoutError,
    UnparseableOutputError,
)
from recallbench.judges._run import JudgeRun, judge_many
from recallbench.judges._task_kinds import Relevance, RelevanceInput, RelevanceTask
from recallbench.store import Judgment as StoredJudgment
from recallbench.store import Store, _migrations, open_store

TASK = RelevanceTask()
T0 = datetime(2025, 3, 1, tzinfo=UTC)


class FakeProvider:
    """Answers from a function of the user message; counts its calls."""

    def __init__(self, reply: Callable[[str], Completion | ProviderError], model: str = "m1"):
        self._reply = reply
        self._model = model
        self.calls: list[str] = []

    @property
    def model(self) -> str:
        return self._model

    async def complete(
        self, messages: Sequence[Message], *, schema: JsonSchema | None = None
    ) -> Completion:
        content = messages[-1]["content"]
        self.calls.append(content)
        reply = self._reply(content)
        if isinstance(reply, ProviderError):
            raise reply
        return reply

    async def aclose(self) -> None:
        return None


def graded(grade: int) -> Completion:
    data = {"reasoning": "r", "grade": grade, "confidence": 0.75}
    return Completion(json.dumps(data), data, "m1-2025", 100, 20, 5.0, {"id": "x"})


def by_memory(replies: Mapping[str, Completion | ProviderError]) -> Callable[[str], Any]:
    return lambda content: replies[content.rsplit("Memory:\n", 1)[1]]


def inputs(*memories: str) -> list[RelevanceInput]:
    return [RelevanceInput("where does Ann work?", memory) for memory in memories]


def run(
    provider: FakeProvider, items: list[RelevanceInput], store: Store | None, **kw: Any
) -> JudgeRun[Relevance]:
    cache = JudgeCache(store) if store is not None else None
    return asyncio.run(judge_many(TASK, items, provider, cache, params={"temperature": 0}, **kw))


def test_a_miss_asks_once_and_a_hit_replays_without_asking(db_url: str) -> None:
    provider = FakeProvider(by_memory({"a": graded(3), "b": graded(0)}))
    items = inputs("a", "b", "a")  # the repeated input is asked once
    with open_store(db_url) as store:
        first = run(provider, items, store, price=lambda i, o: (i + o) / 1000)
        assert [j.value.grade for j in first.judgments if j.value] == [3, 0, 3]
        assert first.scores == [1.0, 0.0, 1.0]
        assert len(provider.calls) == 2
        assert (first.stats.called, first.stats.cached, first.stats.tokens_in) == (2, 0, 200)
        assert first.stats.cost == pytest.approx(0.24)
        second = run(provider, items, store)
        assert len(provider.calls) == 2  # nothing asked again
        assert second.scores == first.scores
        assert all(j.cached for j in second.judgments)
        assert second.stats.cached == 2  # two answers replayed; the repeat shares the first
        assert [j.shared for j in second.judgments] == [False, False, True]
        assert second.stats.called == 0 and second.stats.tokens_in == 0
        assert store.count("judge_cache") == 2


def test_the_key_holds_model_and_parameters(db_url: str) -> None:
    items = inputs("a")
    with open_store(db_url) as store:
        run(FakeProvider(by_memory({"a": graded(3)})), items, store)
        other_model = FakeProvider(by_memory({"a": graded(1)}), model="m2")
        assert run(other_model, items, store).scores == [pytest.approx(1 / 3)]
        cache = JudgeCache(store)
        hot = asyncio.run(judge_many(TASK, items, other_model, cache, params={"temperature": 1}))
        assert not hot.judgments[0].cached and len(other_model.calls) == 2


def test_strict_replays_a_full_cache_and_refuses_a_missing_judgment(db_url: str) -> None:
    with open_store(db_url) as store:
        run(FakeProvider(by_memory({"a": graded(2)})), inputs("a"), store)
        silent = FakeProvider(lambda content: ProviderError("must not be asked"))
        assert run(silent, inputs("a"), store, strict=True).scores == [pytest.approx(2 / 3)]
        with pytest.raises(
            JudgeCacheMissError, match=r"2 relevance v1 judgment\(s\) by m1"
        ) as error:
            run(silent, inputs("a", "b", "c"), store, strict=True)
        assert error.value.exit_code == 2 and error.value.inputs == [1, 2]
        assert "inputs #1, #2" in str(error.value)
        assert silent.calls == []  # refused before the first call


def test_strict_without_a_cache_refuses_everything() -> None:
    with pytest.raises(JudgeCacheMissError, match="no judge cache: 1 relevance"):
        run(FakeProvider(lambda content: graded(1)), inputs("a"), None, strict=True)


def test_failures_score_neutral_are_counted_and_mark_the_measure_unreliable(db_url: str) -> None:
    replies: dict[str, Completion | ProviderError] = {
        "ok": graded(3),
        "slow": ProviderTimeoutError("no answer in 30 s"),
        "prose": UnparseableOutputError("not JSON", "It is relevant, grade 3."),
        "high": graded(5),
    }
    provider = FakeProvider(by_memory(replies))
    with open_store(db_url) as store:
        result = run(provider, inputs("ok", "slow", "prose", "high"), store)
        assert result.scores == [1.0, 0.5, 0.5, 0.5]
        assert [j.failure for j in result.judgments] == [
            None,
            "timeout",
            "unparseable",
            "unparseable",
        ]
        assert "not one of" in result.judgments[3].detail
        assert result.stats.failed == {"timeout": 1, "unparseable": 2}
        assert result.stats.failure_rate == 0.75 and result.stats.unreliable
        # answers that did not parse are cached and replay the same way; a timeout is not
        replay = run(provider, inputs("prose", "high"), store, strict=True)
        assert [j.failure for j in replay.judgments] == ["unparseable", "unparseable"]
        with pytest.raises(JudgeCacheMissError, match="1 relevance"):
            run(provider, inputs("slow"), store, strict=True)


def test_the_failure_threshold_is_configurable() -> None:
    provider = FakeProvider(by_memory({"a": graded(1), "b": ProviderTimeoutError("t")}))
    items = inputs("a", "a", "a", "b")
    assert not run(provider, items, None, max_failure_rate=0.25).stats.unreliable
    assert run(provider, items, None, max_failure_rate=0.2).stats.unreliable


def test_llm_labels_never_overwrite_a_manual_label_and_manual_wins(db_url: str) -> None:
    provider = FakeProvider(by_memory({"a": graded(3), "b": graded(1), "bad": graded(9)}))
    result = run(provider, inputs("a", "b", "bad"), None)
    with open_store(db_url) as store:
        manual = StoredJudgment("q1", "a", 0, "manual", T0, annotator="ann")
        store.log(judgments=[manual])
        pairs = [("q1", "a", result.judgments[0]), ("q1", "b", result.judgments[1])]
        written = record_llm_labels(store, [*pairs, ("q1", "bad", result.judgments[2])])
        assert written == 2  # the failed judgment has no grade to write
        assert store.judgments(source="manual") == [manual]
        llm = store.judgments(source="llm")
        assert [(j.doc_id, j.grade, j.annotator, j.confidence) for j in llm] == [
            ("a", 3, "m1-2025", 0.75),
            ("b", 1, "m1-2025", 0.75),
        ]
        resolved = resolved_grades(store, ["q1"])
        assert resolved[("q1", "a")] == manual
        assert (resolved[("q1", "b")].grade, resolved[("q1", "b")].source) == (1, "llm")


def test_widening_the_source_check_keeps_the_judgments_already_stored(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """m004 rebuilds ``judgments`` on SQLite: rows, ids and constraints survive."""
    full = list(_migrations.MIGRATIONS)
    monkeypatch.setattr(_migrations, "MIGRATIONS", full[:2])
    old = StoredJudgment("q1", "d1", 2, "manual", T0, annotator="ann", confidence=0.9)
    label = run_one(3)
    with open_store(db_url) as store:
        store.log(judgments=[old])
        with pytest.raises(IntegrityError, match="ck_judgments_source"):
            record_llm_labels(store, [("q1", "d2", label)])
    monkeypatch.setattr(_migrations, "MIGRATIONS", full)
    with open_store(db_url) as store:
        assert store.judgments() == [old]
        record_llm_labels(store, [("q1", "d2", label)], now=T0)
        assert [j.source for j in store.judgments()] == ["manual", "llm"]
        with pytest.raises(IntegrityError, match="ck_judgments_grade"):
            store.log(judgments=[StoredJudgment("q1", "d3", 4, "manual", T0)])


def run_one(grade: int) -> Any:
    return run(FakeProvider(lambda content: graded(grade)), inputs("x"), None).judgments[0]
