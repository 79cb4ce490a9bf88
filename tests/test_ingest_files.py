"""``[ingest] files``: the corpus written as files into the folder a server indexes, for a
read-only indexer (no write tool): front matter and path templates, an index tool or
command, a wait until a search finds the files, units (files of one unit only), and
profiles that get it wrong refused with the key and the file. Against
tests/folder_mcp_server.py (reads its folder at start and on ``reindex`` only) and the
real basic-memory (indexes the Markdown files of its home folder on its own)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from recallbench.core import Dataset, DatasetError, Document, Query, SystemUnderTestError
from recallbench.runner import run_dataset
from recallbench.systems._ingest_files import file_text, write_files
from recallbench.systems._mcp import MCPSystem, profile_settings
from recallbench.systems._profile import IngestFiles, load_profile, shipped_profiles

HERE = Path(__file__).parent
DOCS = (
    Document(id="pg", text="the ledger runs on postgresql", title="Ledger"),
    Document(id="fri", text="deploys are frozen on fridays"),
    Document(id="cat", text="the office cat is named pixel"),
    Document(id="a/b", text="an id with a separator about postgresql pools"),
)
DATA = Dataset(
    name="files",
    documents=DOCS,
    queries=(
        Query(id="q1", text="postgresql"),
        Query(id="q2", text="fridays deploys"),
        Query(id="q3", text="pixel"),
    ),
    qrels={"q1": {"pg": 1}, "q2": {"fri": 1}, "q3": {"cat": 1}},
)


def profile(tmp_path: Path, ingest: str, name: str = "folder-notes") -> Path:
    """A profile for the folder server with ``ingest`` as its [ingest] table."""
    command = json.dumps([sys.executable, str(HERE / "folder_mcp_server.py")])
    path = tmp_path / f"{name}.toml"
    path.write_text(
        f"""
