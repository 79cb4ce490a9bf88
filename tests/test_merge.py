"""`recallbench merge`: shards of a run merged give, byte for byte, the files and history
entry of the unsharded run; shards that do not belong together are refused, nothing written.

Two runs of one system never agree on wall-clock fields: the latencies, when the run
started and finished, how long ingestion took, when the report was made and recorded. So
the comparison replays one recording (recorded latencies, the same answers) and holds the
clock still (:func:`frozen_clock`) for both the unsharded run and the shards; everything
else, every byte, must then be equal."""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from collections.abc import Sequence
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench.cli import main

FROZEN = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CLOCKS = (
    "recallbench.runner._runner",
    "recallbench.report._build",
    "recallbench.store._store",
    "recallbench.cli._bench",
)
"""The modules that read the wall clock on the way from a run to its files and history."""
SYSTEMS = ("--system", "builtin-lexical", "--system", "python:example_retrievers:Overlap")
MEASURES = ("-m", "ndcg@10", "-m", "recall@5", "-m", "mrr@10", "--k", "10")


class _Still(datetime):
    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:
        return FROZEN if tz is not None else FROZEN.replace(tzinfo=None)


def hold_clock(setattr_: Any) -> None:
    """Every wall-clock read of a run, its report and its history entry returns one instant
    (``setattr_``: pytest's ``monkeypatch.setattr``, or a worker's own patcher)."""
    for module in CLOCKS:
        setattr_(f"{module}.datetime", _Still)
    still = SimpleNamespace(perf_counter=lambda: 0.0, perf_counter_ns=lambda: 0)
    setattr_("recallbench.runner._runner.time", still)


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    hold_clock(monkeypatch.setattr)


WORDS = [
    "apple",
    "banana",
    "cherry",
    "plum",
    "fig",
    "kiwi",
    "mango",
    "pear",
    "lime",
    "grape",
    "melon",
    "peach",
    "olive",
    "lemon",
    "date",
    "guava",
    "papaya",
    "quince",
    "berry",
    "nut",
]


def locomo_file(folder: Path, conversations: int = 5, seed: int = 0) -> Path:
    """A LoCoMo-format file: conversations of unequal length and question counts (so the
    split has something to balance), evidence on one turn each."""
    rng = random.Random(seed)
    samples = []
    for c in range(conversations):
        conversation: dict[str, Any] = {"speaker_a": "Ann", "speaker_b": "Bo"}
        turns = []
        for s in range(1, rng.randint(2, 4) + 1):
            session = []
            for t in range(1, rng.randint(3, 6) + 1):
                text = " ".join(rng.sample(WORDS, 4))
                speaker = "Ann" if t % 2 else "Bo"
                session.append({"speaker": speaker, "dia_id": f"D{s}:{t}", "text": text})
                turns.append((f"D{s}:{t}", text))
            conversation[f"session_{s}"] = session
        qa = []
        for _ in range(rng.randint(1, 2 + 3 * c)):
            dia_id, text = rng.choice(turns)
            qa.append(
                {
                    "question": " ".join(text.split()[: rng.randint(1, 3)]),
                    "answer": "x",
                    "evidence": [dia_id],
                    "category": rng.choice([1, 2, 3, 4]),
                }
            )
        samples.append({"sample_id": f"conv-{c + 1}", "conversation": conversation, "qa": qa})
    path = folder / "locomo-like.json"
    path.write_text(json.dumps(samples))
    return path


def invoke(arguments: Sequence[str], code: int = 0) -> str:
    result = CliRunner().invoke(main, list(arguments))
    assert result.exit_code == code, result.output
    return result.output


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative path, as bytes."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def history(url: str) -> list[dict[str, Any]]:
    """Every run in the store at ``url``, with its per-query values, as read back."""
    from recallbench.store import open_store

    with open_store(url) as store:
        return [
            {**dataclasses.asdict(run), "values": store.query_values(run.id)}
            for run in store.runs()
        ]


