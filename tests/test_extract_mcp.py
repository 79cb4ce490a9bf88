"""An MCP server that extracts on ingest, scored through its profile's ``[extract]`` table:
the real basic-memory server on notes of the bundled meeting corpus (rendered as
basic-memory Markdown) and on plain text; the mapping on a recorded answer; profile
validation; servers that only store what they are given; a server that crashes or hangs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from recallbench import extraction
from recallbench.core import ConfigError, DatasetError
from recallbench.extraction import (
    ExtractionGroundTruth,
    ExtractionOutput,
    ExtractionScores,
    GoldDocument,
    GraphCase,
    MatchRule,
    load_ground_truth,
    score_extraction,
)
from recallbench.extraction._mcp_extractor import map_answer, mcp_extractor
from recallbench.runner import EXIT_SYSTEM_FAILED, SystemFailedError
from recallbench.systems._profile import load_profile, shipped_profiles

DATA = Path(__file__).parent / "data" / "extract_mcp"
CORPUS = Path(extraction.__file__).parent / "data" / "meeting-sample.json"
FAULTY = Path(__file__).parent / "faulty_mcp_server.py"
EXACT = MatchRule.parse("exact")


# ---- the real basic-memory server ---------------------------------------------------------


def render(
    document: GoldDocument,
    events: int = 0,
    observations: int = 0,
    entities: int = 0,
    links: tuple[tuple[str, str], ...] = (),
    prose: str = "",
) -> GoldDocument:
    """The document as a note taker writes it for basic-memory: its text, then the first
    ``events`` gold events as ``- [category] description``, the first ``observations``
    gold observations as ``- [fact] text``, relations ``- mentions [[entity]]`` and
    ``- relation [[document]]``, and an optional paragraph with inline [[links]]."""
    lines = [document.text.rstrip(), ""]
    lines += [f"- [{e.category}] {e.description}" for e in document.events[:events]]
    lines += [f"- [fact] {o.text}" for o in document.observations[:observations]]
    lines += [f"- mentions [[{e.name}]]" for e in document.entities[:entities]]
    lines += [f"- {relation} [[{target}]]" for relation, target in links]
    if prose:
        lines += ["", prose]
    return document.model_copy(update={"text": "\n".join(lines) + "\n"})


@pytest.fixture(scope="module")
def meeting() -> ExtractionGroundTruth:
    """Four documents of the bundled corpus, with the kickoff's graph case cut to them."""
    truth = load_ground_truth(CORPUS)
    keep = ("kestrel-kickoff", "plan-draft-email", "dr-7-quarry", "office-move-email")
    case = next(c for c in truth.graph if c.seed_document == "kestrel-kickoff")
    seed = GraphCase(
        seed_document=case.seed_document,
        seed_event=case.seed_event,
        expected_connections=tuple(c for c in case.expected_connections if c.document_id in keep),
        expected_not_connected=tuple(d for d in case.expected_not_connected if d in keep),
    )
    return truth.model_copy(
        update={
            "documents": tuple(d for d in truth.documents if d.id in keep),
            "graph": (seed,),
        }
    )


@pytest.fixture(scope="module")
def extracted(installed_servers: Path, meeting: ExtractionGroundTruth) -> ExtractionOutput:
    """One basic-memory server for the module: three notes in its Markdown, one plain."""
    gold = {d.id: d for d in meeting.documents}
    notes = [
        render(
            gold["kestrel-kickoff"],
            events=2,
            observations=1,
            entities=3,
            links=(
                ("shared_event", "plan-draft-email"),
                ("shared_entity", "dr-7-quarry"),
                ("see_also", "office-move-email"),
            ),
        ),
        render(gold["plan-draft-email"], events=2, observations=2),
        render(
            gold["dr-7-quarry"],
            events=1,
            prose="Owned by [[Marek Novak]] for [[Project Kestrel]].",
        ),
        gold["office-move-email"],  # plain text, as given
    ]
    return mcp_extractor("basic-memory").extract(notes)


