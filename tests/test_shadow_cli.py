"""`recallbench shadow` and `recallbench flags` through click, on real stores (both
engines): start, status (table and JSON), stop, graduate (refused, forced, by the rule),
rollback, history, flags; bad input exits 2 with a message and no traceback."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from recallbench.cli._flags import flags
from recallbench.cli._shadow import shadow
from recallbench.store import FeedbackEvent, open_store
from test_shadow_decide import stream

CONTROL, TREATMENT, OTHER = "server-memory", "agentrecall", "basic-memory"
"""Shipped profiles: a test names profiles the proxy can run."""


def invoke(group: Any, *args: str) -> Result:
    # wide enough for the tables: the assertions read cells that a narrow terminal cuts
    return CliRunner(env={"COLUMNS": "200"}).invoke(group, list(args), catch_exceptions=False)


def started(url: str, name: str = "t", *extra: str) -> Result:
    result = invoke(
        shadow,
        "start",
        name,
        "--control",
        CONTROL,
        "--treatment",
        TREATMENT,
        "--min-queries",
        "50",
        "--store",
        url,
        "--actor",
        "ann",
        "--settle-seconds",
        "0",
        "--interleaved",
        "--measure",
        "rr",
        "--unit",  # the pairs come from 8 sessions: per query, so that 50 units exist
        "query",
        *extra,
    )
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("measure", ["rr", "hit@5", "interleaving"])
def test_a_click_measure_without_interleaving_is_refused(tmp_path: Path, measure: str) -> None:
    """Issue 29: without --interleave the agent reads only the control's list, and rr from
    its reads favoured the control (equal and better candidates rolled back every time)."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    result = invoke(
        shadow, "start", "t", "--control", CONTROL, "--treatment", TREATMENT,
        "--measure", measure, "--store", url,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "without interleaving is refused" in result.output
    assert "Traceback" not in result.output
    default = invoke(
        shadow, "start", "t", "--control", CONTROL, "--treatment", TREATMENT, "--store", url
    )
    assert default.exit_code == 0, default.output
    assert "on ndcg@10" in default.output and "mirrored" in default.output


def fill(url: str, effect: float, n: int = 400, seed: int = 1, interleaved: bool = True) -> None:
    """``n`` pairs logged now, as the proxy would, with the agent's reads (interleaved, or
    mirrored: the agent saw the control's list only)."""
    rows, events = stream(n, seed=seed, effect=effect)
    if not interleaved:
        rows = [{**row, "interleaved": None} for row in rows]
    now = datetime.now(UTC)
    with open_store(url) as store:
        for at, row in enumerate(rows):
            when = now + timedelta(milliseconds=at)
            store.log_shadow_run(
                {
                    **row,
                    "created_at": when,
                    "control": CONTROL,
                    "treatment": TREATMENT,
                    "session_id": f"s{at % 8}",
                }
            )
        store.log(feedback=[FeedbackEvent(e.query_id, e.kind, now, e.doc_id) for e in events])
    # the last pair is stamped n ms after `now`: wait until it is in the past, else a
    # command run at once would (rightly) not count the pairs still in its future
    wait = (now + timedelta(milliseconds=n) - datetime.now(UTC)).total_seconds()
    time.sleep(max(0.0, wait))


def test_a_test_graduates_when_its_rule_says_so(db_url: str) -> None:
    out = started(db_url, "t", "--guardrail", "latency_p95:+30%").output
    assert f"started shadow test t: {CONTROL} (control) vs {TREATMENT} (treatment) on rr" in out
    assert "latency_p95 +30%" in out
    fill(db_url, effect=0.5)
    table = invoke(shadow, "status", "t", "--store", db_url)
    assert table.exit_code == 0, table.output
    assert "the rule says: graduate" in table.output and "always-valid CI" in table.output
    data = json.loads(invoke(shadow, "status", "t", "--store", db_url, "--format", "json").output)
    assert data["name"] == "t" and data["now"]["decision"] == "graduate"
    assert data["now"]["pvalue"] <= 0.05 and data["now"]["interval"][0] > 0
    assert data["rule"]["guardrails"]["latency_p95"] == {"kind": "relative", "margin": 0.3}
    done = invoke(shadow, "graduate", "t", "--store", db_url, "--actor", "bob")
    assert done.exit_code == 0 and f"flag t = {TREATMENT} for 100%" in done.output
    with open_store(db_url) as store:
        [flag] = store.flags()
        test = store.shadow_test("t")
    assert (flag.name, flag.variant, flag.percent, flag.fallback) == (
        "t",
        TREATMENT,
        100.0,
        CONTROL,
    )
    assert test is not None and test.status == "graduated"
    log = json.loads(invoke(shadow, "history", "t", "--store", db_url, "--format", "json").output)
    assert [(d["decision"], d["actor"]) for d in log] == [("start", "ann"), ("graduate", "bob")]
    evidence = log[1]["evidence"]
    # the sequence may cross before min_queries (valid at every n); the rule held it back
    assert evidence["forced"] is False and evidence["units"] >= 50 >= evidence["n"] > 0
    assert evidence["interval"][0] <= evidence["estimate"] <= evidence["interval"][1]
    assert "graduate" in invoke(shadow, "history", "t", "--store", db_url).output


