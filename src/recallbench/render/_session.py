"""Views of a report's session personalisation lift: the terminal line and the report.md
section. The lift itself is measured by :mod:`recallbench.report._session`."""

from __future__ import annotations

from recallbench.report._model import SessionLift


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.4f}"


def _plain(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def session_summary(lift: SessionLift) -> str:
    """One line: the lift, its interval and test, and the counts."""
    interval = (
        f" [{lift.ci_low:+.4f}, {lift.ci_high:+.4f}]"
        if lift.ci_low is not None and lift.ci_high is not None
        else ""
    )
    p = f", p = {lift.p:.4f}" if lift.p is not None else ""
    return (
        f"session lift ({lift.measure}, n = {lift.n} of {lift.n_all} queries with an earlier "
        f"query in their session): {_signed(lift.delta)}{interval}{p}; "
        f"with {_plain(lift.mean_with)} vs without {_plain(lift.mean_without)}; "
        f"wins/ties/losses {lift.wins}/{lift.ties}/{lift.losses}"
    )


def session_markdown(lift: SessionLift | None) -> list[str]:
    """The report.md section; nothing when no lift was measured."""
    if lift is None:
        return []
    return [
        "",
        "## Session personalisation",
        "",
        f"{lift.measure} with and without the session's earlier queries, over the "
        f"{lift.n} queries whose session asked an earlier query "
        f"({lift.n_all} queries in all).",
        "",
        f"- with session context: {_plain(lift.mean_with)}",
        f"- without: {_plain(lift.mean_without)}",
        f"- lift: {_signed(lift.delta)}"
        + (
            f" (interval {lift.ci_low:+.4f} to {lift.ci_high:+.4f})"
            if lift.ci_low is not None and lift.ci_high is not None
            else ""
        )
        + (f", p = {lift.p:.4f}" if lift.p is not None else ""),
        f"- over all {lift.n_all} queries: {_signed(lift.delta_all)}",
        f"- wins / ties / losses: {lift.wins} / {lift.ties} / {lift.losses}",
        f"- method: {lift.method}",
    ]
