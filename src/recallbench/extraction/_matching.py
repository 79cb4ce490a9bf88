"""Matching extracted items to expected ones: a selectable rule, then one optimal
one-to-one assignment.

Published evaluations of graph memories show the matching rule moves fact F1 several-fold
on the same output (0.05-0.09 strict against 0.21-0.26 with 70% word overlap), so the rule
is a parameter and its canonical string (:meth:`MatchRule.label`) goes with every number.
A rule may accept a pair only when *both* sides agree: the extracted item covers the
expected one and the expected item covers the extracted one. A one-sided rule hands full
credit to outputs no person would accept (a first name "matches" every event that names
the person; the whole document "matches" every event in it), so such rules are kept only
by explicit name, for comparison with published numbers, and marked gameable.

Rules (text normalised first, see :mod:`recallbench.extraction._normalise`; E and X are
the expected and extracted items' token sequences):

- ``exact``: normalised texts equal (similarity 1 or 0). Default.
- ``lcs>=t``: the longest common token subsequence covers at least t of *both* items,
  ``LCS(E, X) / max(|E|, |X|) >= t`` (``min`` of the two containments, in order: ROUGE-L's
  recall and precision both at least t; Lin 2004). Order-aware, so a bag of the right
  words does not match, and it bounds the length ratio: ``min/max >= t``. Default, t=0.7.
- ``fuzzy>=t``: rapidfuzz ``ratio`` of the normalised texts (the normalised Indel
  similarity ``2 LCS_chars / (|e| + |x|)``, 0-100; Levenshtein 1966, as Python's
  ``difflib`` ratio) ``>= t``. Symmetric, and it bounds the character length ratio at
  ``t / (200 - t)`` (0.74 at 85). Default, t=85.
- ``embedding>=t``: cosine of the built-in dense model's vectors (wordllama, 256
  dimensions, weights shipped in its wheel) ``>= t``, and token lengths within a factor of
  two (:data:`EMBEDDING_LENGTH_RATIO`: a cosine alone cannot tell a paragraph from one of
  its sentences). Deterministic for a given wordllama version, but a model, and nearly
  blind to word order (the expected item's words shuffled still match): opt-in, and marked
  gameable.

Gameable rules (by explicit name only; never a default; reports mark them):

- ``jaccard>=t``: token *sets*, ``|E ∩ X| / |E ∪ X| >= t``. Symmetric but order-blind: the
  expected item's words in any order (a keyword bag) score 1.
- ``containment>=t``: the share of the expected item's tokens that the extracted item has,
  ``|E ∩ X| / |E| >= t`` (the "t word overlap" of published fact evaluations). One-sided:
  any superset matches, so the whole document copied k times matches k items.
- ``fuzzy-set>=t``: rapidfuzz ``token_set_ratio`` (recallbench's ``fuzzy`` before the
  symmetric rules): 100 whenever one item's words are a subset of the other's, so
  ``jon`` scores 100 against ``jon loses his job as a banker``.

Assignment: among the pairs the rule accepts, the one-to-one matching with the most pairs,
and among those the largest total similarity (Kuhn-Munkres through
``scipy.optimize.linear_sum_assignment`` on weight ``B + similarity`` for accepted pairs,
with ``B = min(m, n) + 1``, which makes one more pair worth more than any gain in
similarity). An expected item matches one extracted item at most, and the other way round:
a duplicate extraction is a false positive. Equal-weight alternatives are resolved by the
solver on the items in their given order, so the result is deterministic.

Names (entities, actors, the entity of a connection) are not sentences: they match exactly
after normalisation (case, punctuation, Unicode compatibility forms, diacritics), against
the name or an alias the ground truth declares (an entity's ``mentions``); fuzzy name
matching is opt-in (:class:`NameRule`), symmetric, and only for names of at least
:data:`MIN_FUZZY_NAME` characters. A slug (``dr-7-quarry``: lower-case words joined by
hyphens or underscores, no space) is an identifier, not a name, and matches nothing.

Lin, C.-Y. (2004). ROUGE: A package for automatic evaluation of summaries. ACL workshop
Text Summarization Branches Out; Levenshtein, V. I. (1966). Binary codes capable of
correcting deletions, insertions, and reversals. Soviet Physics Doklady 10(8).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Indel, LCSseq
from scipy.optimize import linear_sum_assignment

from recallbench.core import ConfigError
from recallbench.extraction._normalise import normalise, tokens

RuleKind = Literal["exact", "lcs", "fuzzy", "embedding", "jaccard", "containment", "fuzzy-set"]
FloatMatrix = NDArray[np.float64]
Embed = Callable[[Sequence[str]], NDArray[np.float32]]

DEFAULT_THRESHOLDS: dict[RuleKind, float] = {
    "exact": 1.0,
    "lcs": 0.7,
    "fuzzy": 85.0,
    "embedding": 0.8,
    "jaccard": 0.5,
    "containment": 0.7,
    "fuzzy-set": 85.0,
}
DETERMINISTIC: tuple[RuleKind, ...] = (
    "exact",
    "lcs",
    "fuzzy",
    "jaccard",
    "containment",
    "fuzzy-set",
)
GAMEABLE: Final[dict[RuleKind, str]] = {
    "jaccard": "order-blind: the expected item's words in any order score 1",
    "containment": "one-sided: any superset of the expected item matches "
    "(the whole document copied k times matches k items)",
    "fuzzy-set": "token_set_ratio: any subset or superset of the words scores 100 "
    "(a first name matches every event naming the person)",
    "embedding": "nearly order-blind: the expected item's words shuffled score event F1 "
    "0.98 on LoCoMo (benchmarks/extraction_gaming.py)",
}
"""Rules that reward outputs people would not accept, and what an extractor games them
with: never defaults, marked in every report (jaccard, containment and fuzzy-set are kept
for comparison with published numbers; embedding is a model's opinion)."""
EMBEDDING_LENGTH_RATIO: Final = 0.5
"""Under ``embedding``, a pair's shorter item has at least this share of the longer one's
tokens."""
FUZZY_SCALE: Final[frozenset[RuleKind]] = frozenset({"fuzzy", "fuzzy-set"})
"""Rules whose similarity is on rapidfuzz's 0-100 scale (the others are 0-1)."""

_RULE = re.compile(
    r"^\s*(exact|lcs|fuzzy-set|fuzzy|embedding|jaccard|containment)\s*(?:>=\s*([\d.]+))?\s*$"
)


@dataclass(frozen=True)
class MatchRule:
    """A matching rule and its threshold; ``MatchRule.parse("lcs>=0.7")``."""

    kind: RuleKind = "lcs"
    threshold: float = DEFAULT_THRESHOLDS["lcs"]

    @classmethod
    def parse(cls, text: str) -> MatchRule:
        """``exact``, ``lcs``, ``fuzzy``, ``embedding`` or a gameable rule (``jaccard``,
        ``containment``, ``fuzzy-set``), with an optional ``>=threshold`` (defaults: lcs
        0.7, fuzzy 85, embedding 0.8, jaccard 0.5, containment 0.7, fuzzy-set 85)."""
        match = _RULE.match(text.casefold())
        if match is None:
            raise ConfigError(
                f"unknown matching rule {text!r}: use exact, lcs>=T, fuzzy>=T (0-100), "
                "embedding>=T, or a gameable rule kept for published numbers: jaccard>=T, "
                "containment>=T, fuzzy-set>=T"
            )
        kind: RuleKind = match[1]  # type: ignore[assignment]
        if kind == "exact":
            return cls("exact", 1.0)
        threshold = float(match[2]) if match[2] else DEFAULT_THRESHOLDS[kind]
        top = 100.0 if kind in FUZZY_SCALE else 1.0
        if not 0 < threshold <= top:
            raise ConfigError(f"threshold of {kind} must be in (0, {top:g}], got {threshold:g}")
        return cls(kind, threshold)

    @property
    def label(self) -> str:
        """The canonical string, printed with every number scored under the rule."""
        return "exact" if self.kind == "exact" else f"{self.kind}>={self.threshold:g}"

    @property
    def deterministic(self) -> bool:
        return self.kind in DETERMINISTIC

    @property
    def gameable(self) -> str | None:
        """How an extractor games the rule (None for the rules that need both sides)."""
        return GAMEABLE.get(self.kind)


DEFAULT_RULE = MatchRule()
DEFAULT_RULES: Final = (MatchRule("exact", 1.0), MatchRule("lcs", 0.7), MatchRule("fuzzy", 85.0))
"""The rules scored when none is chosen: deterministic, and each needs both sides to agree."""


def _jaccard(expected: frozenset[str], extracted: frozenset[str]) -> float:
    union = len(expected | extracted)
    return len(expected & extracted) / union if union else 0.0


def _containment(expected: frozenset[str], extracted: frozenset[str]) -> float:
    return len(expected & extracted) / len(expected) if expected else 0.0


def _set_rule(
    measure: Callable[[frozenset[str], frozenset[str]], float],
    expected: Sequence[str],
    extracted: Sequence[str],
) -> FloatMatrix:
    left = [frozenset(tokens(t)) for t in expected]
    right = [frozenset(tokens(t)) for t in extracted]
    return np.array([[measure(a, b) for b in right] for a in left], dtype=np.float64)


def _embedding(
    expected: Sequence[str], extracted: Sequence[str], embed: Embed | None
) -> FloatMatrix:
    vectors = (embed or _builtin_embed)([*expected, *extracted]).astype(np.float64)
    cosine: FloatMatrix = vectors[: len(expected)] @ vectors[len(expected) :].T
    left = np.array([len(tokens(t)) for t in expected], dtype=np.float64)[:, None]
    right = np.array([len(tokens(t)) for t in extracted], dtype=np.float64)[None, :]
    shorter, longer = np.minimum(left, right), np.maximum(left, right)
    close = (shorter > 0) & (shorter >= EMBEDDING_LENGTH_RATIO * longer)
    return np.where(close, cosine, 0.0)


def similarity(
    rule: MatchRule,
    expected: Sequence[str],
    extracted: Sequence[str],
    embed: Embed | None = None,
) -> FloatMatrix:
    """The rule's similarity of every (expected, extracted) pair, m x n, on the rule's
    scale (fuzzy and fuzzy-set 0-100, the others 0-1); an item with no token scores 0
    against everything. ``embed`` overrides the built-in dense model (texts -> unit rows),
    for tests."""
    if not expected or not extracted:
        return np.zeros((len(expected), len(extracted)))
    if rule.kind == "embedding":
        return _embedding(expected, extracted, embed)
    if rule.kind == "jaccard":
        return _set_rule(_jaccard, expected, extracted)
    if rule.kind == "containment":
        return _set_rule(_containment, expected, extracted)
    left = [normalise(t) for t in expected]
    right = [normalise(t) for t in extracted]
    if rule.kind == "exact":
        return np.array([[float(bool(a) and a == b) for b in right] for a in left])
    if rule.kind == "lcs":
        # integer counts, divided once: a score of exactly t is not lost to rounding
        words = [a.split() for a in left], [b.split() for b in right]
        common = process.cdist(*words, scorer=LCSseq.similarity, dtype=np.int64)
        longer = np.maximum.outer([len(w) for w in words[0]], [len(w) for w in words[1]])
        scores = np.divide(common, longer, out=np.zeros(common.shape), where=longer > 0)
    elif rule.kind == "fuzzy":
        lengths = np.add.outer([len(a) for a in left], [len(b) for b in right])
        edits = process.cdist(left, right, scorer=Indel.distance, dtype=np.int64)
        scores = np.divide(
            100.0 * (lengths - edits), lengths, out=np.zeros(edits.shape), where=lengths > 0
        )
    else:
        scores = process.cdist(left, right, scorer=fuzz.token_set_ratio, dtype=np.float64)
    out = np.asarray(scores, dtype=np.float64)
    empty = np.array([not a for a in left])[:, None] | np.array([not b for b in right])[None, :]
    return np.where(empty, 0.0, out)


def _builtin_embed(texts: Sequence[str]) -> NDArray[np.float32]:
    from recallbench.systems._embedders import make_embedder

    return make_embedder("wordllama").embed(texts)


def assign(scores: FloatMatrix, threshold: float) -> list[tuple[int, int, float]]:
    """The optimal one-to-one matching of pairs with ``scores >= threshold``: (expected
    index, extracted index, score), by expected index. Most pairs first, then the largest
    total score (see the module's docstring)."""
    accepted = scores >= threshold
    if not accepted.any():
        return []
    bonus = min(scores.shape) + 1
    weights = np.where(accepted, bonus + scores, 0.0)
    rows, cols = linear_sum_assignment(weights, maximize=True)
    pairs = [(int(i), int(j), float(scores[i, j])) for i, j in zip(rows, cols, strict=True)]
    return sorted(p for p in pairs if accepted[p[0], p[1]])


def match(
    rule: MatchRule,
    expected: Sequence[str],
    extracted: Sequence[str],
    embed: Embed | None = None,
) -> list[tuple[int, int, float]]:
    """Expected and extracted texts matched one-to-one under ``rule``."""
    return assign(similarity(rule, expected, extracted, embed), rule.threshold)


MIN_FUZZY_NAME: Final = 4
"""Fuzzy name matching compares only names of at least this many normalised characters:
below it one letter is a large share of the name (``Jon`` and ``Joan``)."""
_SLUG = re.compile(r"^[a-z0-9]+(?:[-_][a-z0-9]+)+$")
_NAME_RULE = re.compile(r"^\s*(exact|fuzzy)\s*(?:>=\s*([\d.]+))?\s*$")


def is_slug(text: str) -> bool:
    """Whether ``text`` is written as an identifier (``dr-7-quarry``, ``alice_chen``)
    rather than as a name."""
    return _SLUG.match(text.strip()) is not None


@dataclass(frozen=True)
class NameRule:
    """How names match: ``exact`` after normalisation (the default), or ``fuzzy>=t``:
    also rapidfuzz ``ratio >= t`` (symmetric) when both names have at least
    :data:`MIN_FUZZY_NAME` characters. Aliases the ground truth declares count as names."""

    kind: Literal["exact", "fuzzy"] = "exact"
    threshold: float = 90.0

    @classmethod
    def parse(cls, text: str) -> NameRule:
        """``exact`` or ``fuzzy`` with an optional ``>=threshold`` (default 90, 0-100)."""
        found = _NAME_RULE.match(text.casefold())
        if found is None:
            raise ConfigError(f"unknown name rule {text!r}: use exact or fuzzy>=T (0-100)")
        if found[1] == "exact":
            return cls()
        threshold = float(found[2]) if found[2] else 90.0
        if not 0 < threshold <= 100:
            raise ConfigError(f"threshold of fuzzy names must be in (0, 100], got {threshold:g}")
        return cls("fuzzy", threshold)

    @property
    def label(self) -> str:
        if self.kind == "exact":
            return "exact+aliases"
        return f"fuzzy>={self.threshold:g} (ratio, names of {MIN_FUZZY_NAME}+ chars)+aliases"

    def same(self, forms: Iterable[str], name: str | None) -> bool:
        """Whether ``name`` (as extracted) is one of ``forms`` (normalised names and
        aliases of one expected entity or actor) under the rule."""
        if not name or is_slug(name):
            return False
        candidate = normalise(name)
        if not candidate:
            return False
        known = [form for form in forms if form]
        if candidate in known:
            return True
        if self.kind == "exact" or len(candidate) < MIN_FUZZY_NAME:
            return False
        return any(
            len(form) >= MIN_FUZZY_NAME and fuzz.ratio(form, candidate) >= self.threshold
            for form in known
        )


DEFAULT_NAME_RULE: Final = NameRule()


def name_forms(name: str | None, aliases: Iterable[str] = ()) -> frozenset[str]:
    """The normalised forms of a name and its declared aliases (empty ones left out)."""
    return frozenset(f for f in (normalise(t) for t in (name or "", *aliases)) if f)


def names_match(
    expected: str | None,
    extracted: str | None,
    aliases: Iterable[str] = (),
    rule: NameRule = DEFAULT_NAME_RULE,
) -> bool:
    """Whether two names denote the same actor or entity: ``extracted`` equals
    ``expected`` or one of its declared ``aliases`` after normalisation (or is close to
    one under a fuzzy :class:`NameRule`). A missing name or a slug matches nothing."""
    if not expected:
        return False
    return rule.same(name_forms(expected, aliases), extracted)
