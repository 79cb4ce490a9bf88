"""report.md and comparison.md keep user text as text: a report whose query texts, memory ids
and texts, query ids, system, category and error messages are hostile HTML and Markdown,
rendered by two Markdown renderers that pass raw HTML through (python-markdown, and
markdown-it-py with HTML on), shows no tag, attribute or link of that text, and its tables
keep their columns."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from recallbench.compare import compare_inputs
from recallbench.core import Dataset, Run
from recallbench.core._run import Hit, QueryResult, RunSpec
from recallbench.measures import parse_measures
from recallbench.render import render_comparison_markdown, render_markdown
from recallbench.report import build_report

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(2)</script>"
LINK = "[x](javascript:alert(3))"
HOSTILE = f"{IMG} {SCRIPT} {LINK} a | b `tick` _em_ *em*\nsecond line\r\n# heading"
"""Every trick at once: tags, a script, a link, a pipe, backticks, emphasis, line breaks."""
BAD_ID = f"q|{IMG}"
BAD_DOC = f"m`1`|{SCRIPT}"
SYSTEM = f"sys {IMG} | {LINK}"
CATEGORY = f"cat {SCRIPT} | `c`"


def _report() -> tuple[Dataset, Run]:
    dataset = Dataset.model_validate(
        {
            "name": "hostile",
            "documents": [
                {"id": BAD_DOC, "text": HOSTILE},
                {"id": "m2", "text": IMG},
                {"id": "m3", "text": "plain"},
            ],
            "queries": [
                {"id": BAD_ID, "text": HOSTILE, "category": CATEGORY, "intent": LINK},
                {"id": "q2", "text": LINK, "category": CATEGORY},
                {"id": "q3", "text": SCRIPT, "category": "plain"},
            ],
            "qrels": {BAD_ID: {BAD_DOC: 2, "m3": 1}, "q2": {"m2": 1}, "q3": {"m3": 1}},
        }
    )
    run = Run(
        spec=RunSpec(system=SYSTEM, dataset=dataset.ref, k=3),
        results=(
            QueryResult(query_id=BAD_ID, hits=(Hit(doc_id="m2"), Hit(doc_id=BAD_DOC))),
            QueryResult(query_id="q2", error=f"boom {HOSTILE}"),
            QueryResult(query_id="q3", hits=(Hit(doc_id="m3"),)),
        ),
    )
    return dataset, run


class _Tags(HTMLParser):
    """Every tag, attribute and link target of a rendered page; the cells of each row."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.hrefs: list[str] = []
        self.rows: list[int] = []
        self.tables: list[list[int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)
        self.hrefs += [value or "" for name, value in attrs if name in ("href", "src")]
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append(0)
        elif tag in ("td", "th"):
            self.tables[-1][-1] += 1


def _renderers() -> list[tuple[str, object]]:
    import markdown
    from markdown_it import MarkdownIt

    it = MarkdownIt("commonmark", {"html": True}).enable("table")
    return [
        ("python-markdown", lambda text: markdown.markdown(text, extensions=["tables"])),
        ("markdown-it-py", it.render),
    ]


def _check(html: str, name: str) -> _Tags:
    parsed = _Tags()
    parsed.feed(html)
    allowed = {"h1", "h2", "h3", "p", "ul", "li", "code", "strong", "em", "table", "thead"}
    allowed |= {"tbody", "tr", "th", "td", "hr", "br", "ol", "blockquote"}
    assert parsed.tags <= allowed, (name, parsed.tags - allowed)
    assert not {"onerror", "src", "href"} & parsed.attributes, (name, parsed.attributes)
    assert parsed.hrefs == [], name
    assert "javascript:" not in " ".join(parsed.hrefs)
    for table in parsed.tables:  # every row of a table has its header's number of cells
        assert len(set(table)) == 1, (name, table)
    return parsed


@pytest.mark.parametrize("renderer", range(2))
def test_report_md_shows_hostile_text_as_text(renderer: int) -> None:
    dataset, run = _report()
    report = build_report(dataset, run, parse_measures(["ndcg@10", "recall@10"]))
    text = render_markdown(report)
    name, render = _renderers()[renderer]
    html = render(text)  # type: ignore[operator]
    parsed = _check(html, name)
    assert parsed.tables, "report.md has tables"
    # the hostile text is there, as characters
    assert "&lt;img src=x onerror=alert(1)&gt;" in html or "&lt;img src=x onerror=alert(1)>" in html
    assert re.search(
        r"&lt;script&gt;alert\(2\)&lt;/script&gt;|&lt;script>alert\(2\)&lt;/script>", html
    )


@pytest.mark.parametrize("renderer", range(2))
def test_comparison_md_shows_hostile_text_as_text(renderer: int) -> None:
    dataset, run = _report()
    other = run.model_copy(
        update={
            "spec": run.spec.model_copy(update={"system": f"other {SCRIPT}"}),
            "results": (
                QueryResult(query_id=BAD_ID, hits=(Hit(doc_id=BAD_DOC), Hit(doc_id="m3"))),
                QueryResult(query_id="q2", hits=(Hit(doc_id="m2"),)),
                QueryResult(query_id="q3"),
            ),
        }
    )
    compared, comparison = compare_inputs([run, other], ["ndcg@10"], dataset=dataset)
    text = render_comparison_markdown(comparison, compared)
    assert "## What changed" in text
    name, render = _renderers()[renderer]
    _check(render(text), name)  # type: ignore[operator]
