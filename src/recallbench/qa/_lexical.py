"""Judge-free answer measures: token F1 and BLEU-1 as LoCoMo's evaluations compute them.

Re-implemented (not copied) from two sources, rule for rule:

- F1 and its per-category rules: Maharana et al. 2024, "Evaluating Very Long-Term
  Conversational Memory of LLM Agents" (ACL), repository ``snap-research/locomo``, file
  ``task_eval/evaluation.py``: ``normalize_answer``, ``f1_score`` (single answer), ``f1``
  (comma-separated answers) and ``eval_question_answering`` (the category rules).
- BLEU-1: LoCoMo's own code has none; the BLEU-1 that memory vendors report beside F1 is
  mem0's (``mem0ai/mem0``, ``evaluation/metrics/utils.py``: ``calculate_bleu_scores``, taken
  from A-Mem's ``utils.py``; ``evaluation/evals.py`` reports its ``bleu1``): nltk's
  ``sentence_bleu`` with weights (1, 0, 0, 0) and ``SmoothingFunction().method1`` on
  ``nltk.word_tokenize`` of the lower-cased texts.

mem0's F1 (same file, ``calculate_metrics``) is another measure and is not reproduced: it
compares token *sets* (no multiplicity) of ``simple_tokenize`` (lower-case; ``.,!?`` become
spaces; no stemming, no article removal), skips category 5 and applies no category rule.

nltk (Porter stemmer, Treebank tokenizer, BLEU) and its dependency ``regex`` are imported
on first use: they cost seconds to import and nothing else in recallbench needs them.

LoCoMo's category ids (the ``category`` field of ``locomo10.json``) are not the order in
which the paper lists the kinds (§4.1: single-hop, multi-hop, temporal, open-domain,
adversarial). The evaluation code fixes them: id 1 is scored as a comma-separated list
(multi-hop), 5 by abstention (adversarial); ``evaluate_gpts.py`` asks id 2 for a date
(temporal) and id 5 as a two-way choice against "Not mentioned in the conversation";
``evaluation_stats.analyze_acc`` relates the first and last evidence turns of id 1 only
(multi-evidence questions); ``evaluation_stats.analyze_aggr_acc`` prints ids in the order
4, 1, 2, 3, 5, which is the paper's order of kinds under this reading. So 1 multi-hop,
2 temporal, 3 open-domain, 4 single-hop, 5 adversarial, as
:data:`recallbench.datasets._locomo.CATEGORIES` has it; mem0's evaluation (issue
mem0ai/mem0#2609) reads 1 as single-hop and 3 as multi-hop instead.
"""

from __future__ import annotations

import functools
import importlib
import string
from collections import Counter
from typing import Any

import numpy as np

LOCOMO_CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's category ids as its evaluation code treats them (see the module docstring)."""

ABSTENTION_PHRASES = ("no information available", "not mentioned")


def is_decline(text: str) -> bool:
    """Whether ``text`` declines by LoCoMo's phrase rule (either phrase, any case)."""
    lowered = text.lower()
    return any(phrase in lowered for phrase in ABSTENTION_PHRASES)


"""An adversarial (category 5) answer scores 1 when its lower-cased text contains either."""

_ARTICLES = r"\b(a|an|the|and)\b"
"""Upstream removes "and" along with the articles."""
_PUNCTUATION = frozenset(string.punctuation)
"""ASCII only, as upstream: curly quotes, dashes and other Unicode punctuation stay."""


def _module(name: str) -> Any:
    # nltk and regex ship no type information: a module imported by name is Any, so mypy
    # strict needs neither a pyproject override nor an ignore that an override would make
    # unused; the import also waits for first use
    return importlib.import_module(name)


@functools.cache
def _regex_articles() -> Any:
    # the `regex` module, as upstream: its \b treats combining marks as word characters
    # (``re`` does not), so "a" + U+0301 is not an article there
    return _module("regex").compile(_ARTICLES)


