"""`recallbench run` against systems that fail: exit codes, timeouts, restarts, output
files, names that could leave the output folder, a closed standard output. Real processes
throughout (tests/robust_command.py, tests/robust_mcp_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.cli._run import _systems
from recallbench.core import ConfigError, Dataset, Document, Query, SystemUnderTestError
from recallbench.core._files import atomic_write_text, atomic_write_texts
from recallbench.datasets import load_dataset
from recallbench.runner import run_dataset
from recallbench.systems import create_system
from recallbench.systems._folder import folder_for
from recallbench.systems._replay import recording_path

HERE = Path(__file__).parent
DATA = Dataset(
    name="tiny",
    documents=(
        Document(id="pg", text="the ledger runs on postgresql"),
        Document(id="fri", text="deploys are frozen on fridays"),
    ),
    queries=(
        Query(id="q1", text="ledger"),
        Query(id="q2", text="hang"),
        Query(id="q3", text="fridays"),
    ),
    qrels={"q1": {"pg": 1}, "q2": {"pg": 1}, "q3": {"fri": 1}},
)


def command(mode: str, *extra: str) -> str:
    return f"command:{sys.executable} {HERE / 'robust_command.py'} {mode} {' '.join(extra)}"


def mcp_profile(tmp_path: Path, mode: str, name: str = "robust") -> Path:
    """A profile for tests/robust_mcp_server.py in ``mode`` (1 s per call, 10 s to start)."""
    argv = json.dumps([sys.executable, str(HERE / "robust_mcp_server.py"), mode])
    path = tmp_path / f"{mode}.toml"
    path.write_text(
        f'name = "{name}"\n[server]\ncommand = {argv}\nstartup_timeout = 10\ncall_timeout = 1\n'
        '[ingest]\ntool = "write_note"\nitem = { content = "{text}" }\n'
        '[search]\ntool = "search_notes"\narguments = { query = "{query}" }\n'
        '[results]\nsource = "text_blocks"\nmatch = "content"\nranked = false\n'
    )
    return path


def run_cli(*arguments: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["run", *arguments])
    assert "Traceback" not in result.output
    return result.exit_code, result.output


# exit codes


def test_a_run_where_every_query_failed_exits_3_after_writing_its_reports(
    tmp_path: Path,
) -> None:
    code, output = run_cli("--system", command("error"), "--no-store", "--out", str(tmp_path))
    assert code == 3, output
    assert "every query of 120 failed" in output and "index unavailable" in output
    assert json.loads((tmp_path / "report.json").read_text())["counts"]["failed"] == 120


def test_strict_makes_any_failed_query_exit_3(tmp_path: Path) -> None:
    base = ["--system", command("odd"), "--no-store"]
    code, output = run_cli(*base, "--out", str(tmp_path / "lenient"))
    assert code == 0, output  # failures are counted, the run measured
    code, output = run_cli(*base, "--strict", "--out", str(tmp_path / "strict"))
    assert code == 3 and "60 queries of 120 failed" in output
    assert (tmp_path / "strict" / "report.json").is_file()


def test_store_and_no_store_together_are_refused(tmp_path: Path) -> None:
    code, output = run_cli("--store", "sqlite:///x.db", "--no-store", "--out", str(tmp_path))
    assert code == 2 and "--store and --no-store exclude each other" in output


def test_a_bad_store_url_is_refused_before_the_system_runs(tmp_path: Path) -> None:
    marker = tmp_path / "asked"
    code, output = run_cli(
        "--system",
        command("slow", str(marker)),
        "--store",
        "nosuchdb://nowhere",
        "--out",
        str(tmp_path / "out"),
    )
    assert code == 2, output
    assert not marker.exists()  # no query was asked
    assert not (tmp_path / "out" / "report.json").exists()


# output files


@pytest.mark.parametrize("out", ["/proc/recallbench-out", "{tmp}/a-file/out"])
def test_an_unusable_out_folder_is_refused_with_the_reason_before_the_run(
    tmp_path: Path, out: str
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    folder = out.format(tmp=tmp_path)
    marker = tmp_path / "asked"
    code, output = run_cli("--system", command("slow", str(marker)), "--no-store", "--out", folder)
    assert code == 2 and f"--out {folder}: cannot write there (" in output
    assert ("No such file or directory" in output) or ("Not a directory" in output)
    assert not marker.exists()


@pytest.fixture
def umask() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


@pytest.mark.usefixtures("umask")
@pytest.mark.parametrize(("mask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_follow_the_umask(tmp_path: Path, mask: int, mode: int) -> None:
    os.umask(mask)
    atomic_write_text(tmp_path / "report.json", "{}")
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == mode


def test_files_written_together_are_all_written_or_none(tmp_path: Path) -> None:
    (tmp_path / "blocker").write_text("a file where a folder should be")
    (tmp_path / "run.json").write_text("old")
    with pytest.raises(FileExistsError):  # its folder is a file
        atomic_write_texts({tmp_path / "run.json": "new", tmp_path / "blocker" / "x.md": "x"})
    assert (tmp_path / "run.json").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker", "run.json"]


def test_a_profile_named_dot_dot_is_refused_with_its_file_and_key(tmp_path: Path) -> None:
    profile = mcp_profile(tmp_path, "ok", name="..")
    out = tmp_path / "deep" / "out"
    code, output = run_cli(
        "--system", str(profile), "--system", "builtin-lexical", "--out", str(out)
    )
    assert code == 2 and str(profile) in output and "name" in output and "'..'" in output
    assert not (tmp_path / "deep" / "report.json").exists()


def test_a_system_name_of_dots_cannot_name_a_folder(tmp_path: Path) -> None:
    assert folder_for("command:python x/y.py") == "command_python_x_y.py"
    with pytest.raises(ConfigError, match="cannot name a folder"):
        folder_for("..")
    with pytest.raises(ConfigError):
        recording_path(tmp_path, "..", load_dataset("agent-memory-sample"))


def test_a_closed_standard_output_ends_the_run_quietly(tmp_path: Path) -> None:
    arguments = ["--system", "builtin-lexical", "--no-store", "--out", str(tmp_path)]
    process = subprocess.Popen(
        [sys.executable, "-m", "recallbench", "run", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader left at once, as `| head -0` would
    error = process.stderr.read().decode()
    assert process.wait() == 0, error
    assert "Traceback" not in error and "BrokenPipe" not in error
    assert (tmp_path / "report.json").is_file()  # the run still did its work


# timeouts and restarts


def test_the_timeout_flag_sets_every_process_system_s_call_timeout(tmp_path: Path) -> None:
    profile = mcp_profile(tmp_path, "ok")
    systems = _systems(
        [command("error"), str(profile), "builtin-lexical"], DATA, None, None, False, timeout=2.5
    )
    assert [getattr(s, "call_timeout", None) for s in systems] == [2.5, 2.5, None]
    assert _systems([str(profile)], DATA, None, None, False)[0].call_timeout == 1


def test_a_hung_mcp_server_is_restarted_after_its_profile_s_call_timeout(
    tmp_path: Path,
) -> None:
    system = create_system(str(mcp_profile(tmp_path, "hang")))
    run = asyncio.run(run_dataset(DATA, system, k=5))
    q1, q2, q3 = run.results
    assert q1.error is None and [h.doc_id for h in q1.hits] == ["pg"]
    assert q2.error is not None and "no answer within 1.0 s" in q2.error
    assert q3.error is None and [h.doc_id for h in q3.hits] == ["fri"]  # a new server
    assert run.spec.restarts == 1


def test_restarts_are_bounded_and_counted_in_the_report(tmp_path: Path) -> None:
    code, output = run_cli(
        "--system", command("die"), "--restarts", "2", "--no-store", "--out", str(tmp_path)
    )
    assert code == 3 and "(after 2 restarts)" in output and "restarts 2" in output
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["spec"]["restarts"] == 2
    errors = [r["error"] for r in run["results"]]
    assert errors[2].endswith("(exit 4)") and errors[3].endswith("not running")
    assert "restarted 2 times" in (tmp_path / "report.md").read_text()


def test_ingestion_is_announced_before_it_starts() -> None:
    events: list[str] = []
    asyncio.run(
        run_dataset(
            DATA,
            create_system("builtin-lexical"),
            k=5,
            progress=lambda done, total: events.append(f"{done}/{total}"),
            ingesting=lambda documents: events.append(f"ingesting {documents}"),
        )
    )
    assert events == ["ingesting 2", "1/3", "2/3", "3/3"]


# an MCP server that writes garbage on stdout


def test_an_mcp_server_writing_non_protocol_output_is_named_as_such(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    system = create_system(str(mcp_profile(tmp_path, "garbage")))
    with pytest.raises(SystemUnderTestError) as caught:
        asyncio.run(run_dataset(DATA, system, k=5))
    message = str(caught.value)
    assert "wrote non-protocol output on stdout" in message
    assert "robust-notes 1.0 ready" in message and "did not start" not in message
    assert "Traceback" not in capfd.readouterr().err
