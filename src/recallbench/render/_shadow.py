"""Views of shadow tests and feature flags in the terminal: every test on one line each
(:func:`render_overview`), one test's evidence and what its rule says
(:func:`render_status`), the decisions taken on a test (:func:`render_decisions`), and
the flags (:func:`render_flags`). The status and its JSON are made by
:mod:`recallbench.online._shadow_status`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.online._sessions import VariantOutcomes
    from recallbench.online._shadow_decision import Decision
    from recallbench.online._shadow_status import ShadowStatus
    from recallbench.store import FeatureFlag, ShadowDecision


def _num(value: object) -> str:
    """A number in a cell: 4 significant digits, ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.4g}"
    return str(value)


def _interval(bounds: tuple[float, float] | None) -> str:
    """``[low, high]``, ``-`` for none."""
    if bounds is None:
        return "-"
    return f"[{_num(bounds[0])}, {_num(bounds[1])}]"


def render_overview(console: Console, statuses: Sequence[ShadowStatus]) -> None:
    """Every test on one line: its profiles, pairs, estimate and what its rule says."""
    table = Table(title="shadow tests")
    for column in (
        "test",
        "status",
        "control",
        "treatment",
        "measure",
        "pairs",
        "n",
        "mean",
        "interval",
        "p",
        "rule says",
    ):
        table.add_column(column)
    for status in statuses:
        test, decision = status.test, status.decision
        table.add_row(
            test.name,
            test.status,
            test.control,
            test.treatment,
            test.measure,
            str(decision.pairs),
            str(decision.n),
            _num(decision.mean),
            _interval(decision.interval),
            _num(decision.pvalue),
            decision.decision,
        )
    console.print(table)


def render_status(console: Console, status: ShadowStatus) -> None:
    """One test: the primary measure's sequential test, the paired measures, the
    interleaving credit, guardrails, sample-ratio checks, session outcomes per system, and
    what the rule says."""
    test, decision = status.test, status.decision
    window = test.started_at.strftime("%Y-%m-%d %H:%M")
    console.print(
        f"shadow test {test.name} ({test.status}, since {window}): {test.control} (control) "
        f"vs {test.treatment} (treatment)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
    _primary(console, decision)
    secondary = Table(title="paired measures (treatment - control)")
    for column in ("measure", "pairs", "mean diff"):
        secondary.add_column(column)
    for measure, value in decision.secondary.items():
        secondary.add_row(measure, str(value.n), _num(value.mean))
    console.print(secondary)
    if decision.interleaving is not None:
        il = decision.interleaving
        console.print(
            f"interleaving: {il['wins']} wins, {il['ties']} ties, {il['losses']} losses; "
            f"sign test p {_num(il['sign_test_p'])}, preference {_num(il['preference'])}"
            + (
                f"; lists of unequal length in {il['unequal_lengths']:.0%} of the pairs "
                "(credited to the depth both reach)"
                if il.get("unequal_lengths")
                else ""
            ),
            highlight=False,
            markup=False,
        )
    _guardrails(console, decision)
    if status.sessions:
        _sessions(console, status.sessions)
    console.print(
        f"the rule says: {decision.decision} ({decision.reason})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _primary(console: Console, decision: Decision) -> None:
    primary = Table(title=f"primary: {decision.measure} ({decision.method})")
    for column in (
        "pairs",
        "measured",
        f"{decision.unit} units",
        "repeats left out",
        "n used",
        "estimate",
        "always-valid CI",
        "p",
        "llr",
        "test",
    ):
        primary.add_column(column)
    primary.add_row(
        str(decision.pairs),
        str(decision.measured),
        str(decision.units),
        str(decision.repeats),
        str(decision.n),
        _num(decision.estimate),
        _interval(decision.interval),
        _num(decision.pvalue),
        _num(decision.llr),
        decision.sequential,
    )
    console.print(primary)
    console.print(f"assumes: {decision.assumption}", highlight=False, markup=False)
    for warning in decision.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, markup=False)
    if decision.not_interleaved:
        console.print(
            f"{decision.not_interleaved} pairs with reads were shown without interleaving: "
            "no click measure reads them (the agent saw the control's list only)",
            highlight=False,
            markup=False,
        )


def _guardrails(console: Console, decision: Decision) -> None:
    guards = Table(title="guardrails (higher is worse)")
    for column in ("guardrail", "control", "treatment", "margin", "limit", "holds"):
        guards.add_column(column)
    for check in decision.guardrails:
        holds = {True: "yes", False: "NO", None: "not measured"}[check.passed]
        guards.add_row(
            check.name,
            _num(check.control),
            _num(check.treatment),
            check.margin,
            _num(check.limit),
            holds,
        )
    console.print(guards)
    for srm in decision.srm:
        flag = "MISMATCH" if srm.mismatch else "ok"
        counts = ", ".join(
            f"{arm} {count}" for arm, count in zip(srm.arms, srm.observed, strict=True)
        )
        console.print(
            f"sample ratio ({srm.name}): {counts}; p {_num(srm.pvalue)} {flag}",
            highlight=False,
            markup=False,
        )


def _sessions(console: Console, groups: Sequence[VariantOutcomes]) -> None:
    sessions = Table(title="session outcomes per system")
    for column in (
        "system",
        "sessions",
        "with outcome",
        "success rate",
        "mean outcome",
        "searches",
        "re-search rate",
        "golden MRR",
    ):
        sessions.add_column(column)
    for group in groups:
        sessions.add_row(
            group.variant,
            str(group.sessions),
            str(group.with_outcome),
            _num(group.success_rate),
            _num(group.mean_outcome),
            _num(group.mean_searches),
            _num(group.mean_re_search_rate),
            _num(group.mean_mrr),
        )
    console.print(sessions)


def render_decisions(console: Console, name: str, decisions: Sequence[ShadowDecision]) -> None:
    """The decisions taken on the test ``name``, oldest first: when, which, by whom, and
    the evidence it was taken on."""
    table = Table(title=f"shadow test {name}: decisions")
    for column in ("at", "decision", "actor", "pairs", "n", "mean", "p", "why"):
        table.add_column(column)
    for d in decisions:
        e = d.evidence
        forced = " (forced)" if e.get("forced") else ""
        table.add_row(
            d.at.strftime("%Y-%m-%d %H:%M:%S"),
            d.decision + forced,
            d.actor or "",
            _num(e.get("pairs")),
            _num(e.get("n")),
            _num(e.get("mean")),
            _num(e.get("pvalue")),
            str(e.get("reason", "rule fixed" if d.decision == "start" else "")),
        )
    console.print(table)


def render_flags(console: Console, flags: Sequence[FeatureFlag]) -> None:
    """The flags' states: variant, percent, what the other units get, when set."""
    table = Table()
    for column in ("flag", "variant", "percent", "otherwise", "updated"):
        table.add_column(column)
    for flag in flags:
        table.add_row(
            flag.name,
            flag.variant,
            f"{flag.percent:g}%",
            flag.fallback or "off",
            flag.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    console.print(table)
