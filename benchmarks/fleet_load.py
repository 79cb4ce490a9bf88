"""A fleet of shadowing proxies writing to one PostgreSQL store: nothing lost, nothing
twice, and the shadow decision of the fleet equal to that of one proxy.

A throwaway PostgreSQL server (``recallbench.store._pg_server``, fsync on) holds one store.
``--proxies`` (4) ``recallbench proxy --profile server-memory --shadow <candidate>
--shadow-percent 100`` processes run at once, each started over stdio by its own client
process (the official MCP SDK), each with its own server-memory and candidate. A client
fills its server with 200 notes on 40 topics, then makes ``--searches`` (25,000)
``search_nodes`` calls back to back. The candidate is server-memory too, its notes stored
in reverse order, so its rankings differ; a shadow test (ndcg@10 from labels, one unit
per query text) is started before the traffic, and each logged search is labelled after it
(its topic's target note, grade 3; the target sits lower in the primary's order than in
the candidate's for most topics, so the candidate should graduate).

Then it checks, per proxy and in total, the rows stored against what was sent: every
search one ``query_log`` row, every pair the proxy says it wrote (its exit line) one
``shadow_runs`` row, no query id twice. And the decision: ``shadow status`` of the fleet's
store against that of one proxy fed the same traffic, two ways:

* same pairs: the fleet's searches, pairs and labels written again into a fresh database
  by one writer, in time order, as one proxy would have: the status must be identical,
  every field (the pairs are read in their own order, timestamp then query id, whichever
  proxy committed first);
* ``--replay``: the same searches sent again, one client after the other, through one
  proxy into a fresh database: new timestamps, so the units meet the sequential test in
  another order; the verdict must be the same.

Prints a Markdown table and writes it to benchmarks/results/fleet_load.md.

    python benchmarks/fleet_load.py                       # 4 x 25,000 searches
    python benchmarks/fleet_load.py --searches 500 --no-write
    python benchmarks/fleet_load.py --searches 2000 --replay
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine, write_results
from proxy_overhead import server_memory_script

RESULTS = Path(__file__).parent / "results" / "fleet_load.md"
NOTES = 200
TOPICS = 40
PLACES = (2, 3, 4, 4, 4)
"""Where a topic's target is among its five notes in insertion order (the primary's
ranking; the candidate's is the reverse): mostly lower for the primary, not always."""
TEST = "fleet"
CONTROL = "server-memory"
TREATMENT = "server-memory-reversed"


def topic(j: int) -> str:
    return f"topic-{j:02d}"


def notes() -> list[dict[str, Any]]:
    return [
        {
            "name": f"m{i}",
            "entityType": "memory",
            "observations": [f"note {i} about {topic(i % TOPICS)}"],
        }
        for i in range(NOTES)
    ]


def target(text: str) -> str:
    """The note a search of ``text`` should find: one of its topic's five."""
    j = int(text.rsplit("-", 1)[1])
    return f"m{j + TOPICS * PLACES[j % len(PLACES)]}"


def query(client: int, i: int) -> str:
    """The ``i``-th search of ``client``: the topics in turn, each client from its own
    offset, so that the fleet meets the topics in another order than one proxy does."""
    return topic((i + 10 * client) % TOPICS)


# ---------------------------------------------------------------- processes