@functools.cache
def _porter() -> Any:
    # nltk's default mode (NLTK_EXTENSIONS), as upstream's module-level ``PorterStemmer()``
    return _module("nltk.stem.porter").PorterStemmer()


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    # answers repeat words; the stemmer is pure Python and slow
    return str(_porter().stem(word))


def normalize_answer(text: str) -> str:
    """LoCoMo's ``normalize_answer`` (``task_eval/evaluation.py``), in its order:

    1. delete every comma (``","`` → ``""``, so ``"1,000"`` → ``"1000"`` and ``"a,b"`` →
       ``"ab"``);
    2. lower-case (``str.lower``);
    3. delete every ASCII punctuation character (``string.punctuation``), without a space
       in its place (``"well-being"`` → ``"wellbeing"``, ``"e.g."`` → ``"eg"``);
    4. replace each whole word ``a``, ``an``, ``the`` **and** ``and`` with a space (regex
       ``\\b(a|an|the|and)\\b`` of the ``regex`` module);
    5. collapse whitespace: ``" ".join(text.split())``.
    """
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _regex_articles().sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str) -> list[str]:
    """The tokens F1 compares: :func:`normalize_answer`, split on whitespace, each token
    Porter-stemmed (nltk ``PorterStemmer().stem``), with repeats kept."""
    return [_stem(word) for word in normalize_answer(text).split()]


def token_f1(prediction: str, gold: str | int | float) -> float:
    """LoCoMo's ``f1_score``: token F1 with multiplicity.

    With P and G the :func:`answer_tokens` of the prediction and of ``str(gold)``, and
    ``common = |P ∩ G|`` counted as a multiset (``Counter(P) & Counter(G)``)::

        precision = common / |P|,  recall = common / |G|
        F1 = 2 · precision · recall / (precision + recall),  0 when common = 0

    So an empty prediction or an empty gold scores 0, even both empty (upstream returns
    0 before it could divide by zero).
    """
    predicted = answer_tokens(prediction)
    expected = answer_tokens(str(gold))
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision = common / len(predicted)
    recall = common / len(expected)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str | int | float) -> float:
    """LoCoMo's ``f1``, its multi-hop rule: both texts split on ``","`` (each part
    stripped); each gold part scores its best :func:`token_f1` over the prediction's
    parts, and the score is the mean over gold parts::

        F1 = mean over g in split(gold) of max over p in split(prediction) of token_f1(p, g)

    A text without a comma is one part (so this equals :func:`token_f1` then). Upstream
    averages with ``numpy.mean``, as here, so the last bit of a mean agrees too.
    """
    predicted = [part.strip() for part in prediction.split(",")]
    expected = [part.strip() for part in str(gold).split(",")]
    best = [max(token_f1(p, g) for p in predicted) for g in expected]
    return float(np.mean(best))


def abstained(prediction: str) -> bool:
    """Whether an answer abstains by LoCoMo's rule: its ``str.lower()`` contains
    ``"no information available"`` or ``"not mentioned"`` (substrings, anywhere)."""
    lowered = prediction.lower()
    return any(phrase in lowered for phrase in ABSTENTION_PHRASES)


def locomo_f1(prediction: str, gold: str | int | float, category_id: int) -> float:
    """The score LoCoMo's ``eval_question_answering`` gives one answer, by category id:

    - 1 (multi-hop): :func:`multi_answer_f1` (comma-separated parts);
    - 2 (temporal), 4 (single-hop): :func:`token_f1`;
    - 3 (open-domain): :func:`token_f1` against the gold's text before its first ``";"``,
      stripped (``str(gold).split(";")[0].strip()``);
    - 5 (adversarial): 1.0 when :func:`abstained`, else 0.0; the gold is not read.
      Upstream asks these as a choice between "Not mentioned in the conversation" and
      the trap answer (``evaluate_gpts.py``), where the rule is fair; on a free answer
      any hedge containing the phrase scores 1.

    ``gold`` is taken as ``str(gold)``, as upstream does (some LoCoMo answers are
    numbers). Another id raises ValueError, as upstream does. Upstream's per-question
    ``"metric": "bertscore"`` override is not reproduced (locomo10.json sets none).
    """
    if category_id == 5:
        return 1.0 if abstained(prediction) else 0.0
    answer = str(gold)
    if category_id == 1:
        return multi_answer_f1(prediction, answer)
    if category_id == 3:
        answer = answer.split(";")[0].strip()
    if category_id in (2, 3, 4):
        return token_f1(prediction, answer)
    raise ValueError(f"LoCoMo has no category {category_id!r} (its ids are 1 to 5)")


