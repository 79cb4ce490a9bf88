"""Sequential decisions on a shadow test: graduate the treatment, roll it back, or continue,
by a rule fixed when the test starts and evaluated on the stored pairs.

The rule (:class:`~recallbench.online._shadow_rule.GraduationRule`, stored as JSON with the
test) names:

* the **primary paired measure** (``rr``, ``hit@k``, ``ndcg@k`` or ``interleaving``, see
  :mod:`recallbench.online._shadow_score`), the **unit** of its observations (a distinct
  query text or a session, :mod:`recallbench.online._shadow_units`), and the **sequential
  test** on the units' differences ``d_i = treatment_i - control_i`` in the order the units
  were first measured:

  - ``betting`` (default): the hedged betting confidence sequence of Waudby-Smith & Ramdas
    (2023) for the mean of differences bounded in [-1, 1] (every measure here is),
    :mod:`recallbench.stats._bounded_cs`: valid at every sample size under optional
    stopping, with no assumption on the distribution (Ville's inequality on a
    nonnegative supermartingale). The treatment is accepted when the sequence leaves 0
    from above, the control when from below; its p-value is the running minimum of the
    inverse capital at 0, its estimate the sequence's centre, always inside its interval.
    ``empirical_bernstein``: their predictable plug-in empirical-Bernstein sequence, the
    same guarantee, slower to decide.
  - ``msprt``: the mixture SPRT of Johari, Koomen, Pekelis & Walsh (2017),
    :mod:`recallbench.stats._msprt`. With ``n`` differences of mean ``dbar_n`` and
    variance ``sigma^2`` (plug-in unless given), ``Lambda_n = sqrt(sigma^2 / (sigma^2 + n
    tau^2)) exp(n^2 tau^2 dbar_n^2 / (2 sigma^2 (sigma^2 + n tau^2)))``, the always-valid
    p-value ``p_n = min(p_{n-1}, 1 / Lambda_n)`` and the always-valid interval; checking
    after every query keeps ``P(p_T <= alpha) <= alpha`` at any stopping time ``T``
    (Ville's inequality). The treatment is accepted when ``p_n <= alpha`` with the interval
    above 0, the control when below.
  - ``sprt``: Wald's paired SPRT (:mod:`recallbench.stats._sprt`), ``H0: mu = 0`` against
    ``H1: mu = effect``, boundaries ``ln((1 - beta) / alpha)`` and ``ln(beta / (1 -
    alpha))``; no p-value or interval.

  ``min_queries`` units are needed before any test may decide (the bounded sequences need
  none for validity: their decision is held back, never changed; with the plug-in
  variance the mSPRT's type I error is only asymptotic, 0.38 / 0.26 / 0.068 at 20 / 30 /
  100 pairs on a skewed null, which its result states); ``max_queries``, when set, ends an
  undecided test.
* **Guardrails** with non-inferiority margins and the **sample-ratio check**
  (:mod:`recallbench.online._shadow_checks`).

Pairs are read up to ``settle_seconds`` (300) before now: the feedback on a search (reads,
validations) comes after it, and a pair whose value appeared later would enter the middle
of the sequence already tested, which the always-valid guarantee (one fixed order of
observations) does not cover. Guardrails read the same pairs. That order is the pairs' own,
``created_at`` (stamped by the proxy that made the pair) then ``query_id``, never the row
ids, which only say which proxy of a fleet committed first: every proxy's pairs decide as
one proxy's would (``store._shadow_runs_store``).

Only the sequential test can graduate; guardrails and the sample-ratio check can only hold
a graduation back or roll back. And the sequential test's decision is the one at its first
boundary crossing, which later pairs do not change. So checking the rule after every pair
graduates a treatment that is no better at most as often as the test crosses its upper
boundary under the null: at most ``alpha`` for the mSPRT (Ville's inequality; asymptotically
with the plug-in variance).

The decision, in order: fewer than ``min_queries`` differences → continue; an SRM mismatch
→ continue; a guardrail breached → rollback; the sequential test accepted the treatment →
graduate, the control → rollback; ``max_queries`` reached undecided → rollback (no gain
shown); else continue.

References:
    Waudby-Smith, I. & Ramdas, A. (2023). Estimating means of bounded random variables by
    betting. JRSS-B 86(1), 1-27. The default test.
    Johari, R., Koomen, P., Pekelis, L. & Walsh, D. (2017). Peeking at A/B tests: why it
    matters, and what to do about it. KDD 2017, 1517-1525. The mSPRT and always-valid
    p-values and intervals.
    Wald, A. (1945). Sequential tests of statistical hypotheses. Ann. Math. Statist. 16(2).
    Radlinski, F., Kurup, M. & Joachims, T. (2008); Chapelle, O., Joachims, T., Radlinski, F.
    & Yue, Y. (2012): team-draft interleaving and its credit (the ``interleaving`` measure).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from recallbench.core._errors import ConfigError
from recallbench.core._query_key import query_key
from recallbench.online._shadow_checkpoint import Reads, stored_decision
from recallbench.online._shadow_decision import Decision
from recallbench.online._shadow_progress import Progress
from recallbench.online._shadow_rule import GraduationRule
from recallbench.online._shadow_score import (
    PairScore,
    window_end,
)
from recallbench.online._shadow_verdict import decision_of

if TYPE_CHECKING:
    from recallbench.store import ShadowTest, Store


def decide(
    rule: GraduationRule,
    rows: Sequence[Mapping[str, Any]],
    scores: Sequence[PairScore],
    sampled: tuple[int, int] | None = None,
    keys: Mapping[str, str] | None = None,
) -> Decision:
    """The rule's decision on the pairs ``rows`` and their ``scores`` (same order, oldest
    first); ``sampled``: distinct query texts of the test's window that were mirrored and
    that were not, for the sampling SRM; ``keys``: query id -> key of its logged text, the
    query unit (:mod:`._shadow_units`; a query without one is a unit of its own)."""
    if len(rows) != len(scores):
        raise ConfigError(f"decide: {len(rows)} rows but {len(scores)} scores")
    progress = Progress.start(rule)
    progress.add(rows, scores, keys or {})
    return decision_of(progress, sampled)


def decide_test(
    store: Store,
    test: ShadowTest,
    until: datetime | None = None,
    now: datetime | None = None,
    read: Reads | None = None,
) -> Decision:
    """:func:`decide` on the pairs the store holds for ``test``, up to ``until`` and at most
    up to ``now`` (default: the clock) less the rule's ``settle_seconds``: from the test's
    checkpoint and the pairs since (:mod:`recallbench.online._shadow_checkpoint`), the
    same decision; ``read``: the late evidence this command read already (tests decided
    together share it)."""
    rule = GraduationRule.of_test(test)
    settled = (now or datetime.now(UTC)) - timedelta(seconds=rule.settle_seconds)
    until = settled if until is None else min(until, settled)
    end = window_end(test, until)
    assert end is not None  # until is a moment
    sampled = None
    keys = None
    if rule.sample_percent is not None and rule.sample_percent < 100:
        logged = [
            entry for entry in store.query_log(since=test.started_at) if entry.created_at <= end
        ]
        keys = {entry.query_id: query_key(entry.text) for entry in logged}
        paired = store.shadow_query_ids(test.started_at, end, test.control, test.treatment)
        texts: dict[str, bool] = {}  # distinct texts, as the sampling hash normalises them
        for entry in logged:
            key = keys[entry.query_id]
            texts[key] = texts.get(key, False) or entry.query_id in paired
        mirrored = sum(texts.values())
        sampled = (mirrored, len(texts) - mirrored)
    return stored_decision(store, test, rule, end, keys, read, sampled)
