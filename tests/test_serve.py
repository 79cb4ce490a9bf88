"""`recallbench serve` through Starlette's TestClient on a real store: the token, every
view, the annotation queue's grades, skips and undo, blind pairwise preferences, and the
judge's agreement with people."""

from __future__ import annotations

import html
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from recallbench.cli._serve import serve
from recallbench.judges._agreement import cohen_kappa
from recallbench.report import Report
from recallbench.serve import Dashboard
from recallbench.serve._app import ANNOTATOR_COOKIE
from recallbench.serve._auth import COOKIE
from recallbench.serve._preferences import preferences
from recallbench.store import Store, open_store
from test_serve_seed import LOGGED, PER_QUERY, seed

TOKEN = "test-token-123"
BASE = "http://127.0.0.1:8770"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url)
    with open_store(url) as opened:
        yield opened


def client(store: Store, annotator: str | None = "ann", **options: object) -> TestClient:
    """A client of a dashboard over ``store`` that already holds the token's cookie."""
    dashboard = Dashboard(store, TOKEN, annotator=annotator, **options)  # type: ignore[arg-type]
    opened = TestClient(dashboard.app, base_url=BASE)
    opened.cookies.set(COOKIE, TOKEN)
    return opened


def current(page: str) -> tuple[str, str]:
    """The (query, memory) the annotation page shows."""
    match = re.search(r'id="pair" data-query="([^"]+)" data-doc="([^"]+)"', page)
    assert match, page
    return match.group(1), match.group(2)


def manual(store: Store) -> list[tuple[str, str, int, str | None]]:
    return [(j.query_id, j.doc_id, j.grade, j.annotator) for j in store.judgments(source="manual")]


