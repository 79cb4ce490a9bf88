"""Which profiles a shadow test may name: those whose pairs the proxy can log.

The proxy (``recallbench proxy --profile CONTROL --shadow TREATMENT``) logs each pair with
the two profiles' names, and a test reads only the pairs of its own two names; a name
nothing logs makes a test that never collects a pair. So ``shadow start`` takes:

* a shipped MCP profile, by name (``recallbench systems`` lists them);
* a profile TOML file: the name inside it is the one recorded (what the proxy logs);
* a name the proxy has already logged shadow pairs under in this workspace (a custom
  profile whose file is on another machine).

Anything else is refused, every unknown name in one message, with the known ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from recallbench.core._errors import ConfigError


def resolve_profiles(sides: Mapping[str, str], logged: Callable[[], set[str]]) -> dict[str, str]:
    """``{option: name given}`` -> ``{option: profile name to record}``. ``logged`` gives
    the names already in the store's shadow runs; it is called only when a name is neither
    shipped nor a file. ConfigError naming every unknown name and the known ones."""
    from recallbench.systems._profile import is_http_profile, load_profile, shipped_profiles

    shipped = shipped_profiles()
    resolved: dict[str, str] = {}
    unknown: dict[str, str] = {}
    for option, name in sides.items():
        path = shipped.get(name) or Path(name)
        if name not in shipped and path.suffix != ".toml" and not path.is_file():
            unknown[option] = name
            continue
        if is_http_profile(path):  # ConfigError for a missing file or bad TOML
            raise ConfigError(
                f"{option} {name}: an HTTP profile; shadow tests compare MCP profiles, "
                "which the proxy runs"
            )
        resolved[option] = load_profile(path).name
    if not unknown:
        return resolved
    seen = logged()
    for option, name in list(unknown.items()):
        if name in seen:
            resolved[option] = unknown.pop(option)
    if unknown:
        listed = "; ".join(f"{option} {name!r}" for option, name in unknown.items())
        noun = "profile" if len(unknown) == 1 else "profiles"
        earlier = ", ".join(sorted(seen)) if seen else "none yet"
        raise ConfigError(
            f"unknown {noun}: {listed}. A shadow test names the profiles the proxy runs "
            f"(--profile and --shadow): shipped ones are {', '.join(sorted(shipped))}; "
            f"or give a profile's TOML file; names the proxy has logged shadow pairs under "
            f"in this workspace: {earlier}"
        )
    return resolved