def test_graduation_is_refused_under_the_null_unless_forced(db_url: str) -> None:
    started(db_url)
    fill(db_url, effect=0.0, n=200, seed=3)
    refused = invoke(shadow, "graduate", "t", "--store", db_url)
    assert refused.exit_code == 1
    assert "not graduated: the rule of t says continue" in refused.output
    with open_store(db_url) as store:
        assert store.flags() == [] and [d.decision for d in store.shadow_decisions("t")] == [
            "start"
        ]
    forced = invoke(shadow, "graduate", "t", "--force", "--store", db_url)
    assert forced.exit_code == 0 and "graduated (forced)" in forced.output
    with open_store(db_url) as store:
        last = store.shadow_decisions("t")[-1]
    assert last.decision == "graduate" and last.evidence["forced"] is True


def test_stop_and_rollback(db_url: str) -> None:
    started(db_url, "t", "--flag", "memory")
    fill(db_url, effect=0.0, n=60, seed=4)
    stopped = invoke(shadow, "stop", "t", "--store", db_url)
    assert stopped.exit_code == 0 and "stopped shadow test t after 60 pairs" in stopped.output
    again = invoke(shadow, "stop", "t", "--store", db_url)
    assert again.exit_code == 2 and "stopped, not running" in again.output
    assert "Traceback" not in again.output
    back = invoke(shadow, "rollback", "t", "--force", "--store", db_url)
    assert back.exit_code == 0 and f"flag memory = {CONTROL} for 100%" in back.output
    assert "rolled back (forced) shadow test t" in " ".join(back.output.split())
    overview = invoke(shadow, "status", "--store", db_url)
    assert "rolled_back" in overview.output