name = "{name}"
[server]
command = {command}
env = {{ NOTES_DIR = "{{workdir}}/notes" }}
[ingest]
{ingest}
[search]
tool = "search"
arguments = {{ query = "{{query}}", limit = "{{k}}" }}
[results]
source = "json_text"
hits = "hits"
id = "id"
score = "shared"
"""
    )
    return path


FRONT = 'files = { folder = "{workdir}/notes", path = "{id}.md", front_matter = { id = "{id}" } }'


def ranked(run: Any) -> list[list[str]]:
    return [[hit.doc_id for hit in result.hits] for result in run.results]


def test_files_written_before_the_server_starts_are_searched(tmp_path: Path) -> None:
    """No index step: the server reads the folder once at start, so the files must be
    there before it starts; ids come from the front matter (``a/b`` has no file name of
    its own: its separator became ``_``)."""
    system = MCPSystem(load_profile(profile(tmp_path, FRONT)))
    run = asyncio.run(run_dataset(DATA, system, k=5))
    assert [r.error for r in run.results] == [None] * 3
    assert ranked(run) == [["a/b", "pg"], ["fri"], ["cat"]]


def test_an_index_tool_and_a_ready_probe_serve_each_unit(tmp_path: Path) -> None:
    """With units, the server stays up ([reset] of a folder it reads only on reindex):
    each unit's files replace the last one's, ``reindex`` reads them, the probe waits."""
    ingest = FRONT + '\nindex = { tool = "reindex" }\nready = { query = "{text}", timeout = 20 }'
    path = profile(tmp_path, ingest)
    path.write_text(path.read_text() + '\n[reset]\nfiles = ["nothing-else"]\n')
    data = DATA.model_copy(
        update={
            "units": {"u1": ("pg", "fri"), "u2": ("cat", "pg")},
            "queries": tuple(
                q.model_copy(update={"unit": u})
                for q, u in zip(DATA.queries, ("u1", "u1", "u2"), strict=True)
            ),
        }
    )
    system = MCPSystem(load_profile(path))
    run = asyncio.run(run_dataset(data, system, k=5))
    assert [r.error for r in run.results] == [None] * 3
    assert ranked(run) == [["pg"], ["fri"], ["cat"]]  # "a/b" is in no unit


def test_an_index_command_runs_in_the_workdir(tmp_path: Path) -> None:
    """A command as the index step (here it writes one more file the server reads)."""
    write = "open('notes/extra.md', 'w').write('---\\nid: \\\"cat\\\"\\n---\\nxylophone')"
    command = json.dumps([sys.executable, "-c", write])
    ingest = FRONT + f'\nindex = {{ command = {command}, tool = "reindex" }}'
    system = MCPSystem(load_profile(profile(tmp_path, ingest)))
    query = Query(id="q", text="xylophone")
    run = asyncio.run(
        run_dataset(DATA.model_copy(update={"queries": (query,), "qrels": {}}), system, k=5)
    )
    assert ranked(run) == [["cat"]]


def test_files_that_never_become_searchable_fail_setup_clearly(tmp_path: Path) -> None:
    """The next unit's files, written while the server runs, with no index step, are never
    read: the probe says so after its timeout, naming the document it looked for."""
    ingest = FRONT + '\nready = { query = "{text}", timeout = 1, interval = 0.2 }'
    path = profile(tmp_path, ingest)
    path.write_text(path.read_text() + '\n[reset]\nfiles = ["nothing-else"]\n')
    system = MCPSystem(load_profile(path))

    async def scenario() -> None:
        try:
            await system.setup(DOCS[:1])  # read at start: found
            await system.setup(DOCS[1:2])  # same server, never reads the new file
        finally:
            await system.close()

    with pytest.raises(SystemUnderTestError, match=r"not searchable within 1\.0 s.*'fri'"):
        asyncio.run(scenario())


def test_front_matter_and_body_templates(tmp_path: Path) -> None:
    spec = IngestFiles(
        path="{metadata.folder}/{id}.md",
        body="# {title}\n\n{text}\n",
        front_matter={"title": "{title}", "tags": ["memory", "{metadata.folder}"]},
    )
    doc = Document(id="d1", text='He said "hi"', metadata={"folder": "rules"})
    [written] = write_files(spec, tmp_path, [doc])
    assert written == tmp_path / "rules" / "d1.md"
    assert written.read_text() == (
        '---\ntitle: "d1"\ntags: ["memory", "rules"]\n---\n# d1\n\nHe said "hi"\n'
    )
    assert file_text(IngestFiles(), {"id": "x", "text": "plain"}) == "plain\n"


def test_files_that_would_collide_or_leave_the_folder_are_refused(tmp_path: Path) -> None:
    same = [Document(id="a/b", text="x"), Document(id="a_b", text="y")]
    with pytest.raises(SystemUnderTestError, match="both go to"):
        write_files(IngestFiles(), tmp_path, same)
    with pytest.raises(SystemUnderTestError, match="not a file inside"):
        write_files(IngestFiles(path="../{id}.md"), tmp_path, same[:1])
    assert list(tmp_path.iterdir()) == []  # nothing half-written


@pytest.mark.parametrize(
    ("ingest", "message"),
    [
        ('tool = "w"\nitem = { a = "{text}" }\n' + FRONT, "has a tool and files"),
        ('index = { tool = "reindex" }', "needs a tool"),
        ('tool = "w"\nitem = { a = 1 }\nready = { timeout = 1 }', "apply to files"),
        (FRONT + "\nindex = {}", "needs a tool or a command"),
        (FRONT + "\nready = { timeout = 0 }", "ingest.ready.timeout"),
        ('files = { folder = "x", pathh = "{id}" }', "ingest.files.pathh"),
    ],
)
def test_bad_file_ingest_is_refused_naming_key_and_file(
    tmp_path: Path, ingest: str, message: str
) -> None:
    path = profile(tmp_path, ingest)
    with pytest.raises(DatasetError, match=message) as caught:
        load_profile(path)
    assert str(path) in str(caught.value)


def test_settings_of_profiles_without_file_ingest_are_as_before() -> None:
    settings = profile_settings(load_profile(shipped_profiles()["server-memory"]))
    assert set(settings["ingest"]) == {"tool", "batch_size", "batch_field", "item"}
    assert "mcp" not in settings["install"]


def test_basic_memory_reads_notes_written_into_its_folder(
    installed_servers: Path, tmp_path: Path
) -> None:
    """A real server that indexes a folder: basic-memory indexes the Markdown files of its
    home folder (``basic-memory reindex``, run beside the server on the same database);
    no write tool is called, the probe waits until the index has them."""
    shipped = shipped_profiles()["basic-memory"].read_text()
    head = shipped.split("[ingest]")[0]
    search = "[search]" + shipped.split("[search]")[1].split("[reset]")[0]
    path = tmp_path / "basic-memory-files.toml"  # the same name: the same installed server
    path.write_text(
        head
        + """
[ingest]
files = { folder = "{workdir}/notes/memories", path = "{id}.md", front_matter = { title = "{id}" } }
index = { command = ["{install}/venv/bin/basic-memory", "reindex", "--search"] }
ready = { query = "{text}", timeout = 60 }
"""
        + search
    )
    system = MCPSystem(load_profile(path))
    data = DATA.model_copy(update={"documents": DOCS[:3]})
    run = asyncio.run(run_dataset(data, system, k=5))
    assert [r.error for r in run.results] == [None] * 3
    assert [hits[:1] for hits in ranked(run)] == [["pg"], ["fri"], ["cat"]]
