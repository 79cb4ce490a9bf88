"""Scores of shadow pairs: per query, what each side's ranked list was worth, and the paired
differences (treatment minus control) that the sequential tests read.

A *pair* is one row of ``shadow_runs``: the control's and the treatment's ranked ids for
the same search, their latencies and errors, and, in interleaving mode, the team-draft list
the agent saw. Each pair gets:

* **Implicit feedback** (where the agent acted on the search): the *clicked* documents are
  those it read after the search (``read_after_search``), validated as useful
  (``validated_useful``) or referenced (``reference``), less those it validated as not
  useful. With ``C`` the clicked set and ``L`` a side's list,

      rr(L) = 1 / min{r : L[r] in C}   (0 when no clicked document is in L),
      hit(L) = 1 if some L[r] in C with r <= k else 0,

  for both sides from the same ``C`` (a search without feedback has no value: the
  difference is missing, not 0). Without interleaving the agent only saw the control's list,
  so it could only click what the control showed: these measures favour the control (a
  conservative test of the treatment); interleaving removes that bias.
* **Labels** (manual, then judge labels: ``judgments`` with source ``manual`` override
  ``llm`` for the same document): ``nDCG@k`` per side (Järvelin & Kekäläinen 2002),

      DCG@k = sum_{r <= k} g(L[r]) / log2(r + 1),   nDCG@k = DCG@k / IDCG@k,

  with the grade as gain (unlabelled documents gain 0; a repeated id keeps its first rank
  and takes no slot, as in the rank differences) and IDCG@k the DCG of
  the query's labelled documents sorted by grade; missing when the query has no positive
  label (IDCG = 0).
* **Rank differences** for every pair: Kendall tau-b and Jaccard of the two top k, whether
  the top document changed, position changes and the class (:mod:`recallbench.stats._rankdiff`,
  as ``recallbench compare`` gives them).
* **Interleaving credit** for a pair shown interleaved (team draft, Radlinski, Kurup &
  Joachims 2008): with ``c_A`` and ``c_B`` the clicked documents the control's and the
  treatment's team placed, the query is a win for the treatment when ``c_B > c_A``, a loss
  when ``c_B < c_A``, a tie otherwise; as a number ``+1 / 0 / -1``, whose mean over queries
  with clicks is ``2 * Delta`` of Chapelle, Joachims, Radlinski & Yue (2012) when there are
  no ties. Only documents both rankers could have shown are credited: the leading
  ``interleaved_credited`` shown documents, the team draft of both lists cut to the depth
  both reach (:func:`recallbench.stats._interleaving.team_draft_common_depth`); documents
  shown after them credit no one, so that a longer list is not preferred for its length.
  Rows from before that column are credited as far as each shown document is within the
  common depth of its team's list (:func:`credited_prefix`). Pairs without a click on a
  credited document have no credit. :func:`unequal_length_share` says how often the two
  lists differed in length.

A side that failed (its error column set) is scored as an empty list: what the agent would
have got. Its failure also counts in the error-rate guardrail.

Guardrails per side (:func:`guardrails`): median and p95 latency of the searches that
answered, error rate, empty-result rate among the searches that answered, and tokens when
the rows carry them (``control_tokens`` / ``treatment_tokens``).

References:
    Radlinski, F., Kurup, M. & Joachims, T. (2008). How does clickthrough data reflect
    retrieval quality? CIKM 2008. Team-draft interleaving and its credit.
    Chapelle, O., Joachims, T., Radlinski, F. & Yue, Y. (2012). Large-scale validation and
    analysis of interleaved search evaluation. ACM TOIS 30(1). The Delta statistic.
    Järvelin, K. & Kekäläinen, J. (2002). Cumulated gain-based evaluation of IR techniques.
    ACM TOIS 20(4). nDCG.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np

from recallbench.core._errors import ConfigError
from recallbench.online._shadow_guard import GuardColumns
from recallbench.stats._interleaving import (
    CONTROL,
    TREATMENT,
    Interleaving,
    Outcome,
    Team,
    common_depth,
)
from recallbench.stats._rankdiff import RankClass, RankDifference, rank_difference

if TYPE_CHECKING:
    from recallbench.store import FeedbackEvent, Judgment, ShadowTest, Store

Side = Literal["control", "treatment"]
SIDES: Final[tuple[Side, Side]] = ("control", "treatment")
CLICKS: Final = frozenset({"read_after_search", "validated_useful", "reference"})
"""Feedback kinds that make a document clicked."""
UNCLICKS: Final = frozenset({"validated_not_useful"})
"""Feedback kinds that take a document out of the clicked set."""
LABEL_SOURCES: Final = ("manual", "llm")
"""Label sources for nDCG, the first overriding the later for the same document."""
DEFAULT_K: Final = 10
_MEASURE = re.compile(r"^(rr|hit|ndcg)(?:@(\d+))?$|^interleaving$")
MEASURES_HELP: Final = "rr, hit@k, ndcg@k (labels) or interleaving"


@dataclass(frozen=True, slots=True)
class PairScore:
    """One shadow pair, scored. Values are None where they do not apply (see the module)."""

    query_id: str
    created_at: datetime
    session_id: str | None
    control: tuple[str, ...]
    treatment: tuple[str, ...]
    control_error: str | None
    treatment_error: str | None
    clicked: tuple[str, ...]
    """Documents the agent read, validated or referenced after the search (sorted)."""
    rr: tuple[float, float] | None
    """(control, treatment) reciprocal rank of the first clicked document."""
    hit: tuple[float, float] | None
    """(control, treatment) 1 when a clicked document is in the top k."""
    ndcg: tuple[float, float] | None
    """(control, treatment) nDCG@k from labels."""
    k: int
    """The cutoff of the rank differences (:attr:`ranks`)."""
    interleaved: bool
    credit: tuple[int, int] | None
    """(control, treatment) clicked documents each team placed among the credited ones
    (above the depth both lists reach), interleaved pairs only."""
    outcome: Outcome | None
    """The treatment's win, tie or loss, interleaved pairs with a click only."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ranks(self) -> RankDifference:
        """Kendall tau-b, Jaccard, top-1 change, position changes and class of the two top
        k: computed when asked, as no decision reads them (they were a third of the time of
        ``shadow status`` on a million pairs)."""
        return rank_difference(self.query_id, self.control, self.treatment, self.k)

    @property
    def kendall_tau(self) -> float:
        return self.ranks.kendall_tau

    @property
    def jaccard(self) -> float:
        return self.ranks.jaccard

    @property
    def top1_changed(self) -> bool:
        return self.ranks.top1_changed

    @property
    def position_changes(self) -> int:
        return self.ranks.position_changes

    @property
    def rank_class(self) -> RankClass:
        return self.ranks.rank_class

    @property
    def lengths(self) -> tuple[int, int]:
        """(control, treatment) number of distinct ids in each list (0 for a failed side)."""
        return len(dict.fromkeys(self.control)), len(dict.fromkeys(self.treatment))

    @property
    def unequal_lengths(self) -> bool:
        """Whether the two lists differed in length (:attr:`lengths`)."""
        control, treatment = self.lengths
        return control != treatment

    def value(self, measure: str) -> tuple[float, float] | None:
        """(control, treatment) of ``measure`` (``rr``, ``hit``, ``ndcg``), or None."""
        base = parse_measure(measure)[0]
        found: tuple[float, float] | None = getattr(self, base) if base != "interleaving" else None
        return found

    def difference(self, measure: str) -> float | None:
        """The paired difference ``treatment - control`` of ``measure``; for
        ``interleaving`` the credit ``+1 / 0 / -1``. None where the measure does not apply."""
        if parse_measure(measure)[0] == "interleaving":
            if self.outcome is None:
                return None
            return {"win": 1.0, "tie": 0.0, "loss": -1.0}[self.outcome]
        pair = self.value(measure)
        return None if pair is None else pair[1] - pair[0]


