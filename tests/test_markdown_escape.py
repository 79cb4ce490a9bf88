"""Dataset and system text in the Markdown outputs is data: rendered by a Markdown renderer
that allows raw HTML (as GitHub and most previews do), report.md, leaderboard.md (one
dataset and bench), comparison.md and the QA report show every hostile text as the same
visible characters, with no tag or attribute of it surviving and every table whole."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import markdown_it
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallbench.compare import build_comparison, load_compared
from recallbench.core import Dataset, Run
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.measures import parse_measures
from recallbench.render import render_markdown, write_outputs
from recallbench.render._bench import write_bench
from recallbench.render._leaderboard import write_leaderboard
from recallbench.report import Report, build_report
from recallbench.report._bench import Board
from recallbench.report._escape import md_code, md_text
from recallbench.report._leaderboard import standings

SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(2)>"
LINK = "[click](javascript:alert(3)) *loud* `tick` | pipe & &amp; \\ $x$ ~~no~~"
HEADING = "# not a heading\n- nor a list | nor a cell"
SVG = "<svg onload=alert(4)>"
FRAME = "<iframe src=javascript:alert(5)>"
DOC = "m|1<b onmouseover=alert(6)>"
ERROR = "<img src=y onerror=alert(7)>\nTraceback | `x`"
HOSTILE = [SCRIPT, IMAGE, LINK, HEADING, SVG, FRAME, DOC]

RENDER = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
MARKUP = {"h1", "h2", "h3", "h4", "p", "ul", "li", "table", "thead", "tbody", "tr", "th", "td"}
MARKUP |= {"code", "strong", "em", "hr"}


class Page(HTMLParser):
    """The tags, attributes, visible text and table rows of rendered Markdown."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: list[tuple[str, str | None]] = []
        self.text: list[str] = []
        self.rows: list[list[int]] = []  # per table, the cells of each row

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes += [a for a in attrs if a != ("style", "text-align:right")]
        if tag == "table":
            self.rows.append([])
        elif tag == "tr":
            self.rows[-1].append(0)
        elif tag in ("td", "th"):
            self.rows[-1][-1] += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def rendered(markdown: str) -> Page:
    page = Page()
    page.feed(RENDER.render(markdown))
    page.close()
    return page


def assert_data_only(markdown: str, shown: list[str]) -> None:
    page = rendered(markdown)
    assert page.tags <= MARKUP, (page.tags - MARKUP, markdown)
    assert page.attributes == [], page.attributes
    for cells in page.rows:
        assert len(set(cells)) == 1, (cells, markdown)  # no row has a cell more or less
    text = " ".join(" ".join(page.text).split())
    for hostile in shown:
        assert " ".join(hostile.split()) in text, (hostile, text)


def hostile_dataset() -> Dataset:
    return Dataset.model_validate(
        {
            "name": "hostile",
            "documents": [
                {"id": DOC, "text": SCRIPT},
                {"id": "m2", "text": "plain"},
                {"id": "m3", "text": IMAGE},
            ],
            "queries": [
                {"id": "q1", "text": SCRIPT, "category": SVG, "intent": FRAME},
                {"id": IMAGE, "text": LINK, "category": HEADING},
                {"id": "q3", "text": HEADING, "category": SVG},
            ],
            "qrels": {"q1": {DOC: 1}, IMAGE: {"m3": 2}, "q3": {"m2": 1}},
        }
    )


def hostile_run(dataset: Dataset, system: str, failed: bool = False) -> Run:
    return Run(
        spec=RunSpec(system=system, dataset=dataset.ref, k=3),
        results=(
            QueryResult(query_id="q1", hits=(Hit(doc_id="m2"), Hit(doc_id=DOC))),
            QueryResult(query_id=IMAGE, hits=(Hit(doc_id="m3"),)),
            QueryResult(query_id="q3", hits=(), error=ERROR)
            if failed
            else QueryResult(query_id="q3", hits=(Hit(doc_id=DOC), Hit(doc_id="m2"))),
        ),
    )


