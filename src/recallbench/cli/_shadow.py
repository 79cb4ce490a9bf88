"""`recallbench shadow`: shadow tests on live traffic (start, status, stop, graduate,
rollback, history).

A shadow test names the control and treatment profiles that ``recallbench proxy --profile
CONTROL --shadow TREATMENT`` pairs, and fixes its graduation rule when it starts
(:mod:`recallbench.online._shadow_rule`); ``status`` evaluates the rule on the pairs
stored since, ``graduate`` records the decision and rolls the treatment out to 100% of the
flag named after the test.

The tests' life in the store is :mod:`recallbench.online._shadow_tests`, their status and
its JSON :mod:`recallbench.online._shadow_status`, the tables
:mod:`recallbench.render._shadow`. Feature flags: `recallbench flags`
(:mod:`recallbench.cli._flags`).
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import click

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors
from recallbench.cli._options import format_option, store_option, workspace_option
from recallbench.cli._types import FiniteFloat

if TYPE_CHECKING:
    from recallbench.online._shadow_tests import Ending

EXIT_REFUSED = 1
"""``graduate`` / ``rollback`` when the rule does not say so (and no ``--force``)."""

actor_option = click.option(
    "--actor",
    default=None,
    help="Who takes the decision (default: the login name).",
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
    from recallbench.online._shadow_rule import (
        GraduationRule,
        Method,
        guardrail_margins,
        primary_measure,
    )
    from recallbench.online._shadow_tests import start_test
    from recallbench.store import open_store

    rule = GraduationRule(
        measure=primary_measure(measure, interleaved),
        interleaved=interleaved,
        unit="session" if unit == "session" else "query",
        method=cast("Method", method),
        alpha=alpha,
        min_queries=min_queries,
        max_queries=max_queries,
        tau=tau,
        effect=effect,
        beta=beta,
        guardrails=guardrail_margins(guardrail_specs, defaults=not no_default_guardrails),
        sample_percent=sample_percent,
        settle_seconds=settle_seconds,
        flag=flag_name,
    )
    with open_store(store_url, workspace) as store:
        test = start_test(store, name, control, treatment, rule, actor=_actor(actor))
    guards_text = ", ".join(f"{g} {m.describe()}" for g, m in rule.guardrails.items()) or "none"
    make_console().print(
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
    from recallbench.online._shadow_status import shadow_statuses
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        found = shadow_statuses(store, name)
    if output_format == "json":
        payload = [found_status.to_dict() for found_status in found]
        click.echo(json.dumps(payload[0] if name else payload, indent=2, allow_nan=False))
        return
    console = make_console()
    if not found:
        console.print("no shadow tests in this workspace", highlight=False, markup=False)
        return
    from recallbench.render._shadow import render_overview, render_status

    if name is None:
        render_overview(console, found)
        return
    render_status(console, found[0])


@shadow.command()
@click.argument("name")
@store_option
@workspace_option
@actor_option
@reports_errors
def stop(name: str, store_url: str | None, workspace: str, actor: str | None) -> None:
    """Stop the shadow test NAME (its pairs after now no longer count), recording the
    evidence as it stands."""
    from recallbench.online._shadow_tests import stop_test
    from recallbench.store import open_store

    with open_store(store_url, workspace) as store:
        decision = stop_test(store, name, actor=_actor(actor))
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


PAST: dict[str, str] = {"graduate": "graduated", "rollback": "rolled back"}


def _end(
    name: str,
    verdict: Ending,
    force: bool,
    store_url: str | None,
    workspace: str,
    actor: str | None,
) -> None:
    from recallbench.online._shadow_tests import end_test
    from recallbench.store import open_store

    console = make_console()
    with open_store(store_url, workspace) as store:
        ended = end_test(store, name, verdict, force=force, actor=_actor(actor))
    done = PAST[verdict]
    if not ended.taken:
        console.print(
            f"not {done}: the rule of {name} says {ended.decision.decision} "
            f"({ended.decision.reason}); --force to {verdict} anyway",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        raise SystemExit(EXIT_REFUSED)
    forced = " (forced)" if ended.forced else ""
    console.print(
        f"{done}{forced} shadow test {name}: flag {ended.flag} = {ended.variant} for 100%",
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
        from recallbench.online._shadow_status import decision_json

        click.echo(json.dumps([decision_json(d) for d in decisions], indent=2))
        return
    from recallbench.render._shadow import render_decisions

    render_decisions(make_console(), name, decisions)