def parse_measure(measure: str) -> tuple[str, int]:
    """``(base, k)`` of a primary measure name: ``rr``, ``hit@5``, ``ndcg@10``,
    ``interleaving`` (k defaults to 10). ConfigError for anything else."""
    if isinstance(measure, str):  # read for every pair of every measure: parsed once
        return _parse_measure(measure)
    raise ConfigError(f"unknown shadow measure {measure!r}: use {MEASURES_HELP}")


@functools.lru_cache(maxsize=64)
def _parse_measure(measure: str) -> tuple[str, int]:
    found = _MEASURE.match(measure.strip().lower()) if isinstance(measure, str) else None
    if found is None:
        raise ConfigError(f"unknown shadow measure {measure!r}: use {MEASURES_HELP}")
    if found.group(1) is None:
        return "interleaving", DEFAULT_K
    k = int(found.group(2)) if found.group(2) else DEFAULT_K
    if k < 1:
        raise ConfigError(f"shadow measure {measure!r}: k must be at least 1")
    return found.group(1), k


def clicked_documents(events: Iterable[FeedbackEvent]) -> dict[str, set[str]]:
    """Per query id, the clicked documents (module docstring): a later
    ``validated_not_useful`` removes a document, a later click puts it back."""
    clicked: dict[str, set[str]] = {}
    for event in events:
        if event.doc_id is None:
            continue
        if event.kind in CLICKS:
            clicked.setdefault(event.query_id, set()).add(event.doc_id)
        elif event.kind in UNCLICKS:
            clicked.setdefault(event.query_id, set()).discard(event.doc_id)
    return clicked


