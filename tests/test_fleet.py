"""A fleet end to end: three real ``recallbench proxy --shadow`` processes, each started
over stdio by its own client process with its own server-memory and candidate, write
into one PostgreSQL store at once; midway every connection of theirs is killed by the
server (``pg_terminate_backend``: a restart, a failover). Then no search and no pair is
lost or stored twice, and ``shadow status`` of the fleet equals that of one proxy: the
same pairs written by one writer give the same status, field for field, and the same
searches replayed through one proxy the same verdict.

The small run of ``benchmarks/fleet_load.py`` (its helpers drive the processes): 3 x 40
searches, 25 ms apart so that the kill falls amid the traffic."""

from __future__ import annotations

import importlib.util
import sys
import threading
import time
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
PROXIES = 3
SEARCHES = 40


def fleet_load() -> ModuleType:
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("fleet_load", BENCHMARKS / "fleet_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def kill_when_busy(url: str, done: threading.Event, killed: list[tuple[int, int]]) -> None:
    """Once every proxy has logged 10 searches, end every other connection to the
    database; record (connections ended, searches logged by then)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        while not done.is_set():
            per = connection.execute(
                "SELECT count(*) FROM query_log GROUP BY session_id"
            ).fetchall()
            if len(per) == PROXIES and min(n for (n,) in per) >= 10:
                ended = connection.execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM "
                    "pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                ).fetchone()
                killed.append((ended[0] if ended else 0, sum(n for (n,) in per)))
                return
            time.sleep(0.02)


def test_a_fleet_loses_nothing_stores_nothing_twice_and_decides_as_one_proxy(
    installed_servers: Path, postgres_url: str, tmp_path: Path
) -> None:
    from recallbench.store._pg_server import create_database, drop_database

    bench = fleet_load()
    urls = [create_database(postgres_url) for _ in range(3)]
    fleet_url, copied_url, replay_url = urls
    try:
        bench.start_test(fleet_url)
        traffic = [[bench.query(c, i) for i in range(SEARCHES)] for c in range(PROXIES)]
        done = threading.Event()
        killed: list[tuple[int, int]] = []
        killer = threading.Thread(target=kill_when_busy, args=(fleet_url, done, killed))
        killer.start()
        try:
            clients = bench.run_clients(fleet_url, tmp_path / "fleet", traffic, pause=0.025)
        finally:
            done.set()
            killer.join()
        assert killed and killed[0][0] >= PROXIES  # each proxy lost its connection(s)
        assert killed[0][1] < PROXIES * SEARCHES  # amid the traffic
        bench.label(fleet_url)
        stored = bench.stored(fleet_url)
        # every search one row, every pair a proxy wrote one row, nothing twice
        assert stored.searches == [SEARCHES] * PROXIES
        assert [c.pairs_written for c in clients] == [SEARCHES] * PROXIES
        assert [c.pairs_dropped for c in clients] == [0] * PROXIES
        assert stored.pairs == [SEARCHES] * PROXIES
        assert stored.searches_twice == stored.pairs_twice == 0

        fleet = bench.status(fleet_url)
        bench.copy_as_one_proxy(fleet_url, copied_url)
        assert bench.status(copied_url) == fleet
        assert fleet["decision"] == "graduate" and fleet["units"] == bench.TOPICS

        bench.start_test(replay_url)
        one = [[text for searches in traffic for text in searches]]
        bench.run_clients(replay_url, tmp_path / "replay", one)
        bench.label(replay_url)
        replayed = bench.status(replay_url)
        assert replayed["decision"] == fleet["decision"]
        assert replayed["pairs"] == fleet["pairs"] == PROXIES * SEARCHES
    finally:
        for url in urls:
            drop_database(postgres_url, url)
