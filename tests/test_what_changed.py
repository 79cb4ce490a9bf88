"""what_changed: queries worse and better from one system to another, by category."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recallbench.report._what_changed import UNCATEGORISED, what_changed


def test_worse_and_better_sorted_by_size_with_categories() -> None:
    first = {"q1": 1.0, "q2": 0.5, "q3": 0.2, "q4": 0.7, "q5": 0.4}
    second = {"q1": 0.0, "q2": 0.4, "q3": 0.9, "q4": 0.7, "q5": 0.6}
    cats = {"q1": ["temporal"], "q2": ["temporal", "multi-hop"], "q3": ["multi-hop"]}
    result = what_changed(first, second, cats)
    assert [c.query_id for c in result.worse] == ["q1", "q2"]
    assert result.worse[0].delta == -1.0
    assert result.worse[1].categories == ("temporal", "multi-hop")
    assert [c.query_id for c in result.better] == ["q3", "q5"]
    assert result.unchanged == 1
    assert result.compared == 5
    assert result.mean_delta == pytest.approx((-1.0 - 0.1 + 0.7 + 0.2) / 5)
    by_name = {c.category: c for c in result.categories}
    assert by_name["temporal"].worse == 2 and by_name["temporal"].better == 0
    assert by_name["temporal"].worse_delta == pytest.approx(-0.55)
    assert by_name["multi-hop"].worse == 1 and by_name["multi-hop"].better == 1
    assert by_name[UNCATEGORISED].compared == 2  # q4 unchanged, q5 better
    assert result.categories[0].category == "temporal"  # most worse first


def test_direction_threshold_and_missing_values() -> None:
    first = {"q1": 10.0, "q2": 5.0, "q3": None, "q4": 1.0, "q5": math.nan}
    second = {"q1": 12.0, "q2": 5.05, "q3": 1.0, "q5": 2.0}
    result = what_changed(first, second, {}, higher_is_better=False, threshold=0.1)
    assert [c.query_id for c in result.worse] == ["q1"]  # lower is better: +2 is worse
    assert result.better == ()
    assert result.unchanged == 1  # q2 within the threshold
    assert result.only_first == ("q4",)
    assert result.only_second == ("q3", "q5")
    assert result.compared == 2


def test_rejects_a_negative_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        what_changed({}, {}, {}, threshold=-1.0)


def test_nothing_to_compare() -> None:
    result = what_changed({"a": None}, {}, {})
    assert result.compared == 0 and result.mean_delta is None and result.categories == ()


values = st.dictionaries(
    st.sampled_from([f"q{i}" for i in range(8)]),
    st.none() | st.floats(0, 1),
)


@given(values, values, st.booleans())
def test_counts_add_up_and_swapping_swaps(
    first: dict[str, float | None], second: dict[str, float | None], higher: bool
) -> None:
    cats = {"q1": ["a"], "q2": ["a", "b"]}
    forward = what_changed(first, second, cats, higher_is_better=higher)
    back = what_changed(second, first, cats, higher_is_better=higher)
    assert forward.compared == len(forward.worse) + len(forward.better) + forward.unchanged
    assert [c.query_id for c in forward.worse] == [c.query_id for c in back.better]
    assert forward.only_first == back.only_second
    assert all(abs(c.delta) > 0 for c in forward.worse + forward.better)
    deltas = [abs(c.delta) for c in forward.worse]
    assert deltas == sorted(deltas, reverse=True)


def test_comparison_md_says_what_changed_per_system() -> None:
    from recallbench.compare import compare_inputs
    from recallbench.render import render_comparison_markdown
    from test_report_html import _dataset, _run

    dataset = _dataset(40, 120, 40)
    first, second = _run(dataset, seed=1), _run(dataset, seed=2)
    second = second.model_copy(update={"spec": second.spec.model_copy(update={"system": "b"})})
    compared, comparison = compare_inputs([first, second], ["mrr@10", "recall@10"], dataset=dataset)
    text = render_comparison_markdown(comparison, compared)
    section = text.split("## What changed: b vs synthetic", 1)[1].split("\n## ", 1)[0]
    assert "- mrr@10: of 40 paired queries," in section
    assert "- recall@10: of 40 paired queries," in section
    assert "### By category (mrr@10)" in section and "| c0 |" in section
    assert "### Got worse (mrr@10), largest first" in section
    assert "### Got better (mrr@10), largest first" in section
    assert "## What changed" not in render_comparison_markdown(comparison)  # values not given
