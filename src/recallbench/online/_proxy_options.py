"""What the proxy is asked to do: :class:`ProxyOptions`, the CLI's options of
``recallbench proxy`` as one value (:func:`recallbench.online._serve.serve` runs them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recallbench.systems._profile import Profile


@dataclass(frozen=True, slots=True)
class ProxyOptions:
    profile: Profile | None = None
    command: tuple[str, ...] = ()
    """The upstream command line; with a profile, it replaces the profile's command."""
    store_dir: Path | None = None
    """The profile's ``{workdir}`` (created, kept); None: a temporary folder, removed."""
    store_url: str | None = None
    """Where telemetry goes (None: the default store)."""
    workspace: str = "default"
    http_port: int | None = None
    """Serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio."""
    validate_tool: bool = False
    call_timeout: float | None = None
    """Seconds per forwarded request; None: the profile's ``call_timeout`` (30 without)."""
    store_texts: bool = True
    redact: tuple[str, ...] = ()
    token: str | None = None
    """The HTTP bearer token; None: one is generated and printed."""
    auth: bool = True
    """False: no token asked over HTTP (``--no-auth``)."""
    allow_origins: tuple[str, ...] = ()
    """Browser origins allowed over HTTP (any other Origin is refused)."""
    shadow: Profile | None = None
    """The candidate of shadow mode (needs ``profile``: its tools say what to mirror)."""
    shadow_percent: float = 10.0
    """Searches mirrored to the candidate (sampled by a hash of the query)."""
    shadow_store_dir: Path | None = None
    """The candidate's ``{workdir}``; None: a temporary folder, removed."""
    interleave: bool = False
    """Show the agent the team-draft interleaving of both lists (with ``shadow``)."""
    interleave_wait: float = 0.5
    """Seconds a search's answer waits for the candidate's list before the primary's goes."""
    outcome_tool: bool = False
    """Serve the session-outcome tool (answered by the proxy, never forwarded)."""
    relay: bool = True
    """Relay JSON-RPC lines (:mod:`recallbench.online._relay`) where it can serve; False:
    always the SDK's server and client."""
    require_store: bool = False
    """A store that cannot be opened stops the proxy before it starts; False: it serves
    with telemetry off and counts the records not stored."""
