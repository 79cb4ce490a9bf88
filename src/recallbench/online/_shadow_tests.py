"""A shadow test's life in the store: started with its graduation rule, looked up, stopped,
graduated or rolled back.

A test names the control and treatment profiles that ``recallbench proxy --profile CONTROL
--shadow TREATMENT`` pairs (:mod:`~recallbench.online._shadow_profiles`) and fixes its rule
when it starts (:mod:`~recallbench.online._shadow_rule`). Every step is logged as a
decision with the evidence it was taken on: ``stop`` records the rule's decision as it
stands; ``graduate`` and ``rollback`` are taken only when the rule says so (or forced),
and set the test's feature flag (:func:`flag_of`) to the treatment, or the control, for
100% of the units, the control as the fallback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from recallbench.core._errors import ConfigError

if TYPE_CHECKING:
    from recallbench.online._shadow_decision import Decision
    from recallbench.online._shadow_rule import GraduationRule
    from recallbench.store import ShadowTest, Store

Ending = Literal["graduate", "rollback"]
"""The decisions that end a test and set its flag."""


def start_test(
    store: Store,
    name: str,
    control: str,
    treatment: str,
    rule: GraduationRule,
    actor: str | None = None,
) -> ShadowTest:
    """Start the test ``name`` of ``control`` against ``treatment`` (profiles as
    ``--control`` and ``--treatment`` name them: ConfigError for a name the proxy cannot
    log pairs under) with ``rule``, fixed from now on."""
    from recallbench.online._shadow_profiles import resolve_profiles

    data = rule.to_dict()
    sides = resolve_profiles(
        {"--control": control, "--treatment": treatment}, store.shadow_profiles
    )
    return store.start_shadow_test(
        name,
        sides["--control"],
        sides["--treatment"],
        rule.measure,
        data,
        data["guardrails"],
        alpha=rule.alpha,
        actor=actor,
    )


def find_test(store: Store, name: str) -> ShadowTest:
    """The test ``name`` of the store's workspace; ConfigError when there is none."""
    test = store.shadow_test(name)
    if test is None:
        raise ConfigError(f"no shadow test named {name!r} in workspace {store.workspace!r}")
    return test


def flag_of(test: ShadowTest) -> str:
    """The feature flag a test rolls out: its rule's ``flag``, else its name."""
    flag = test.rule.get("flag")
    return flag if isinstance(flag, str) and flag else test.name


def stop_test(store: Store, name: str, actor: str | None = None) -> Decision:
    """Stop the test ``name`` (its pairs after now no longer count), recording the rule's
    decision as it stands, which is returned."""
    from recallbench.online._shadow_decide import decide_test

    test = find_test(store, name)
    decision = decide_test(store, test)
    store.log_shadow_decision(name, "stop", decision.to_dict(), actor=actor)
    return decision


@dataclass(frozen=True, slots=True)
class Ended:
    """What :func:`end_test` did: whether the ``verdict`` was taken, on what decision of
    the rule, and the flag it set to ``variant`` for 100% (when taken)."""

    test: ShadowTest
    verdict: Ending
    decision: Decision
    taken: bool
    flag: str
    variant: str

    @property
    def forced(self) -> bool:
        """Taken although the rule did not say so."""
        return self.taken and self.decision.decision != self.verdict


def end_test(
    store: Store, name: str, verdict: Ending, force: bool = False, actor: str | None = None
) -> Ended:
    """Graduate or roll back the test ``name``: not taken unless its rule says ``verdict``
    or ``force``; when taken, the decision is recorded with its evidence (``forced`` when
    the rule did not say so) and the test's flag set to the treatment (graduate) or the
    control (rollback) for 100%, the control otherwise."""
    from recallbench.online._shadow_decide import decide_test

    test = find_test(store, name)
    decision = decide_test(store, test)
    variant = test.treatment if verdict == "graduate" else test.control
    ended = Ended(
        test, verdict, decision, decision.decision == verdict or force, flag_of(test), variant
    )
    if not ended.taken:
        return ended
    evidence = {**decision.to_dict(), "forced": ended.forced}
    store.log_shadow_decision(name, verdict, evidence, actor=actor)
    store.set_flag(ended.flag, variant, 100, fallback=test.control)
    return ended
