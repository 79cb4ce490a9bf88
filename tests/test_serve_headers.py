"""The dashboard's security headers on every response through Starlette's TestClient:
every GET route the application declares (so a page added later is checked too), the
static files, the token's redirect, the gate's 403s, a 404 and the POSTs' redirects."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from recallbench.serve import Dashboard
from recallbench.serve._app import STATIC
from recallbench.serve._auth import COOKIE
from recallbench.store import Store, open_store
from test_serve_seed import seed

TOKEN = "header-token"
BASE = "http://127.0.0.1:8771"
EXPECTED = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}
POLICY = ("frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "default-src 'self'")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    seed(url)
    with open_store(url) as opened:
        yield opened


def get_paths(dashboard: Dashboard, run_id: int) -> list[str]:
    """A URL of every GET route of the dashboard, its parameters filled in."""
    paths = []
    for route in dashboard.starlette.routes:
        if not isinstance(route, Route) or "GET" not in (route.methods or ()):
            continue
        if route.path == "/static/{name}":
            paths += [f"/static/{name}" for name in STATIC]
            continue
        path = re.sub(r"\{run_id:int\}", str(run_id), route.path)
        paths.append(re.sub(r"\{[^}]+\}", "log-00", path))
    return paths


def secured(response: object, path: str) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    for name, value in EXPECTED.items():
        assert headers.get(name) == value, (path, name, headers)
    policy = headers.get("content-security-policy", "")
    assert all(part in policy for part in POLICY), (path, policy)
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0], (path, policy)


def test_every_route_answers_with_the_security_headers(store: Store) -> None:
    dashboard = Dashboard(store, TOKEN)
    # a page that fails (500) must carry the headers too
    web = TestClient(
        dashboard.app, base_url=BASE, follow_redirects=False, raise_server_exceptions=False
    )
    run_id = store.runs()[0].id
    paths = get_paths(dashboard, run_id)
    assert {"/", "/compare", "/telemetry", "/feedback", "/annotate"} <= set(paths)
    for path in paths:  # without the token: 403, with the headers
        response = web.get(path)
        assert response.status_code == 403, path
        secured(response, path)
    redirect = web.get(f"/?token={TOKEN}")
    assert redirect.status_code == 303
    secured(redirect, "the token's redirect")
    web.cookies.set(COOKIE, TOKEN)
    extra = [f"/compare?a={run_id}&b={run_id}", f"/compare/full?a={run_id}&b={run_id}"]
    statuses = {}
    for path in [*paths, *extra, "/runs/999999", "/no/such/page"]:
        response = web.get(path)
        statuses[path] = response.status_code
        secured(response, path)
    assert statuses["/"] == 200 and statuses["/static/serve.js"] == 200
    assert statuses["/no/such/page"] == 404 and statuses["/runs/999999"] == 404
    refused = web.post("/annotate/skip", headers={"origin": "http://evil.example"})
    assert refused.status_code == 403
    secured(refused, "a cross-origin POST")
    back = web.post("/annotator", data={"annotator": "x"}, headers={"origin": BASE})
    assert back.status_code == 303
    secured(back, "a POST's redirect")


def test_pages_run_no_inline_script(store: Store) -> None:
    """The policy allows no inline script, so no page may hold one: data travels in JSON
    blocks (type application/json), read by /static/serve.js."""
    dashboard = Dashboard(store, TOKEN)
    web = TestClient(dashboard.app, base_url=BASE, raise_server_exceptions=False)
    web.cookies.set(COOKIE, TOKEN)
    for path in get_paths(dashboard, store.runs()[0].id):
        if path.startswith("/static/"):
            continue
        response = web.get(path)
        if response.status_code == 500:  # another test finds the failure; no page here
            continue
        page = response.text
        for attributes, body in re.findall(r"<script([^>]*)>(.*?)</script>", page, re.DOTALL):
            assert "src=" in attributes or "application/json" in attributes, (path, body[:80])
        assert not re.search(r"\son[a-z]+=", page), path  # no onclick= and the like
        assert not re.search(r"<[^>]+\sstyle=", page), path  # style-src has no inline either