def test_merged_shards_are_the_unsharded_run_byte_for_byte(
    tmp_path: Path, frozen_clock: None
) -> None:
    data = f"locomo:{locomo_file(tmp_path)}"
    common = ["run", "--dataset", data, *SYSTEMS, *MEASURES]
    recording = tmp_path / "rec"
    invoke([*common, "--record", str(recording), "--out", str(tmp_path / "live"), "--no-store"])

    out = tmp_path / "out"  # both write here in turn: the history records the folder
    replay = [*common, "--replay", str(recording), "--strict"]
    invoke([*replay, "--out", str(out), "--store", f"sqlite:///{tmp_path / 'whole.db'}"])
    whole = files_of(out)
    shutil.move(out, tmp_path / "whole")

    shards = [tmp_path / f"shard-{i}" for i in (1, 2, 3)]
    for index, shard in enumerate(shards, 1):
        invoke([*replay, "--shard", f"{index}/3", "--out", str(shard)])
    parts = [json.loads((s / "shard.json").read_text())["datasets"][0]["queries"] for s in shards]
    assert all(parts), "every shard has conversations to ask"
    invoke(["merge", str(out), *map(str, shards), "--store", f"sqlite:///{tmp_path / 'm.db'}"])
    merged = files_of(out)

    expected = {"report.json", "report.md", "report.html", "run.json"}
    for system in ("builtin-lexical", "python_example_retrievers_Overlap"):
        assert {name.split("/", 1)[1] for name in whole if name.startswith(system)} == expected
    assert {"leaderboard.md", "leaderboard.json", "leaderboard.html"} <= set(whole)
    assert sorted(merged) == sorted(whole)
    for name, content in whole.items():
        assert merged[name] == content, name
    entries = history(f"sqlite:///{tmp_path / 'whole.db'}")
    assert len(entries) == 2
    assert history(f"sqlite:///{tmp_path / 'm.db'}") == entries
    # the queries came back in the dataset's order, not shard by shard
    report = json.loads(merged["builtin-lexical/report.json"])
    assert [q["id"] for q in report["queries"]] != [q for part in parts for q in part]


def test_shards_record_their_part_of_a_recording(tmp_path: Path) -> None:
    """Each shard records the answers to its own queries; together, the whole recording."""
    data = f"locomo:{locomo_file(tmp_path, seed=3)}"
    common = ["run", "--dataset", data, "--system", "builtin-lexical", *MEASURES, "--no-store"]
    invoke([*common, "--record", str(tmp_path / "rec"), "--out", str(tmp_path / "whole")])
    answers: dict[str, Any] = {}
    for index in (1, 2):
        folder = tmp_path / f"shard-{index}"
        invoke(
            [
                *common,
                "--shard",
                f"{index}/2",
                "--record",
                str(folder / "rec"),
                "--out",
                str(folder),
            ]
        )
        [path] = (folder / "rec").rglob("*.jsonl")
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        part = json.loads((folder / "shard.json").read_text())["datasets"][0]["queries"]
        assert [line["query_id"] for line in lines] == part
        answers |= {line["query_id"]: (line["text_sha256"], line["hits"]) for line in lines}
    [path] = (tmp_path / "rec").rglob("*.jsonl")
    whole = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert answers == {line["query_id"]: (line["text_sha256"], line["hits"]) for line in whole}
    # a shard replays its own part under --strict, not another's
    replay = [*common, "--replay", str(tmp_path / "shard-1" / "rec"), "--strict"]
    invoke([*replay, "--shard", "1/2", "--out", str(tmp_path / "again")])
    output = invoke([*replay, "--shard", "2/2", "--out", str(tmp_path / "other")], code=2)
    assert "have no recorded answer" in output
    # the parts concatenated are a whole recording
    joined = tmp_path / "joined" / path.relative_to(tmp_path / "rec")
    joined.parent.mkdir(parents=True)
    joined.write_text(
        "".join(
            next((tmp_path / f"shard-{i}" / "rec").rglob("*.jsonl")).read_text() for i in (1, 2)
        )
    )
    invoke(
        [
            *common,
            "--replay",
            str(tmp_path / "joined"),
            "--strict",
            "--out",
            str(tmp_path / "replayed"),
        ]
    )
    replayed = json.loads((tmp_path / "replayed" / "run.json").read_text())["results"]
    live = json.loads((tmp_path / "whole" / "run.json").read_text())["results"]
    assert [(r["query_id"], r["hits"]) for r in replayed] == [
        (r["query_id"], r["hits"]) for r in live
    ]


