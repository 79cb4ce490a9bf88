"""`recallbench shadow`: shadow tests on live traffic (start, status, stop, graduate,
rollback, history), and `recallbench flags`: feature flags with a percentage rollout.

A shadow test names the control and treatment profiles that ``recallbench proxy --profile
CONTROL --shadow TREATMENT`` pairs, and fixes its graduation rule when it starts
(:mod:`recallbench.online._shadow_decide`); ``status`` evaluates the rule on the pairs
stored since, ``graduate`` records the decision and rolls the treatment out to 100% of the
flag named after the test.
"""

from __future__ import annotations

import getpass
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import click

from recallbench.cli._errors import reports_errors
from recallbench.cli._options import store_option, workspace_option
from recallbench.cli._run import make_console
from recallbench.cli._types import FiniteFloat
from recallbench.core._errors import ConfigError

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.online._sessions import VariantOutcomes
    from recallbench.online._shadow_decide import Decision
    from recallbench.store import FeatureFlag, ShadowTest, Store

EXIT_REFUSED = 1
"""``graduate`` / ``rollback`` when the rule does not say so (and no ``--force``)."""

actor_option = click.option(
    "--actor",
    default=None,
    help="Who takes the decision (default: the login name).",
)
format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json"]),
    default="table",
    show_default=True,
    help="A table for people or JSON for programs.",
)


def _actor(actor: str | None) -> str | None:
    if actor:
        return actor
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return None


@click.group()
def shadow() -> None:
    """Shadow tests: compare a candidate memory profile with the one in use on live traffic
    (pairs from `recallbench proxy --shadow`) and decide, sequentially, when to graduate it."""


