"""Shared pydantic configuration for recallbench's immutable, versioned records."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Record(BaseModel):
    """An immutable record: unknown fields are errors, fields carry their docstrings."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        use_attribute_docstrings=True,
        validate_default=False,
    )


class Settings(Record):
    """A record read from a user's configuration (a profile, ``recallbench.toml``): as a
    :class:`Record`, and a NaN or infinite number (TOML has ``nan`` and ``inf``) is a
    located error, not a threshold every comparison fails or a timeout that never ends."""

    model_config = ConfigDict(**Record.model_config, allow_inf_nan=False)
