"""The command line's one error boundary: each input of the new-user check (issue 15) is a
located message and exit 2, an unexpected failure a message and a documented code, and
never a traceback unless --debug or RECALLBENCH_DEBUG=1 asks for it."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from recallbench.cli import main
from recallbench.cli._errors import EXIT_INTERNAL, EXIT_SERVICE_FAILED, describe
from recallbench.datasets import bundled_path


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


def cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real program in a child process: what a user's terminal shows."""
    env = {**os.environ, "RECALLBENCH_HOME": str(tmp_path / "home")}
    env.pop("RECALLBENCH_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "recallbench", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def _trec_folder(tmp_path: Path, docs: bytes, qrels: bytes) -> str:
    folder = tmp_path / "trec"
    folder.mkdir()
    (folder / "docs").write_bytes(docs)
    (folder / "topics").write_bytes(b"<top>\n<num> 1\n<title> hello\n</top>\n")
    (folder / "qrels").write_bytes(qrels)
    return str(folder)


_DOC = b"<DOC>\n<DOCNO>d1</DOCNO>\n<TEXT>hello world</TEXT>\n</DOC>\n"


def _beir_folder(tmp_path: Path, corpus: bytes, qrels: bytes) -> str:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_bytes(corpus)
    (folder / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "hello"}\n')
    (folder / "qrels" / "test.tsv").write_bytes(qrels)
    return str(folder)


def _file(tmp_path: Path, name: str, content: bytes) -> str:
    (tmp_path / name).write_bytes(content)
    return str(tmp_path / name)


Case = Callable[[Path], tuple[list[str], str]]
"""tmp_path -> (arguments, what the message must say)."""

CASES: dict[str, Case] = {
    "run a folder": lambda t: (["run", "--dataset", str(t), "--no-store"], "not a dataset: "),
    "validate json:folder": lambda t: (["datasets", "validate", f"json:{t}"], "Is a directory"),
    "convert to a path under a file": lambda t: (
        [
            "datasets",
            "convert",
            "--from",
            "json",
            str(bundled_path("agent-memory-sample")),
            _file(t, "file", b"") + "/out.json",
        ],
        "is not a folder",
    ),
    "power --delta nan": lambda t: (["power", "--delta", "nan", "--sd", "0.1"], "'--delta'"),
    "power --delta inf": lambda t: (["power", "--delta", "inf", "--sd", "0.1"], "'--delta'"),
    "power --delta negative": lambda t: (["power", "--delta=-0.1", "--sd", "0.1"], "'--delta'"),
    "power --alpha nan": lambda t: (
        ["power", "--delta", "0.1", "--sd", "0.1", "--alpha", "nan"],
        "'--alpha'",
    ),
    "compare --alpha nan": lambda t: (["compare", str(t), "--alpha", "nan"], "'--alpha'"),
    "a non-numeric port": lambda t: (
        ["history", "--store", "postgresql://u:pw@localhost:abc/db"],
        "postgresql://u:***@localhost:abc/db",
    ),
    "an out-of-range port": lambda t: (
        ["history", "--store", "postgresql://u:pw@localhost:70000/db"],
        "port 70000 is out of range",
    ),
    "an unencoded @ in the password": lambda t: (
        ["history", "--store", "postgresql://u:p@ss@tail.invalid/db"],
        "percent-encode",
    ),
    "convert trec with non-UTF-8 documents": lambda t: (
        [
            "datasets",
            "convert",
            "--from",
            "trec",
            _trec_folder(t, _DOC.replace(b"hello", b"hel\xfflo"), b"1 0 d1 1\n"),
            str(t / "out.json"),
        ],
        "not UTF-8",
    ),
    "convert trec with an empty qrels file": lambda t: (
        ["datasets", "convert", "--from", "trec", _trec_folder(t, _DOC, b""), str(t / "o.json")],
        "no qrels file",
    ),
    "convert beir with non-UTF-8 bytes": lambda t: (
        [
            "datasets",
            "convert",
            "--from",
            "beir",
            _beir_folder(t, b'{"_id": "d1", "text": "a \xff"}\n', b"q1\td1\t\xff\n"),
            str(t / "out.json"),
        ],
        "corpus.jsonl:1: not UTF-8",
    ),
    "compare an empty file": lambda t: (
        ["compare", _file(t, "a.json", b""), _file(t, "b.json", b"{}")],
        "a.json",
    ),
    "compare non-UTF-8 bytes": lambda t: (
        ["compare", _file(t, "a.json", b"\xff\xfe"), _file(t, "b.json", b"{}")],
        "not UTF-8",
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_bad_input_is_a_located_message_and_exit_2(case: Case, tmp_path: Path) -> None:
    arguments, message = case(tmp_path)
    result = invoke(*arguments)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # not an escaped exception
    assert message in result.output


_SUBPROCESS = (
    "run a folder",
    "power --delta nan",
    "a non-numeric port",
    "an unencoded @ in the password",
    "convert trec with non-UTF-8 documents",
    "convert to a path under a file",
)


@pytest.mark.parametrize("name", _SUBPROCESS)
def test_a_user_sees_no_traceback(name: str, tmp_path: Path) -> None:
    arguments, message = CASES[name](tmp_path)
    finished = cli(tmp_path, *arguments)
    assert finished.returncode == 2, finished.stderr
    assert "Traceback" not in finished.stderr
    assert message in finished.stderr


def test_an_unexpected_failure_is_an_internal_error_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import recallbench.cli._power as power

    def broken(*_: object, **__: object) -> int:
        raise ValueError("cannot convert float NaN to integer")

    monkeypatch.setattr(power, "sample_size", broken)
    result = invoke("power", "--delta", "0.05", "--sd", "0.15")
    assert result.exit_code == EXIT_INTERNAL == 70
    assert isinstance(result.exception, SystemExit)
    assert "internal error: ValueError: cannot convert float NaN to integer" in result.output
    assert "rerun with --debug" in result.output

    for env, args in (({}, ["--debug"]), ({"RECALLBENCH_DEBUG": "1"}, [])):
        debugged = invoke(*args, "power", "--delta", "0.05", "--sd", "0.15", env=env)
        assert isinstance(debugged.exception, ValueError)  # re-raised, with its traceback
        assert debugged.exc_info is not None and debugged.exc_info[2] is not None


def test_a_subcommand_without_its_own_guard_is_behind_the_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import recallbench.cli._datasets as datasets

    def unreadable() -> list[str]:
        raise PermissionError(errno.EACCES, "Permission denied", "/pkg/data")

    monkeypatch.setattr(datasets, "bundled_datasets", unreadable)
    result = invoke("datasets", "list")
    assert result.exit_code == 2
    assert "/pkg/data: Permission denied" in result.output


def test_the_exit_codes_are_documented_in_the_top_level_help() -> None:
    text = invoke("--help").output
    for code in ("0 ", "1 ", "2 ", "3 ", "69 ", "70 ", "130 "):
        assert f"\n    {code}" in text, code
    assert "--debug" in text


def test_os_errors_with_and_without_a_path() -> None:
    assert describe(FileNotFoundError(errno.ENOENT, "No such file or directory", "a.json")) == (
        "a.json: No such file or directory",
        2,
    )
    assert describe(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")) == (
        "ConnectionRefusedError: Connection refused",
        EXIT_SERVICE_FAILED,
    )


def test_an_sdk_error_is_a_service_failure() -> None:
    class APIConnectionError(Exception):
        pass

    APIConnectionError.__module__ = "openai._exceptions"
    message, code = describe(APIConnectionError("Connection error."))
    assert code == EXIT_SERVICE_FAILED
    assert message == "openai: APIConnectionError: Connection error."


def test_a_database_error_names_the_store_with_the_password_masked(tmp_path: Path) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import OperationalError

    from recallbench.store._engine import create_store_engine

    engine = create_store_engine("postgresql://ci:s3cret@127.0.0.1:1/db")  # nothing on port 1
    with pytest.raises(OperationalError) as raised:
        engine.connect()
    message, code = describe(raised.value)
    assert code == EXIT_SERVICE_FAILED
    assert message.startswith("history store postgresql://ci:***@127.0.0.1:1/db: ")
    assert "s3cret" not in message

    sqlite = create_store_engine(f"sqlite:///{tmp_path / 'h.db'}")
    with sqlite.connect() as connection, pytest.raises(OperationalError) as raised:
        connection.execute(text("SELECT * FROM no_such_table"))
    message, code = describe(raised.value)
    assert code == EXIT_SERVICE_FAILED
    assert f"sqlite:///{tmp_path / 'h.db'}" in message
    assert "no such table: no_such_table" in message


def test_convert_writes_nothing_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import recallbench.core._files as files

    destination = tmp_path / "out.json"
    destination.write_text('{"kept": true}')

    def disk_full(_: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.os, "fsync", disk_full)
    source = str(bundled_path("agent-memory-sample"))
    result = invoke("datasets", "convert", "--from", "json", source, str(destination))
    assert result.exit_code == 2
    assert f"cannot write {destination}: No space left on device" in result.output
    assert json.loads(destination.read_text()) == {"kept": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary left