@pytest.fixture(scope="module")
def scores(meeting: ExtractionGroundTruth, extracted: ExtractionOutput) -> ExtractionScores:
    return score_extraction(meeting, extracted, EXACT, resamples=50)


def _doc(output: ExtractionOutput, identifier: str) -> Any:
    return next(d for d in output.documents if d.id == identifier)


def _values(scores: ExtractionScores, identifier: str) -> dict[str, float | None]:
    return next(u for u in scores.documents if u.id == identifier).values


def test_basic_memory_extracts_observations_and_relations(extracted: ExtractionOutput) -> None:
    assert extracted.system == "mcp:basic-memory"
    kickoff = _doc(extracted, "kestrel-kickoff")
    assert [(e.category, e.description) for e in kickoff.events] == [
        ("Decision", "Move the monthly billing reports from Ledgerline to Quarry"),
        ("Commitment", "Draft the migration plan"),
    ]
    assert [o.text for o in kickoff.observations] == [  # the [fact], not the events again
        "Alice Chen approves anything in Project Kestrel that touches invoices",
    ]
    # the note itself, then the targets of its relations that are not documents
    assert [e.name for e in kickoff.entities] == [
        "kestrel-kickoff",
        "Alice Chen",
        "Marek Novak",
        "Priya Raman",
    ]
    (expansion,) = extracted.expansions
    assert expansion.seed_document == "kestrel-kickoff"
    assert sorted((c.document_id, c.reason, c.hops) for c in expansion.connections) == [
        ("dr-7-quarry", "shared_entity", 1),  # in basic-memory's order, not the note's
        ("office-move-email", "see_also", 1),
        ("plan-draft-email", "shared_event", 1),
    ]
    # inline [[links]] in prose are relations too (links_to): their targets are entities
    assert [e.name for e in _doc(extracted, "dr-7-quarry").entities] == [
        "dr-7-quarry",
        "Marek Novak",
        "Project Kestrel",
    ]


def test_plain_text_yields_only_the_note(extracted: ExtractionOutput) -> None:
    plain = _doc(extracted, "office-move-email")
    assert plain.events == () and plain.observations == ()
    assert [e.name for e in plain.entities] == ["office-move-email"]


def test_scores_are_what_the_extraction_implies(scores: ExtractionScores) -> None:
    kickoff = _values(scores, "kestrel-kickoff")
    assert kickoff["event_precision"] == 1.0 and kickoff["event_recall"] == 0.5
    assert kickoff["category_accuracy"] == 1.0  # "Decision" is the note's [Decision]
    assert kickoff["actor_accuracy"] == 0.0  # basic-memory's observations have no actor
    assert kickoff["entity_precision"] == pytest.approx(3 / 4)  # the note matches no entity
    assert kickoff["entity_recall"] == pytest.approx(3 / 7)
    assert kickoff["type_accuracy"] == 0.0  # and no types
    assert kickoff["observation_coverage"] == 0.5

    email = _values(scores, "plan-draft-email")
    assert email["event_precision"] == 1.0 and email["event_recall"] == 1.0
    assert email["observation_coverage"] == 1.0
    assert email["entity_precision"] == 0.0 and email["entity_recall"] == 0.0

    decision = _values(scores, "dr-7-quarry")
    assert decision["event_recall"] == 0.5
    # the note's own name, "dr-7-quarry", is a slug, not the entity "Quarry": of the three
    # entities only the two relation targets match
    assert decision["entity_precision"] == pytest.approx(2 / 3)
    assert decision["entity_recall"] == pytest.approx(2 / 5)
    assert decision["observation_coverage"] == 0.0

    plain = _values(scores, "office-move-email")
    assert plain["event_precision"] is None  # nothing extracted: undefined, not 0
    assert plain["event_recall"] == 0.0 and plain["observation_coverage"] == 0.0

    seed = next(u for u in scores.seeds if u.id == "kestrel-kickoff").values
    assert seed["connection_precision"] == pytest.approx(2 / 3)
    assert seed["connection_recall"] == 1.0
    assert seed["connection_fpr"] == 1.0  # it linked the office move, expected not connected
    assert scores.aggregate("event_recall").macro == pytest.approx((0.5 + 1 + 0.5 + 0) / 4)


