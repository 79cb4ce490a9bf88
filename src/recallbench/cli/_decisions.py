"""`recallbench decisions`: score a memory system's write decisions (ADD / UPDATE / DELETE /
NOOP and the memory each applies to) against a fixture of expected ones."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal

import click
from pydantic import JsonValue

from recallbench._version import __version__
from recallbench.cli._console import make_console
from recallbench.cli._errors import EXIT_SERVICE_FAILED, reports_errors
from recallbench.cli._options import (
    config_option,
    out_option,
    quiet_option,
    store_option,
    timeout_option,
    with_judge_cache_options,
)
from recallbench.cli._run_io import writable_folder, written
from recallbench.core import ConfigError, RecallbenchError
from recallbench.core._model import Record
from recallbench.extraction._decisions import ACTIONS, Decision, DecisionFixture, DecisionScores

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.extraction._extractors import Decider

REPORT_FORMAT: Final = "recallbench.decisions-report/v1"
BUNDLED: Final = "decisions-sample"
DECIDERS: Final = "baseline | llm | python:MODULE:NAME | command:CMD"


class DecisionsUnreliableError(RecallbenchError):
    """More LLM calls failed than ``[judge] max_failure_rate`` allows (the outputs are
    written first, every failed case counted as unanswered)."""

    exit_code = EXIT_SERVICE_FAILED


class FixtureInfo(Record):
    name: str
    version: str
    sha256: str
    """Of the validated fixture's canonical JSON: the same cases, the same hash."""
    cases: int


class DeciderInfo(Record):
    name: str
    metadata: dict[str, JsonValue]
    """An LLM decider's model, prompt version and failures; empty for the others."""


class DecisionsReport(Record):
    """A ``recallbench.decisions-report/v1`` file."""

    format: Literal["recallbench.decisions-report/v1"] = REPORT_FORMAT
    created_at: datetime
    recallbench_version: str
    fixture: FixtureInfo
    decider: DeciderInfo
    scores: DecisionScores
    decisions: dict[str, Decision]
    """Every answer, by case id (a case without one is missing)."""


@dataclass(frozen=True, slots=True)
class _LLMOptions:
    config_path: Path | None
    cache_spec: str | None
    strict: bool
    store_url: str | None


