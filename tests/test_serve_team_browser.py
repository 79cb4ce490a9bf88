"""A team in real headless Chromium: `recallbench serve --labels-per-pair 2` started as a
process over a seeded store, two browser contexts (alice and bob, each naming themselves on
the page) labelling the same pairs from the keyboard and disagreeing on some; a stale tab
told (409) with the label its other tab wrote; bob's undo leaving alice's label alone; the
Agreement page's counts and kappas checked against the store; a conflict adjudicated from
the keyboard; axe-core's accessibility checks on the annotate, agreement and adjudicate
pages. Screenshots go to .cache/screenshots/ (gitignored).

Skips as tests/test_serve_browser.py does without Chromium and Playwright."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from axe import violations
from headless_browser import launched_browser
from recallbench.judges._agreement import cohen_kappa
from recallbench.stats._fleiss import fleiss_kappa, rating_counts
from recallbench.store import open_store
from served_dashboard import serving
from test_serve_browser import shot, showing
from test_serve_seed import seed

ALICE = [0, 1, 2, 3, 1, 2]
BOB = [0, 1, 3, 3, 2, 2]
"""The grades of the first six pairs: they disagree on the third and the fifth."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from launched_browser()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    store = f"sqlite:///{tmp_path / 'store.db'}"
    seed(store, with_runs=False)
    with serving(tmp_path, store, None, "--labels-per-pair", "2") as url:
        yield url, store


def signed_in(browser: Any, url: str, name: str) -> tuple[Any, Any, list[str]]:
    """A browser context of ``name``: the token's URL opened, the name given on the
    annotation page; (context, page, errors seen in the page)."""
    # bypass_csp: axe-core is injected into the page as an inline script
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.goto(url.split("/?")[0] + "/annotate")
    page.fill("#annotator", name)
    with page.expect_navigation():
        page.press("#annotator", "Enter")
    assert page.locator("#annotator").input_value() == name
    return context, page, errors


def press(page: Any, key: str, view: str = "annotate") -> Any:
    """Press ``key``; the response of the page it leads to."""
    with page.expect_navigation() as navigation:
        page.keyboard.press(key)
    page.wait_for_selector(f"main[data-view={view}]")
    return navigation.value


def no_serious_violations(page: Any) -> None:
    found = violations(page)
    assert found == [], found


def test_two_annotators_label_disagree_and_adjudicate(
    browser: Any, served: tuple[str, str]
) -> None:
    url, store_url = served
    origin = url.split("/?")[0]
    alice_context, alice, alice_errors = signed_in(browser, url, "alice")
    bob_context, bob, bob_errors = signed_in(browser, url, "bob")

    pairs = []
    no_serious_violations(alice)
    shot(alice, "team-annotate-blind")
    for grade in ALICE:
        pairs.append(showing(alice))
        press(alice, str(grade))
    assert alice.locator("#last").inner_text().endswith("No one else has labelled it yet.")

    # alice's second tab shows the pair her first tab then labels: the second is stale
    second_tab = alice_context.new_page()
    second_tab.goto(origin + "/annotate")
    seventh = showing(second_tab)
    assert showing(alice) == seventh
    press(alice, "1")
    refused = press(second_tab, "2")
    assert refused.status == 409
    said = second_tab.locator("#conflict").inner_text()
    assert "you labelled this pair 1 (related)" in said and "(2) was not written" in said
    assert second_tab.locator("#mine").inner_text() == "1"
    shot(second_tab, "team-stale-tab")
    second_tab.close()

    for index, grade in enumerate(BOB):
        assert showing(bob) == pairs[index]  # queued for bob too: two labels a pair
        assert bob.locator("#labels").count() == 0  # blind: alice's label not shown
        press(bob, str(grade))
        last = bob.locator("#last").inner_text()
        assert f"alice: {ALICE[index]}" in last
        assert ("a conflict" in last) == (ALICE[index] != grade)
        if index == 2:
            shot(bob, "team-annotate-conflict")

    # bob's undo takes back his last label only: alice's of that pair stays
    undone = press(bob, "u")
    assert undone.ok and bob.locator(".note").inner_text().startswith("undone: your label 2 of")
    assert showing(bob) == pairs[5]
    with open_store(store_url) as store:
        labelled = {(x.annotator, x.key): x.grade for x in store.labels()}
    assert ("bob", pairs[5]) not in labelled and labelled[("alice", pairs[5])] == ALICE[5]
    press(bob, str(BOB[5]))

    agreement = alice_context.new_page()
    agreement.goto(origin + "/agreement")
    assert agreement.locator("#shared").inner_text() == "6"
    assert agreement.locator("#conflicts").inner_text() == "2"
    with open_store(store_url) as store:
        grades: dict[tuple[str, str], dict[str, int]] = {}
        for x in store.labels():
            if x.grade is not None:
                grades.setdefault(x.key, {})[x.annotator] = x.grade
    both = [g for g in grades.values() if len(g) == 2]
    kappa = cohen_kappa([g["alice"] for g in both], [g["bob"] for g in both])
    assert kappa.value is not None
    shown = agreement.locator('#kappas tr[data-pair="alice+bob"] td.kappa').inner_text()
    assert shown == f"{kappa.value:.3f}"
    fleiss = fleiss_kappa(rating_counts([list(g.values()) for g in both], (0, 1, 2, 3)))
    assert fleiss.value is not None
    assert agreement.locator("#fleiss-2").inner_text() == f"{fleiss.value:.3f}"
    assert agreement.locator("#conflict-list tbody tr").count() == 2
    no_serious_violations(agreement)
    shot(agreement, "team-agreement")

    with agreement.expect_navigation():
        agreement.click("text=Adjudicate them one by one")
    adjudicate = agreement
    adjudicate.wait_for_selector("main[data-view=adjudicate]")
    assert showing(adjudicate) == pairs[2]
    rows = adjudicate.locator("#labels tbody tr")
    assert rows.count() == 2 and "2 conflicts left" in adjudicate.locator("#progress").inner_text()
    no_serious_violations(adjudicate)
    shot(adjudicate, "team-adjudicate")
    press(adjudicate, "2", view="adjudicate")
    assert showing(adjudicate) == pairs[4]  # the next conflict
    with open_store(store_url) as store:
        resolved = {(j.query_id, j.doc_id): j for j in store.judgments(source="manual")}
        history = store.annotation_history(*pairs[2])
    assert (resolved[pairs[2]].grade, resolved[pairs[2]].annotator) == (2, "alice (adjudicated)")
    assert pairs[4] not in resolved  # still a conflict
    assert {pairs[i] for i in (0, 1, 3, 5)} <= set(resolved)  # agreed pairs resolved
    assert resolved[pairs[0]].annotator == "alice+bob"
    assert (history[-1].annotator, history[-1].action) == ("alice", "adjudicate")

    no_serious_violations(bob)
    assert alice_errors == [] and bob_errors == []
    alice_context.close()
    bob_context.close()