def label_grades(
    labels: Iterable[Judgment], sources: Sequence[str] = LABEL_SOURCES
) -> dict[str, dict[str, int]]:
    """Per query id, document -> grade from ``sources``, an earlier source overriding a
    later one for the same document; other sources are ignored."""
    order = {source: at for at, source in enumerate(sources)}
    best: dict[tuple[str, str], tuple[int, int]] = {}
    for label in labels:
        rank = order.get(label.source)
        if rank is None:
            continue
        key = (label.query_id, label.doc_id)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, label.grade)
    grades: dict[str, dict[str, int]] = {}
    for (query, doc), (_, grade) in best.items():
        grades.setdefault(query, {})[doc] = grade
    return grades


def reciprocal_rank(ranking: Sequence[str], clicked: Iterable[str]) -> float:
    """``1 / r`` of the first clicked document in ``ranking`` (repeats keep their first
    rank), 0 when none is there."""
    wanted = set(clicked)
    for rank, doc in enumerate(_distinct(ranking), start=1):
        if doc in wanted:
            return 1.0 / rank
    return 0.0


def hit(ranking: Sequence[str], clicked: Iterable[str], k: int) -> float:
    """1 when a clicked document is among the first ``k`` distinct ids, else 0."""
    wanted = set(clicked)
    return float(any(doc in wanted for doc in _distinct(ranking)[:k]))


def ndcg(ranking: Sequence[str], grades: Mapping[str, int], k: int) -> float | None:
    """nDCG@k of ``ranking`` with ``grades`` as gains (module docstring); None when the
    ideal DCG is 0 (no positive label)."""
    ideal = sorted((max(grade, 0) for grade in grades.values()), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal, start=1))
    if idcg <= 0:
        return None
    top = _distinct(ranking)[:k]
    dcg = sum(
        max(grades.get(doc, 0), 0) / math.log2(rank + 1) for rank, doc in enumerate(top, start=1)
    )
    return dcg / idcg


def team_credit(
    shown: Sequence[tuple[str, str]], clicked: Iterable[str], credited: int | None = None
) -> tuple[tuple[int, int], Outcome | None]:
    """``((c_A, c_B), outcome)`` of an interleaved list: clicked documents per team among the
    first ``credited`` shown (None: all; :meth:`Interleaving.credit`) and the treatment's
    win / tie / loss (:meth:`Interleaving.outcome`), None when no credited document was
    clicked. A document shown twice counts for the team that placed it first. ValueError for
    a team that is not control or treatment, or ``credited`` outside ``0..len(shown)``."""
    if credited is not None and not 0 <= credited <= len(shown):
        raise ValueError(f"interleaved_credited {credited} is not between 0 and {len(shown)}")
    owner: dict[str, Team] = {}
    for doc, team in shown[:credited]:
        if team not in (CONTROL, TREATMENT):
            raise ValueError(f"interleaved team {team!r} is not control or treatment")
        owner.setdefault(doc, CONTROL if team == CONTROL else TREATMENT)
    drafted = Interleaving(items=tuple(owner), teams=tuple(owner.values()))
    credit = drafted.credit(clicked)
    return credit, (drafted.outcome(clicked) if sum(credit) else None)