@click.command(
    "decisions",
    epilog=f"""\b
Examples:
  recallbench decisions                                    # the baseline on {BUNDLED}
  recallbench decisions --fixture my-cases.json --decider python:my_pkg.memory:decide
  recallbench decisions --decider "command:./decide.sh" --timeout 10
  recallbench decisions --decider llm --config recallbench.toml
  recallbench decisions --decider llm --judge-cache ci/decide.jsonl --strict   # CI replay

\b
Fixture: a recallbench.decisions/v1 file or the bundled {BUNDLED} (22 cases: exact
duplicates, rewordings, refinements, contradictions, retractions, new facts, false
friends). Deciders: baseline (built-in, deterministic), llm, python:MODULE:NAME,
command:CMD. python:NAME is called with {{existing: [{{id, content}}], incoming}} and
returns {{action, target}}; command:CMD is run once per case with the same JSON on stdin
and prints the answer on stdout; llm asks the [judge] model with the versioned decide
prompt, through the judge cache. Writes DIR/decisions.json and DIR/decisions.md.

\b
Exit codes: 0 scored; 2 bad input or usage, or --strict and a call not in the cache
  (nothing is written); 3 the decider failed (raised, exited non-zero, timed out,
  answered off the format: nothing is written); 69 more LLM calls failed than [judge]
  max_failure_rate allows (written first); 130 interrupted.
""",
)
@click.option(
    "--fixture",
    "fixture_spec",
    default=BUNDLED,
    show_default=True,
    metavar=f"FILE|{BUNDLED}",
    help="The decision cases: a recallbench.decisions/v1 file or the bundled fixture.",
)
@click.option(
    "--decider",
    "decider_spec",
    default="baseline",
    show_default=True,
    metavar="SPEC",
    help=f"Who decides: {DECIDERS}.",
)
@timeout_option("Seconds a command: decider may take for one case.")
@out_option("Folder for decisions.json and decisions.md.", Path("out"))
@with_judge_cache_options
@config_option
@store_option
@quiet_option
@reports_errors
def decisions(
    fixture_spec: str,
    decider_spec: str,
    timeout: float,
    out_dir: Path,
    cache_spec: str | None,
    strict: bool,
    config_path: Path | None,
    store_url: str | None,
    quiet: bool,
) -> None:
    """Score ADD / UPDATE / DELETE / NOOP write decisions against expected ones: accuracy,
    per-action precision, recall and F1, the confusion matrix and the seed's targets."""
    from recallbench.extraction._decisions import score_decisions

    if decider_spec != "llm" and (cache_spec is not None or strict):
        raise ConfigError("--judge-cache and --strict apply to --decider llm only")
    writable_folder(out_dir, "--out")
    fixture = _fixture(fixture_spec)
    console = make_console(quiet)
    llm = _LLMOptions(config_path, cache_spec, strict, store_url)
    decider, answers = _decide(fixture, decider_spec, timeout, llm, console)
    scores = score_decisions(fixture, answers, system=decider.name)
    metadata: dict[str, JsonValue] = dict(getattr(decider, "metadata", {}) or {})
    report = DecisionsReport(
        created_at=datetime.now(UTC),
        recallbench_version=__version__,
        fixture=FixtureInfo(
            name=fixture.name,
            version=fixture.version,
            sha256=hashlib.sha256(fixture.model_dump_json().encode()).hexdigest(),
            cases=len(fixture.cases),
        ),
        decider=DeciderInfo(name=decider.name, metadata=metadata),
        scores=scores,
        decisions={case.id: answers[case.id] for case in fixture.cases if case.id in answers},
    )
    files = {
        out_dir / "decisions.json": report.model_dump_json(indent=2) + "\n",
        out_dir / "decisions.md": render_markdown(report),
    }
    _render(report, console)
    _write(files, out_dir)
    console.print("wrote " + ", ".join(str(path) for path in files), highlight=False)
    if metadata.get("unreliable") is True:
        raise DecisionsUnreliableError(
            f"{metadata.get('failed')} of {metadata.get('asked')} cases failed (more than "
            f"[judge] max_failure_rate {metadata.get('max_failure_rate')}): they count as "
            f"unanswered; see {out_dir / 'decisions.json'}"
        )


def _fixture(spec: str) -> DecisionFixture:
    from recallbench.extraction._decisions import bundled_decisions, load_decisions

    if spec == BUNDLED and not Path(spec).exists():
        return bundled_decisions()
    return load_decisions(Path(spec))


def _decide(
    fixture: DecisionFixture, spec: str, timeout: float, llm: _LLMOptions, console: Console
) -> tuple[Decider, dict[str, Decision]]:
    """The decider ``spec`` names and its answers (an LLM's through the judge cache,
    opened and saved here)."""
    from recallbench.extraction._extractors import resolve_decider

    if spec != "llm":
        decider = resolve_decider(spec, timeout=timeout)
        return decider, dict(decider.decide(fixture.cases))
    from recallbench.cli._judge import progress_bar
    from recallbench.extraction._llm import LLMDecider
    from recallbench.gates import load_config
    from recallbench.judges._setup import JudgeSetup, open_cache, require_judge

    loaded = load_config(llm.config_path)
    config = require_judge(loaded.config.judge, loaded.path)
    with (
        open_cache(llm.cache_spec, llm.store_url) as cache,
        progress_bar(console, "deciding") as progress,
    ):
        model = LLMDecider(JudgeSetup(config, cache), strict=llm.strict, progress=progress)
        return model, model.decide(fixture.cases)


