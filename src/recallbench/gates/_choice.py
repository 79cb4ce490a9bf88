"""Which baseline a gate compares a report with, and what it says when there is none.

The accept loop (``run`` → ``gate --accept`` → ``run`` → ``gate``) must close: the run a
gate accepts is the baseline of the next gate, and the first ``gate --accept`` of a system
on a dataset, with nothing accepted yet, is how that baseline starts. With ``--accept``,
no accepted run is therefore not a warning (which ``--strict`` would turn into a failure,
so that the run could never be accepted and every later gate would ask to accept one): the
check passes and says that this run becomes the first baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recallbench.core import ConfigError
from recallbench.gates._baseline import Baseline, read_baseline, rolling_baseline, stored_run
from recallbench.gates._config import LoadedConfig, baseline_path
from recallbench.report import Report


@dataclass(frozen=True, slots=True)
class BaselineChoice:
    """The baseline (None: there is none), and what the gate says about it."""

    baseline: Baseline | None
    wanted: bool = True
    """Whether the gate should have had one (``--baseline none``: not wanted)."""
    problem: str | None = None
    """Why a wanted baseline is missing: a warning (a failure with ``--strict``)."""
    starting: str | None = None
    """With ``--accept`` and nothing accepted yet: this run starts the baseline (a pass)."""


def choose_baseline(
    report: Report,
    loaded: LoadedConfig,
    spec: str | None,
    store_url: str | None,
    accepting: bool = False,
) -> BaselineChoice:
    """The baseline of ``report``: ``spec`` (a file, ``auto`` or ``none``), else the
    configuration's ``gates.baseline`` file, else the rolling baseline of the accepted runs
    in the history store at ``store_url``. ``accepting``: the gate runs with ``--accept``.

    A baseline file named on the command line that does not exist is ConfigError (exit 2:
    a typo must not turn the gate off); one the configuration names is a warning.
    """
    if spec == "none":
        return BaselineChoice(None, wanted=False)
    given = spec
    configured = baseline_path(loaded)
    if spec is None and configured is not None:
        spec = str(configured)
    if spec is not None and spec != "auto":
        path = Path(spec)
        if path.exists():
            return BaselineChoice(read_baseline(path))
        if spec == given:
            raise ConfigError(
                f"--baseline {path}: no such file (write one with `recallbench baseline "
                "accept REPORT --out FILE`, or give `auto` or `none`)"
            )
        return BaselineChoice(
            None, problem=f"baseline file {path} does not exist (`recallbench baseline accept`)"
        )
    return _from_store(report, loaded, store_url, accepting)


def _from_store(
    report: Report, loaded: LoadedConfig, store_url: str | None, accepting: bool
) -> BaselineChoice:
    from recallbench.store import open_store

    window = loaded.config.gates.regression.window
    with open_store(store_url) as store:
        found = rolling_baseline(store, report, window)
        where = store.url
        itself = stored_run(store, report) if found is None else None
    if found is not None:
        return BaselineChoice(found)
    what = f"{report.system.system} on {report.dataset.name}"
    if itself is not None and itself.accepted:
        told = (
            f"the only accepted run of {what} in {where} is this report itself "
            f"(run #{itself.id}): a run is not gated against itself; it is the baseline of "
            "the runs that come after it"
        )
        return (
            BaselineChoice(None, starting=told) if accepting else BaselineChoice(None, problem=told)
        )
    if accepting:
        return BaselineChoice(
            None,
            starting=f"no accepted run of {what} in {where} yet: --accept makes this run the "
            "first baseline, the one the next gate compares with",
        )
    return BaselineChoice(
        None,
        problem=f"no accepted run of {what} (sha256 {report.dataset.sha256[:12]}) in {where}: "
        "accept one with `recallbench gate REPORT --accept` (it becomes the baseline of the "
        "next gate) or `recallbench baseline accept REPORT`",
    )
