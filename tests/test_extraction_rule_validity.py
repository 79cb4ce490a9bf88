"""The default matching rules' verdicts on pairs sampled from LoCoMo, and a person's reading
of them (``tests/data/extraction/rule_validity.json``, drawn by
``benchmarks/rule_validity_sample.py``): the verdicts stay what they were when the pairs
were read, and the agreement docs/extraction.md quotes is the fixture's."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from recallbench.extraction import DEFAULT_RULES, MatchRule, similarity

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "extraction" / "rule_validity.json"

AGREEMENT = {
    # rule: (matched, matched a person would overturn, rejected, rejected a person would overturn)
    "exact": (5, 0, 50, 44),
    "lcs>=0.7": (50, 1, 50, 39),
    "fuzzy>=85": (50, 1, 50, 30),
}
"""What docs/extraction.md's rule validity table says."""


def _pairs() -> list[dict[str, Any]]:
    document = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert document["format"] == "recallbench.rule-validity/v1"
    pairs: list[dict[str, Any]] = document["pairs"]
    return pairs


def test_every_default_rule_has_its_pairs_read() -> None:
    pairs = _pairs()
    assert {p["rule"] for p in pairs} == {rule.label for rule in DEFAULT_RULES}
    assert all(isinstance(p["reading"], bool) for p in pairs)
    for rule in DEFAULT_RULES:
        mine = [p for p in pairs if p["rule"] == rule.label]
        assert sum(p["matched"] for p in mine) <= 50
        assert sum(not p["matched"] for p in mine) <= 50


@pytest.mark.parametrize("rule", DEFAULT_RULES, ids=lambda r: r.label)
def test_the_verdicts_are_stable(rule: MatchRule) -> None:
    pairs = [p for p in _pairs() if p["rule"] == rule.label]
    scores = [float(similarity(rule, [p["expected"]], [p["extracted"]])[0, 0]) for p in pairs]
    assert scores == pytest.approx([p["score"] for p in pairs], abs=1e-6)
    assert [score >= rule.threshold for score in scores] == [p["matched"] for p in pairs]


def test_the_agreement_the_readme_quotes() -> None:
    counts = Counter((p["rule"], p["matched"], p["reading"]) for p in _pairs())
    for rule, (matched, wrong, rejected, missed) in AGREEMENT.items():
        assert counts[rule, True, True] + counts[rule, True, False] == matched
        assert counts[rule, True, False] == wrong
        assert counts[rule, False, True] + counts[rule, False, False] == rejected
        assert counts[rule, False, True] == missed
    readme = (ROOT / "docs" / "extraction.md").read_text(encoding="utf-8")
    for rule, (matched, wrong, rejected, missed) in AGREEMENT.items():
        row = f"| `{rule}` | {matched} | {wrong} | {rejected} | {missed} |"
        assert row in readme, row