def _write(files: dict[Path, str], out_dir: Path) -> None:
    from recallbench.core._files import atomic_write_texts

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def decider_note(report: DecisionsReport) -> str | None:
    """One line naming an LLM decider's model, prompt version and failures."""
    meta = report.decider.metadata
    prompt = meta.get("prompt")
    if not isinstance(prompt, dict):
        return None
    note = (
        f"Decider: LLM {meta.get('model')} ({meta.get('provider')}), prompt "
        f"{prompt.get('task')} v{prompt.get('version')}; {meta.get('failed')} of "
        f"{meta.get('asked')} cases failed and count as unanswered."
    )
    if meta.get("unreliable") is True:
        note += f" Unreliable: more than max_failure_rate {meta.get('max_failure_rate')}."
    return note


def render_markdown(report: DecisionsReport) -> str:
    """The report as Markdown: headline, the seed's targets, per action, confusion."""
    scores = report.scores
    lines = [
        f"# Write decisions: {report.decider.name} on {report.fixture.name}",
        "",
        f"recallbench {report.recallbench_version}, "
        f"{report.created_at.isoformat(timespec='seconds')}. {scores.cases} cases.",
        "",
    ]
    note = decider_note(report)
    if note is not None:
        lines += [note, ""]
    lines += [
        f"- accuracy (action): {_number(scores.accuracy)}",
        f"- target accuracy (action and memory): {_number(scores.target_accuracy)}",
        "",
        "| target | cases | rate | goal | met |",
        "|---|---:|---:|---:|---|",
    ]
    for name, target in scores.targets.items():
        rate = target["rate"]
        met = {True: "yes", False: "no", None: "–"}[target["met"]]  # type: ignore[index]
        lines.append(
            f"| {name} | {target['cases']:g} | {_number(rate if isinstance(rate, float) else None)}"
            f" | {target['target']:g} | {met} |"
        )
    lines += ["", "| action | precision | recall | F1 | support |", "|---|---:|---:|---:|---:|"]
    for action, row in scores.per_action.items():
        lines.append(
            f"| {action} | {_number(row['precision'])} | {_number(row['recall'])} | "
            f"{_number(row['f1'])} | {row['support']:g} |"
        )
    labels = [*ACTIONS, "MISSING"]
    lines += [
        "",
        "Confusion (rows expected, columns decided):",
        "",
        "| expected | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]
    for want, counts in scores.confusion.items():
        lines.append(f"| {want} | " + " | ".join(str(counts[label]) for label in labels) + " |")
    lines += ["", "| kind | accuracy |", "|---|---:|"]
    lines += [f"| {kind} | {_number(rate)} |" for kind, rate in scores.per_kind.items()]
    if scores.wrong:
        lines += ["", f"Wrong action: {', '.join(scores.wrong)}."]
    if scores.missing:
        lines += ["", f"Unanswered: {', '.join(scores.missing)}."]
    lines.append("")
    return "\n".join(lines)


def _render(report: DecisionsReport, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    scores = report.scores
    console.print(
        f"[bold]{escape(report.decider.name)}[/bold] on [bold]{escape(report.fixture.name)}"
        f"[/bold]: {scores.cases} cases; accuracy {_number(scores.accuracy)}, target "
        f"accuracy {_number(scores.target_accuracy)}",
        highlight=False,
    )
    table = Table(title="per action", title_justify="left", title_style="bold")
    for column in ("action", "precision", "recall", "F1", "support"):
        table.add_column(column, justify="left" if column == "action" else "right")
    for action, row in scores.per_action.items():
        table.add_row(
            action,
            _number(row["precision"]),
            _number(row["recall"]),
            _number(row["f1"]),
            f"{row['support']:g}",
        )
    console.print(table)
    for name, target in scores.targets.items():
        rate = target["rate"]
        shown = _number(rate if isinstance(rate, float) else None)
        console.print(
            f"  {name}: {shown} (goal {target['target']:g}, met: {target['met']})",
            highlight=False,
        )
    note = decider_note(report)
    if note is not None:
        console.print(note, highlight=False, markup=False)
    if scores.missing:
        console.print(f"  unanswered: {', '.join(scores.missing)}", highlight=False)