def test_every_request_needs_the_token(store: Store) -> None:
    dashboard = Dashboard(store, TOKEN)
    anonymous = TestClient(dashboard.app, base_url=BASE)
    for path in ("/", "/annotate", "/telemetry", "/static/chart.js", "/nowhere"):
        assert anonymous.get(path).status_code == 403
    assert anonymous.get("/?token=wrong").status_code == 403
    grade = {"query_id": "log-00", "doc_id": "x", "grade": "2"}
    assert anonymous.post("/annotate/grade", data=grade).status_code == 403
    # a POST cannot carry the token in its URL: a link must not write
    assert anonymous.post(f"/annotate/grade?token={TOKEN}", data=grade).status_code == 403
    assert manual(store) == []

    entered = anonymous.get(f"/telemetry?q=tallyho&token={TOKEN}", follow_redirects=False)
    assert entered.status_code == 303
    assert entered.headers["location"] == "/telemetry?q=tallyho"  # the token leaves the URL
    cookie = entered.headers["set-cookie"]
    assert f"{COOKIE}={TOKEN}" in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert anonymous.get("/").status_code == 200  # the cookie is kept from now on

    bearer = TestClient(dashboard.app, base_url=BASE)
    assert bearer.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert bearer.get("/", headers={"Authorization": "Bearer nope"}).status_code == 403
    # another site's page cannot post, even where the browser would send the cookie
    foreign = anonymous.post("/undo", headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    own = anonymous.post("/undo", headers={"Origin": BASE}, follow_redirects=False)
    assert own.status_code == 303


def test_every_view_shows_the_store(store: Store) -> None:
    web = client(store)
    home = web.get("/").text
    assert "builtin-lexical on agent-memory-sample" in home
    assert "builtin-hybrid on agent-memory-sample" in home
    assert 'data-chart="s0"' in home and '<script src="/static/chart.js">' in home
    assert "ndcg@10" in home and "0.7000" in home  # the newest lexical run's mean

    runs: dict[str, int] = {}
    for stored in store.runs():  # newest first
        runs.setdefault(stored.system, stored.id)
    run = web.get(f"/runs/{runs['builtin-lexical']}").text
    assert "Run #4: builtin-lexical" in run and "q001" in run
    assert web.get("/runs/999").status_code == 404

    compared = web.get(f"/compare?a={runs['builtin-lexical']}&b={runs['builtin-hybrid']}").text
    assert "wins / ties / losses" in compared and "Holm-corrected over the 3 measures" in compared
    assert 'data-differs="yes"' in compared
    assert "values, not the rankings" in compared

    assert "No shadow test has run in this workspace" in web.get("/shadow").text

    log = web.get("/telemetry").text
    assert f"{LOGGED + 2} logged queries" in log and "read_after_search 1" in log
    assert "re_search 1" in log
    word = store.query_log()[0].text.split()[0]
    matching = sum(word.casefold() in e.text.casefold() for e in store.query_log())
    assert matching >= 2  # the first search and its repeat
    assert f"{matching} logged queries matching" in web.get(f"/telemetry?q={word}").text
    detail = web.get("/telemetry/log-00").text
    assert "read_after_search" in detail and "grade" in detail and "llm" in detail
    assert web.get("/telemetry/unknown").status_code == 404
    feedback = web.get("/feedback?kind=scroll_past").text
    assert "1 events" in feedback and "log-01" in feedback

    assert "No pair has both a judge" in web.get("/agreement").text


def test_grades_go_to_the_judgments_table_and_undo_takes_back_the_last(store: Store) -> None:
    web = client(store)
    first = current(web.get("/annotate").text)
    assert first == ("log-00", store.query_log()[0].results[0])
    page = web.post(
        "/annotate/grade", data={"query_id": first[0], "doc_id": first[1], "grade": "3"}
    )
    assert page.status_code == 200 and page.url.path == "/annotate"
    assert manual(store) == [(*first, 3, "ann")]
    second = current(page.text)
    assert second == ("log-00", store.query_log()[0].results[1])

    skipped = web.post("/annotate/skip", data={"query_id": second[0], "doc_id": second[1]})
    third = current(skipped.text)
    assert third not in (first, second)
    web.post("/annotate/grade", data={"query_id": third[0], "doc_id": third[1], "grade": "0"})
    assert len(manual(store)) == 2

    undone = web.post("/undo", data={"next": "annotate"})
    assert note_of(undone.text) == (
        f"undone: your label 0 of {third[0]} / {third[1]}; the pair is back in your queue"
    )
    assert manual(store) == [(*first, 3, "ann")]  # the last grade only
    assert current(undone.text) == third
    skip_undone = web.post("/undo")
    assert note_of(skip_undone.text).startswith("undone: your skip of")
    assert current(skip_undone.text) == second  # the skip is forgotten
    assert current(web.post("/undo").text) == first
    assert manual(store) == []
    assert "nothing to undo" in web.post("/undo").text
    assert [(e.action, e.old_grade, e.new_grade) for e in store.annotation_history()] == [
        ("label", None, 3),
        ("label", None, 0),
        ("withdraw", 0, None),
        ("withdraw", 3, None),
    ]

    bad = web.post("/annotate/grade", data={"query_id": first[0], "doc_id": first[1], "grade": "7"})
    assert "a grade is 0, 1, 2 or 3" in bad.text and manual(store) == []
    outside = web.post("/annotate/grade", data={"query_id": "nope", "doc_id": "x", "grade": "1"})
    assert "not in the annotation queue" in outside.text and manual(store) == []
    # the withdrawn pair is labelled again over its withdrawn row, without a 409
    again = web.post("/annotate/grade", data=grade_form(web.get("/annotate").text, 2))
    assert again.status_code == 200 and manual(store) == [(*first, 2, "ann")]


def test_labels_need_an_annotator_and_the_page_can_name_one(store: Store) -> None:
    web = client(store, annotator=None)
    page = web.get("/annotate").text
    assert "Give your name before labelling" in page
    pair = current(page)
    data = {"query_id": pair[0], "doc_id": pair[1], "grade": "1"}
    assert "give the annotator" in web.post("/annotate/grade", data=data).text
    assert manual(store) == []
    web.post("/annotator", data={"annotator": "  Zoë  ", "next": "annotate"})
    web.post("/annotate/grade", data=data)
    assert manual(store) == [(*pair, 1, "Zoë")]


def test_a_pair_labelled_by_anyone_leaves_the_queue(store: Store) -> None:
    web = client(store)
    total = LOGGED * PER_QUERY + 2 * PER_QUERY
    assert f"{total} of {total} pairs left" in web.get("/annotate").text
    other = client(store, annotator="bob")
    pair = current(other.get("/annotate").text)
    other.post("/annotate/grade", data={"query_id": pair[0], "doc_id": pair[1], "grade": "2"})
    page = web.get("/annotate").text
    assert current(page) != pair and f"{total - 1} of {total} pairs left" in page


def pairwise_form(page: str) -> tuple[str, str]:
    item = re.search(r'data-item="([^"]+)"', page)
    shown = re.search(r'name="shown" value="(first|second)"', page)
    assert item and shown, page
    return item.group(1), shown.group(1)


def test_pairwise_choices_are_stored_blind_and_undone(store: Store) -> None:
    web = client(store)
    page = web.get("/pairwise").text
    assert "2 of 2 items left" in page
    assert "hybrid (log-00)" not in page and "lexical" not in page  # blind: no labels shown
    item, shown = pairwise_form(page)
    assert item == "log:log-00:log-again-0"
    web.post("/pairwise/choose", data={"item": item, "choice": "1", "shown": shown})
    [stored] = preferences(store._engine, store.workspace)
    assert (stored.item, stored.preferred, stored.shown, stored.annotator) == (
        item,
        shown,  # "1" is the ranking shown on the left
        shown,
        "ann",
    )
    assert (stored.first_label, stored.second_label) == ("hybrid (log-00)", "lexical (log-again-0)")
    assert stored.first_results == tuple(store.query_log()[0].results)

    web.post("/pairwise/choose", data={"item": item, "choice": "1", "shown": "second"})
    [again] = preferences(store._engine, store.workspace)  # replaced, not added
    assert (again.preferred, again.shown) == ("second", "second")
    web.post("/pairwise/choose", data={"item": item, "choice": "2", "shown": "second"})
    assert preferences(store._engine, store.workspace)[0].preferred == "first"
    web.post("/pairwise/choose", data={"item": item, "choice": "=", "shown": "first"})
    assert preferences(store._engine, store.workspace)[0].preferred == "tie"

    page = web.get("/pairwise").text
    assert pairwise_form(page)[0] == "log:log-01:log-again-1"
    undone = web.post("/undo", data={"next": "pairwise"})
    assert note_of(undone.text) == f"undone: your choice on {item}; your earlier choice is back"
    assert [p.preferred for p in preferences(store._engine, store.workspace)] == ["first"]
    for _ in range(3):  # each undo puts back the choice the undone one replaced
        web.post("/undo", data={"next": "pairwise"})
    assert preferences(store._engine, store.workspace) == []
    bad = web.post("/pairwise/choose", data={"item": item, "choice": "3", "shown": "first"})
    assert "a choice is 1, 2 or =" in bad.text


def test_the_left_side_is_drawn_at_random(store: Store) -> None:
    web = client(store)
    sides = {pairwise_form(web.get("/pairwise").text)[1] for _ in range(40)}
    assert sides == {"first", "second"}


def test_agreement_of_the_judge_with_people(store: Store) -> None:
    web = client(store)
    judge = {(j.query_id, j.doc_id): j.grade for j in store.judgments(source="llm")}
    people = []
    for _ in range(10):
        pair = current(web.get("/annotate").text)
        grade = judge[pair] if len(people) % 3 else (judge[pair] + 1) % 4
        web.post(
            "/annotate/grade", data={"query_id": pair[0], "doc_id": pair[1], "grade": str(grade)}
        )
        people.append((judge[pair], grade))
    page = web.get("/agreement").text
    expected = cohen_kappa([h for _, h in people], [j for j, _ in people])
    assert expected.value is not None
    assert f'<td id="kappa">{expected.value:.3f}</td>' in page
    assert "10 by both" in page and 'id="confusion"' in page


def test_a_dataset_queues_its_pairs_with_their_texts(tmp_path: Path) -> None:
    from recallbench.datasets import load_dataset

    url = f"sqlite:///{tmp_path / 'store.db'}"
    dataset = load_dataset("agent-memory-sample")
    with open_store(url) as store:
        web = client(store, dataset=dataset)
        page = web.get("/annotate").text
        query = dataset.queries[0]
        first_doc = next(iter(dataset.qrels[query.id]))
        assert current(page) == (query.id, first_doc)
        assert "from the dataset agent-memory-sample" in page
        assert dataset.documents_by_id[first_doc].text[:40] in page
        total = sum(len(judged) for judged in dataset.qrels.values())
        assert f"{total} of {total} pairs left" in page
        assert "No runs recorded yet" in web.get("/").text
        assert "Nothing logged yet" in web.get("/telemetry").text
        assert "No pair of rankings to compare" in web.get("/pairwise").text


def test_grading_and_pairwise_on_each_engine(db_url: str) -> None:
    seed(db_url, with_runs=False)
    with open_store(db_url) as store:
        web = client(store)
        for grade in (0, 1, 2):
            pair = current(web.get("/annotate").text)
            web.post(
                "/annotate/grade",
                data={"query_id": pair[0], "doc_id": pair[1], "grade": str(grade)},
            )
        web.post("/undo")
        assert sorted(row[2] for row in manual(store)) == [0, 1]
        item, shown = pairwise_form(web.get("/pairwise").text)
        web.post("/pairwise/choose", data={"item": item, "choice": "=", "shown": shown})
        assert [p.preferred for p in preferences(store._engine, store.workspace)] == ["tie"]
        assert "pairs left" in web.get("/annotate").text


def test_the_command_refuses_a_taken_port_and_an_empty_token(tmp_path: Path) -> None:
    store = ["--store", f"sqlite:///{tmp_path / 'store.db'}"]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        result = CliRunner().invoke(serve, [*store, "--port", str(port)])
    assert result.exit_code != 0 and f"cannot listen on 127.0.0.1:{port}" in result.output
    result = CliRunner().invoke(serve, [*store, "--token", "  "])
    assert result.exit_code != 0 and "must not be empty" in result.output
    result = CliRunner().invoke(serve, [*store, "--token", "a b;c"])
    assert result.exit_code != 0 and "letters, digits" in result.output


def test_listing_the_command_loads_no_web_framework() -> None:
    import subprocess
    import sys

    code = (
        "import sys, recallbench.cli._serve; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'starlette', 'uvicorn', 'jinja2', 'sqlalchemy'}))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert output.stdout.strip() == "[]", output.stderr


def grade_form(page: str, grade: int) -> dict[str, str]:
    """The fields the annotation page's form for ``grade`` posts (hidden ones included)."""
    for form in re.findall(
        r'<form method="post" action="/annotate/grade">(.*?)</form>', page, re.S
    ):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
        if fields.get("grade") == str(grade):
            return {name: html.unescape(value) for name, value in fields.items()}
    raise AssertionError(page)


def two_browsers(store: Store) -> tuple[TestClient, TestClient]:
    """Two browsers on one dashboard: ann's and bob's."""
    dashboard = Dashboard(store, TOKEN, annotator="ann")
    ann, bob = (TestClient(dashboard.app, base_url=BASE) for _ in range(2))
    for web in (ann, bob):
        web.cookies.set(COOKIE, TOKEN)
    bob.cookies.set(ANNOTATOR_COOKIE, "bob")
    return ann, bob


def test_a_stale_tab_of_the_same_annotator_is_refused_and_shown_the_newer_label(
    store: Store,
) -> None:
    """Two tabs of ann shown the same pair: the second label is not written over the
    first silently. It gets 409 with the label the first tab wrote, and replaces it only by
    saying so (the write carries the version of ann's own label it replaces)."""
    first_tab, second_tab = client(store), client(store)
    seen_first, seen_second = first_tab.get("/annotate").text, second_tab.get("/annotate").text
    pair = current(seen_first)
    assert current(seen_second) == pair
    assert first_tab.post("/annotate/grade", data=grade_form(seen_first, 3)).status_code == 200
    refused = second_tab.post("/annotate/grade", data=grade_form(seen_second, 1))
    assert refused.status_code == 409
    assert manual(store) == [(*pair, 3, "ann")]  # the first tab's label stands
    conflict = re.search(r'<div class="conflict" id="conflict">(.*?)</div>', refused.text, re.S)
    assert conflict, refused.text
    said = html.unescape(conflict.group(1))
    assert "you labelled this pair 3 (exactly what was needed)" in said
    assert "this one (1) was not written" in said
    assert current(refused.text) == pair and 'id="mine">3<' in refused.text
    replaced = second_tab.post("/annotate/grade", data=grade_form(refused.text, 1))
    assert replaced.status_code == 200 and manual(store) == [(*pair, 1, "ann")]
    # the first tab's form is stale now: refused, nothing written
    again = first_tab.post("/annotate/grade", data=grade_form(seen_first, 2))
    assert again.status_code == 409 and "you labelled this pair 1" in html.unescape(again.text)
    assert manual(store) == [(*pair, 1, "ann")]
    assert [(e.action, e.new_grade) for e in store.annotation_history()] == [
        ("label", 3),
        ("relabel", 1),
    ]


def note_of(page: str) -> str:
    found = re.search(r'<p class="note" role="status">(.*?)</p>', page, re.S)
    assert found, page
    return html.unescape(found.group(1))


def test_two_annotators_shown_one_pair_keep_both_labels(store: Store) -> None:
    """ann and bob both shown a pair (one label a pair): each label is kept, neither
    refuses the other; they disagree, so the pair has no manual judgment (a conflict)."""
    ann, bob = two_browsers(store)
    seen_by_ann, seen_by_bob = ann.get("/annotate").text, bob.get("/annotate").text
    pair = current(seen_by_ann)
    assert current(seen_by_bob) == pair
    assert ann.post("/annotate/grade", data=grade_form(seen_by_ann, 3)).status_code == 200
    assert bob.post("/annotate/grade", data=grade_form(seen_by_bob, 1)).status_code == 200
    assert [(x.annotator, x.grade) for x in store.labels()] == [("ann", 3), ("bob", 1)]
    assert manual(store) == []
    # undo takes back ann's own label only: bob's stays, and is now the pair's label
    assert note_of(ann.post("/undo").text).startswith("undone: your label 3 of")
    assert [(x.annotator, x.grade) for x in store.labels()] == [("bob", 1)]
    assert manual(store) == [(*pair, 1, "bob")]


def test_a_measure_no_query_scored_in_both_runs_shows_a_dash_and_why(tmp_path: Path) -> None:
    """A measure whose paired n is 0 (no query has a value in either run: none has a
    relevant judgment) has no mean, difference or test: "–" and the reason, never nan."""
    from test_serve_seed import reports

    def unscored(name: str) -> Report:
        report = reports()[name]
        queries = [
            q.model_copy(update={"values": {**q.values, "recall@10": None}}) for q in report.queries
        ]
        return report.model_copy(
            update={"queries": queries, "means": {**report.means, "recall@10": None}}
        )

    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        first = store.record(unscored("builtin-lexical"))
        second = store.record(unscored("builtin-hybrid"))
        page = client(store).get(f"/compare?a={first.id}&b={second.id}").text
    assert "nan" not in page
    row = re.search(r"<tr><td>recall@10</td>.*?</tr>", page, re.S)
    assert row, page
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert cells[1:8] == ["0", "–", "–", "–", "–", "–", "–"], cells
    assert "no query with a relevant judgment" in cells[8]
    ndcg = re.search(r"<tr><td>ndcg@10</td>.*?</tr>", page, re.S)
    assert ndcg and re.search(r"\d / \d+ / \d", ndcg.group(0))  # compared as before
