"""A team labelling through `recallbench serve` (Starlette's TestClient), on SQLite and on
PostgreSQL: each annotator's label kept apart, conflicts with no manual judgment, agreement
resolved, adjudication, stale tabs, undo of one's own last action only, the queue with
--labels-per-pair, and the Agreement page's numbers on a table worked by hand."""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator

import pytest
from starlette.testclient import TestClient

from recallbench.serve import Dashboard
from recallbench.serve._app import ANNOTATOR_COOKIE
from recallbench.serve._auth import COOKIE
from recallbench.store import Judgment, Store, open_store
from test_serve import BASE, TOKEN, current, grade_form, manual, note_of
from test_serve_seed import T0, seed

Team = Callable[[str], TestClient]


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    seed(db_url, with_runs=False)
    with open_store(db_url) as opened:
        yield opened


def team(store: Store, labels_per_pair: int = 2) -> Team:
    """Browsers of one dashboard, each with its annotator's cookie."""
    dashboard = Dashboard(store, TOKEN)
    dashboard.queue.labels_per_pair = labels_per_pair

    def browser(name: str) -> TestClient:
        opened = TestClient(dashboard.app, base_url=BASE)
        opened.cookies.set(COOKIE, TOKEN)
        opened.cookies.set(ANNOTATOR_COOKIE, name)
        return opened

    return browser


def label(web: TestClient, grade: int, page: str | None = None) -> tuple[str, str]:
    """Grade the pair ``page`` (default: the next of the queue) shows; that pair."""
    page = page if page is not None else web.get("/annotate").text
    pair = current(page)
    response = web.post("/annotate/grade", data=grade_form(page, grade))
    assert response.status_code == 200, response.text
    return pair


def adjudicate_form(page: str, grade: int) -> dict[str, str]:
    for form in re.findall(
        r'<form method="post" action="/adjudicate/resolve">(.*?)</form>', page, re.S
    ):
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', form))
        if fields.get("grade") == str(grade):
            return {name: html.unescape(value) for name, value in fields.items()}
    raise AssertionError(page)


def labels_of(store: Store) -> list[tuple[str, str, str, int | None]]:
    return [(x.query_id, x.doc_id, x.annotator, x.grade) for x in store.labels()]


def test_annotators_who_disagree_keep_both_labels_and_make_a_conflict(store: Store) -> None:
    browser = team(store)
    alice, bob = browser("alice"), browser("bob")
    pair = label(alice, 3)
    seen = bob.get("/annotate").text
    assert current(seen) == pair  # still queued for bob: 2 labels a pair
    assert "alice" not in seen.split('id="pair"')[1]  # blind: no one else's label shown
    after = bob.post("/annotate/grade", data=grade_form(seen, 1)).text
    assert labels_of(store) == [(*pair, "alice", 3), (*pair, "bob", 1)]
    assert manual(store) == []  # a conflict has no manual judgment
    last = re.search(r'<section id="last".*?</section>', after, re.S)
    assert last and "alice: 3" in last.group(0) and 'id="last-conflict"' in last.group(0)
    opened = bob.get("/annotate", params={"query_id": pair[0], "doc_id": pair[1]}).text
    assert 'id="mine">1<' in opened and 'data-annotator="alice">alice: 3<' in opened

    agreement = alice.get("/agreement").text
    assert '<strong id="shared">1</strong>' in agreement
    assert '<strong id="conflicts">1</strong>' in agreement
    assert f"/adjudicate?query_id={pair[0]}&amp;doc_id={pair[1]}" in agreement
    assert [(e.annotator, e.action, e.new_grade) for e in store.annotation_history()] == [
        ("alice", "label", 3),
        ("bob", "label", 1),
    ]


def test_annotators_who_agree_resolve_the_pair(store: Store) -> None:
    browser = team(store)
    alice, bob, carol = browser("alice"), browser("bob"), browser("carol")
    pair = label(alice, 2)
    assert manual(store) == [(*pair, 2, "alice")]  # one label so far: it stands
    assert label(bob, 2) == pair
    assert manual(store) == [(*pair, 2, "alice+bob")]
    assert current(carol.get("/annotate").text) != pair  # labelled by 2: out of the queue
    assert '<strong id="conflicts">0</strong>' in carol.get("/agreement").text


