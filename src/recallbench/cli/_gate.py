"""`recallbench gate` and `recallbench baseline`: fail the build when retrieval regresses."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from rich.console import Console

from recallbench.cli._console import make_console
from recallbench.cli._errors import reports_errors, warn
from recallbench.cli._options import store_option
from recallbench.core import ConfigError
from recallbench.core._files import atomic_write_text
from recallbench.gates import (
    GateResult,
    baseline_from_report,
    baseline_from_store,
    choose_baseline,
    load_config,
    regression_note,
    render_gate,
    render_gate_markdown,
    render_junit,
    run_gate,
    stored_run,
    write_back,
    write_back_target,
    write_baseline,
)
from recallbench.gates._extraction import (
    is_extraction_report,
    read_extraction_report,
    run_extraction_gate,
)
from recallbench.report import Report, read_report


@click.command(
    epilog="""\b
Examples:
  recallbench gate out/report.json                       # recallbench.toml, rolling baseline
  recallbench gate out --strict --junit gate.xml --summary-md gate.md
  recallbench gate out --baseline baseline.json          # a committed baseline file
  recallbench gate out --accept                          # on main: a pass joins the baseline
  recallbench gate out --write-back server-memory --write-back-dir ~/.agent/memory
  recallbench gate out/extraction.json                  # [gates.extraction] thresholds
Exit codes: 0 pass (warnings allowed), 1 fail, 2 bad configuration or input.
With $GITHUB_STEP_SUMMARY set, the Markdown verdict is appended to the job summary.
"""
)
@click.argument("report_path", metavar="REPORT", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="recallbench.toml or pyproject.toml (default: found in the current folder).",
)
@click.option(
    "--baseline",
    "baseline_spec",
    metavar="FILE|auto|none",
    help="Baseline file (an error when missing), `auto` (rolling mean of accepted runs in "
    "the store) or `none`. "
    "Default: the config's gates.baseline, else auto.",
)
@store_option
@click.option("--strict", is_flag=True, help="Fail closed: warnings and a missing baseline fail.")
@click.option(
    "--summary-md",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the verdict as Markdown (a PR comment).",
)
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML.")
@click.option(
    "--accept",
    is_flag=True,
    help="When the gate passes and judged every drop, mark the run accepted in the store "
    "(it joins the baseline).",
)
@click.option(
    "--write-back",
    "write_back_system",
    metavar="SYSTEM",
    help="When the gate fails, store a regression note in this memory system.",
)
@click.option(
    "--write-back-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="The store folder of the --write-back server (its {workdir}), kept.",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the verdict line.")
@reports_errors
def gate(
    report_path: Path,
    config_path: Path | None,
    baseline_spec: str | None,
    store_url: str | None,
    strict: bool,
    summary_md: Path | None,
    junit: Path | None,
    accept: bool,
    write_back_system: str | None,
    write_back_dir: Path | None,
    quiet: bool,
) -> None:
    """Check a report against thresholds and a baseline; exit 1 when it fails.

    Thresholds come from [gates] in recallbench.toml (or [tool.recallbench.gates] in
    pyproject.toml); the baseline is a committed file or the rolling mean of the last
    accepted runs of the same system and dataset in the history store. A drop beyond the
    allowed share fails only when the one-sided paired test against the same baseline (the
    per-query mean of those runs) is significant; with too few differing queries for the
    test to ever be significant the gate says it cannot judge the drop (a warning, a
    failure with --strict) and --accept does not add the run to the baseline.
    """
    loaded = load_config(config_path)
    if is_extraction_report(report_path):
        if accept or write_back_system or baseline_spec not in (None, "none"):
            raise ConfigError(
                "an extraction report is gated on [gates.extraction] thresholds only: "
                "--baseline, --accept and --write-back apply to retrieval reports"
            )
        extraction = read_extraction_report(report_path)
        _verdict(
            run_extraction_gate(
                extraction, loaded.config.gates.extraction, strict=strict, config=loaded.path
            ),
            summary_md,
            junit,
            quiet,
        )
        return
    report = read_report(report_path)
    if write_back_dir is not None and write_back_system is None:
        raise ConfigError("--write-back-dir goes with --write-back")
    target = None
    if write_back_system is not None:
        target = write_back_target(write_back_system, write_back_dir)
    chosen = choose_baseline(report, loaded, baseline_spec, store_url, accepting=accept)
    result = run_gate(
        report,
        loaded.config.gates,
        chosen.baseline,
        baseline_wanted=chosen.wanted,
        baseline_problem=chosen.problem,
        strict=strict,
        config=loaded.path,
        baseline_starting=chosen.starting,
    )
    console = _verdict(result, summary_md, junit, quiet, exit_now=False)
    if accept and result.acceptable:
        _accept(report, store_url, console)
    elif accept and result.exit_code == 0:
        warn(
            "not accepted: a drop could not be judged (too few differing queries); "
            "`recallbench baseline accept` accepts the run on purpose"
        )
    elif accept:
        warn(
            "not accepted: the gate failed, so this run does not join the baseline "
            "(`recallbench baseline accept` accepts a run on purpose)"
        )
    if result.status == "fail" and target is not None:
        note = regression_note(result, report)
        if note is not None:
            write_back(target, note)
            where = f" (store {write_back_dir})" if write_back_dir else ""
            console.print(
                f"regression note {note.id} written to {target.name}{where}", highlight=False
            )
    sys.exit(result.exit_code)


def _verdict(
    result: GateResult,
    summary_md: Path | None,
    junit: Path | None,
    quiet: bool,
    *,
    exit_now: bool = True,
) -> Console:
    """Write the verdict's files, print it, and (``exit_now``) exit with its code."""
    outputs = {}
    markdown = render_gate_markdown(result)
    if summary_md is not None:
        outputs[summary_md] = markdown
    if junit is not None:
        outputs[junit] = render_junit(result)
    for path, text in outputs.items():
        atomic_write_text(path, text)
    _job_summary(markdown)
    console = make_console()
    if quiet:
        console.print(f"gate {result.status}", highlight=False)
    else:
        render_gate(result, console)
    if exit_now:
        sys.exit(result.exit_code)
    return console