def credited_prefix(
    shown: Sequence[tuple[str, str]], control: Sequence[str], treatment: Sequence[str]
) -> int:
    """For a row written before ``interleaved_credited``: how many leading shown documents
    are within the common depth ``d`` of the two lists (:func:`common_depth`) in the list of
    the team that placed them (the first one that is not ends the credited part)."""
    depth = common_depth(control, treatment)
    tops: dict[str, set[str]] = {
        CONTROL: set(_distinct(control)[:depth]),
        TREATMENT: set(_distinct(treatment)[:depth]),
    }
    credited = 0
    for doc, team in shown:
        if doc not in tops.get(team, set()):
            break
        credited += 1
    return credited


def unequal_length_share(scores: Iterable[PairScore]) -> float | None:
    """The share of the interleaved pairs whose two lists differed in length (what
    ``shadow status`` reports beside the interleaving credit); None without an interleaved
    pair."""
    interleaved = [score.unequal_lengths for score in scores if score.interleaved]
    return sum(interleaved) / len(interleaved) if interleaved else None


def paired_differences(scores: Iterable[PairScore], measure: str) -> list[tuple[str, float]]:
    """``(query_id, treatment - control)`` of ``measure`` for the pairs where it applies,
    in the pairs' order: what the sequential tests read."""
    found = []
    for score in scores:
        difference = score.difference(measure)
        if difference is not None:
            found.append((score.query_id, difference))
    return found


