"""Shadow tests in the store (m008): a test's graduation rule and guardrails, fixed when
it starts, and every decision taken on it (start, graduate, rollback, stop), which also
ends it.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, RowMapping, select, update
from sqlalchemy.exc import IntegrityError

from recallbench.core._errors import ConfigError
from recallbench.store._engine import transaction
from recallbench.store._statements import mine
from recallbench.store._tables import as_utc, shadow_decisions, shadow_tests
from recallbench.store._telemetry_rows import (
    SHADOW_DECISIONS,
    ShadowDecision,
    ShadowDecisionKind,
    ShadowTest,
    evidence_json,
    shadow_decision,
    shadow_test,
)


class ShadowTestStore:
    """Shadow tests and their decisions of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def start_shadow_test(
        self,
        name: str,
        control: str,
        treatment: str,
        measure: str,
        rule: Mapping[str, Any],
        guardrails: Mapping[str, Any] | None = None,
        alpha: float = 0.05,
        actor: str | None = None,
        at: datetime | None = None,
    ) -> ShadowTest:
        """Start the shadow test ``name`` (status ``running``) with its graduation rule and
        guardrails, fixed from now on, and record a ``start`` decision whose evidence is
        the rule. ConfigError when the name is taken in this workspace or an argument is
        out of range (empty names, control = treatment, alpha outside (0, 1))."""
        for label, value in (("name", name), ("control", control), ("treatment", treatment)):
            if not value or not value.strip():
                raise ConfigError(f"shadow test: {label} must not be empty")
        if not measure:
            raise ConfigError("shadow test: measure must not be empty")
        if control == treatment:
            raise ConfigError(f"shadow test {name}: control and treatment are both {control!r}")
        if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
            raise ConfigError(f"shadow test {name}: alpha must be in (0, 1), got {alpha!r}")
        at = as_utc(at) if at is not None else datetime.now(UTC)
        try:
            rule_text = evidence_json(rule)
            guard_text = evidence_json(guardrails or {})
        except ValueError as error:
            raise ConfigError(f"shadow test {name}: the rule is {error}") from None
        row = {
            "workspace_id": self.workspace,
            "name": name,
            "control": control,
            "treatment": treatment,
            "measure": measure,
            "guardrails": guard_text,
            "rule": rule_text,
            "alpha": float(alpha),
            "started_at": at,
            "stopped_at": None,
            "status": "running",
        }
        taken_message = (
            f"a shadow test named {name!r} exists already in workspace "
            f"{self.workspace!r}: choose another name"
        )
        try:
            with transaction(self._engine, write=True) as connection:
                taken = select(shadow_tests.c.id).where(
                    mine(shadow_tests, self.workspace), shadow_tests.c.name == name
                )
                if connection.execute(taken).first() is not None:
                    raise ConfigError(taken_message)
                inserted = connection.execute(shadow_tests.insert().values(**row))
                key = inserted.inserted_primary_key
                assert key is not None
                decision = {
                    "workspace_id": self.workspace,
                    "test_id": key[0],
                    "at": at,
                    "decision": "start",
                    "evidence": _json_object({"rule": rule, "guardrails": guardrails or {}}),
                    "actor": actor,
                }
                connection.execute(shadow_decisions.insert().values(**decision))
        except IntegrityError:  # started by another process since the check (PostgreSQL)
            raise ConfigError(taken_message) from None
        found = self.shadow_test(name)
        assert found is not None
        return found

    def shadow_test(self, name: str) -> ShadowTest | None:
        """The shadow test ``name`` of this workspace, None when there is none."""
        query = select(shadow_tests).where(
            mine(shadow_tests, self.workspace), shadow_tests.c.name == name
        )
        with transaction(self._engine) as connection:
            row = connection.execute(query).mappings().first()
        return None if row is None else shadow_test(row)

    def shadow_tests(self) -> list[ShadowTest]:
        """This workspace's shadow tests, oldest first."""
        query = (
            select(shadow_tests)
            .where(mine(shadow_tests, self.workspace))
            .order_by(shadow_tests.c.started_at, shadow_tests.c.id)
        )
        with transaction(self._engine) as connection:
            return [shadow_test(row) for row in connection.execute(query).mappings()]

    def log_shadow_decision(
        self,
        name: str,
        decision: ShadowDecisionKind,
        evidence: Mapping[str, Any],
        actor: str | None = None,
        at: datetime | None = None,
    ) -> ShadowDecision:
        """Record a decision on the shadow test ``name``; ``graduate``, ``rollback`` and
        ``stop`` also end the test (status ``graduated``, ``rolled_back``, ``stopped``;
        ``stopped_at`` set when it was not), in the same transaction.

        ConfigError for an unknown test or decision, a ``stop`` of a test that is not
        running, or a graduation or rollback of a test already graduated or rolled back."""
        if decision not in SHADOW_DECISIONS or decision == "start":
            allowed = ", ".join(kind for kind in SHADOW_DECISIONS if kind != "start")
            raise ConfigError(f"shadow test {name}: decision {decision!r} is not one of {allowed}")
        try:
            evidence_text = evidence_json(evidence)
        except ValueError as error:
            raise ConfigError(f"shadow test {name}: the evidence is {error}") from None
        at = as_utc(at) if at is not None else datetime.now(UTC)
        ends = {"graduate": "graduated", "rollback": "rolled_back", "stop": "stopped"}
        with transaction(self._engine, write=True) as connection:
            test = self._test_row(connection, name)
            status = test["status"]
            if decision == "stop" and status != "running":
                raise ConfigError(f"shadow test {name} is {status}, not running: nothing to stop")
            if decision in ("graduate", "rollback") and status in ("graduated", "rolled_back"):
                raise ConfigError(f"shadow test {name} is {status} already")
            if decision in ends:
                # compare and set on the status read above: of two deciders at once (two
                # CLIs, two hosts) the second finds it changed and records nothing. SQLite's
                # write transaction serialises them already; PostgreSQL's read committed
                # does not, and its UPDATE waits for the first and then matches no row.
                ended = connection.execute(
                    update(shadow_tests)
                    .where(shadow_tests.c.id == test["id"], shadow_tests.c.status == status)
                    .values(status=ends[decision], stopped_at=test["stopped_at"] or at)
                )
                if ended.rowcount != 1:
                    now = self._test_row(connection, name)["status"]
                    raise ConfigError(
                        f"shadow test {name} was decided meanwhile (it is {now} now): "
                        "nothing recorded"
                    )
            connection.execute(
                shadow_decisions.insert().values(
                    workspace_id=self.workspace,
                    test_id=test["id"],
                    at=at,
                    decision=decision,
                    evidence=evidence_text,
                    actor=actor,
                )
            )
        return ShadowDecision(name, at, decision, json.loads(evidence_text), actor)

    def shadow_decisions(self, name: str) -> list[ShadowDecision]:
        """Every decision taken on the shadow test ``name``, oldest first (ConfigError when
        there is no such test)."""
        with transaction(self._engine) as connection:
            test = self._test_row(connection, name)
            query = (
                select(shadow_decisions)
                .where(shadow_decisions.c.test_id == test["id"])
                .order_by(shadow_decisions.c.at, shadow_decisions.c.id)
            )
            rows = list(connection.execute(query).mappings())
        return [shadow_decision(row, name) for row in rows]

    def _test_row(self, connection: Connection, name: str) -> RowMapping:
        query = select(shadow_tests).where(
            mine(shadow_tests, self.workspace), shadow_tests.c.name == name
        )
        row = connection.execute(query).mappings().first()
        if row is None:
            raise ConfigError(f"no shadow test named {name!r} in workspace {self.workspace!r}")
        return row


def _json_object(value: Mapping[str, Any]) -> str:
    try:
        return evidence_json(value)
    except ValueError as error:
        raise ConfigError(f"shadow test: {error}") from None