# ---- the mapping, on a recorded basic-memory answer ---------------------------------------


def _recorded() -> dict[str, Any]:
    """write_note and build_context answers of basic-memory 0.24.1 for a note ``kickoff``
    with observations, relations and inline links, and a note ``email`` linking to it."""
    data: dict[str, Any] = json.loads((DATA / "basic-memory-answers.json").read_text())
    return data


def _spec() -> Any:
    extract = load_profile(shipped_profiles()["basic-memory"]).extract
    assert extract is not None
    return extract


def test_mapping_of_a_recorded_answer() -> None:
    document = GoldDocument(id="kickoff", text="...")
    names = {"kickoff": "kickoff", "email": "email"}
    answer = _recorded()["build_context"]
    out, connections = map_answer(_spec(), document, answer, names)
    assert [(e.category, e.description) for e in out.events] == [
        ("decision", "Move billing to Quarry #billing")  # the tag stays in the text
    ]
    assert [o.text for o in out.observations] == [
        "Alice leads the project",
        "Alice leads the project",  # written twice, stored twice
    ]
    # one entity per name; "email" is a document of the corpus: a connection, no entity
    assert [e.name for e in out.entities] == ["kickoff", "Alice Chen", "Project Kestrel"]
    assert [(c.document_id, c.reason) for c in connections] == [("email", "follows_up")]
    # outside the corpus, "email" is just a linked entity and no connection
    alone, none = map_answer(_spec(), document, answer, {"kickoff": "kickoff"})
    assert [e.name for e in alone.entities] == ["kickoff", "email", "Alice Chen", "Project Kestrel"]
    assert none == []


def test_relations_of_other_notes_are_not_this_documents() -> None:
    answer = _recorded()["build_context"]
    related = answer["result"]["results"][0]["related_results"]
    related.append(
        {"type": "relation", "relation_type": "replies_to", "from_entity": "email", "to_name": "x"}
    )
    out, connections = map_answer(_spec(), GoldDocument(id="kickoff", text=""), answer, {})
    assert "x" not in {e.name for e in out.entities}
    assert connections == []


def test_the_ingest_answer_gives_the_permalink_to_read() -> None:
    from recallbench.systems._answers import select

    assert select(_recorded()["write_note"], _spec().ref) == "main/extracted/kickoff"


# ---- profiles ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["server-memory", "mcp-memory-libsql", "agentrecall"])
def test_servers_that_store_what_they_are_given_are_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        mcp_extractor(name)
    assert str(caught.value) == (
        f"{name} cannot be scored as an extractor: its profile has no [extract] table (ingest, "
        "then list what the server extracted), and its server stores what it is given instead "
        "of extracting from it"
    )
    assert caught.value.exit_code == 2


def test_a_user_profile_without_extract_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^faulty cannot .* no \[extract\] table \([^)]*\)$"):
        mcp_extractor(_profile(tmp_path, ""))


def test_an_unknown_profile_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"unknown MCP profile 'nope'.*basic-memory"):
        mcp_extractor("nope")
    with pytest.raises(ConfigError, match="profile not found"):
        mcp_extractor("missing.toml")


SERVER = """
name = "faulty"
[server]
command = [{python}, {script}]
call_timeout = 2
[ingest]
tool = "write"
item = {{ content = "{{text}}" }}
[search]
tool = "search"
arguments = {{ query = "{{query}}" }}
"""


def _extract(read: str = "search", arguments: str = "") -> str:
    """An [extract] table for the faulty test server: ingest with ``write``, read with
    ``read``; every hit of the answer is an observation."""
    return (
        '[extract]\ntool = "write"\narguments = { content = "{id}: {text}" }\n'
        f"read = {{ tool = {json.dumps(read)}, arguments = {{ {arguments} }} }}\n"
        '[[extract.observations]]\nitems = "result[]"\nfields = { text = "" }\n'
    )


def _profile(tmp_path: Path, extract: str) -> str:
    """A user profile (a TOML path) for tests/faulty_mcp_server.py with ``extract``."""
    server = SERVER.format(python=json.dumps(sys.executable), script=json.dumps(str(FAULTY)))
    path = tmp_path / "faulty.toml"
    path.write_text(server + extract)
    return str(path)


