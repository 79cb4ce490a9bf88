"""HTTP profiles that start their service (``[http] start``: waited for, stopped after) and
empty it (``[http] reset`` command, ``[reset]`` request): between units and after
``systems check``, so nothing of the check stays in the user's endpoint. An endpoint that
is down fails with exit 69 naming the URL and what was being done, no traceback."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, DatasetError, Document, Query, SystemUnderTestError
from recallbench.core._net import free_port
from recallbench.runner import run_dataset
from recallbench.systems import create_system
from recallbench.systems._http import EndpointUnavailableError, HttpProfile, HttpSystem
from recallbench.systems._profile import read_profile

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "examples" / "http" / "bm25_service.py"

DOCS = (
    Document(id="pg", text="the ledger runs on postgresql"),
    Document(id="fri", text="deploys are frozen on fridays"),
    Document(id="cat", text="the office cat is named pixel"),
)


def write_profile(tmp_path: Path, http: str, rest: str = "", ingest: bool = True) -> Path:
    """A profile for the example BM25 service (a copy beside the profile: ``start`` runs
    in the profile's folder)."""
    (tmp_path / "bm25_service.py").write_text(SERVICE.read_text())
    path = tmp_path / "svc.toml"
    fill = """
[ingest]
path = "/documents"
batch_size = 10
batch_field = "documents"
item = { id = "{id}", text = "{text}" }
"""
    path.write_text(
        f"""
name = "svc"
kind = "http"
[http]
{http}
{fill if ingest else ""}
[search]
path = "/search"
body = {{ query = "{{query}}", k = "{{k}}" }}
[results]
hits = "hits"
id = "id"
score = "score"
{rest}
"""
    )
    return path


STARTED = """base_url = "http://127.0.0.1:{port}"
start = ["{python}", "bm25_service.py", "--port", "{port}"]"""


def test_a_started_service_is_filled_searched_and_stopped(tmp_path: Path) -> None:
    system = create_system(str(write_profile(tmp_path, STARTED)))
    assert isinstance(system, HttpSystem)
    data = Dataset(
        name="d",
        documents=DOCS,
        queries=(Query(id="q", text="postgresql ledger"),),
        qrels={"q": {"pg": 1}},
    )
    run = asyncio.run(run_dataset(data, system, k=5))
    assert [h.doc_id for h in run.results[0].hits] == ["pg"]
    assert system._process is None and system._workdir is None  # stopped, folder removed
    assert "start" in run.spec.settings["profile"]["http"]


def test_units_reset_by_request_share_one_service(tmp_path: Path) -> None:
    """``[reset]`` empties the store between units: the second unit's search finds none
    of the first's documents, and the service is started once."""
    path = write_profile(tmp_path, STARTED, '[reset]\nmethod = "DELETE"\npath = "/documents"')
    system = create_system(str(path))
    assert isinstance(system, HttpSystem)

    async def scenario() -> tuple[list[str], list[str], int | None, int | None]:
        try:
            await system.setup(DOCS[:2])
            first_pid = system._process.pid if system._process else None
            first = [h.doc_id for h in await system.search(Query(id="a", text="pixel ledger"), 5)]
            await system.setup(DOCS[2:])
            second_pid = system._process.pid if system._process else None
            answer = await system._request(system.profile.search, {"query": "ledger", "k": 5})
            return first, [h["id"] for h in answer["hits"]], first_pid, second_pid
        finally:
            await system.close()

    first, raw, first_pid, second_pid = asyncio.run(scenario())
    assert first == ["pg"] and raw == [] and first_pid == second_pid


def test_without_reset_a_started_service_is_started_anew_per_unit(tmp_path: Path) -> None:
    system = create_system(str(write_profile(tmp_path, STARTED)))
    assert isinstance(system, HttpSystem)

    async def scenario() -> tuple[int | None, int | None]:
        try:
            await system.setup(DOCS[:1])
            pid = system._process.pid if system._process else None
            await system.setup(DOCS[1:])
            return pid, system._process.pid if system._process else None
        finally:
            await system.close()

    first, second = asyncio.run(scenario())
    assert first is not None and second is not None and first != second


@pytest.fixture
def running_service(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The example service started outside recallbench (a user's endpoint)."""
    import subprocess
    import time
    import urllib.request

    port = free_port()
    process = subprocess.Popen([sys.executable, str(SERVICE), "--port", str(port)])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    yield url, tmp_path
    process.terminate()
    process.wait()


def documents_in(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as answer:
        return int(json.loads(answer.read())["documents"])


@pytest.mark.parametrize("how", ["command", "request"])
def test_systems_check_leaves_nothing_in_the_users_endpoint(
    running_service: tuple[str, Path], how: str
) -> None:
    url, tmp_path = running_service
    reset_command = json.dumps(
        [
            sys.executable,
            "-c",
            "import sys, urllib.request; urllib.request.urlopen(urllib.request.Request("
            "sys.argv[1] + '/documents', method='DELETE'))",
            "{base_url}",
        ]
    )
    http = f'base_url = "{url}"'
    rest = ""
    if how == "command":
        http += f"\nreset = {reset_command}"
    else:
        rest = '[reset]\npath = "/documents"'
    path = write_profile(tmp_path, http, rest)
    result = CliRunner().invoke(main, ["systems", "check", str(path)])
    assert result.exit_code == 0, result.output
    assert "ok  " in result.output and "FAIL" not in result.output
    assert documents_in(url) == 0


def test_a_reset_command_that_fails_says_what_it_was_doing(
    running_service: tuple[str, Path],
) -> None:
    url, tmp_path = running_service
    fail = json.dumps([sys.executable, "-c", "import sys; print('no such store'); sys.exit(4)"])
    system = create_system(str(write_profile(tmp_path, f'base_url = "{url}"\nreset = {fail}')))

    async def scenario() -> None:
        await system.setup(DOCS)
        await system.close()

    with pytest.raises(SystemUnderTestError, match=r"after the run: .*exit 4.*no such store"):
        asyncio.run(scenario())


@pytest.mark.parametrize(
    ("ingest", "doing"),
    [
        (True, "while ingesting 104 documents (POST /documents)"),
        (False, "checking that it answers"),
    ],
)
def test_a_down_endpoint_exits_69_naming_the_url(tmp_path: Path, ingest: bool, doing: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    path = write_profile(tmp_path, f'base_url = "{url}"', ingest=ingest)
    result = CliRunner().invoke(
        main, ["run", "--system", str(path), "--no-store", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 69, result.output
    assert f"svc: cannot reach {url}" in result.output and doing in result.output
    assert "is the service running?" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_a_service_that_exits_at_start_says_so_with_its_output(tmp_path: Path) -> None:
    http = (
        'base_url = "http://127.0.0.1:{port}"\n'
        'start = ["{python}", "-c", "import sys; print(\'port taken\'); sys.exit(1)"]'
    )
    system = create_system(str(write_profile(tmp_path, http)))
    with pytest.raises(SystemUnderTestError, match=r"exited \(1\) before answering.*port taken"):
        asyncio.run(system.setup(DOCS))


def test_a_service_that_never_answers_is_unavailable(tmp_path: Path) -> None:
    http = (
        'base_url = "http://127.0.0.1:{port}"\nstartup_timeout = 0.5\n'
        'start = ["{python}", "-c", "import time; time.sleep(30)"]'
    )
    system = create_system(str(write_profile(tmp_path, http)))

    async def scenario() -> None:
        try:
            await system.setup(DOCS)
        finally:
            await system.close()

    with pytest.raises(EndpointUnavailableError, match=r"did not answer .* within 0\.5 s"):
        asyncio.run(scenario())


def test_bad_service_keys_are_refused_naming_key_and_file(tmp_path: Path) -> None:
    path = write_profile(tmp_path, 'base_url = "x"\nstartup_timeout = -1\nstrat = ["x"]')
    with pytest.raises(DatasetError) as caught:
        read_profile(path, HttpProfile)
    message = str(caught.value)
    assert str(path) in message and "http.startup_timeout" in message and "http.strat" in message


def test_results_that_match_no_document_are_counted_and_fail_a_run_of_only_those(
    tmp_path: Path,
) -> None:
    """A wrong [results] id: every hit is unmatched. Counted as the MCP adapter counts them,
    so the run fails (nothing was measured) instead of reading 0 everywhere, quietly."""
    from recallbench.runner import failure_of, unmatched_results

    path = write_profile(tmp_path, STARTED)
    path.write_text(path.read_text().replace('\nid = "id"\n', '\nid = "doc_id"\n'))
    data = Dataset(
        name="d",
        documents=DOCS,
        queries=(Query(id="q1", text="postgresql ledger"), Query(id="q2", text="fridays")),
        qrels={"q1": {"pg": 1}, "q2": {"fri": 1}},
    )
    run = asyncio.run(run_dataset(data, create_system(str(path)), k=5))
    assert all(not result.hits for result in run.results)
    unmatched, returned = unmatched_results(run)
    assert unmatched == returned == run.spec.settings["scored_results"] > 0
    reason = failure_of(run)
    assert reason is not None and "matched no document" in reason and "doc_id" in reason

    right = asyncio.run(
        run_dataset(data, create_system(str(write_profile(tmp_path, STARTED))), k=5)
    )
    assert "unmatched_results" not in right.spec.settings  # unchanged runs record the same
    assert failure_of(right) is None