def reports(dataset: Dataset) -> list[tuple[Run, Report]]:
    measures = parse_measures(["mrr@10", "recall@10"])
    out = []
    for system, failed in ((SVG, True), (FRAME + " | b", False)):
        run = hostile_run(dataset, system, failed)
        out.append((run, build_report(dataset, run, measures)))
    return out


def test_report_md_shows_hostile_texts_as_text() -> None:
    dataset = hostile_dataset()
    (_, report), _ = reports(dataset)
    markdown = render_markdown(report)
    assert_data_only(markdown, [*HOSTILE, ERROR])


def test_leaderboards_show_hostile_names_as_text(tmp_path: Path) -> None:
    dataset = hostile_dataset()
    both = [report for _, report in reports(dataset)]
    write_leaderboard(tmp_path, standings(both))
    assert_data_only((tmp_path / "leaderboard.md").read_text(), [SVG, FRAME + " | b"])
    context = {"command": f"recallbench bench {SCRIPT}", "machine": HEADING}
    write_bench(tmp_path, [Board(dataset, both)], context)
    bench = (tmp_path / "leaderboard.md").read_text()
    assert_data_only(bench, [SVG, FRAME + " | b", SCRIPT, HEADING])


def test_comparison_md_shows_hostile_texts_as_text(tmp_path: Path) -> None:
    from recallbench.render import render_comparison_markdown

    dataset = hostile_dataset()
    folders = []
    for index, (run, report) in enumerate(reports(dataset)):
        folder = tmp_path / str(index)
        folder.mkdir()
        write_outputs(folder, run, report, dataset)
        folders.append(folder)
    measures = ["mrr@10", "recall@10"]
    compared = load_compared(folders, parse_measures(measures))
    comparison = build_comparison(compared, measures, missing="drop")
    assert_data_only(render_comparison_markdown(comparison), [SVG, FRAME + " | b"])


MARKDOWN_CHARACTERS = st.sampled_from(list("<>&\\`*_[]|~$#-+=.!()1 \n\tab:/;\"'"))


@settings(max_examples=400)
@given(st.text(MARKDOWN_CHARACTERS | st.characters()))
def test_any_text_is_shown_as_itself(text: str) -> None:
    """Whatever the text, it renders as its own characters (white space aside), alone,
    in a list item and in a table cell."""
    want = " ".join(text.replace("\0", "\ufffd").split())
    for escaped in (md_text(text), md_code(text)):
        for markdown, shown in (
            (escaped, want),
            (f"- {escaped}", want),
            (f"| h |\n|---|\n| {escaped} |", f"h {want}".strip()),
        ):
            page = rendered(markdown)
            assert page.attributes == []
            assert page.tags <= {
                "p",
                "ul",
                "li",
                "table",
                "thead",
                "tbody",
                "tr",
                "th",
                "td",
                "code",
            }
            assert " ".join(" ".join(page.text).split()) == shown, markdown


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain words", "plain words"),
        ("a<b>&c &amp; &#60;", "a&lt;b>&c &amp;amp; &amp;#60;"),
        ("x|y *z*", "x\\|y \\*z\\*"),
        ("# h\nnext", "\\# h next"),
        ("#hash-tag", "#hash-tag"),
        ("cold_start_ratio@10 _x_ a__b", "cold_start_ratio@10 \\_x\\_ a\\_\\_b"),
        ("1. item", "1\\. item"),
        ("1.3.0 >= 2", "1.3.0 >= 2"),
        ("- x", "\\- x"),
        ("---", "\\---"),
        ("> quote", "\\> quote"),
    ],
)
def test_the_escape_is_readable(text: str, escaped: str) -> None:
    assert md_text(text) == escaped


def test_the_extraction_leaderboard_heads_with_escaped_context() -> None:
    from recallbench.extraction._bench import leaderboard_texts

    context = {"command": f"recallbench extract-bench {SCRIPT}", "machine": HEADING}
    markdown = leaderboard_texts([], context)["extraction-leaderboard.md"]
    assert_data_only(markdown, [SCRIPT, HEADING])