def bleu_tokens(text: str) -> list[str]:
    """The tokens BLEU-1 compares: nltk's Treebank word tokenizer on ``text.lower()``
    (``nltk.word_tokenize(text.lower(), preserve_line=True)``).

    mem0 calls ``word_tokenize`` without ``preserve_line``, which first splits sentences
    with the Punkt model from nltk's data download. That download is not a package and
    its result would vary by machine, so sentences are not split here; the tokens differ
    only where a sentence ends with ``"."`` before the end of the text (``"home. then"``
    gives ``home.`` here, ``home`` ``.`` there). ``?`` and ``!`` are split either way.
    """
    tokenize = _module("nltk.tokenize").word_tokenize
    return list(tokenize(text.lower(), preserve_line=True))


def bleu1(prediction: str, gold: str | int | float) -> float:
    """mem0's ``bleu1``: nltk ``sentence_bleu([G], P, weights=(1, 0, 0, 0),
    smoothing_function=SmoothingFunction().method1)`` on :func:`bleu_tokens`.

    With one reference that is::

        BLEU-1 = BP · p1,  p1 = Σ_w min(count_P(w), count_G(w)) / |P|
        BP = 1 if |P| ≥ |G| else exp(1 − |G| / |P|)

    and 0 when no token matches (an empty prediction or gold included): nltk returns 0
    before smoothing then, and smoothing only touches the higher orders, whose weight
    is 0. Tokens are lower-cased, neither stemmed nor stripped of punctuation or
    articles, unlike F1.
    """
    bleu = _module("nltk.translate.bleu_score")
    score = bleu.sentence_bleu(
        [bleu_tokens(str(gold))],
        bleu_tokens(prediction),
        weights=(1, 0, 0, 0),
        smoothing_function=_smoothing(),
    )
    return float(score)


@functools.cache
def _smoothing() -> Any:
    return _module("nltk.translate.bleu_score").SmoothingFunction().method1


def lexical_rules() -> dict[str, str]:
    """The rules of these measures in words, for a report: name → rule."""
    categories = ", ".join(f"{k} {v}" for k, v in LOCOMO_CATEGORIES.items())
    return {
        "normalization": (
            "LoCoMo normalize_answer: delete commas; lower-case; delete ASCII punctuation; "
            "replace the words a, an, the and 'and' with spaces; collapse whitespace; "
            "then Porter-stem each token (nltk)"
        ),
        "f1": (
            "token F1 on those tokens, counted with repeats; 0 when nothing matches "
            "(also when both are empty) — LoCoMo task_eval/evaluation.py f1_score"
        ),
        "f1 by category": (
            "LoCoMo eval_question_answering: 1 multi-hop: answer and gold split on ',', "
            "mean over gold parts of the best F1 against any answer part; 2 temporal and "
            "4 single-hop: F1; 3 open-domain: F1 against the gold before its first ';'; "
            "5 adversarial: 1 when the answer contains 'no information available' or "
            "'not mentioned' (any case), else 0 — any answer with those words scores 1"
        ),
        "bleu1": (
            "mem0 evaluation bleu1: nltk sentence_bleu, weights (1,0,0,0), smoothing "
            "method1, on nltk Treebank word tokens of the lower-cased texts (sentences "
            "not split); brevity penalty × clipped unigram precision"
        ),
        "categories": f"LoCoMo category ids as its evaluation code reads them: {categories}",
    }