def _job_summary(markdown: str) -> None:
    """GitHub Actions shows what is appended to $GITHUB_STEP_SUMMARY on the run's page."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(markdown + "\n")
        except OSError as error:  # the verdict, not the summary, decides the exit code
            warn(f"cannot append to $GITHUB_STEP_SUMMARY ({summary}): {error.strerror}")


def _accept(report: Report, store_url: str | None, console: Console) -> None:
    from recallbench.report._run_statistics import record_run
    from recallbench.store import open_store

    with open_store(store_url) as store:
        stored = stored_run(store, report) or record_run(store, report)
        store.accept(stored.id)
        console.print(
            f"accepted run #{stored.id} in {store.url}: later runs of {report.system.system} "
            f"on {report.dataset.name} are gated against it",
            highlight=False,
        )


@click.group()
def baseline() -> None:
    """Committed baselines for `recallbench gate`."""


@baseline.command(
    epilog="""\b
Examples:
  recallbench baseline accept out/report.json               # writes recallbench-baseline.json
  recallbench baseline accept out --out ci/baseline.json
  recallbench baseline accept 12                            # run #12 of the history store
"""
)
@click.argument("run", metavar="RUN")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("recallbench-baseline.json"),
    show_default=True,
    help="The baseline file to write (commit it; point gates.baseline at it).",
)
@store_option
@reports_errors
def accept(run: str, out_path: Path, store_url: str | None) -> None:
    """Accept a run as the baseline: a report (file or folder) or a store run id.

    Writes the baseline file, and marks the run accepted in the history store, so that it
    also counts in the rolling baseline.
    """
    from recallbench.report._run_statistics import record_run
    from recallbench.store import open_store

    if Path(run).exists():
        report = read_report(Path(run))
        with open_store(store_url) as store:
            stored = stored_run(store, report) or record_run(store, report, source=run)
            store.accept(stored.id)
        write_baseline(out_path, baseline_from_report(report, run))
    elif run.lstrip("#").isdigit():
        with open_store(store_url) as store:
            stored = store.accept(int(run.lstrip("#")))
            baseline_file = baseline_from_store(store, stored)
        write_baseline(out_path, baseline_file)
    else:
        raise ConfigError(f"{run}: neither a report file or folder nor a store run id")
    warn(f"wrote {out_path}")