_HEAD = '[extract]\ntool = "w"\narguments = {}\n'
_READ = 'read = { tool = "r", arguments = {} }\n'


@pytest.mark.parametrize(
    ("extract", "where", "message"),
    [
        (
            _HEAD + _READ + '[[extract.events]]\nitems = "a[]"\nfields = { text = "x" }\n',
            "extract.events[0]",
            r"unknown event field\(s\) \['text'\]",
        ),
        (
            _HEAD + _READ + '[[extract.entities]]\nitems = "a[]"\nfields = { type = "t" }\n',
            "extract.entities[0]",
            "fields needs 'name'",
        ),
        (
            _HEAD
            + 'read = { tool = "r", arguments = { url = "{ref}" } }\n'
            + '[[extract.observations]]\nitems = "a[]"\nfields = { text = "x" }\n',
            "extract",
            "{ref} but .*no ref path",
        ),
        (_HEAD + _READ, "extract", "maps nothing"),
        (
            _HEAD + _READ + '[[extract.observations]]\nitems = "a..b"\nfields = { text = "x" }\n',
            "extract.observations[0]",
            "not a path",
        ),
    ],
)
def test_a_bad_extract_table_is_a_located_error(
    tmp_path: Path, extract: str, where: str, message: str
) -> None:
    path = _profile(tmp_path, extract)
    with pytest.raises(DatasetError) as caught:
        mcp_extractor(path)
    assert caught.value.exit_code == 2 and caught.value.source == path
    (problem,) = caught.value.problems
    assert problem.location == where, caught.value
    assert re.search(message, problem.message), problem.message


def test_a_user_profile_extracts_through_any_server(tmp_path: Path) -> None:
    """The faulty test server's search answers one hit per stored memory: a profile can
    read them back as observations (what a storing server "extracts" is what it got)."""
    profile = _profile(tmp_path, _extract(arguments='query = "{id}"'))
    documents = [GoldDocument(id="a", text="one"), GoldDocument(id="b", text="two")]
    output = mcp_extractor(profile).extract(documents)
    assert output.system == "mcp:faulty"
    assert [o.text for o in output.documents[1].observations] == ["b: a: one", "b: b: two"]
    assert output.metadata["profile"] == "faulty"


@pytest.mark.parametrize(
    ("read", "arguments", "message"),
    [
        ("crash", "", "crash"),
        ("search", 'query = "hang"', "no answer within 2"),
        ("nope", "", "the server has no tool 'nope'"),
    ],
)
def test_a_server_that_crashes_hangs_or_lacks_the_tool_fails_the_system(
    tmp_path: Path, read: str, arguments: str, message: str
) -> None:
    profile = _profile(tmp_path, _extract(read, arguments))
    with pytest.raises(SystemFailedError, match=message) as caught:
        mcp_extractor(profile).extract([GoldDocument(id="a", text="one")])
    assert caught.value.exit_code == EXIT_SYSTEM_FAILED == 3
    assert str(caught.value).startswith("mcp:faulty: ")


# ---- through the command line (recallbench extract --extractor mcp:PROFILE) --------------


def test_cli_refuses_a_storing_server_and_fails_on_a_crash(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from recallbench.cli import main

    common = ["extract", "--ground-truth", "meeting-sample", "--documents", "1"]
    common += ["--out", str(tmp_path / "out")]
    refused = CliRunner().invoke(main, [*common, "--extractor", "mcp:server-memory"])
    assert refused.exit_code == 2, refused.output
    assert "server-memory cannot be scored as an extractor" in refused.output
    assert "Traceback" not in refused.output

    crashing = _profile(tmp_path, _extract("crash"))
    failed = CliRunner().invoke(main, [*common, "--extractor", f"mcp:{crashing}"])
    assert failed.exit_code == 3, failed.output
    assert "mcp:faulty: crash: " in failed.output and "Traceback" not in failed.output
    assert not (tmp_path / "out").exists()