def candidate(folder: Path) -> Path:
    """The candidate: server-memory under its own profile name, its notes in reverse order
    (the client's writes, mirrored, add nothing: server-memory skips names it has)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"type": "entity", **note}) for note in reversed(notes())]
    (folder / "memory.jsonl").write_text("\n".join(lines) + "\n")
    profile = folder / "candidate.toml"
    command = json.dumps(["node", str(server_memory_script())])
    profile.write_text(
        f'name = "{TREATMENT}"\n'
        f'[server]\ncommand = {command}\nenv = {{ MEMORY_FILE_PATH = "{folder}/memory.jsonl" }}\n'
        '[ingest]\ntool = "create_entities"\nbatch_field = "entities"\n'
        'item = { name = "{id}", entityType = "memory", observations = ["{text}"] }\n'
        '[search]\ntool = "search_nodes"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "structured"\nhits = "entities"\nid = "name"\n'
        'text = "observations"\nmatch = "id"\nranked = false\n'
    )
    return profile


def proxy_command(url: str, folder: Path) -> list[str]:
    """A shadowing proxy with its own primary and candidate stores under ``folder``."""
    return [
        sys.executable, "-m", "recallbench", "proxy", "--profile", CONTROL,
        "--store-dir", str(folder / "primary"), "--store", url,
        "--shadow", str(candidate(folder / "candidate")), "--shadow-percent", "100",
    ]  # fmt: skip


def tree_cpu(root: int) -> dict[str, float]:
    """CPU seconds (user + system) so far of each process below ``root``, by kind: the
    proxy (``recallbench``), the memory servers (``node``), other; from /proc."""
    found: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    seen: set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            for child in children:
                if child in seen:
                    continue
                seen.add(child)
                todo.append(child)
                try:
                    stat = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
                    command = Path(f"/proc/{child}/cmdline").read_bytes()
                except OSError:
                    continue
                program = Path(command.split(b"\0", 1)[0].decode()).name
                kind = (
                    "servers" if program == "node" else "proxy" if b"recallbench" in command
                    else "other"
                )  # fmt: skip
                found[kind] = found.get(kind, 0.0) + (int(stat[11]) + int(stat[12])) / tick
    return found


def server_cpu(postmaster: int) -> float:
    """CPU seconds so far of a PostgreSQL server: the postmaster, its live backends, and
    the backends it has reaped (a connection's backend ends with it)."""
    stat = Path(f"/proc/{postmaster}/stat").read_text().rsplit(")", 1)[1].split()
    own = sum(int(x) for x in stat[11:15]) / os.sysconf("SC_CLK_TCK")
    return own + sum(tree_cpu(postmaster).values())


def _spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {kind: after[kind] - before.get(kind, 0.0) for kind in after}


async def _drive(
    command: list[str], searches: list[str], errlog: Path, pause: float = 0.0
) -> dict[str, Any]:
    """Fill the server, make the searches back to back (``pause`` seconds apart); the
    seconds they took, and the CPU seconds they cost: this client's, its proxy's and the
    memory servers'. Waits for the proxy to exit (its last batches written) however long
    that takes."""
    import mcp.client.stdio as stdio
    from mcp import ClientSession, StdioServerParameters

    stdio.PROCESS_TERMINATION_TIMEOUT = 600.0  # the SDK kills a server after 2 s
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    with errlog.open("w") as log:
        async with (
            stdio.stdio_client(parameters, errlog=log) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("create_entities", {"entities": notes()})
            start = time.perf_counter()
            cpu, behind = time.process_time(), tree_cpu(os.getpid())
            for text in searches:
                result = await session.call_tool("search_nodes", {"query": text})
                if result.is_error:
                    raise SystemExit(f"search {text!r} failed: {result.content}")
                if pause:
                    await asyncio.sleep(pause)
            return {
                "seconds": time.perf_counter() - start,
                "cpu": {
                    "client": time.process_time() - cpu,
                    **_spent(behind, tree_cpu(os.getpid())),
                },
            }


def client_main(config: Path) -> None:
    """A client process: the proxy in ``config`` and its searches; writes its result."""
    spec = json.loads(config.read_text())
    drive = _drive(spec["command"], spec["searches"], Path(spec["errlog"]), spec.get("pause", 0.0))
    Path(spec["result"]).write_text(json.dumps(asyncio.run(drive)))


@dataclass
class Client:
    index: int
    searches: int
    seconds: float
    pairs_written: int
    pairs_dropped: int
    exit_line: str
    cpu: dict[str, float]
    """CPU seconds of the searches by process kind: client, proxy, servers."""


def run_clients(
    url: str, folder: Path, traffic: list[list[str]], pause: float = 0.0
) -> list[Client]:
    """One client process per list of searches, all at once, each with its own proxy."""
    running = []
    for c, searches in enumerate(traffic):
        own = folder / f"proxy{c}"
        own.mkdir(parents=True, exist_ok=True)
        spec = {
            "command": proxy_command(url, own),
            "searches": searches,
            "errlog": str(own / "stderr.txt"),
            "result": str(own / "result.json"),
            "pause": pause,
        }
        (own / "client.json").write_text(json.dumps(spec))
        script = [sys.executable, __file__, "--client", str(own / "client.json")]
        running.append((c, own, subprocess.Popen(script)))
    clients = []
    for c, own, process in running:
        if process.wait() != 0:
            stderr = (own / "stderr.txt").read_text()[-2000:]
            raise SystemExit(f"client {c} failed (exit {process.returncode}):\n{stderr}")
        said = (own / "stderr.txt").read_text().splitlines()
        line = next((x for x in said if "searches sampled" in x or "search sampled" in x), "")
        written, dropped = _pairs(line)
        result = json.loads((own / "result.json").read_text())
        cpu = result.get("cpu", {})
        clients.append(Client(c, len(traffic[c]), result["seconds"], written, dropped, line, cpu))
    return clients


def _pairs(line: str) -> tuple[int, int]:
    """(written, dropped) from the proxy's exit line (``...: 25,000 pairs written, 0
    dropped ...``)."""
    import re

    found = re.search(r"([\d,]+) pairs? written, ([\d,]+) dropped", line)
    if found is None:
        raise SystemExit(f"no shadow exit line from the proxy: {line!r}")
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


# ---------------------------------------------------------------- the store


def start_test(url: str) -> None:
    from recallbench.online._shadow_rule import GraduationRule, parse_guardrail
    from recallbench.store import open_store

    guardrails = dict(parse_guardrail(g) for g in ("error_rate:+1pt", "empty_rate:+2pt"))
    rule = GraduationRule(
        measure="ndcg@10", unit="query", min_queries=20, guardrails=guardrails, settle_seconds=0
    )
    data = rule.to_dict()
    with open_store(url) as store:
        store.start_shadow_test(TEST, CONTROL, TREATMENT, "ndcg@10", data, data["guardrails"])


def label(url: str) -> int:
    """A manual label for every logged search: its topic's target, grade 3."""
    from recallbench.store import Judgment, open_store

    now = datetime.now(UTC)
    with open_store(url) as store:
        logged = store.query_log()
        store.log(
            judgments=[Judgment(e.query_id, target(e.text), 3, "manual", now) for e in logged]
        )
    return len(logged)


@dataclass
class Stored:
    searches: list[int]
    """query_log rows per session (one session per proxy), largest first."""
    pairs: list[int]
    searches_twice: int
    pairs_twice: int


def stored(url: str) -> Stored:
    from sqlalchemy import func, select

    from recallbench.store import open_store
    from recallbench.store._tables import query_log, shadow_runs

    with open_store(url) as store, store._engine.connect() as connection:
        per: dict[str, list[int]] = {}
        for table in (query_log, shadow_runs):
            rows = connection.execute(
                select(table.c.session_id, func.count()).group_by(table.c.session_id)
            ).all()
            per[table.name] = sorted((n for _, n in rows), reverse=True)
        twice = {
            table.name: connection.execute(
                select(func.count() - func.count(table.c.query_id.distinct()))
            ).scalar_one()
            for table in (query_log, shadow_runs)
        }
    return Stored(per["query_log"], per["shadow_runs"], twice["query_log"], twice["shadow_runs"])


def status(url: str) -> dict[str, Any]:
    """``recallbench shadow status --format json``'s decision for the test."""
    from click.testing import CliRunner

    from recallbench.cli._shadow import shadow

    result = CliRunner().invoke(shadow, ["status", TEST, "--format", "json", "--store", url])
    if result.exit_code != 0:
        raise SystemExit(f"shadow status failed: {result.output}")
    now: dict[str, Any] = json.loads(result.output)["now"]
    return now


def copy_as_one_proxy(url: str, fresh: str) -> None:
    """The fleet's test, searches, pairs and labels written into ``fresh`` by one writer,
    in time order and in one proxy's batches (64 pairs), as one proxy would have."""
    from recallbench.store import open_store

    with open_store(url) as source:
        test = source.shadow_test(TEST)
        logged = source.query_log()
        pairs = source.shadow_runs()
        labels = source.judgments()
    assert test is not None
    with open_store(fresh) as target_store:
        target_store.start_shadow_test(
            TEST, test.control, test.treatment, test.measure, test.rule, test.guardrails,
            alpha=test.alpha, at=test.started_at,
        )  # fmt: skip
        target_store.log(queries=logged, judgments=labels)
        ordered = sorted(pairs, key=lambda row: (row["created_at"], row["query_id"]))
        rows = [
            {k: v for k, v in row.items() if k not in ("id", "workspace_id")} for row in ordered
        ]
        for start in range(0, len(rows), 64):
            target_store.log_shadow_runs(rows[start : start + 64])


def same(fleet: dict[str, Any], single: dict[str, Any]) -> bool:
    return json.dumps(fleet, sort_keys=True) == json.dumps(single, sort_keys=True)


def verdict(decided: dict[str, Any]) -> str:
    estimate = decided.get("estimate")
    shown = f", estimate {estimate:.3f}" if isinstance(estimate, float) else ""
    return f"{decided['decision']} (n {decided['n']} of {decided['units']} units{shown})"


def cpu_table(clients: list[Client], database: float, sent: int, busy: float) -> list[str]:
    """Where the CPU went, per search: what limits the fleet's rate on this machine."""
    kinds = ("client", "proxy", "servers")
    spent = {kind: sum(c.cpu.get(kind, 0.0) for c in clients) for kind in kinds}
    spent["PostgreSQL"] = database
    total = sum(spent.values())
    cores = os.cpu_count() or 1
    return [
        "| CPU per search | client (MCP SDK) | proxy (with its shadow) | memory servers (2 "
        "per proxy, node) | PostgreSQL | total |",
        "|---|---|---|---|---|---|",
        "| ms | "
        + " | ".join(f"{1000 * spent[k] / sent:.2f}" for k in (*kinds, "PostgreSQL"))
        + f" | {1000 * total / sent:.2f} |",
        "",
        f"These processes used {total:,.0f} CPU seconds in the {busy:,.0f} s of traffic: "
        f"{total / busy:.2f} of the machine's {cores} cores (the rest went to other jobs; "
        f"load average at the start in the machine line). The rate is bound by CPU: "
        f"{cores} cores / {1000 * total / sent:.2f} ms = {cores * sent / total:,.0f} "
        "searches/s at most on this machine with nothing else running.",
    ]


# ---------------------------------------------------------------- main


def run(args: argparse.Namespace, admin: Any, folder: Path) -> tuple[bool, str]:
    url = admin.create_database()
    start_test(url)
    traffic = [[query(c, i) for i in range(args.searches)] for c in range(args.proxies)]
    postmaster = int((admin.directory / "data" / "postmaster.pid").read_text().split()[0])
    database_cpu = server_cpu(postmaster)
    started = time.perf_counter()
    clients = run_clients(url, folder / "fleet", traffic)
    wall = time.perf_counter() - started
    database_cpu = server_cpu(postmaster) - database_cpu
    label(url)
    found = stored(url)
    fleet = status(url)
    copied = admin.create_database()
    copy_as_one_proxy(url, copied)
    single = status(copied)
    replayed = None
    replay_wall = None
    if args.replay:
        replay_url = admin.create_database()
        start_test(replay_url)
        started = time.perf_counter()
        run_clients(replay_url, folder / "replay", [[s for searches in traffic for s in searches]])
        replay_wall = time.perf_counter() - started
        label(replay_url)
        replayed = status(replay_url)

    sent = sum(len(t) for t in traffic)
    busy = max(c.seconds for c in clients)
    """From the first search to the last, of the slowest client (the clients start at once;
    the wall time adds the processes' start and the proxies' last writes)."""
    written = sum(c.pairs_written for c in clients)
    dropped = sum(c.pairs_dropped for c in clients)
    ok_rows = (
        found.searches == sorted((len(t) for t in traffic), reverse=True)
        and found.pairs == sorted((c.pairs_written for c in clients), reverse=True)
        and found.searches_twice == found.pairs_twice == 0
    )
    ok_same = same(fleet, single)
    ok_replay = replayed is None or replayed["decision"] == fleet["decision"]
    lines = [
        f"{args.proxies} proxies x {args.searches:,} searches (server-memory over stdio, "
        f"shadowed at 100% by server-memory with its notes reversed), each proxy driven by "
        f"its own client process, all at once, into one PostgreSQL store (fsync on).",
        "",
        "| proxy | searches sent | query_log rows | pairs written (proxy) | shadow_runs rows "
        "| searches/s | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for client, logged, pairs in zip(clients, found.searches, found.pairs, strict=False):
        lines.append(
            f"| {client.index} | {client.searches:,} | {logged:,} | {client.pairs_written:,} "
            f"| {pairs:,} | {client.searches / client.seconds:,.0f} | {client.seconds:.1f} |"
        )
    lines += [
        f"| **total** | {sent:,} | {sum(found.searches):,} | {written:,} | "
        f"{sum(found.pairs):,} | {sent / busy:,.0f} | {busy:.1f} |",
        "",
        "(Rows per proxy are matched by session: each proxy served one session, so the "
        "sorted counts are compared.)",
        "",
        "| check | fleet | single proxy | result |",
        "|---|---|---|---|",
        f"| rows expected / stored | {sent + written:,} | "
        f"{sum(found.searches) + sum(found.pairs):,} | {'OK' if ok_rows else 'FAILED'} |",
        f"| rows duplicated (query_log, shadow_runs) | {found.searches_twice}, "
        f"{found.pairs_twice} | 0, 0 | {'OK' if ok_rows else 'FAILED'} |",
        f"| pairs the proxies shed (counted, not stored: see below) | {dropped:,} | - | - |",
        f"| decision, same pairs written by one writer | {verdict(fleet)} | {verdict(single)} "
        f"| {'identical, every field' if ok_same else 'DIFFERENT'} |",
    ]
    if replayed is not None:
        lines.append(
            f"| decision, same searches replayed through one proxy ({replay_wall:.0f} s) "
            f"| {verdict(fleet)} | {verdict(replayed)} "
            f"| {'same verdict' if ok_replay else 'DIFFERENT'} |"
        )
    lines += ["", *cpu_table(clients, database_cpu, sent, busy)]
    shed = [c for c in clients if c.pairs_dropped]
    if shed:
        lines += [
            "",
            "A proxy sheds a pair, and counts it with its reason, when its candidate falls "
            "behind (a bounded queue) or is unfinished at exit; these are not rows lost by "
            "the store (every pair a proxy says it wrote is stored). Their exit lines:",
            "",
            *(f"- proxy {c.index}: `{c.exit_line.split('proxy: ', 1)[-1]}`" for c in shed),
        ]
    lines += [
        "",
        f"Wall time of the fleet's run: {wall:.1f} s (the processes' start, the notes written, "
        f"the searches, the proxies' last batches and exit).",
    ]
    ok = ok_rows and ok_same and ok_replay
    return ok, "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--proxies", type=int, default=4)
    parser.add_argument("--searches", type=int, default=25_000, help="per proxy")
    parser.add_argument("--replay", action="store_true", help="replay through one proxy too")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--client", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client is not None:
        client_main(args.client)
        return 0
    if args.proxies < 1 or args.searches < 1:
        parser.error("--proxies and --searches must be at least 1")
    from recallbench.store._pg_server import throwaway_postgres

    host = machine()
    with (
        tempfile.TemporaryDirectory(prefix="recallbench-fleet-") as name,
        throwaway_postgres(fast=False) as server,
    ):
        ok, body = run(args, server, Path(name))
    print(body)
    if not args.no_write:
        write_results(__file__, "A fleet of proxies, one store", argv, host, body, args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
