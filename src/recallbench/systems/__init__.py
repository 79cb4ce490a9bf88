"""Systems under test: the protocol, the registry and the built-in reference system."""

from recallbench.systems._builtin import BuiltinSystem, match_expression
from recallbench.systems._protocol import SystemUnderTest
from recallbench.systems._registry import (
    DEFAULT_SYSTEM,
    ENTRY_POINT_GROUP,
    create_system,
    system_names,
)

__all__ = [
    "DEFAULT_SYSTEM",
    "ENTRY_POINT_GROUP",
    "BuiltinSystem",
    "SystemUnderTest",
    "create_system",
    "match_expression",
    "system_names",
]