def test_status_shows_session_outcomes_per_system(db_url: str) -> None:
    started(db_url)
    fill(db_url, effect=0.0, n=60, seed=5, interleaved=False)
    from recallbench.store import QueryLogEntry

    now = datetime.now(UTC)
    with open_store(db_url) as store:
        store.log(
            queries=[
                QueryLogEntry(f"l{i}", "q", now + timedelta(seconds=1), ("d1",), session_id=f"s{i}")
                for i in range(4)
            ]
        )
        store.log_session_outcome("s0", success=True)
        store.log_session_outcome("s1", success=False, outcome=0.5)
    table = invoke(shadow, "status", "t", "--store", db_url)
    assert "session outcomes per system" in table.output
    data = json.loads(invoke(shadow, "status", "t", "--store", db_url, "--format", "json").output)
    [group] = data["sessions"]
    assert (group["variant"], group["sessions"], group["with_outcome"]) == (CONTROL, 4, 2)
    assert group["success_rate"] == 0.5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status", "nope"], "no shadow test named 'nope'"),
        (["history", "nope"], "no shadow test named 'nope'"),
        (["graduate", "nope"], "no shadow test named 'nope'"),
        (
            ["start", "u", "--control", CONTROL, "--treatment", TREATMENT, "--measure", "mrr"],
            "unknown shadow measure 'mrr'",
        ),
        (
            [
                "start",
                "u",
                "--control",
                CONTROL,
                "--treatment",
                TREATMENT,
                "--guardrail",
                "speed:+5%",
            ],
            "unknown guardrail 'speed'",
        ),
        (
            ["start", "u", "--control", CONTROL, "--treatment", CONTROL],
            "control and treatment are both",
        ),
        (
            ["start", "t", "--control", CONTROL, "--treatment", OTHER],
            "named 't' exists already",
        ),
    ],
)
def test_bad_input_exits_2_with_a_message(args: list[str], message: str, tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    started(url)
    result = invoke(shadow, *args, "--store", url)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_flags_set_and_list(db_url: str) -> None:
    ok = invoke(
        flags, "set", "memory", "B", "--percent", "10", "--fallback", "A", "--store", db_url
    )
    assert ok.exit_code == 0 and "flag memory = B for 10%, A otherwise" in ok.output
    invoke(flags, "set", "memory", "B", "--percent", "50", "--fallback", "A", "--store", db_url)
    now = json.loads(invoke(flags, "list", "--format", "json", "--store", db_url).output)
    assert [(f["name"], f["percent"]) for f in now] == [("memory", 50.0)]
    past = json.loads(
        invoke(flags, "list", "--history", "memory", "--format", "json", "--store", db_url).output
    )
    assert [f["percent"] for f in past] == [10.0, 50.0]
    assert "memory" in invoke(flags, "list", "--store", db_url).output
    bad = invoke(flags, "set", "memory", "B", "--percent", "120", "--store", db_url)
    assert bad.exit_code == 2 and "120" in bad.output


# ---------------------------------------------------------------- profile names (issue 28, 27)


def test_unknown_profiles_are_refused_naming_them_and_the_known_ones(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/store.db"
    one = invoke(shadow, "start", "t", "--control", "serevr-memory", "--treatment", TREATMENT,
                 "--store", url)  # fmt: skip
    assert one.exit_code == 2, one.output
    said = " ".join(one.output.split())
    assert "unknown profile: --control 'serevr-memory'" in said
    assert f"shipped ones are agentrecall, basic-memory, mcp-memory-libsql, {CONTROL}" in said
    assert "TOML file" in said and "Traceback" not in said
    both = invoke(shadow, "start", "t", "--control", "A", "--treatment", "B", "--store", url)
    assert both.exit_code == 2
    assert "unknown profiles: --control 'A'; --treatment 'B'" in " ".join(both.output.split())
    with open_store(url) as store:
        assert store.shadow_tests() == []  # nothing started


def test_a_profile_file_records_the_name_the_proxy_logs(tmp_path: Any) -> None:
    from recallbench.systems._profile import shipped_profiles

    url = f"sqlite:///{tmp_path}/store.db"
    candidate = tmp_path / "candidate.toml"
    text = shipped_profiles()[TREATMENT].read_text(encoding="utf-8")
    candidate.write_text(text.replace(f'name = "{TREATMENT}"', 'name = "candidate-v2"'))
    result = invoke(shadow, "start", "t", "--control", CONTROL, "--treatment", str(candidate),
                    "--store", url)  # fmt: skip
    assert result.exit_code == 0, result.output
    with open_store(url) as store:
        test = store.shadow_test("t")
    assert test is not None and (test.control, test.treatment) == (CONTROL, "candidate-v2")
    http = tmp_path / "search.toml"
    http.write_text('name = "search"\nkind = "http"\n')
    refused = invoke(shadow, "start", "u", "--control", CONTROL, "--treatment", str(http),
                     "--store", url)  # fmt: skip
    assert refused.exit_code == 2 and "an HTTP profile" in refused.output


def test_a_name_the_proxy_has_logged_pairs_under_is_known(tmp_path: Any) -> None:
    """A custom profile whose file is on the proxy's machine: its pairs name it."""
    url = f"sqlite:///{tmp_path}/store.db"
    with open_store(url) as store:
        store.log_shadow_run(
            {
                "query_id": "q1",
                "control_results": [],
                "treatment_results": [],
                "created_at": datetime.now(UTC),
                "control": "team-memory",
                "treatment": "team-memory-v2",
            }
        )
    result = invoke(shadow, "start", "t", "--control", "team-memory", "--treatment",
                    "team-memory-v2", "--store", url)  # fmt: skip
    assert result.exit_code == 0, result.output
    other = invoke(shadow, "start", "u", "--control", "team-memory", "--treatment", "nope",
                   "--store", url)  # fmt: skip
    assert other.exit_code == 2
    assert "in this workspace: team-memory, team-memory-v2" in " ".join(other.output.split())
