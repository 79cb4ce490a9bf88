"""LoCoMo's judge-free answer measures (F1 by category, BLEU-1), checked by hand.

Expected values are worked out from the rules of LoCoMo's ``task_eval/evaluation.py``
(``normalize_answer``, ``f1_score``, ``f1``, ``eval_question_answering``) and mem0's
``evaluation/metrics/utils.py`` (``calculate_bleu_scores``); the realistic cases were
also computed with a transcription of the upstream functions outside the project.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from recallbench.qa import (
    LOCOMO_CATEGORIES,
    abstained,
    answer_tokens,
    bleu1,
    bleu_tokens,
    lexical_rules,
    locomo_f1,
    multi_answer_f1,
    normalize_answer,
    token_f1,
)

# -- normalization -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Cat", "cat"),
        # commas go first and leave no space; other punctuation leaves none either
        ("1,000", "1000"),
        ("apples,oranges", "applesoranges"),
        ("well-being, e.g. U.S.A.!", "wellbeing eg usa"),
        # "and" is dropped with the articles; only whole words
        ("salt and pepper", "salt pepper"),
        ("Andy ate an anchovy", "andy ate anchovy"),
        ("  a  \t the\nend ", "end"),
        # only ASCII punctuation is removed
        ("it’s — fine", "it’s — fine"),
        ("", ""),
        ("?!.,;:", ""),
    ],
)
def test_normalize_answer(text: str, normalized: str) -> None:
    assert normalize_answer(text) == normalized


def test_articles_use_the_regex_modules_word_boundary() -> None:
    # "a" followed by a combining acute: `regex` counts the mark as a word character,
    # so there is no boundary and the "a" stays (``re`` would remove it)
    assert normalize_answer("a\u0301 b") == "a\u0301 b"


def test_tokens_are_porter_stemmed_with_repeats_kept() -> None:
    assert answer_tokens("Running runs, ran; the RUNNING") == ["run", "run", "ran", "run"]
    assert answer_tokens("sunsets agencies") == ["sunset", "agenc"]


# -- token F1 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # P = [pari, franc], G = [pari]: precision 1/2, recall 1 -> 2/3
        ("Paris, France", "paris", 2 / 3),
        ("PARIS", "paris", 1.0),
        # stemming: [she, run] vs [run]
        ("She runs", "running", 2 / 3),
        # Porter does not map "ran" to "run"
        ("running shoes", "ran", 0.0),
        # multiplicity: common = min(3, 1) = 1; precision 1/3, recall 1 -> 1/2
        ("dog dog dog", "dog", 0.5),
        # common = 2: precision 1, recall 2/3 -> 4/5
        ("dog dog", "dog dog cat", 0.8),
        # numbers: commas and dots vanish, so these agree (even 3.5 and 35)
        ("1,000", "1000", 1.0),
        ("$1,000.", "1000", 1.0),
        ("3.5", "35", 1.0),
        ("7 May 2023", "7 May, 2023", 1.0),
        # 10 tokens against 3, all 3 found: precision 3/10, recall 1 -> 6/13
        ("She went to the LGBTQ support group on 7 May 2023", "7 May 2023", 6 / 13),
        ("She researched adoption agencies.", "Adoption agencies", 2 / 3),
        ("Caroline is single", "Single", 0.5),
        ("The sunsets were beautiful", "sunset", 0.5),
        # unicode: lower-cased, but not Unicode-normalised (NFC é vs e + U+0301)
        ("Café", "café", 1.0),
        ("café", "cafe\u0301", 0.0),
        ("STRAßE", "straße", 1.0),
        # a curly apostrophe is not ASCII punctuation: "it’s" is not "its"
        ("it’s", "its", 0.0),
    ],
)
def test_token_f1(prediction: str, gold: str, expected: float) -> None:
    assert token_f1(prediction, gold) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [("", "Paris"), ("Paris", ""), ("", ""), ("?!", "?!"), ("the a an and", "the")],
)
def test_token_f1_is_zero_when_either_side_has_no_tokens(prediction: str, gold: str) -> None:
    # upstream returns 0 before dividing, even when both sides are empty
    assert token_f1(prediction, gold) == 0.0


def test_token_f1_is_symmetric_and_a_float() -> None:
    score = token_f1("dog dog", "dog dog cat")
    assert type(score) is float
    assert score == token_f1("dog dog cat", "dog dog")
    assert type(token_f1("x", "y")) is float


def test_numbers_as_gold_are_read_as_text() -> None:
    # upstream: answer = str(line["answer"]); [in, 2022] vs [2022]
    assert token_f1("in 2022", 2022) == pytest.approx(2 / 3)
    assert locomo_f1("in 2022", 2022, 2) == pytest.approx(2 / 3)


# -- per-category rules --------------------------------------------------------------


def test_multi_hop_averages_the_best_match_of_each_gold_part() -> None:
    # gold parts hiking (1), swimming (0), painting (1) -> 2/3
    assert multi_answer_f1("painting, hiking", "hiking, swimming, painting") == pytest.approx(2 / 3)
    # one prediction part [camp, paint]: pottery 0, camping 2/3, painting 2/3, swimming 0
    gold = "Pottery, camping, painting, swimming"
    assert locomo_f1("Camping and painting", gold, 1) == pytest.approx(1 / 3)
    assert locomo_f1("pottery, camping, painting, swimming", gold, 1) == 1.0
    # the same pair by plain F1 (commas vanish, "and" goes): [camp, paint] vs 4 tokens
    assert token_f1("Camping and painting", gold) == pytest.approx(2 / 3)


def test_multi_hop_without_commas_is_plain_f1() -> None:
    assert multi_answer_f1("she went hiking", "hiking") == token_f1("she went hiking", "hiking")
    # an empty gold part scores 0 and still counts in the mean
    assert multi_answer_f1("hiking", "hiking,") == pytest.approx(0.5)


def test_open_domain_keeps_the_gold_before_its_first_semicolon() -> None:
    gold = "Likely no; she does not refer to herself as part of it"
    assert locomo_f1("Likely no", gold, 3) == 1.0
    # [ye] vs [like, ye]: precision 1, recall 1/2 -> 2/3
    assert locomo_f1("yes", "Likely yes; because she reads", 3) == pytest.approx(2 / 3)
    # other categories read the whole gold
    assert locomo_f1("Likely no", gold, 4) == token_f1("Likely no", gold) < 1.0


@pytest.mark.parametrize("category", [2, 4])
def test_temporal_and_single_hop_are_plain_f1(category: int) -> None:
    assert locomo_f1("The week before 9 June 2023", "The week before 9 June 2023", category) == 1.0
    assert locomo_f1("painting, hiking", "hiking, painting", category) == 1.0


@pytest.mark.parametrize(
    ("prediction", "credited"),
    [
        ("Not mentioned in the conversation", True),
        ("NO INFORMATION AVAILABLE", True),
        ("(a) not mentioned", True),
        # substrings anywhere: a hedge that also answers still gets the credit
        ("It was Paris, though that is not mentioned", True),
        ("No information is available", False),
        ("not  mentioned", False),
        ("Paris", False),
        ("", False),
    ],
)
def test_adversarial_credits_the_two_abstention_phrases(prediction: str, credited: bool) -> None:
    assert abstained(prediction) is credited
    # the gold (the trap answer) is never read
    assert locomo_f1(prediction, "Paris", 5) == float(credited)
    assert locomo_f1(prediction, "", 5) == float(credited)


@pytest.mark.parametrize("category", [0, 6, -1])
def test_an_unknown_category_is_an_error(category: int) -> None:
    with pytest.raises(ValueError, match="category"):
        locomo_f1("x", "x", category)


def test_the_category_map_is_the_dataset_loaders() -> None:
    from recallbench.datasets._locomo import CATEGORIES

    assert LOCOMO_CATEGORIES == CATEGORIES


# -- BLEU-1 --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("Paris", "paris", 1.0),
        # all 3 unigrams match, 3 < 6 tokens: BP = exp(1 - 6/3)
        ("a cat sat", "a cat sat on the mat", math.exp(-1)),
        # clipped: "the" and "cat" count once each -> 2/4; longer, so BP = 1
        ("the cat the cat", "the cat", 0.5),
        # punctuation is a token and articles stay: [paris, .] vs [paris]
        ("Paris.", "Paris", 0.5),
        # 1 of 2 match, 2 < 3 tokens: 1/2 * exp(1 - 3/2)
        ("in Paris", "Paris , France", 0.5 * math.exp(-0.5)),
        # no stemming, unlike F1
        ("runs", "running", 0.0),
        ("", "Paris", 0.0),
        ("Paris", "", 0.0),
        ("", "", 0.0),
        ("Straße", "STRAßE", 1.0),
    ],
)
def test_bleu1(prediction: str, gold: str, expected: float) -> None:
    assert bleu1(prediction, gold) == pytest.approx(expected, abs=1e-12)
    assert type(bleu1(prediction, gold)) is float


def test_bleu1_reads_a_number_as_text() -> None:
    assert bleu1("2022", 2022) == 1.0


def test_bleu_tokens_are_treebank_tokens_without_sentence_splitting() -> None:
    assert bleu_tokens("Caroline's SUNSET, yes?") == ["caroline", "'s", "sunset", ",", "yes", "?"]
    # only the final period is split off: sentences are not split (mem0's Punkt step)
    assert bleu_tokens("He went home. Then he slept.") == [
        "he",
        "went",
        "home.",
        "then",
        "he",
        "slept",
        ".",
    ]


# -- rules and imports ---------------------------------------------------------------


def test_rules_in_words_name_every_rule() -> None:
    rules = lexical_rules()
    assert list(rules) == ["normalization", "f1", "f1 by category", "bleu1", "categories"]
    assert "'not mentioned'" in rules["f1 by category"]
    assert "';'" in rules["f1 by category"]
    assert "method1" in rules["bleu1"]
    assert "1 multi-hop" in rules["categories"] and "4 single-hop" in rules["categories"]


def test_nltk_is_imported_on_first_use_only() -> None:
    code = (
        "import sys\n"
        "from recallbench.qa import token_f1, lexical_rules\n"
        "lexical_rules()\n"
        "assert 'nltk' not in sys.modules and 'regex' not in sys.modules\n"
        "token_f1('a', 'b')\n"
        "assert 'nltk' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
