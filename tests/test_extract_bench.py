"""`recallbench bench --extraction`: every extractor on every ground truth, the same numbers
as `recallbench extract`, a failing extractor as a failed row, paired ranks, and bad options
refused (exit 2) with nothing written. `extract --dataset` as another name of
--ground-truth."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from conftest import shared_data
from recallbench.cli._bench import bench
from recallbench.cli._extract import extract
from recallbench.extraction import GROUND_TRUTH_FORMAT, MatchRule, validated_output
from recallbench.report._leaderboard import safe_name

SYSTEMS = Path(__file__).parent / "data" / "extract" / "systems.py"
COMMAND = Path(__file__).parent / "data" / "extract" / "command.py"
FIRST_LINE = f"python:{SYSTEMS}:first_line"
RAISES = f"python:{SYSTEMS}:raises"
SCORING = ("--rule", "exact", "--rule", "lcs>=0.7", "--resamples", "200", "--seed", "3")
HEADLINE = (
    "event_f1",
    "entity_f1",
    "dedup_bcubed_f1",
    "observation_f1",
    "connection_precision",
    "connection_recall",
    "connection_fpr",
)


def _gold(name: str = "tiny-gold") -> dict[str, Any]:
    """Four documents whose one expected event is the first line but in the last one."""
    texts = [
        ("Alice approved the budget.\nBob will send the report.", "Alice approved the budget"),
        ("Carol booked the venue.\nDan likes tea.", "Carol booked the venue"),
        ("Erin moved the launch to May.\nFrank agreed.", "Erin moved the launch to May"),
        ("The weather was grey.\nGina will hire two engineers.", "Gina will hire two engineers"),
    ]
    return {
        "format": GROUND_TRUTH_FORMAT,
        "name": name,
        "documents": [
            {
                "id": f"d{index}",
                "text": text,
                "events": [{"description": event, "category": "Decision"}],
                "entities": [
                    {"name": event.split()[0], "type": "PERSON", "mentions": [event.split()[0]]}
                ],
                "observations": [{"text": event}],
            }
            for index, (text, event) in enumerate(texts)
        ],
    }


def _invoke(command: Any, *args: str | Path) -> Result:
    return CliRunner().invoke(command, [str(arg) for arg in args])


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Result]:
    """One bench of three extractors (one failing) on the bundled and a small ground truth."""
    root = tmp_path_factory.mktemp("extract-bench")
    gold = root / "tiny.json"
    gold.write_text(json.dumps(_gold()), encoding="utf-8")
    out = root / "out"
    result = _invoke(
        bench,
        "--extraction",
        "meeting-sample",
        "--extraction",
        gold,
        "--extractor",
        "baseline",
        "--extractor",
        FIRST_LINE,
        "--extractor",
        RAISES,
        *SCORING,
        "--out",
        out,
    )
    return out, gold, result


def _board(out: Path, name: str) -> dict[str, Any]:
    document = json.loads((out / "extraction-leaderboard.json").read_text())
    (board,) = [b for b in document["ground_truths"] if b["ground_truth"]["name"] == name]
    return dict(board)


def _row(board: dict[str, Any], extractor: str) -> dict[str, Any]:
    (row,) = [e for e in board["extractors"] if e["extractor"] == extractor]
    return dict(row)


def _aggregates(report: dict[str, Any], rule: str) -> dict[str, dict[str, Any]]:
    (result,) = [r for r in report["results"] if r["rule"] == rule]
    return {a["measure"]: a for a in result["aggregates"]}


def _cell(aggregate: dict[str, Any]) -> str:
    if aggregate["macro"] is None:
        return "–"
    low, high = aggregate["macro_interval"]
    return f"{aggregate['macro']:.3f} [{low:.3f}, {high:.3f}]"


def test_every_extractor_on_every_ground_truth_writes_its_files(
    benched: tuple[Path, Path, Result],
) -> None:
    out, _, result = benched
    assert result.exit_code == 0, result.output
    folders = sorted(["baseline", safe_name(FIRST_LINE)])  # none for the failed extractor
    for truth in ("meeting-sample", "tiny-gold"):
        assert sorted(p.name for p in (out / truth).iterdir()) == folders
        for folder in folders:
            found = sorted(p.name for p in (out / truth / folder).iterdir())
            assert found == ["extraction.json", "extraction.md", "output.json"]
    assert (out / "extraction-leaderboard.md").is_file()
    assert "extraction on tiny-gold (4 documents), rule exact" in result.output


@pytest.mark.parametrize(
    ("truth", "extractor", "option"),
    [("meeting-sample", "baseline", "--ground-truth"), ("tiny-gold", FIRST_LINE, "--dataset")],
)
def test_the_leaderboard_gives_what_extract_gives(
    benched: tuple[Path, Path, Result], tmp_path: Path, truth: str, extractor: str, option: str
) -> None:
    out, gold, _ = benched
    spec = "meeting-sample" if truth == "meeting-sample" else str(gold)
    alone = tmp_path / "alone"
    result = _invoke(extract, option, spec, "--extractor", extractor, *SCORING, "--out", alone)
    assert result.exit_code == 0, result.output
    report = json.loads((alone / "extraction.json").read_text())
    row = _row(_board(out, truth), extractor)
    benched_report = json.loads((out / row["report"]).read_text())
    assert benched_report["results"] == report["results"]
    assert benched_report["ground_truth"] == report["ground_truth"]
    markdown = (out / "extraction-leaderboard.md").read_text()
    for rule in ("exact", "lcs>=0.7"):
        aggregates = _aggregates(report, rule)
        for measure in HEADLINE:
            expected = aggregates[measure]
            got = row["results"][rule][measure]
            assert got["macro"] == expected["macro"]
            assert got["n"] == expected["units"]
            assert got["interval"] == (
                list(expected["macro_interval"]) if expected["macro_interval"] else None
            )
            assert got["undefined"] == report["undefined"][rule].get(measure)
        cells = " | ".join(_cell(aggregates[m]) for m in HEADLINE)
        assert f"| `{extractor}` | {cells} | ok |" in markdown
    # the saved output replays to the same scores
    replay = tmp_path / "replay"
    result = _invoke(
        extract, option, spec, "--output", out / row["output"], *SCORING, "--out", replay
    )
    assert result.exit_code == 0, result.output
    replayed = json.loads((replay / "extraction.json").read_text())
    assert replayed["results"] == report["results"]


def test_a_failing_extractor_is_a_failed_row_and_the_others_run(
    benched: tuple[Path, Path, Result],
) -> None:
    out, _, _ = benched
    markdown = (out / "extraction-leaderboard.md").read_text()
    for truth in ("meeting-sample", "tiny-gold"):
        board = _board(out, truth)
        assert [e["extractor"] for e in board["extractors"]][-1] == RAISES
        failed = _row(board, RAISES)
        assert failed["status"] == "failed"
        assert "raised ValueError: cannot read" in failed["error"]
        assert failed["rank"] is None and failed["report"] is None and failed["results"] == {}
        assert [_row(board, s)["status"] for s in ("baseline", FIRST_LINE)] == ["ok", "ok"]
    dashes = " | ".join(["–"] * len(HEADLINE))
    assert f"| – | `{RAISES}` | {dashes} | failed |" in markdown
    assert f"- **failed** `{RAISES}`: {RAISES}: document 'd0': raised ValueError" in markdown


def test_pairs_and_ranks_on_the_first_rule(benched: tuple[Path, Path, Result]) -> None:
    out, _, _ = benched
    board = _board(out, "tiny-gold")
    ranking = board["ranking"]
    assert (ranking["measure"], ranking["rule"], ranking["unit"]) == (
        "event_f1",
        "exact",
        "document",
    )
    assert ranking["correction"] == "holm" and ranking["resamples"] == 1000
    (pair,) = ranking["pairs"]  # the failed extractor takes part in no test
    assert (pair["first"], pair["second"]) == ("baseline", FIRST_LINE)  # best first
    first = _row(board, "baseline")["results"]["exact"]["event_f1"]
    second = _row(board, FIRST_LINE)["results"]["exact"]["event_f1"]
    # the baseline keeps every sentence that states something done or planned: each
    # expected event, plus a second event in two documents (F1 2/3 there, 1 in the others);
    # the first line is the expected event in three documents of four
    assert first["macro"] == pytest.approx(5 / 6) and second["macro"] == 0.75
    assert pair["n"] == 4
    assert pair["delta"] == pytest.approx(1 / 12)
    # exact randomisation over 2^4 sign patterns of (-1/3, 0, -1/3, 1): every pattern's
    # |sum| is at least the observed 1/3, so p = 1
    assert pair["p"] == pytest.approx(1.0)
    assert pair["p_adjusted"] == pair["p"]  # Holm over one pair changes nothing
    assert pair["better"] is None
    assert [e["extractor"] for e in board["extractors"]] == ["baseline", FIRST_LINE, RAISES]
    assert [e["rank"] and e["rank"]["label"] for e in board["extractors"]] == ["1–2", "1–2", None]
    markdown = (out / "extraction-leaderboard.md").read_text()
    assert "Pairs on event_f1 under exact:" in markdown
    assert "two-sided paired randomisation tests over the documents both define" in markdown


def test_undefined_measures_say_why(benched: tuple[Path, Path, Result]) -> None:
    out, _, _ = benched
    board = _board(out, "tiny-gold")
    row = _row(board, "baseline")["results"]["exact"]["connection_recall"]
    assert row["macro"] is None and row["undefined"] == "the ground truth has no graph cases"
    markdown = (out / "extraction-leaderboard.md").read_text()
    assert "- connection_recall –: the ground truth has no graph cases (every extractor)" in (
        markdown
    )


def test_the_header_names_command_machine_and_date(benched: tuple[Path, Path, Result]) -> None:
    out, gold, _ = benched
    markdown = (out / "extraction-leaderboard.md").read_text()
    document = json.loads((out / "extraction-leaderboard.json").read_text())
    assert document["format"] == "recallbench.extraction-leaderboard/v1"
    context = document["context"]
    assert set(context) == {"command", "recallbench", "date", "machine"}
    assert context["command"].startswith(
        f"recallbench bench --extraction=meeting-sample --extraction={gold} --extractor=baseline"
    )
    assert "'--rule=lcs>=0.7' --resamples=200 --seed=3" in context["command"]
    assert markdown.startswith("# recallbench extraction leaderboard\n\n- command: recallbench")
    assert f"- machine: {context['machine']}" in markdown
    assert [b["ground_truth"]["name"] for b in document["ground_truths"]] == [
        "meeting-sample",
        "tiny-gold",
    ]
    assert "## meeting-sample" in markdown and "### Rule: lcs>=0.7" in markdown


def _same_name(tmp_path: Path) -> list[str]:
    paths = []
    for name in ("a.json", "b.json"):
        path = tmp_path / name
        path.write_text(json.dumps(_gold("twin")), encoding="utf-8")
        paths += ["--extraction", str(path)]
    return paths


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--extraction", "meeting-sample", "--system", "builtin-lexical"], "--system: not with"),
        (["--extraction", "meeting-sample", "--k", "5", "-m", "mrr@10"], "--measure, --k: not"),
        (["--dataset", "tiny.json", "--rule", "exact"], "--rule: only with --extraction"),
        (["--extractor", "baseline"], "--extractor: only with --extraction"),
        (["--extraction", "meeting-sample", "--extraction", "/no/such.json"], "/no/such.json"),
        (["--extraction", "meeting-sample", "--extractor", "nonsense"], "unknown extractor"),
        (["--extraction", "meeting-sample", "--extractor", "python:no_such_mod_q:f"], "no_such"),
        (["--extraction", "meeting-sample", "--judge-cache", "c.jsonl"], "llm only"),
        (["--extraction", "meeting-sample", "--conversation", "conv-1"], "locomo-events:"),
        (["--extraction", "meeting-sample", "--rule", "exact", "--rule", "exact"], "twice"),
        (["--extraction", "meeting-sample", "--extractor", "llm"], "no [judge] table"),
        (["same-name"], "would share OUT/twin/"),
    ],
)
def test_bad_options_exit_2_with_nothing_written(
    tmp_path: Path, args: list[str], message: str
) -> None:
    out = tmp_path / "out"
    config = tmp_path / "recallbench.toml"
    config.write_text("", encoding="utf-8")
    if args == ["same-name"]:
        args = _same_name(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = _invoke(bench, *args, "--config", config, "--out", out)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_extract_takes_dataset_as_another_name_of_ground_truth(tmp_path: Path) -> None:
    result = _invoke(extract, "--help")
    assert "--ground-truth, --dataset" in result.output
    reports = []
    for option in ("--ground-truth", "--dataset"):
        out = tmp_path / option.strip("-")
        args = ("--documents", "3", "--rule", "exact", "--resamples", "50")
        result = _invoke(extract, option, "meeting-sample", *args, "--out", out)
        assert result.exit_code == 0, result.output
        reports.append(json.loads((out / "extraction.json").read_text()))
    assert reports[0]["results"] == reports[1]["results"]


@pytest.fixture
def replay(tmp_path: Path) -> tuple[Path, Path]:
    """The [judge] table the committed extraction cache was recorded with (at a closed
    endpoint: nothing is asked) and a copy of that cache."""
    from llama_server import EXTRACT_CACHE, extract_toml

    config = tmp_path / "recallbench.toml"
    config.write_text(extract_toml("http://127.0.0.1:9/v1"), encoding="utf-8")
    cache = tmp_path / "cache.jsonl"
    shutil.copyfile(EXTRACT_CACHE, cache)
    return config, cache


def test_an_llm_extractor_replays_from_the_committed_cache(
    replay: tuple[Path, Path], tmp_path: Path
) -> None:
    config, cache = replay
    common = ("--config", config, "--judge-cache", cache, "--strict", *SCORING)
    out = tmp_path / "bench"
    result = _invoke(
        bench, "--extraction", "meeting-sample", "--extractor", "llm", "--extractor", "baseline",
        *common, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    alone = tmp_path / "alone"
    single = _invoke(extract, "--dataset", "meeting-sample", "--extractor", "llm", *common,
                     "--out", alone)  # fmt: skip
    # the committed answers fail on 2 of 10 documents, more than max_failure_rate: extract
    # exits 69 (written first); the bench marks the row and goes on
    assert single.exit_code == 69, single.output
    report = json.loads((alone / "extraction.json").read_text())
    row = _row(_board(out, "meeting-sample"), "llm")
    assert json.loads((out / row["report"]).read_text())["results"] == report["results"]
    assert row["status"] == "unreliable"
    assert row["system"] == report["output"]["system"]
    assert row["note"] is not None and row["note"].startswith("Extractor: LLM ")
    markdown = (out / "extraction-leaderboard.md").read_text()
    assert f"- `llm`: {row['note']}" in markdown
    assert "Unreliable: more than max_failure_rate" in row["note"]
    assert f"{_cell(_aggregates(report, 'exact')['connection_fpr'])} | unreliable |" in markdown
    assert (
        "--judge-cache="
        in json.loads((out / "extraction-leaderboard.json").read_text())["context"]["command"]
    )


def test_a_strict_cache_miss_writes_nothing(replay: tuple[Path, Path], tmp_path: Path) -> None:
    """The baseline has run when the LLM's miss is found: still nothing is written."""
    config, cache = replay
    config.write_text(config.read_text().replace("max_tokens = ", "max_tokens = 9"), "utf-8")
    out = tmp_path / "bench"
    result = _invoke(
        bench, "--extraction", "meeting-sample", "--extractor", "baseline", "--extractor", "llm",
        "--config", config, "--judge-cache", cache, "--strict", *SCORING, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "--strict replays only" in result.output
    assert not out.exists()


BROKEN = """
class Broken:
    def __init__(self):
        raise RuntimeError("no model file")

    def extract(self, documents):
        return {}
"""


def test_extractors_failing_as_they_start_or_per_document_are_failed_rows(
    tmp_path: Path,
) -> None:
    """A class whose constructor raises fails before any document; a command that exits
    non-zero fails on the first one; both are rows on every ground truth, the baseline runs."""
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN, encoding="utf-8")
    command = f"command:{sys.executable} {COMMAND} fail"
    out = tmp_path / "out"
    gold = tmp_path / "tiny.json"
    gold.write_text(json.dumps(_gold()), encoding="utf-8")
    result = _invoke(
        bench, "--extraction", gold, "--extractor", f"python:{broken}:Broken",
        "--extractor", command, "--extractor", "baseline", *SCORING, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    board = _board(out, "tiny-gold")
    assert [e["extractor"] for e in board["extractors"]] == [
        "baseline",
        f"python:{broken}:Broken",
        command,
    ]
    errors = {e["extractor"]: e["error"] for e in board["extractors"]}
    assert "Broken() raised RuntimeError: no model file" in errors[f"python:{broken}:Broken"]
    assert "the model file is missing" in errors[command]
    assert [e["status"] for e in board["extractors"]] == ["ok", "failed", "failed"]
    (only,) = [e for e in board["extractors"] if e["rank"]]
    assert only["rank"]["label"] == "1" and board["ranking"]["pairs"] == []
    assert sorted(p.name for p in (out / "tiny-gold").iterdir()) == ["baseline"]


def test_conversation_applies_to_the_locomo_ground_truth_only(tmp_path: Path) -> None:
    locomo = shared_data("locomo", "locomo10.json")
    out = tmp_path / "out"
    result = _invoke(
        bench, "--extraction", f"locomo-events:{locomo}", "--extraction", "meeting-sample",
        "--conversation", "conv-30", "--documents", "3", *SCORING, "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads((out / "extraction-leaderboard.json").read_text())
    sizes = {
        b["ground_truth"]["name"]: b["ground_truth"]["documents"] for b in document["ground_truths"]
    }
    assert sorted(sizes.values()) == [3, 3]
    (locomo_board,) = [
        b for b in document["ground_truths"] if b["ground_truth"]["name"] != "meeting-sample"
    ]
    report = json.loads((out / locomo_board["extractors"][0]["report"]).read_text())
    assert report["ground_truth"]["documents"] == 3
    output = json.loads((out / locomo_board["extractors"][0]["output"]).read_text())
    assert [d["id"] for d in output["documents"]] == ["conv-30:S1", "conv-30:S2", "conv-30:S3"]


def test_a_gameable_rule_is_marked_on_the_leaderboard(tmp_path: Path) -> None:
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(_gold()), encoding="utf-8")
    out = tmp_path / "board"
    result = _invoke(
        bench, "--extraction", gold, "--rule", "containment>=0.7", "--rule", "exact",
        "--resamples", "50", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    markdown = (out / "extraction-leaderboard.md").read_text()
    containment, exact = markdown.split("### Rule: exact")
    assert "**Gameable** (one-sided: any superset" in containment
    assert "**Gameable**" not in exact
    assert "rule containment>=0.7 is gameable (one-sided" in " ".join(result.output.split())


def test_ranks_pair_conversations_when_sessions_are_nested() -> None:
    """Sessions of one conversation are not independent: the paired tests flip the sign
    of a whole conversation (its sessions' mean), as the intervals resample them."""
    from recallbench.extraction import score_extraction, validated_ground_truth
    from recallbench.extraction._bench import Board, Entry, ranked_unit, unit_values
    from recallbench.extraction._report import build_report, ground_truth_info

    documents, outputs = [], {"all": [], "half": []}
    for c in range(3):
        for s in range(4):
            events = [f"person {c} did thing {s} number {k}" for k in range(4)]
            documents.append({"id": f"c{c}s{s}", "text": "...",
                              "metadata": {"conversation": f"conv-{c}"},
                              "events": [{"description": e} for e in events]})  # fmt: skip
            for name, kept in (("all", events), ("half", events[: 2 + (s % 2)])):
                outputs[name].append(
                    {"id": f"c{c}s{s}", "events": [{"description": e} for e in kept]}
                )
    truth = validated_ground_truth({"name": "nested", "documents": documents}, "nested")
    entries = []
    for name, docs in outputs.items():
        output = validated_output({"system": name, "documents": docs}, name)
        scores = score_extraction(truth, output, MatchRule.parse("exact"), resamples=50)
        entries.append(Entry(name, f"nested/{name}", report=build_report(truth, output, [scores])))
    half = unit_values(entries[1], "exact", "event_recall")
    assert half == {f"conversation:conv-{c}": pytest.approx((0.5 + 0.75) / 2) for c in range(3)}
    assert ranked_unit(entries, "exact", "event_recall") == "conversation"
    board = Board(ground_truth_info(truth), "nested", ("exact",), entries)
    board.rank()
    assert board.ranking is not None
    (pair,) = board.ranking.pairs
    assert pair.n == 3  # conversations, not the 12 sessions
    assert "over the conversations both define" in board.method()