def test_bench_shards_merge_into_the_bench(tmp_path: Path, frozen_clock: None) -> None:
    first = f"locomo:{locomo_file(tmp_path)}"
    other = tmp_path / "other"
    other.mkdir()
    shutil.move(locomo_file(other, conversations=3, seed=7), other / "second.json")
    second = f"locomo:{other / 'second.json'}"
    common = ["bench", "--dataset", first, "--dataset", second, *SYSTEMS, *MEASURES]
    out = tmp_path / "out"
    invoke([*common, "--out", str(out), "--store", f"sqlite:///{tmp_path / 'whole.db'}"])
    whole = files_of(out)
    shutil.move(out, tmp_path / "whole")
    shards = [tmp_path / f"shard-{i}" for i in (1, 2)]
    for index, shard in enumerate(shards, 1):
        invoke([*common, "--shard", f"{index}/2", "--out", str(shard)])
    invoke(["merge", str(out), *map(str, shards), "--store", f"sqlite:///{tmp_path / 'm.db'}"])
    merged = files_of(out)
    # live systems: with the clock held still every latency reads 0, so bytes compare
    assert sorted(merged) == sorted(whole)
    assert len([n for n in whole if n.endswith("report.json")]) == 4
    for name, content in whole.items():
        assert merged[name] == content, name
    entries = history(f"sqlite:///{tmp_path / 'whole.db'}")
    assert len(entries) == 4
    assert history(f"sqlite:///{tmp_path / 'm.db'}") == entries


# -- refusals ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[Path]]:
    folder = tmp_path_factory.mktemp("shards")
    data = f"locomo:{locomo_file(folder, conversations=4, seed=1)}"
    shards = [folder / f"shard-{i}" for i in (1, 2, 3)]
    for index, shard in enumerate(shards, 1):
        invoke(
            [
                "run",
                "--dataset",
                data,
                "--system",
                "builtin-lexical",
                *MEASURES,
                "--shard",
                f"{index}/3",
                "--out",
                str(shard),
            ]
        )
    return folder, data, shards


def refused(out: Path, folders: Sequence[Path], *expected: str) -> None:
    output = invoke(["merge", str(out), *map(str, folders), "--no-store"], code=2)
    for text in expected:
        assert text in output, output
    assert "Traceback" not in output
    assert not out.exists()


def test_merge_refuses_a_missing_or_repeated_shard(
    tmp_path: Path, three_shards: tuple[Path, str, list[Path]]
) -> None:
    _, _, (one, two, three) = three_shards
    refused(tmp_path / "out", [one, three], "shard 2 of 3 missing")
    refused(tmp_path / "out", [one, two, three, one], f"{one}: shard 1/3 again")
    refused(tmp_path / "out", [one, two, tmp_path], f"{tmp_path}: not a shard folder")
    refused(tmp_path / "out", [one, two, tmp_path / "nowhere"], "nowhere: no such folder")


def test_merge_refuses_shards_of_other_runs(
    tmp_path: Path, three_shards: tuple[Path, str, list[Path]]
) -> None:
    _, data, (one, two, three) = three_shards
    base = ["run", "--dataset", data, "--system", "builtin-lexical", "--out"]
    other_k = tmp_path / "k5"
    invoke([*base, str(other_k), *MEASURES[:-1], "5", "--shard", "3/3"])
    refused(tmp_path / "out", [one, two, other_k], f"{other_k}: its k (5) differs", "(10)")
    halves = tmp_path / "half"
    invoke([*base, str(halves), *MEASURES, "--shard", "2/2"])
    refused(tmp_path / "out", [one, halves], f"{halves}: its number of shards (2) differs")
    measures = tmp_path / "measures"
    invoke([*base, str(measures), "-m", "ndcg@10", "--k", "10", "--shard", "2/3"])
    refused(tmp_path / "out", [one, measures, three], f"{measures}: its measures")
    hybrid = tmp_path / "hybrid"
    invoke(
        [
            *base,
            str(hybrid),
            *MEASURES,
            "--shard",
            "2/3",
            "--system",
            "python:example_retrievers:Overlap",
        ]
    )
    refused(tmp_path / "out", [one, hybrid, three], f"{hybrid}: its systems")


def test_merge_refuses_a_run_that_is_not_its_shards_part(
    tmp_path: Path, three_shards: tuple[Path, str, list[Path]]
) -> None:
    _, _, shards = three_shards
    copies = [tmp_path / s.name for s in shards]
    for shard, copy in zip(shards, copies, strict=True):
        shutil.copytree(shard, copy)
    run = json.loads((copies[1] / "run.json").read_text())
    run["results"] = run["results"][1:]
    (copies[1] / "run.json").write_text(json.dumps(run))
    refused(tmp_path / "out", copies, f"{copies[1] / 'run.json'}: its queries are not")


