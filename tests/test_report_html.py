"""report.html and its siblings without a browser: the data embedded, escaped so that no
text can leave its element, self-contained (nothing to fetch), and small enough for 2,000
queries; written next to every report.md, comparison.md and leaderboard.md."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from recallbench.cli import main
from recallbench.core import Dataset, Run
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.measures import DEFAULT_MEASURES, parse_measures
from recallbench.render import write_outputs
from recallbench.render._html import TEXT_MIN, embed_json, render_report_html, report_data
from recallbench.report import build_report
from recallbench.report._intervals import IntervalSettings

STATIC = Path(__file__).resolve().parents[1] / "src" / "recallbench" / "render" / "static"
HOSTILE = "</script><script>window.pwned = 1</script><!-- & </SCRIPT >\u2028"


def _embedded(page: str) -> dict:  # type: ignore[type-arg]
    found = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))  # type: ignore[no-any-return]


def _dataset(queries: int, documents: int, text_length: int, seed: int = 0) -> Dataset:
    rng = random.Random(seed)
    words = ["ledger", "webhook", "retry", "postgres", "payout", "schema", "token", "cache"]
    docs = [
        {"id": f"m{n}", "text": " ".join(rng.choice(words) for _ in range(text_length // 7))}
        for n in range(documents)
    ]
    qrels = {
        f"q{n}": {f"m{rng.randrange(documents)}": rng.choice([1, 2, 3]) for _ in range(3)}
        for n in range(queries)
    }
    return Dataset.model_validate(
        {
            "name": "synthetic",
            "documents": docs,
            "queries": [
                {
                    "id": f"q{n}",
                    "text": f"what did we decide about {rng.choice(words)} number {n}?",
                    "category": f"c{n % 6}",
                    "intent": f"i{n % 5}",
                }
                for n in range(queries)
            ],
            "qrels": qrels,
        }
    )


def _run(dataset: Dataset, k: int = 20, seed: int = 0) -> Run:
    rng = random.Random(seed)
    ids = [d.id for d in dataset.documents]
    results = []
    for query in dataset.queries:
        gold = list(dataset.qrels.get(query.id, {}))
        picked = rng.sample(gold, rng.randrange(len(gold) + 1))
        picked += [d for d in rng.sample(ids, k) if d not in picked][: k - len(picked)]
        rng.shuffle(picked)
        hits = tuple(Hit(doc_id=d, score=round(1 - i / k, 6)) for i, d in enumerate(picked))
        results.append(
            QueryResult(query_id=query.id, hits=hits, latency_ms=rng.lognormvariate(1, 0.5))
        )
    return Run(spec=RunSpec(system="synthetic", dataset=dataset.ref, k=k), results=tuple(results))


def test_embedded_json_cannot_end_its_element_and_reads_back() -> None:
    data = {"text": HOSTILE, "nested": [HOSTILE, {"k": "a<b>c&d"}]}
    embedded = embed_json(data)
    assert not set("<>&\u2028\u2029") & set(embedded)
    assert json.loads(embedded) == data


def test_hostile_memory_and_query_texts_stay_data() -> None:
    dataset = Dataset.model_validate(
        {
            "name": "hostile",
            "documents": [{"id": "m1", "text": HOSTILE}, {"id": "m2", "text": "plain"}],
            "queries": [{"id": "q1", "text": "<!-- " + HOSTILE}],
            "qrels": {"q1": {"m1": 1}},
        }
    )
    run = Run(
        spec=RunSpec(system="x</script>", dataset=dataset.ref, k=2),
        results=(QueryResult(query_id="q1", hits=(Hit(doc_id="m2"), Hit(doc_id="m1"))),),
    )
    report = build_report(dataset, run, parse_measures(["mrr@10"]))
    page = render_report_html(report, run, dataset)
    # the page's own three script elements close, nothing else does
    assert len(re.findall(r"</script", page, re.IGNORECASE)) == 3
    assert "<title>x&lt;/script&gt; on hostile" in page  # the title is escaped HTML
    data = _embedded(page)
    assert data["texts"]["m1"] == [HOSTILE, len(HOSTILE)]
    assert data["queries"][0]["text"] == "<!-- " + HOSTILE
    assert data["queries"][0]["hits"] == [["m2", None], ["m1", None]]
    assert data["queries"][0]["grades"] == {"m1": 1}


def test_the_page_fetches_nothing() -> None:
    dataset = _dataset(20, 40, 80)
    run = _run(dataset)
    page = render_report_html(build_report(dataset, run, parse_measures(["ndcg@10"])), run)
    assert "default-src 'none'" in page  # the policy forbids any request, should one slip in
    markup = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|url\(", markup, re.IGNORECASE)
    own = (STATIC / "page.js").read_text() + (STATIC / "page.css").read_text()
    assert not re.search(r"\bfetch\(|XMLHttpRequest|import\(|url\(|https?:", own)
    assert "sourceMappingURL" not in page  # devtools would fetch the (unshipped) map
    assert "Chart.js v4.6.1" in page


def test_report_data_holds_the_drill_down() -> None:
    dataset = _dataset(30, 60, 100)
    run = _run(dataset)
    report = build_report(dataset, run, parse_measures(["ndcg@10", "recall@10"]))
    data = report_data(report, run, dataset)
    query = data["queries"][0]  # type: ignore[index]
    assert query["text"].startswith("what did we decide")
    assert len(query["hits"]) == 20 and all(score is not None for _, score in query["hits"])
    assert query["grades"] == dataset.qrels["q0"]
    shown = {doc for q in data["queries"] for doc, _ in q["hits"]}  # type: ignore[attr-defined]
    assert shown <= set(data["texts"])  # type: ignore[arg-type]
    assert data["intervals"]["ndcg@10"]["low"] is not None  # type: ignore[index]
    assert {g["name"] for g in data["breakdowns"]["category"]} == {f"c{n}" for n in range(6)}  # type: ignore[index]


def test_two_thousand_queries_with_long_memories_stay_under_5_mb() -> None:
    """2,000 queries x 20 hits x 8 measures over 6,000 memories of 2,000 characters (12 MB
    of text): the texts are cut to fit, everything else is there."""
    dataset = _dataset(2_000, 6_000, 2_000)
    run = _run(dataset)
    report = build_report(
        dataset, run, parse_measures(DEFAULT_MEASURES), interval_settings=IntervalSettings()
    )
    page = render_report_html(report, run, dataset)
    size = len(page.encode("utf-8"))
    assert size < 5_000_000, size
    data = _embedded(page)
    assert len(data["queries"]) == 2_000
    texts = data["texts"]
    assert len(texts) > 5_000
    assert all(len(text) >= TEXT_MIN and length > len(text) for text, length in texts.values())


def test_write_outputs_adds_report_html(tmp_path: Path) -> None:
    dataset = _dataset(10, 20, 50)
    run = _run(dataset)
    report = build_report(dataset, run, parse_measures(["mrr@10"]))
    written = write_outputs(tmp_path, run, report, dataset)
    assert [p.name for p in written] == ["run.json", "report.json", "report.md", "report.html"]
    assert _embedded((tmp_path / "report.html").read_text())["kind"] == "report"


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    dataset = out / "tiny.json"
    dataset.write_text(_dataset(12, 30, 60).model_dump_json())
    systems = ["--system", "builtin-lexical", "--system", "python:example_retrievers:Overlap"]
    result = CliRunner().invoke(
        main, ["bench", "--dataset", str(dataset), *systems, "-m", "mrr@10", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_bench_leaderboard_html_links_each_report(bench: Path) -> None:
    data = _embedded((bench / "leaderboard.html").read_text())
    [board] = data["boards"]
    assert board["dataset"]["name"] == "synthetic"
    assert data["context"]["command"].startswith("recallbench bench")
    for system in board["systems"]:
        assert (bench / system["href"]).is_file(), system["href"]
        assert system["intervals"]["mrr@10"]["n"] == 12


def test_compare_writes_comparison_html_with_every_paired_query(bench: Path) -> None:
    folders = [
        bench / "synthetic" / name
        for name in ("builtin-lexical", "python_example_retrievers_Overlap")
    ]
    out = bench / "comparison"
    result = CliRunner().invoke(
        main, ["compare", *map(str, folders), "-m", "mrr@10", "--out", str(out), "-q"]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "comparison.html",
        "comparison.json",
        "comparison.md",
    ]
    data = _embedded((out / "comparison.html").read_text())
    assert len(data["rows"]) == 12
    row = data["rows"][0]
    assert set(row["values"]) == set(data["labels"])
    [other] = [label for label in data["labels"] if label != data["comparison"]["baseline"]]
    assert row["classes"][other]["class"] in {"identical", "minor", "major", "incompatible"}
    assert data["texts"] == {}  # a dataset that is not bundled: ids only, no texts
    # what changed, query by query, as report/_what_changed.py computes it
    changed = data["what_changed"][other]["mrr@10"]
    assert changed["compared"] == 12
    assert changed["worse_count"] + changed["better_count"] + changed["unchanged"] == 12
    assert sum(c["compared"] for c in changed["categories"]) == 12  # one category each
    deltas = [abs(c["delta"]) for c in changed["worse"]]
    assert deltas == sorted(deltas, reverse=True)
    for side in changed["worse"] + changed["better"]:
        assert side["delta"] == pytest.approx(side["second"] - side["first"], abs=1e-5)


def test_missing_and_non_finite_values_are_none_on_the_page() -> None:
    from recallbench.render._html import _round

    assert _round(None) is None
    assert _round(float("nan")) is None and _round(float("inf")) is None
    assert _round(0.1234567891) == 0.123457


def test_vendored_chart_library_is_recorded() -> None:
    assert (STATIC / "chart.umd.min.js").read_text().startswith("/*!\n * Chart.js v4.6.1")
    assert "MIT License" in (STATIC / "chart.js.LICENSE.md").read_text()
    assert "| 4.6.1 | MIT" in (STATIC / "VENDORED.md").read_text()