def test_adjudication_resolves_a_conflict_and_undo_takes_it_back(store: Store) -> None:
    browser = team(store)
    alice, bob, carol, dave = (browser(n) for n in ("alice", "bob", "carol", "dave"))
    pair = label(alice, 3)
    label(bob, 0)
    page = carol.get("/adjudicate").text
    assert current(page) == pair and "1 conflict left for you" in page
    assert 'data-annotator="alice"><td>alice</td><td class="num">3<' in page
    assert 'data-annotator="bob"><td>bob</td><td class="num">0<' in page
    stale = dave.get("/adjudicate").text  # dave looks at the same conflict meanwhile
    done = carol.post("/adjudicate/resolve", data=adjudicate_form(page, 2))
    assert done.status_code == 200 and "No conflict to adjudicate" in done.text
    [judgment] = store.judgments(source="manual")
    assert (judgment.grade, judgment.annotator) == (2, "carol (adjudicated)")
    assert labels_of(store) == [(*pair, "alice", 3), (*pair, "bob", 0)]  # theirs stay
    event = store.annotation_history()[-1]
    assert (event.annotator, event.action, event.adjudication, event.new_grade) == (
        "carol",
        "adjudicate",
        True,
        2,
    )

    refused = dave.post("/adjudicate/resolve", data=adjudicate_form(stale, 1))
    assert refused.status_code == 409
    assert "carol adjudicated this pair 2 (relevant)" in html.unescape(refused.text)
    assert manual(store) == [(*pair, 2, "carol (adjudicated)")]  # nothing written

    # bob's undo of his label does not touch carol's adjudication
    assert note_of(bob.post("/undo").text).startswith("undone: your label 0 of")
    assert manual(store) == [(*pair, 2, "carol (adjudicated)")]
    note = note_of(carol.post("/undo", data={"next": "adjudicate"}).text)
    assert note == f"undone: your adjudication 2 of {pair[0]} / {pair[1]}; it is unadjudicated"
    assert manual(store) == [(*pair, 3, "alice")]  # bob withdrew: alice's label alone
    assert [(e.annotator, e.action, e.adjudication) for e in store.annotation_history()][-2:] == [
        ("bob", "withdraw", False),
        ("carol", "withdraw", True),
    ]


def test_a_stale_tab_is_refused_with_the_newer_label_and_nothing_written(store: Store) -> None:
    browser = team(store)
    first_tab, second_tab = browser("alice"), browser("alice")
    seen_first, seen_second = first_tab.get("/annotate").text, second_tab.get("/annotate").text
    pair = label(first_tab, 3, seen_first)
    history = store.annotation_history()
    refused = second_tab.post("/annotate/grade", data=grade_form(seen_second, 1))
    assert refused.status_code == 409
    assert "you labelled this pair 3" in html.unescape(refused.text)
    assert current(refused.text) == pair and 'id="mine">3<' in refused.text
    assert labels_of(store) == [(*pair, "alice", 3)]
    assert store.annotation_history() == history  # nothing written, not even an event


def test_undo_takes_back_only_the_annotators_own_last_action(store: Store) -> None:
    browser = team(store)
    alice, bob = browser("alice"), browser("bob")
    pair = label(alice, 1)
    label(bob, 2)
    relabel = alice.get("/annotate", params={"query_id": pair[0], "doc_id": pair[1]}).text
    label(alice, 3, relabel)  # alice changes her mind: 1 -> 3
    assert labels_of(store) == [(*pair, "alice", 3), (*pair, "bob", 2)]

    note = note_of(alice.post("/undo").text)
    assert note == f"undone: your relabel of {pair[0]} / {pair[1]} from 1 to 3; your 1 is back"
    assert labels_of(store) == [(*pair, "alice", 1), (*pair, "bob", 2)]
    note = note_of(alice.post("/undo").text)
    assert note.startswith("undone: your label 1 of")
    assert labels_of(store) == [(*pair, "bob", 2)]  # alice's gone, bob's stays
    assert manual(store) == [(*pair, 2, "bob")]
    assert note_of(alice.post("/undo").text) == "nothing to undo"
    assert labels_of(store) == [(*pair, "bob", 2)]
    assert [
        (e.annotator, e.action, e.old_grade, e.new_grade) for e in store.annotation_history()
    ] == [
        ("alice", "label", None, 1),
        ("bob", "label", None, 2),
        ("alice", "relabel", 1, 3),
        ("alice", "withdraw", 3, 1),
        ("alice", "withdraw", 1, None),
    ]
    assert current(alice.get("/annotate").text) == pair  # back in alice's queue


def test_labels_per_pair_keeps_a_pair_queued_until_enough_annotators_labelled_it(
    store: Store,
) -> None:
    browser = team(store, labels_per_pair=2)
    alice, bob, carol = browser("alice"), browser("bob"), browser("carol")
    total = re.search(r"(\d+) of (\d+) pairs left", alice.get("/annotate").text)
    assert total and total.group(1) == total.group(2)
    everything = int(total.group(2))
    first = label(alice, 1)
    second = label(alice, 2)
    assert f"{everything - 2} of {everything} pairs left" in alice.get("/annotate").text
    assert current(bob.get("/annotate").text) == first  # queued for bob still
    assert f"{everything} of {everything} pairs left" in bob.get("/annotate").text
    assert label(bob, 1) == first
    page = carol.get("/annotate").text
    assert current(page) == second  # first has its 2 labels: out of everyone's queue
    assert f"{everything - 1} of {everything} pairs left" in page

    one = team(store, labels_per_pair=1)  # the default: once anyone labelled a pair
    assert current(one("dave").get("/annotate").text) not in (first, second)


