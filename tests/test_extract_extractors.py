"""`recallbench extract --extractor python:...|command:...|mcp:...`: good systems are scored,
faulty ones (raising, off the format, exiting 1, hanging, printing prose) fail with a
located message, exit 3, and nothing written."""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from recallbench.cli._extract import extract
from recallbench.extraction import (
    BaselineExtractor,
    Extractor,
    GoldDocument,
    resolve_extractor,
)

DATA = Path(__file__).parent / "data" / "extract"
SYSTEMS = DATA / "systems.py"
COMMAND = DATA / "command.py"
MEETING = ("--ground-truth", "meeting-sample")


def _python(name: str) -> str:
    return f"python:{SYSTEMS}:{name}"


def _command(mode: str) -> str:
    return f"command:{shlex.quote(sys.executable)} {shlex.quote(str(COMMAND))} {mode}"


def _invoke(tmp_path: Path, *args: str) -> Result:
    out, saved = tmp_path / "out", tmp_path / "saved" / "output.json"
    common = [
        "--resamples",
        "10",
        "--rule",
        "exact",
        "--out",
        str(out),
        "--save-output",
        str(saved),
    ]
    return CliRunner().invoke(extract, [*MEETING, *args, *common])


def _nothing_written(tmp_path: Path) -> None:
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "saved").exists()


def _saved(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp_path / "saved" / "output.json").read_text())
    return data


def test_baseline_fits_the_protocol() -> None:
    assert isinstance(BaselineExtractor(), Extractor)
    assert isinstance(resolve_extractor("baseline"), BaselineExtractor)


@pytest.mark.parametrize("name", ["first_line", "first_line_async", "as_output"])
def test_a_python_callable_extracts_every_document(tmp_path: Path, name: str) -> None:
    result = _invoke(tmp_path, "--extractor", _python(name))
    assert result.exit_code == 0, result.output
    saved = _saved(tmp_path)
    assert saved["system"] == _python(name)
    assert saved["metadata"] == {"extractor": "python", "model": None}
    first = saved["documents"][0]
    assert first["id"] == "kestrel-kickoff"
    assert first["events"][0]["description"] == "Kestrel kickoff, 3 March 2025"
    assert len(saved["documents"]) == 10
    report = json.loads((tmp_path / "out" / "extraction.json").read_text())
    assert report["output"]["system"] == _python(name)


def test_a_module_callable_is_loaded_by_its_dotted_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(DATA))
    result = _invoke(tmp_path, "--extractor", "python:systems:first_line", "--documents", "2")
    assert result.exit_code == 0, result.output
    assert [d["id"] for d in _saved(tmp_path)["documents"]] == [
        "kestrel-kickoff",
        "plan-draft-email",
    ]


def test_an_object_with_extract_is_used_whole(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--extractor", _python("WholeCorpus"))
    assert result.exit_code == 0, result.output
    saved = _saved(tmp_path)
    assert saved["system"] == "whole-corpus"
    assert all(d["events"] == [] for d in saved["documents"])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("raises", "document 'kestrel-kickoff': raised ValueError: cannot read kestrel-kickoff"),
        ("off_format", "document 'kestrel-kickoff': 2 problems"),
        ("a_list", "expected an object with events, entities and observations, got list"),
        ("other_id", "the answer is for 'somewhere-else', not for 'kestrel-kickoff'"),
        ("BadCorpus", "duplicate id"),
        ("ModelCorpus", "documents[1].id: duplicate id"),
    ],
)
def test_a_faulty_python_extractor_fails_located_and_writes_nothing(
    tmp_path: Path, name: str, expected: str
) -> None:
    result = _invoke(tmp_path, "--extractor", _python(name))
    assert result.exit_code == 3, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    _nothing_written(tmp_path)


def test_an_answer_off_the_format_lists_every_problem_by_path(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--extractor", _python("off_format"))
    assert "events[0].description" in result.output
    assert "topics" in result.output


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("python:tests/no/such.py:extract", "no such file"),
        (f"python:{SYSTEMS}:missing", "has no 'missing'"),
        ("python:no_such_module_here:extract", "cannot load it (ModuleNotFoundError"),
        ("python:nothing", "expected python:MODULE:NAME"),
        ("grpc:localhost", "unknown extractor"),
        ("command:/no/such/binary", "cannot start '/no/such/binary'"),
    ],
)
def test_a_spec_that_cannot_be_loaded_is_bad_input(
    tmp_path: Path, spec: str, expected: str
) -> None:
    result = _invoke(tmp_path, "--extractor", spec)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    _nothing_written(tmp_path)


