"""Per-query differences between the rankings two systems returned for the same query.

``recallbench compare`` has, per query id, two lists of document ids, best first: the
baseline's ``a`` and the other system's ``b``. At cutoff ``k`` each list is first cleared of
repeated ids (the first occurrence keeps its place) and cut to ``A = a[:k]``, ``B = b[:k]``.

* **Kendall's tau-b over the union of the top k.** Every document of ``U = A ∪ B`` gets a
  1-based rank in each list; a document missing from a list is tied at rank ``len(list) + 1``
  in that list, the "tied at the bottom" convention for top-k lists of Fagin, Kumar &
  Sivakumar (2003). Over the two rank vectors ``x`` and ``y`` of the ``n = |U|`` documents,
  with ``n_c`` / ``n_d`` the concordant / discordant pairs, ``n0 = n(n - 1) / 2`` and
  ``n1`` / ``n2`` the pairs tied in ``x`` / ``y`` (Kendall 1945)::

      tau_b = (n_c - n_d) / sqrt((n0 - n1) * (n0 - n2))

  tau-b is undefined (0 / 0) when a rank vector is constant. Here that happens exactly when
  ``|U| <= 1`` or one of ``A``, ``B`` is empty. Defined instead:

  - ``A == B`` (both empty, a single common item, or any identical lists) → ``1.0``:
    nothing about the ranking changed.
  - exactly one of ``A``, ``B`` empty → ``-1.0``: one system returned nothing, so no
    document and no order of the other survives. This is the least tau can be and no more
    than a disjoint pair of non-empty lists gets (``-1.0`` at one item each, about ``-0.69``
    for two disjoint top 10s), so an empty result sorts first among the most changed
    queries and is classed incompatible.

  Two different single items, ``A = [x]``, ``B = [y]``, are *not* undefined: ``x`` ranks above
  ``y`` in ``a`` and below it in ``b``, one discordant pair, tau-b = ``-1.0``.

* **Jaccard@k** (Jaccard 1912): ``|A ∩ B| / |A ∪ B|``; both empty → ``1.0``.
* **top-1 changed**: ``a[0] != b[0]``; both empty → False, one empty → True.
* **position changes**: positions ``i < k`` at which ``A[i] != B[i]``; a position filled in
  only one list counts as a change.
* **class**, thresholds applied in this order: *identical* when tau >= 0.99 and Jaccard
  >= 0.95; *minor* when tau >= 0.95 and the top 1 is unchanged; *major* when tau >= 0.85;
  otherwise *incompatible*.

References:
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33(3),
    239-251.
    Fagin, R., Kumar, R. & Sivakumar, D. (2003). Comparing top k lists. SIAM Journal on
    Discrete Mathematics 17(1), 134-160.
    Jaccard, P. (1912). The distribution of the flora in the alpine zone. New Phytologist
    11(2), 37-50.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from recallbench.core._errors import ConfigError

RankClass = Literal["identical", "minor", "major", "incompatible"]
RANK_CLASSES: tuple[RankClass, ...] = ("identical", "minor", "major", "incompatible")

IDENTICAL_TAU = 0.99
IDENTICAL_JACCARD = 0.95
MINOR_TAU = 0.95
MAJOR_TAU = 0.85


@dataclass(frozen=True, slots=True)
class RankDifference:
    """How the other system's top k for one query differs from the baseline's."""

    query_id: str
    kendall_tau: float
    jaccard: float
    top1_changed: bool
    position_changes: int
    rank_class: RankClass


@dataclass(frozen=True, slots=True)
class RankDiffSummary:
    """Aggregate of the per-query differences at one cutoff ``k``."""

    k: int
    queries: int
    classes: dict[RankClass, int]
    mean_kendall_tau: float
    mean_jaccard: float
    top1_changed: int
    most_changed: tuple[RankDifference, ...]


def classify(kendall_tau: float, jaccard: float, top1_changed: bool) -> RankClass:
    """Class of one query's difference; the first rule that holds wins.

    identical: ``tau >= 0.99 and jaccard >= 0.95``; minor: ``tau >= 0.95 and not
    top1_changed``; major: ``tau >= 0.85``; otherwise incompatible. ``tau`` is Kendall's
    tau-b over the union of the top k (Kendall 1945; Fagin et al. 2003), ``jaccard`` the
    Jaccard (1912) overlap of the two top-k sets.
    """
    if kendall_tau >= IDENTICAL_TAU and jaccard >= IDENTICAL_JACCARD:
        return "identical"
    if kendall_tau >= MINOR_TAU and not top1_changed:
        return "minor"
    if kendall_tau >= MAJOR_TAU:
        return "major"
    return "incompatible"


def rank_difference(
    query_id: str, baseline: Sequence[str], other: Sequence[str], k: int
) -> RankDifference:
    """Compare two rankings of one query at cutoff ``k`` (see the module docstring).

    With ``A``, ``B`` the de-duplicated top k of ``baseline`` and ``other``:

    * ``kendall_tau``: tau-b (Kendall 1945) of the ranks of ``U = A ∪ B`` in ``A`` and ``B``,
      a missing document tied at ``len(list) + 1`` (Fagin, Kumar & Sivakumar 2003),
      ``(n_c - n_d) / sqrt((n0 - n1)(n0 - n2))``; ``1.0`` when ``A == B``, ``-1.0`` when
      exactly one list is empty (the only other way the denominator is 0).
    * ``jaccard``: ``|A ∩ B| / |A ∪ B|`` (Jaccard 1912), ``1.0`` when both are empty.
    * ``top1_changed``: ``A[0] != B[0]``; a missing first item differs from a present one.
    * ``position_changes``: positions ``i < k`` with ``A[i] != B[i]`` or filled in one list.

    Raises:
        ConfigError: ``k < 1``.
    """
    _check_k(k)
    top_a = _top_k(baseline, k)
    top_b = _top_k(other, k)
    tau, jaccard = _tau_and_jaccard(top_a, top_b)
    top1_changed = top_a[:1] != top_b[:1]  # [] vs [x]: one empty list changed its top 1
    shared = min(len(top_a), len(top_b))
    differing = sum(1 for i in range(shared) if top_a[i] != top_b[i])
    # positions past the shorter list are filled in one list only: each is a change
    position_changes = differing + len(top_a) + len(top_b) - 2 * shared
    return RankDifference(
        query_id=query_id,
        kendall_tau=tau,
        jaccard=jaccard,
        top1_changed=top1_changed,
        position_changes=position_changes,
        rank_class=classify(tau, jaccard, top1_changed),
    )


def rank_differences(
    baseline: Mapping[str, Sequence[str]],
    other: Mapping[str, Sequence[str]],
    k: int = 10,
    most_changed: int = 10,
) -> tuple[list[RankDifference], RankDiffSummary]:
    """Per-query :func:`rank_difference` for every query of ``baseline``, plus a summary.

    Queries come in ``baseline``'s order; queries only in ``other`` are ignored. The summary
    counts each class (all four keys, in :data:`RANK_CLASSES` order), averages tau-b
    (Kendall 1945, over the top-k union with missing documents tied at the bottom, Fagin et
    al. 2003) and Jaccard@k (Jaccard 1912) over the queries (NaN when there are none), counts
    changed top 1s, and keeps the ``most_changed`` queries with the lowest tau, ties broken by
    lower Jaccard, then query id.

    Raises:
        ConfigError: ``k < 1``, ``most_changed < 0``, or a baseline query missing from
            ``other``.
    """
    _check_k(k)
    if most_changed < 0:
        raise ConfigError(f"most_changed must be >= 0, got {most_changed}")
    missing = [query_id for query_id in baseline if query_id not in other]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ConfigError(
            f"query {missing[0]!r}{more} has a baseline ranking but none from the other system"
        )
    differences = [
        rank_difference(query_id, ranking, other[query_id], k)
        for query_id, ranking in baseline.items()
    ]
    classes: dict[RankClass, int] = dict.fromkeys(RANK_CLASSES, 0)
    for difference in differences:
        classes[difference.rank_class] += 1
    count = len(differences)
    # math.fsum: exact sums, so the mean does not depend on the query order
    mean_tau = math.fsum(d.kendall_tau for d in differences) / count if count else math.nan
    mean_jaccard = math.fsum(d.jaccard for d in differences) / count if count else math.nan
    ranked = sorted(differences, key=lambda d: (d.kendall_tau, d.jaccard, d.query_id))
    summary = RankDiffSummary(
        k=k,
        queries=count,
        classes=classes,
        mean_kendall_tau=mean_tau,
        mean_jaccard=mean_jaccard,
        top1_changed=sum(1 for d in differences if d.top1_changed),
        most_changed=tuple(ranked[:most_changed]),
    )
    return differences, summary


def _check_k(k: int) -> None:
    if k < 1:
        raise ConfigError(f"the rank-difference cutoff k must be >= 1, got {k}")


def _top_k(ranking: Sequence[str], k: int) -> list[str]:
    """The first ``k`` distinct ids; a repeat keeps the rank of its first occurrence, so it
    neither takes a slot nor gets two ranks."""
    head = list(ranking[:k])
    if len(set(head)) == len(head):  # the usual case, without the loop below
        return head
    seen: set[str] = set()
    top: list[str] = []
    for doc in ranking:
        if doc not in seen:
            seen.add(doc)
            top.append(doc)
            if len(top) == k:
                break
    return top


def _tau_and_jaccard(top_a: list[str], top_b: list[str]) -> tuple[float, float]:
    if top_a == top_b:
        return 1.0, 1.0
    if not top_a or not top_b:
        return -1.0, 0.0
    rank_b = {doc: rank for rank, doc in enumerate(top_b, 1)}
    in_a = set(top_a)
    only_b = [doc for doc in top_b if doc not in in_a]
    size = len(top_a) + len(only_b)
    jaccard = (len(top_b) - len(only_b)) / size
    # U listed as A then B's extras: x is then 1..|A| followed by |A|+1 for every extra
    bottom_a, bottom_b = len(top_a) + 1, len(top_b) + 1
    x = np.arange(1, size + 1)
    x[len(top_a) :] = bottom_a
    y = np.fromiter(
        (rank_b.get(doc, bottom_b) for doc in (*top_a, *only_b)), dtype=np.int64, count=size
    )
    tau = _kendall_tau_b(x, y)
    # both lists non-empty and U has >= 2 items: neither rank vector is constant
    assert tau is not None
    return tau, jaccard


def _kendall_tau_b(x: NDArray[np.int64], y: NDArray[np.int64]) -> float | None:
    """tau-b of two rank vectors by all pairs, O(n^2) (n <= 2k here); None when undefined."""
    sign_x = np.sign(x[:, None] - x[None, :])
    sign_y = np.sign(y[:, None] - y[None, :])
    # every unordered pair appears twice in the full matrices, hence the halving
    score = int(np.sum(sign_x * sign_y)) // 2  # n_c - n_d
    untied_x = int(np.count_nonzero(sign_x)) // 2  # n0 - n1
    untied_y = int(np.count_nonzero(sign_y)) // 2  # n0 - n2
    if untied_x == 0 or untied_y == 0:
        return None
    if untied_x == untied_y:
        # one correctly rounded division, so e.g. 114 / 120 is exactly the float 0.95
        return score / untied_x
    return score / math.sqrt(untied_x * untied_y)