@shadow.command(
    epilog="""\b
Examples:
  recallbench shadow start v2 --control server-memory --treatment agentrecall --interleaved
  recallbench shadow start v2 --control server-memory --treatment ./candidate.toml \\
      --measure ndcg@10 --min-queries 200 --guardrail latency_p95:+10% --guardrail error_rate:+1pt
  recallbench shadow start il --control server-memory --treatment agentrecall \\
      --interleaved --measure rr --unit session
Measures: interleaving (team-draft credit), rr and hit@k (what the agent read or validated
after a search, ranked in both lists): these need --interleaved (the proxy's --interleave);
ndcg@k (manual and judge labels of both lists) works either way. One observation per
distinct query text (or session): repeats of a text are left out. Guardrails (higher is
worse): latency_median, latency_p95, error_rate, empty_rate, tokens_mean, as NAME:+P%
(relative) or NAME:+X / NAME:+Npt.
"""
)
@click.argument("name")
@click.option(
    "--control",
    required=True,
    metavar="PROFILE",
    help="The profile in use (the proxy's --profile): a shipped profile, a profile TOML "
    "file, or a name the proxy has logged shadow pairs under.",
)
@click.option(
    "--treatment",
    required=True,
    metavar="PROFILE",
    help="The candidate profile (the proxy's --shadow), given as --control is.",
)
@click.option(
    "--measure",
    default=None,
    help="The primary paired measure (default: interleaving with --interleaved, else ndcg@10 "
    "from labels). rr, hit@k and interleaving need --interleaved.",
)
@click.option(
    "--interleaved",
    is_flag=True,
    help="The proxy runs with --interleave: the agent is shown both lists merged, so its reads "
    "are evidence about both. Without it the agent sees the control's list only, and a "
    "measure from its reads (rr, hit@k) would favour the control: refused.",
)
@click.option(
    "--unit",
    type=click.Choice(["session", "query"]),
    default="session",
    show_default=True,
    help="One observation per session (searches of a session are correlated) or per "
    "distinct query text (normalised as the sampling hash does: case and punctuation do "
    "not count; for short, unrelated sessions); repeats are left out.",
)
@click.option(
    "--method",
    type=click.Choice(["betting", "empirical_bernstein", "msprt", "sprt"]),
    default="betting",
    show_default=True,
    help="betting: an always-valid confidence sequence for bounded differences, valid at "
    "every n with no assumption (Waudby-Smith & Ramdas 2023); empirical_bernstein: the "
    "same guarantee, slower; msprt: valid only asymptotically (normal differences, large "
    "n); sprt: Wald's, for a stated effect.",
)
@click.option(
    "--alpha",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Type I error over the whole test.",
)
@click.option(
    "--min-queries",
    type=click.IntRange(min=2),
    default=100,
    show_default=True,
    help="Measured pairs before any decision.",
)
@click.option(
    "--max-queries",
    type=click.IntRange(min=2),
    default=None,
    help="End an undecided test here (rollback: no gain shown).",
)
@click.option(
    "--tau",
    type=FiniteFloat(0, min_open=True),
    default=0.1,
    show_default=True,
    help="mSPRT mixing standard deviation (the effect size it is quickest for).",
)
@click.option(
    "--effect",
    type=FiniteFloat(0, min_open=True),
    default=0.05,
    show_default=True,
    help="SPRT: the minimum mean difference to detect.",
)
@click.option(
    "--beta",
    type=FiniteFloat(0, 1, min_open=True, max_open=True),
    default=0.2,
    show_default=True,
    help="SPRT: type II error.",
)
@click.option(
    "--guardrail",
    "guardrail_specs",
    multiple=True,
    metavar="NAME:+MARGIN",
    help="A guardrail and its non-inferiority margin (repeatable; adds to or replaces the "
    "defaults latency_p95:+20%, error_rate:+1pt, empty_rate:+2pt).",
)
@click.option("--no-default-guardrails", is_flag=True, help="Only the --guardrail ones.")
@click.option(
    "--sample-percent",
    type=FiniteFloat(0, 100, min_open=True),
    default=None,
    help="The proxy's --shadow-percent, for the sample-ratio check of mirrored searches.",
)
@click.option(
    "--flag",
    "flag_name",
    default=None,
    metavar="FLAG",
    help="The feature flag graduate / rollback set (default: the test's name).",
)
@click.option(
    "--settle-seconds",
    type=FiniteFloat(0),
    default=300,
    show_default=True,
    help="Leave pairs younger than this out of decisions (their feedback may still come).",
)
@store_option
@workspace_option
@actor_option
@reports_errors
def start(
    name: str,
    control: str,
    treatment: str,
    measure: str | None,
    interleaved: bool,
    unit: str,
    method: str,
    alpha: float,
    min_queries: int,
    max_queries: int | None,
    tau: float,
    effect: float,
    beta: float,
    guardrail_specs: Sequence[str],
    no_default_guardrails: bool,
    sample_percent: float | None,
    settle_seconds: float,
    flag_name: str | None,
    store_url: str | None,
    workspace: str,
    actor: str | None,
) -> None:
    """Start the shadow test NAME with its graduation rule, fixed from now on."""
    from recallbench.online._shadow_decide import GraduationRule, Margin, Method, parse_guardrail
    from recallbench.online._shadow_profiles import resolve_profiles
    from recallbench.store import open_store

    rule_defaults = GraduationRule()
    guards: dict[str, Margin] = {} if no_default_guardrails else dict(rule_defaults.guardrails)
    for spec in guardrail_specs:
        guard, margin = parse_guardrail(spec)
        guards[guard] = margin
    if measure is None:
        measure = "interleaving" if interleaved else "ndcg@10"
    rule = GraduationRule(
        measure=measure.strip().lower(),
        interleaved=interleaved,
        unit="session" if unit == "session" else "query",
        method=cast("Method", method),
        alpha=alpha,
        min_queries=min_queries,
        max_queries=max_queries,
        tau=tau,
        effect=effect,
        beta=beta,
        guardrails=guards,
        sample_percent=sample_percent,
        settle_seconds=settle_seconds,
        flag=flag_name,
    )
    data = rule.to_dict()
    with open_store(store_url, workspace) as store:
        sides = resolve_profiles(
            {"--control": control, "--treatment": treatment}, store.shadow_profiles
        )
        test = store.start_shadow_test(
            name,
            sides["--control"],
            sides["--treatment"],
            rule.measure,
            data,
            data["guardrails"],
            alpha=rule.alpha,
            actor=_actor(actor),
        )
    console = make_console()
    guards_text = ", ".join(f"{g} {m.describe()}" for g, m in guards.items()) or "none"
    console.print(
        f"started shadow test {test.name}: {test.control} (control) vs {test.treatment} "
        f"(treatment) on {rule.measure}, {rule.method} alpha {rule.alpha:g}, at least "
        f"{rule.min_queries} measured {rule.unit} units ("
        f"{'interleaved' if interleaved else 'mirrored: the agent sees the control only'}); "
        f"guardrails: {guards_text}",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@shadow.command(
    epilog="""\b
Examples:
  recallbench shadow status                      # every test, one line each
  recallbench shadow status hybrid-v2            # the evidence and what the rule says now
  recallbench shadow status hybrid-v2 --format json
"""
)
@click.argument("name", required=False)
@format_option
@store_option
@workspace_option
@reports_errors
def status(name: str | None, output_format: str, store_url: str | None, workspace: str) -> None:
    """What the rule of test NAME (or of every test) decides on the pairs stored so far,
    with the evidence: pairs, paired mean difference, always-valid interval and p-value,
    guardrails, sample-ratio checks, and session outcomes per system when recorded."""
    from recallbench.online._shadow_decide import decide_test
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        tests = [_test(store, name)] if name else store.shadow_tests()
        found = [(test, decide_test(store, test), _outcomes(store, test)) for test in tests]
    if output_format == "json":
        payload = [
            {
                **_test_json(test),
                "now": decision.to_dict(),
                "sessions": [_plain(_asdict(group)) for group in groups],
            }
            for test, decision, groups in found
        ]
        click.echo(json.dumps(payload[0] if name else payload, indent=2, allow_nan=False))
        return
    console = make_console()
    if not found:
        console.print("no shadow tests in this workspace", highlight=False, markup=False)
        return
    if name is None:
        _overview(console, found)
        return
    test, decision, groups = found[0]
    _details(console, test, decision, groups)


@shadow.command()
@click.argument("name")
@store_option
@workspace_option
@actor_option
@reports_errors
def stop(name: str, store_url: str | None, workspace: str, actor: str | None) -> None:
    """Stop the shadow test NAME (its pairs after now no longer count), recording the
    evidence as it stands."""
    from recallbench.online._shadow_decide import decide_test
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        test = _test(store, name)
        decision = decide_test(store, test)
        store.log_shadow_decision(name, "stop", decision.to_dict(), actor=_actor(actor))
    make_console().print(
        f"stopped shadow test {name} after {decision.pairs} pairs "
        f"(the rule said {decision.decision}: {decision.reason})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@shadow.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Graduate even though the rule does not say so.")
@store_option
@workspace_option
@actor_option
@reports_errors
def graduate(
    name: str, force: bool, store_url: str | None, workspace: str, actor: str | None
) -> None:
    """Graduate the treatment of test NAME: refused (exit 1) unless its rule says graduate,
    or --force; records the decision with its evidence and sets the test's feature flag
    (start --flag; default NAME) to the treatment for 100% (the control as its fallback)."""
    _end(name, "graduate", force, store_url, workspace, actor)


@shadow.command()
@click.argument("name")
@click.option("--force", is_flag=True, help="Roll back even though the rule does not say so.")
@store_option
@workspace_option
@actor_option
@reports_errors
def rollback(
    name: str, force: bool, store_url: str | None, workspace: str, actor: str | None
) -> None:
    """Roll back the treatment of test NAME: refused (exit 1) unless its rule says
    rollback, or --force; records the decision and sets the test's feature flag to the
    control for 100%."""
    _end(name, "rollback", force, store_url, workspace, actor)


def _end(
    name: str,
    verdict: Literal["graduate", "rollback"],
    force: bool,
    store_url: str | None,
    workspace: str,
    actor: str | None,
) -> None:
    from recallbench.online._shadow_decide import decide_test
    from recallbench.store import open_store

    console = make_console()
    with open_store(store_url, workspace) as store:
        test = _test(store, name)
        decision = decide_test(store, test)
        if decision.decision != verdict and not force:
            console.print(
                f"not {verdict}d: the rule of {name} says {decision.decision} "
                f"({decision.reason}); --force to {verdict} anyway",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )
            raise SystemExit(EXIT_REFUSED)
        evidence = {**decision.to_dict(), "forced": decision.decision != verdict}
        store.log_shadow_decision(name, verdict, evidence, actor=_actor(actor))
        variant = test.treatment if verdict == "graduate" else test.control
        flag = _flag_of(test)
        store.set_flag(flag, variant, 100, fallback=test.control)
    forced = " (forced)" if evidence["forced"] else ""
    console.print(
        f"{verdict}d{forced} shadow test {name}: flag {flag} = {variant} for 100%",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@shadow.command()
@click.argument("name")
@format_option
@store_option
@workspace_option
@reports_errors
def history(name: str, output_format: str, store_url: str | None, workspace: str) -> None:
    """Every decision taken on test NAME, oldest first, with who took it and on what."""
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        decisions = store.shadow_decisions(name)
    if output_format == "json":
        rows = [
            {
                "at": d.at.isoformat(),
                "decision": d.decision,
                "actor": d.actor,
                "evidence": d.evidence,
            }
            for d in decisions
        ]
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

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
    make_console().print(table)


# ---------------------------------------------------------------- flags


@click.group()
def flags() -> None:
    """Feature flags per workspace: which memory profile a session gets, by a deterministic
    hash of its id and a percentage rollout."""


@flags.command(
    "set",
    epilog="""\b
Examples:
  recallbench flags set memory hybrid --percent 10 --fallback lexical
  recallbench flags set memory hybrid --percent 100
""",
)
@click.argument("name")
@click.argument("variant")
@click.option(
    "--percent",
    type=FiniteFloat(0, 100),
    required=True,
    help="Share of the units (sessions, users) that get VARIANT, 0-100.",
)
@click.option("--fallback", default=None, help="What the other units get (default: off).")
@store_option
@workspace_option
@reports_errors
def set_flag(
    name: str,
    variant: str,
    percent: float,
    fallback: str | None,
    store_url: str | None,
    workspace: str,
) -> None:
    """Set flag NAME: PERCENT of the units get VARIANT. The earlier states stay as its
    history."""
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        flag = store.set_flag(name, variant, percent, fallback=fallback)
    make_console().print(
        f"flag {flag.name} = {flag.variant} for {flag.percent:g}%"
        + (f", {flag.fallback} otherwise" if flag.fallback else ", off otherwise"),
        highlight=False,
        markup=False,
    )


@flags.command("list")
@click.option("--history", "history_of", metavar="NAME", help="Every state of flag NAME.")
@format_option
@store_option
@workspace_option
@reports_errors
def list_flags(
    history_of: str | None, output_format: str, store_url: str | None, workspace: str
) -> None:
    """The flags of the workspace as they are now (or the history of one)."""
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        found = store.flag_history(history_of) if history_of else store.flags()
    if output_format == "json":
        click.echo(json.dumps([_flag_json(flag) for flag in found], indent=2))
        return
    console = make_console()
    if not found:
        console.print("no feature flags", highlight=False, markup=False)
        return
    from rich.table import Table

    table = Table()
    for column in ("flag", "variant", "percent", "otherwise", "updated"):
        table.add_column(column)
    for flag in found:
        table.add_row(
            flag.name,
            flag.variant,
            f"{flag.percent:g}%",
            flag.fallback or "off",
            flag.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    console.print(table)


# ---------------------------------------------------------------- helpers


def _test(store: Store, name: str) -> ShadowTest:
    test = store.shadow_test(name)
    if test is None:
        raise ConfigError(f"no shadow test named {name!r} in workspace {store.workspace!r}")
    return test


def _flag_of(test: ShadowTest) -> str:
    """The feature flag a test rolls out: its rule's ``flag``, else its name."""
    flag = test.rule.get("flag")
    return flag if isinstance(flag, str) and flag else test.name


def _outcomes(store: Store, test: ShadowTest) -> list[VariantOutcomes]:
    """Session outcomes per system over the test's window, when any were recorded: a
    session's system is the variant the flag named after the test gave it when it started,
    else the control (in shadow mode the agent sees the control's answers), or
    ``interleaved`` when its searches were shown interleaved."""
    from recallbench.online._sessions import outcomes_by_variant, session_summaries
    from recallbench.online._shadow_score import pairs_of
    from recallbench.telemetry._flags import variant_at

    summaries = session_summaries(store, since=test.started_at, until=test.stopped_at)
    if not any(s.outcome is not None or s.success is not None for s in summaries):
        return []
    flag = _flag_of(test)
    history = store.flag_history(flag)
    interleaved = {
        row["session_id"] for row in pairs_of(store, test) if row.get("interleaved") is not None
    }

    def variant_of(summary: Any) -> str:
        if history:
            return variant_at(history, flag, summary.session_id, summary.started_at, test.control)
        return "interleaved" if summary.session_id in interleaved else test.control

    return outcomes_by_variant(summaries, variant_of)


def _overview(console: Console, found: list[tuple[ShadowTest, Decision, Any]]) -> None:
    from rich.table import Table

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
    for test, decision, _ in found:
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


def _details(
    console: Console, test: ShadowTest, decision: Decision, groups: list[VariantOutcomes]
) -> None:
    from rich.table import Table

    window = test.started_at.strftime("%Y-%m-%d %H:%M")
    console.print(
        f"shadow test {test.name} ({test.status}, since {window}): {test.control} (control) "
        f"vs {test.treatment} (treatment)",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )
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
    if groups:
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
    console.print(
        f"the rule says: {decision.decision} ({decision.reason})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


def _test_json(test: ShadowTest) -> dict[str, Any]:
    return {
        "name": test.name,
        "status": test.status,
        "control": test.control,
        "treatment": test.treatment,
        "measure": test.measure,
        "alpha": test.alpha,
        "started_at": test.started_at.isoformat(),
        "stopped_at": None if test.stopped_at is None else test.stopped_at.isoformat(),
        "rule": test.rule,
    }


def _flag_json(flag: FeatureFlag) -> dict[str, Any]:
    return {
        "name": flag.name,
        "variant": flag.variant,
        "percent": flag.percent,
        "fallback": flag.fallback,
        "updated_at": flag.updated_at.isoformat(),
    }


def _asdict(group: VariantOutcomes) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(group)


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in data.items()
    }


def _num(value: object) -> str:
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


def _interval(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return "-"
    return f"[{_num(interval[0])}, {_num(interval[1])}]"