def test_a_command_extracts_once_per_document(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--extractor", _command("extract"), "--documents", "3")
    assert result.exit_code == 0, result.output
    saved = _saved(tmp_path)
    assert saved["metadata"]["extractor"] == "command"
    assert [d["events"][0]["description"] for d in saved["documents"]] == [
        "Kestrel kickoff, 3 March 2025",
        "From: Marek Novak",
        "From: Priya Raman",
    ]
    report = json.loads((tmp_path / "out" / "extraction.json").read_text())
    assert report["ground_truth"]["documents"] == 3
    assert report["ground_truth"]["graph_cases"] == 0  # every case names a later document


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("fail", "document 'kestrel-kickoff': exited 1; stderr: 'the model file is missing'"),
        ("prose", "its output is not JSON (Expecting value at line 1 column 1)"),
    ],
)
def test_a_faulty_command_fails_located_and_writes_nothing(
    tmp_path: Path, mode: str, expected: str
) -> None:
    result = _invoke(tmp_path, "--extractor", _command(mode))
    assert result.exit_code == 3, result.output
    assert expected in result.output
    _nothing_written(tmp_path)


def test_a_hanging_command_is_stopped_at_the_timeout_with_its_children(tmp_path: Path) -> None:
    """The shell's child keeps the output open: the whole process group is killed."""
    started = time.monotonic()
    result = _invoke(tmp_path, "--extractor", "command:sh -c 'sleep 30'", "--timeout", "0.5")
    assert time.monotonic() - started < 10
    assert result.exit_code == 3, result.output
    assert "document 'kestrel-kickoff': no answer within 0.5 s; the command was stopped" in (
        result.output
    )
    _nothing_written(tmp_path)
    hang = _invoke(tmp_path, "--extractor", _command("hang"), "--timeout", "0.5")
    assert hang.exit_code == 3 and "no answer within 0.5 s" in hang.output


def test_mcp_extraction_unavailable_is_bad_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "recallbench.extraction._mcp_extractor", None)
    result = _invoke(tmp_path, "--extractor", "mcp:basic-memory")
    assert result.exit_code == 2, result.output
    assert "--extractor mcp:basic-memory: MCP extraction is unavailable" in result.output
    _nothing_written(tmp_path)


def test_an_unknown_mcp_profile_is_bad_input(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--extractor", "mcp:no-such-profile")
    assert result.exit_code == 2, result.output
    assert "no-such-profile" in result.output
    _nothing_written(tmp_path)


def test_judge_options_need_the_llm_extractor(tmp_path: Path) -> None:
    result = _invoke(tmp_path, "--judge-cache", str(tmp_path / "c.jsonl"))
    assert result.exit_code == 2
    assert "--judge-cache and --strict apply to --extractor llm only" in result.output
    _nothing_written(tmp_path)


def test_llm_without_a_judge_table_is_bad_input(tmp_path: Path) -> None:
    config = tmp_path / "recallbench.toml"
    config.write_text("", encoding="utf-8")
    result = _invoke(tmp_path, "--extractor", "llm", "--config", str(config))
    assert result.exit_code == 2, result.output
    assert "no [judge] table" in result.output
    _nothing_written(tmp_path)


def test_resolve_extractor_llm_needs_a_judge() -> None:
    from recallbench.core import ConfigError

    with pytest.raises(ConfigError, match="needs the \\[judge\\] table"):
        resolve_extractor("llm")


def test_a_saved_output_replays_to_the_same_scores(tmp_path: Path) -> None:
    first = _invoke(tmp_path, "--extractor", _command("extract"))
    assert first.exit_code == 0, first.output
    replay = CliRunner().invoke(
        extract,
        [*MEETING, "--output", str(tmp_path / "saved" / "output.json"), "--resamples", "10",
         "--rule", "exact", "--out", str(tmp_path / "replay")],
    )  # fmt: skip
    assert replay.exit_code == 0, replay.output

    def results(folder: Path) -> Any:
        return json.loads((folder / "extraction.json").read_text())["results"]

    assert results(tmp_path / "replay") == results(tmp_path / "out")


def test_documents_are_given_without_their_gold() -> None:
    from recallbench.extraction._extractors import document_payload

    document = GoldDocument.model_validate(
        {"id": "d", "text": "t", "events": [{"description": "gold"}], "metadata": {"k": 1}}
    )
    assert document_payload(document) == {
        "id": "d",
        "text": "t",
        "title": None,
        "metadata": {"k": 1},
    }


def test_a_python_extractor_in_the_working_folder_loads_without_pythonpath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for python: systems: the folder the command runs in is importable."""
    import sys

    from recallbench.extraction._extractors import load_python

    (tmp_path / "here_extractor_mod.py").write_text("def extract(document):\n    return {}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    assert callable(load_python("here_extractor_mod:extract", "--extractor"))