def test_merge_refuses_a_dataset_that_changed(tmp_path: Path) -> None:
    path = locomo_file(tmp_path, conversations=3, seed=2)
    shards = [tmp_path / f"shard-{i}" for i in (1, 2)]
    for index, shard in enumerate(shards, 1):
        invoke(
            [
                "run",
                "--dataset",
                f"locomo:{path}",
                "--system",
                "builtin-lexical",
                *MEASURES,
                "--shard",
                f"{index}/2",
                "--out",
                str(shard),
            ]
        )
    locomo_file(tmp_path, conversations=3, seed=9)  # rewritten in place
    refused(tmp_path / "out", shards, f"dataset locomo:{path}: its fingerprint", "changed")


def test_help_shows_examples() -> None:
    for command in ("run", "bench", "merge"):
        shown = invoke([command, "--help"])
        assert "Examples:" in shown
        assert "--shard" in shown
    assert "recallbench merge out/merged out/shard-1 out/shard-2" in invoke(["merge", "--help"])


def test_more_shards_than_conversations(tmp_path: Path, frozen_clock: None) -> None:
    """Empty shards run nothing and merge as nothing; a shard records no history."""
    data = f"locomo:{locomo_file(tmp_path, conversations=2, seed=4)}"
    common = ["run", "--dataset", data, "--system", "builtin-lexical", *MEASURES]
    out = tmp_path / "out"
    invoke([*common, "--out", str(out), "--store", f"sqlite:///{tmp_path / 'whole.db'}"])
    whole = files_of(out)
    shutil.move(out, tmp_path / "whole")
    shards = [tmp_path / f"shard-{i}" for i in range(1, 5)]
    shard_store = f"sqlite:///{tmp_path / 'shards.db'}"
    for index, shard in enumerate(shards, 1):
        invoke([*common, "--shard", f"{index}/4", "--out", str(shard), "--store", shard_store])
    asked = [json.loads((s / "run.json").read_text())["results"] for s in shards]
    assert sorted(map(len, asked))[:2] == [0, 0]
    assert history(shard_store) == []
    invoke(["merge", str(out), *map(str, shards), "--store", f"sqlite:///{tmp_path / 'm.db'}"])
    assert files_of(out) == whole
    assert history(f"sqlite:///{tmp_path / 'm.db'}") == history(
        f"sqlite:///{tmp_path / 'whole.db'}"
    )


def test_merge_loads_the_dataset_from_elsewhere_by_fingerprint(
    tmp_path: Path, three_shards: tuple[Path, str, list[Path]]
) -> None:
    _, data, shards = three_shards
    (tmp_path / "elsewhere").mkdir()
    moved = tmp_path / "elsewhere" / "locomo-like.json"  # its name is the dataset's
    shutil.copy(data.removeprefix("locomo:"), moved)
    other = locomo_file(tmp_path, conversations=2, seed=8)
    out = tmp_path / "out"
    refusal = invoke(
        ["merge", str(out), *map(str, shards), "--no-store", "--dataset", f"locomo:{other}"], code=2
    )
    assert f"--dataset locomo:{other}: locomo-like (" in refusal
    assert "is not a dataset the shards ran on" in refusal
    assert not out.exists()
    output = invoke(
        ["merge", str(out), *map(str, shards), "--no-store", "--dataset", f"locomo:{moved}"]
    )
    assert "merged 1 report" in output
    assert json.loads((out / "report.json").read_text())["counts"]["missing"] == 0


def test_a_merge_that_fails_while_writing_leaves_out_as_it_was(
    tmp_path: Path, three_shards: tuple[Path, str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, _, shards = three_shards
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.json").write_text("an older report")

    def full(*_: object, **__: object) -> None:
        raise OSError(28, "No space left on device", str(out / "report.html"))

    monkeypatch.setattr("recallbench.render._write.render_report_html", full)
    output = invoke(["merge", str(out), *map(str, shards), "--no-store"], code=2)
    assert "No space left on device" in output
    assert files_of(out) == {"report.json": b"an older report"}
    assert [p.name for p in out.iterdir()] == ["report.json"]
