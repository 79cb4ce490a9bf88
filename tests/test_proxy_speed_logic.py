"""The proxy's logging off the call path (LogThread) and its own stdio pipes: order kept,
a full queue counted, errors kept from the agent, a validation after the searches it names.
No timing is asserted (benchmarks/proxy_overhead.py measures)."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from recallbench.online import _log_thread
from recallbench.online._log_thread import LogThread
from recallbench.online._stdio import LineReader, LineWriter, _WriteProtocol


def test_jobs_run_in_order_off_the_caller_s_thread() -> None:
    observer = LogThread()
    seen: list[tuple[int, str]] = []
    for i in range(200):
        observer.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    observer.wait()
    assert [i for i, _ in seen] == list(range(200))
    assert {name for _, name in seen} == {"proxy-log"}
    observer.stop()
    observer.stop()  # again: nothing


def test_a_full_queue_drops_and_counts_never_blocks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gate = threading.Event()
    observer = LogThread(size=2)
    observer.submit(gate.wait)  # the thread holds this one
    while observer._jobs.qsize():  # taken by the thread
        pass
    done: list[int] = []
    for i in range(5):
        observer.submit(lambda i=i: done.append(i))
    assert observer.dropped == 3
    gate.set()
    observer.stop()
    assert done == [0, 1]
    err = capsys.readouterr().err
    assert "faster than they can be logged" in err and "3 calls were not logged" in err


def test_a_failing_job_is_a_warning_and_the_next_runs(capsys: pytest.CaptureFixture[str]) -> None:
    observer = LogThread()
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("store on fire")

    observer.submit(fail)
    observer.submit(lambda: done.append("next"))
    observer.stop()
    assert done == ["next"]
    assert "store on fire" in capsys.readouterr().err


def test_the_queue_bound_is_documented_as_a_constant() -> None:
    assert _log_thread.OBSERVE_QUEUE >= 1_000


def test_pipe_lines_are_read_and_written_whole() -> None:
    async def scenario() -> list[str]:
        loop = asyncio.get_running_loop()
        inside, outside = os.pipe()
        stream = asyncio.StreamReader()
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(stream), os.fdopen(inside, "rb", 0)
        )
        back_in, back_out = os.pipe()
        transport, protocol = await loop.connect_write_pipe(
            _WriteProtocol, os.fdopen(back_out, "wb", 0)
        )
        writer = LineWriter(transport, protocol)
        os.write(outside, b'{"a": 1}\n{"b": "\xc3\xa9"}\n\xff\n')
        os.close(outside)
        lines = [line async for line in LineReader(stream)]
        for line in lines:
            await writer.write(line)
        await writer.flush()
        transport.close()
        echoed = os.read(back_in, 1000).decode("utf-8")
        os.close(back_in)
        return [*lines, echoed]

    *lines, echoed = asyncio.run(scenario())
    assert lines == ['{"a": 1}\n', '{"b": "é"}\n', "\ufffd\n"]
    assert echoed == "".join(lines)
