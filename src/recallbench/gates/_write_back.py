"""Learning from failures: a failed gate's regressions, written as a memory into a memory
system through its own ingest path, so an agent can recall past regressions."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

from recallbench.core import ConfigError, Document
from recallbench.gates._gate import GateResult
from recallbench.report import Report
from recallbench.systems import SystemUnderTest

WORST_QUERIES = 5


def regression_note(result: GateResult, report: Report) -> Document | None:
    """A short note on what failed: measures, baseline, current values, drops and the worst
    queries; None when nothing failed."""
    failed = [check for check in result.checks if check.status == "fail"]
    if not failed:
        return None
    worst = [q for q in report.queries if q.id in set(report.worst_queries)][:WORST_QUERIES]
    lines = [
        f"recallbench gate failed for {result.system} on {result.dataset} "
        f"({result.report_created}).",
        *(f"- {check.message}" for check in failed),
    ]
    if result.baseline:
        lines.append(f"Baseline: {result.baseline}.")
    if worst:
        lines.append("Worst queries: " + "; ".join(f"{q.id} ({q.text[:80]})" for q in worst) + ".")
    stamp = report.created_at.strftime("%Y%m%dT%H%M%S")
    text = "\n".join(lines)
    # two reports made in the same second (a CI matrix) must not share a note: memory
    # servers keyed by name would keep one of them
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    return Document(
        id=f"recallbench-regression-{result.system}-{stamp}-{digest}",
        title=f"Retrieval regression in {result.system}",
        text=text,
        metadata={
            "type": "regression",
            "tier": "important",
            "system": result.system,
            "dataset_sha256": result.dataset_sha256,
            "measures": [check.name for check in failed],
        },
    )


def write_back_target(system_name: str, store_dir: Path | None = None) -> SystemUnderTest:
    """The memory system to write notes into, checked before the gate runs.

    Servers that keep their store in a folder (MCP profiles, ``{workdir}``) need
    ``store_dir``, the agent's own store, which is kept; otherwise the note would go to a
    temporary store and be lost.
    """
    from recallbench.systems import create_system

    system = create_system(system_name)
    if store_dir is not None:
        if not hasattr(system, "store_dir"):
            raise ConfigError(f"{system_name} keeps no store in a folder: drop --write-back-dir")
        system.store_dir = store_dir
    elif hasattr(system, "store_dir"):
        raise ConfigError(
            f"{system_name} keeps its memories in a folder: give --write-back-dir, the folder "
            "of the store your agent uses"
        )
    return system


def write_back(system: SystemUnderTest, note: Document) -> None:
    """Ingest ``note`` through the system's own ingest path (its profile's ingest tool)."""

    async def ingest() -> None:
        try:
            await system.setup([note])
        finally:
            await system.close()

    asyncio.run(ingest())