def test_a_manual_label_written_elsewhere_counts_as_its_annotators(store: Store) -> None:
    """A manual judgment from before m011 or a script: its annotator's label, not lost."""
    browser = team(store)
    pair = current(browser("alice").get("/annotate").text)
    store.log(judgments=[Judgment(*pair, grade=0, source="manual", created_at=T0, annotator="zoe")])
    alice = browser("alice")
    assert current(alice.get("/annotate").text) == pair  # labelled by one of two
    label(alice, 3)
    assert labels_of(store) == [(*pair, "alice", 3), (*pair, "zoe", 0)]
    assert manual(store) == []  # a conflict


def test_the_agreement_page_on_a_table_worked_by_hand(store: Store) -> None:
    """alice and bob on 10 pairs, 7 the same: p_o = 0.7, margins (3, 2, 2, 3) and
    (2, 3, 2, 3) give p_e = 0.25, Cohen's kappa = 0.45 / 0.75 = 0.600; Fleiss' P_e =
    0.25^2 + 0.25^2 + 0.2^2 + 0.3^2 = 0.255, kappa = 0.445 / 0.745 = 0.597."""
    alice = [0, 0, 1, 1, 2, 2, 3, 3, 3, 0]
    bob = [0, 1, 1, 1, 2, 3, 3, 3, 2, 0]
    entries = store.query_log()
    pairs = [(e.query_id, doc) for e in entries for doc in e.results][:10]
    for (query_id, doc_id), a, b in zip(pairs, alice, bob, strict=True):
        store.write_label(query_id, doc_id, "alice", a, None)
        store.write_label(query_id, doc_id, "bob", b, None)
    page = team(store)("carol").get("/agreement").text
    assert '<strong id="shared">10</strong>' in page
    assert '<strong id="conflicts">3</strong>' in page
    kappa = re.search(r'data-pair="alice\+bob">(.*?)</tr>', page, re.S)
    assert kappa and '<td class="num kappa">0.600</td>' in kappa.group(1)
    assert '<td class="num">10</td><td class="num">70.0%</td>' in kappa.group(1)
    assert '<td id="fleiss-2">0.597</td>' in page
    assert '<td id="mean-agreement">70.0%</td>' in page
    for name in ("alice", "bob"):
        row = re.search(rf'<tr data-annotator="{name}">(.*?)</tr>', page, re.S)
        assert row and row.group(1).endswith('<td class="num">70.0%</td>')
    assert len(manual(store)) == 7  # the agreed pairs are resolved, the conflicts not


def test_undoing_a_second_adjudication_puts_the_first_back(store: Store) -> None:
    browser = team(store)
    carol, dave = browser("carol"), browser("dave")
    pair = label(browser("alice"), 3)
    label(browser("bob"), 0)
    carol.post("/adjudicate/resolve", data=adjudicate_form(carol.get("/adjudicate").text, 2))
    opened = dave.get("/adjudicate", params={"query_id": pair[0], "doc_id": pair[1]}).text
    assert "Adjudicated <strong>2</strong> by carol" in opened
    dave.post("/adjudicate/resolve", data=adjudicate_form(opened, 1))
    assert manual(store) == [(*pair, 1, "dave (adjudicated)")]
    note = note_of(dave.post("/undo", data={"next": "adjudicate"}).text)
    assert note.endswith("; carol's adjudication 2 is back"), note
    assert manual(store) == [(*pair, 2, "carol (adjudicated)")]
    note = note_of(carol.post("/undo", data={"next": "adjudicate"}).text)
    assert note.endswith("it is a conflict again"), note  # carol's undo still finds hers
    assert manual(store) == []


def test_m011_makes_the_manual_labels_already_stored_their_annotators_labels(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store at m010 holding manual judgments (one naming no annotator) is upgraded: each
    becomes its annotator's label, with a ``label`` event at its time, and stays resolved."""
    from recallbench.store import _migrations

    with monkeypatch.context() as patched:
        patched.setattr(_migrations, "MIGRATIONS", _migrations.MIGRATIONS[:10])
        with open_store(db_url) as old:
            old.log(
                judgments=[
                    Judgment("q1", "d1", grade=2, source="manual", created_at=T0, annotator="zoe"),
                    Judgment("q1", "d2", grade=0, source="manual", created_at=T0),
                    Judgment("q1", "d3", grade=1, source="llm", created_at=T0, annotator="m"),
                ]
            )
    with open_store(db_url) as store:
        assert labels_of(store) == [("q1", "d1", "zoe", 2), ("q1", "d2", "unknown", 0)]
        assert [
            (e.doc_id, e.action, e.new_grade, e.created_at) for e in store.annotation_history()
        ] == [
            ("d1", "label", 2, T0),
            ("d2", "label", 0, T0),
        ]
        store.write_label("q1", "d1", "alice", 2, None)
        assert [(j.doc_id, j.grade, j.annotator) for j in store.judgments(source="manual")] == [
            ("d1", 2, "alice+zoe"),
            ("d2", 0, None),  # untouched until someone labels it here
        ]


def test_the_command_refuses_fewer_than_one_label_per_pair() -> None:
    from click.testing import CliRunner

    from recallbench.cli._serve import serve

    result = CliRunner().invoke(serve, ["--labels-per-pair", "0"])
    assert result.exit_code == 2 and "--labels-per-pair" in result.output
    assert "0 is not in the range 1<=x<=20" in result.output
