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
