"""Feature flags in the store (m008): each state a flag is set to is appended, so that its
latest state is the flag and the earlier ones its history.

A mixin of :class:`~recallbench.store.Store` (through ``TelemetryStore``): every read and
write is confined to the store's workspace.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine, select

from recallbench.core._errors import ConfigError
from recallbench.store._engine import transaction
from recallbench.store._statements import mine
from recallbench.store._tables import as_utc, feature_flags
from recallbench.store._telemetry_rows import FeatureFlag, feature_flag


class FlagStore:
    """Feature flags of one workspace (mixed into ``Store``)."""

    _engine: Engine
    workspace: str

    def set_flag(
        self,
        name: str,
        variant: str,
        percent: float,
        fallback: str | None = None,
        at: datetime | None = None,
    ) -> FeatureFlag:
        """Set the feature flag ``name``: ``percent`` (0-100) of the units get ``variant``,
        the others ``fallback`` (None: the flag is off for them). Appends a row: the flag's
        earlier states stay as its history (:meth:`flag_history`). ConfigError for an empty
        name or variant or a percent outside [0, 100]."""
        if not name or not name.strip():
            raise ConfigError("feature flag: the name must not be empty")
        if not variant or not variant.strip():
            raise ConfigError(f"feature flag {name}: the variant must not be empty")
        if (
            isinstance(percent, bool)
            or not isinstance(percent, (int, float))
            or not 0 <= percent <= 100
        ):
            raise ConfigError(f"feature flag {name}: percent must be in [0, 100], got {percent!r}")
        flag = FeatureFlag(
            name=name,
            variant=variant,
            percent=float(percent),
            fallback=fallback,
            updated_at=as_utc(at) if at is not None else datetime.now(UTC),
        )
        with transaction(self._engine, write=True) as connection:
            connection.execute(
                feature_flags.insert().values(
                    workspace_id=self.workspace,
                    name=flag.name,
                    variant=flag.variant,
                    percent=flag.percent,
                    fallback=flag.fallback,
                    updated_at=flag.updated_at,
                )
            )
        return flag

    def flags(self) -> list[FeatureFlag]:
        """Every feature flag of this workspace in its latest state, by name."""
        latest: dict[str, FeatureFlag] = {}
        for flag in self._flag_rows(None):
            latest[flag.name] = flag  # rows come oldest first: the last one stays
        return [latest[name] for name in sorted(latest)]

    def flag_history(self, name: str) -> list[FeatureFlag]:
        """Every state the feature flag ``name`` had, oldest first (empty when never set)."""
        return self._flag_rows(name)

    def _flag_rows(self, name: str | None) -> list[FeatureFlag]:
        query = select(feature_flags).where(mine(feature_flags, self.workspace))
        if name is not None:
            query = query.where(feature_flags.c.name == name)
        query = query.order_by(feature_flags.c.updated_at, feature_flags.c.id)
        with transaction(self._engine) as connection:
            return [feature_flag(row) for row in connection.execute(query).mappings()]