def score_pairs(
    rows: Sequence[Mapping[str, Any]],
    feedback: Iterable[FeedbackEvent] = (),
    labels: Iterable[Judgment] = (),
    k: int = DEFAULT_K,
    label_sources: Sequence[str] = LABEL_SOURCES,
) -> list[PairScore]:
    """Score ``rows`` (as :meth:`Store.shadow_runs` gives them) with the feedback events and
    labels of their queries (others are ignored), in the rows' order."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ConfigError(f"shadow scoring: k must be an integer >= 1, got {k!r}")
    clicks = clicked_documents(feedback)
    grades = label_grades(labels, label_sources)
    scores = []
    for at, row in enumerate(rows):
        try:
            scores.append(_score(row, clicks, grades, k))
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"shadow_runs row {at} ({row.get('query_id')!r}): {error}") from None
    return scores


def _score(
    row: Mapping[str, Any],
    clicks: Mapping[str, set[str]],
    grades: Mapping[str, Mapping[str, int]],
    k: int,
) -> PairScore:
    query_id = str(row["query_id"])
    control_error, treatment_error = row.get("control_error"), row.get("treatment_error")
    control = () if control_error else tuple(row["control_results"])
    treatment = () if treatment_error else tuple(row["treatment_results"])
    clicked = clicks.get(query_id, set())
    rr = hits = None
    if clicked:
        rr = (reciprocal_rank(control, clicked), reciprocal_rank(treatment, clicked))
        hits = (hit(control, clicked, k), hit(treatment, clicked, k))
    labelled = grades.get(query_id)
    gains = None
    if labelled:
        control_ndcg, treatment_ndcg = ndcg(control, labelled, k), ndcg(treatment, labelled, k)
        if control_ndcg is not None and treatment_ndcg is not None:
            gains = (control_ndcg, treatment_ndcg)
    shown = row.get("interleaved")
    credit = outcome = None
    if shown is not None:
        pairs = [(str(doc), str(team)) for doc, team in shown]
        credited = row.get("interleaved_credited")
        if credited is None:
            credited = credited_prefix(pairs, control, treatment)
        credit, outcome = team_credit(pairs, clicked, int(credited))
    extra = {
        key: row[key] for key in ("control_tokens", "treatment_tokens") if row.get(key) is not None
    }
    return PairScore(
        query_id=query_id,
        created_at=row["created_at"],
        session_id=row.get("session_id"),
        control=control,
        treatment=treatment,
        control_error=control_error,
        treatment_error=treatment_error,
        clicked=tuple(sorted(clicked)),
        rr=rr,
        hit=hits,
        ndcg=gains,
        k=k,
        interleaved=shown is not None,
        credit=credit,
        outcome=outcome,
        extra=extra,
    )


# ---------------------------------------------------------------- guardrails


@dataclass(frozen=True, slots=True)
class SideGuardrails:
    """One side's guardrail measures over the pairs. Rates are fractions in [0, 1]; None
    where nothing was measured (no latency, no answered search, no tokens)."""

    searches: int
    errors: int
    latency_median: float | None
    latency_p95: float | None
    error_rate: float | None
    empty_rate: float | None
    tokens_mean: float | None

    def get(self, name: str) -> float | None:
        value: float | None = getattr(self, name)
        return value


GUARDRAIL_NAMES: Final = (
    "latency_median",
    "latency_p95",
    "error_rate",
    "empty_rate",
    "tokens_mean",
)


def guardrails(rows: Sequence[Mapping[str, Any]]) -> dict[Side, SideGuardrails]:
    """:func:`side_guardrails` of ``rows``."""
    return side_guardrails(GuardColumns.of(rows))


def side_guardrails(columns: GuardColumns) -> dict[Side, SideGuardrails]:
    """Per side: latency median and p95 (``numpy.percentile``, linear interpolation) of
    the searches that answered, error rate over all pairs, empty-result rate over the
    searches that answered, mean tokens when the rows carry them."""
    found: dict[Side, SideGuardrails] = {}
    pairs = len(columns)
    for side in SIDES:
        errors = getattr(columns, f"{side}_error")
        answered = ~errors
        latency = getattr(columns, f"{side}_latency")[answered]
        latencies = latency[~np.isnan(latency)]
        tokens = getattr(columns, f"{side}_tokens")
        tokens = tokens[~np.isnan(tokens)].tolist()  # summed in order, as Python sums
        failed, served = int(errors.sum()), int(answered.sum())
        empty = int((getattr(columns, f"{side}_empty") & answered).sum())
        found[side] = SideGuardrails(
            searches=pairs,
            errors=failed,
            latency_median=float(np.percentile(latencies, 50)) if latencies.size else None,
            latency_p95=float(np.percentile(latencies, 95)) if latencies.size else None,
            error_rate=failed / pairs if pairs else None,
            empty_rate=empty / served if served else None,
            tokens_mean=sum(tokens) / len(tokens) if tokens else None,
        )
    return found


# ---------------------------------------------------------------- from the store


def pairs_of(
    store: Store, test: ShadowTest, until: datetime | None = None, after: datetime | None = None
) -> list[dict[str, Any]]:
    """The shadow pairs of ``test``: logged from its start (after ``after`` when given) to
    the earlier of its stop and ``until`` (None: no bound), by the test's two profiles
    (rows that do not name their profiles are taken)."""
    end = window_end(test, until)
    rows = store.shadow_runs(since=test.started_at, until=end, after=after)
    return [
        row
        for row in rows
        if row.get("control") in (None, test.control)
        and row.get("treatment") in (None, test.treatment)
    ]


def window_end(test: ShadowTest, until: datetime | None) -> datetime | None:
    """The end of the test's window: the earlier of its stop and ``until``."""
    ends = [end for end in (test.stopped_at, until) if end is not None]
    return min(ends) if ends else None


def score_test(
    store: Store,
    test: ShadowTest,
    until: datetime | None = None,
    k: int | None = None,
    after: datetime | None = None,
) -> tuple[list[dict[str, Any]], list[PairScore]]:
    """The rows of ``test`` (:func:`pairs_of`) and their scores, with the feedback and
    labels the store holds for their queries; ``k`` defaults to the test measure's cutoff."""
    rows = pairs_of(store, test, until, after)
    k = k if k is not None else parse_measure(test.measure)[1]
    query_ids = [str(row["query_id"]) for row in rows]
    if not query_ids:
        return rows, []
    feedback = store.feedback(query_ids)
    labels = [label for label in store.judgments(query_ids) if label.source in LABEL_SOURCES]
    return rows, score_pairs(rows, feedback, labels, k)


def _distinct(ranking: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(ranking))
