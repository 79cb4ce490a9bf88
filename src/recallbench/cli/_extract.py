"""`recallbench extract`: score what a system extracts from documents (events, entities,
observations, graph connections) against ground truth, under each matching rule."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

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
from recallbench.extraction._sources import LOCOMO_PREFIX, first_documents, load_truth

if TYPE_CHECKING:
    from rich.console import Console

    from recallbench.extraction import (
        ExtractionGroundTruth,
        ExtractionOutput,
        MatchRule,
        NameRule,
    )
    from recallbench.extraction._extractors import Extractor
    from recallbench.extraction._report import ExtractionReport

DEFAULT_RULES = ("exact", "lcs>=0.7", "fuzzy>=85")
"""The rules scored when no --rule is given (recallbench.extraction.DEFAULT_RULES, spelled
out here so that --help does not import the scorer)."""
GAMEABLE_RULES = ("jaccard>=T", "containment>=T", "fuzzy-set>=T")
EXTRACTORS = "baseline | llm | python:MODULE:NAME | command:CMD | mcp:PROFILE"


class ExtractionUnreliableError(RecallbenchError):
    """More LLM calls failed than ``[judge] max_failure_rate`` allows (the outputs are
    written first, every failed document counted as nothing extracted)."""

    exit_code = EXIT_SERVICE_FAILED


conversation_option = click.option(
    "--conversation",
    "conversations",
    multiple=True,
    metavar="ID",
    help="With locomo-events: keep only this conversation (repeatable; e.g. conv-30).",
)
documents_option = click.option(
    "--documents",
    "limit",
    type=click.IntRange(min=1),
    metavar="N",
    help="Score the first N documents of the ground truth only (graph cases that name "
    "another document are left out).",
)
extractor_timeout_option = timeout_option("Seconds a command: extractor may take for one document.")
rule_option = click.option(
    "--rule",
    "rule_texts",
    multiple=True,
    metavar="RULE",
    help="Matching rule (repeatable; one table each): exact, lcs>=T (the longest common "
    "word subsequence covers T of both items), fuzzy>=T (symmetric character ratio, 0-100), "
    "embedding>=T (the built-in dense model; gameable: nearly order-blind). Default: "
    + ", ".join(DEFAULT_RULES)
    + ". Gameable, kept only to compare with published numbers: "
    + ", ".join(GAMEABLE_RULES)
    + " (order-blind, one-sided, subset-blind).",
)
name_rule_option = click.option(
    "--name-rule",
    "name_rule",
    default="exact",
    show_default=True,
    metavar="RULE",
    help="How entity, actor and connection names match: exact (after normalisation, with "
    "the aliases the ground truth declares) or fuzzy>=T (also a symmetric character ratio "
    "of at least T, for names of 4 characters or more). Slugs (dr-7-quarry) never match.",
)
resamples_option = click.option(
    "--resamples",
    type=click.IntRange(min=10),
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the intervals (of conversations for LoCoMo, else of documents).",
)
seed_option = click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap."
)
"""The scoring options ``extract`` and ``bench --extraction`` share (the same names,
defaults and checks, so one extractor scores the same under both)."""


@click.command(
    epilog=f"""\b
Examples:
  recallbench extract --ground-truth locomo-events:data/locomo --conversation conv-30
  recallbench extract --ground-truth locomo-events:data/locomo10.json --rule lcs>=0.6
  recallbench extract --ground-truth gold.json --output extracted.json --rule exact
  recallbench extract --ground-truth meeting-sample
  recallbench extract --dataset meeting-sample --extractor baseline
  recallbench extract --ground-truth gold.json --save-output out/baseline.json --out out/
  recallbench extract --ground-truth meeting-sample --extractor llm --config recallbench.toml
  recallbench extract --ground-truth meeting-sample --extractor llm \\
      --judge-cache ci/extract.jsonl --strict                      # replay only (CI)
  recallbench extract --ground-truth meeting-sample --extractor python:my_pkg.mem:extract
  recallbench extract --ground-truth meeting-sample --extractor "command:./extract.sh"

\b
Ground truth (--ground-truth, or its other name --dataset): a recallbench.extraction/v1
file, {LOCOMO_PREFIX}PATH (LoCoMo's locomo10.json or its folder: sessions as documents,
their annotated events and observations), or a bundled corpus by name (meeting-sample).
Output: an extractor (baseline, the default: built-in and deterministic; llm;
python:MODULE:NAME; command:CMD; mcp:PROFILE), or a recallbench.extraction-output/v1
file (--output: replays a --save-output). Rules need both sides to agree: exact (after
normalisation), lcs>=T, fuzzy>=T (0-100). Gameable, by name only and marked in the report:
embedding>=T (the built-in dense model; nearly order-blind), jaccard>=T, containment>=T and
fuzzy-set>=T (token_set_ratio): a keyword bag, the whole document, a first name score full
marks. Intervals resample conversations (LoCoMo) or documents.

\b
python:NAME is called with each document as a dict (id, text, title, metadata) and
returns {{events, entities, observations}}; command:CMD runs once per document with that
dict as JSON on stdin and prints the answer as JSON on stdout. llm asks the [judge] model
of recallbench.toml with the versioned extract prompt, through the judge cache.

\b
Exit codes: 0 scored; 2 bad input or usage, or --strict and a call not in the cache
  (nothing is written); 3 the extractor failed (raised, exited non-zero, timed out,
  answered off the format: nothing is written); 69 more LLM calls failed than [judge]
  max_failure_rate allows (written first); 130 interrupted.
"""
)
@click.option(
    "--ground-truth",
    "--dataset",
    "truth_spec",
    required=True,
    metavar="FILE|locomo-events:PATH|NAME",
    help="Extraction ground truth: a recallbench.extraction/v1 file, locomo-events:PATH, "
    "or a bundled corpus (meeting-sample). --dataset is another name for it.",
)
@conversation_option
@click.option(
    "--extractor",
    metavar="SPEC",
    help=f"Extract with {EXTRACTORS} (default: baseline, unless --output is given).",
)
@documents_option
@extractor_timeout_option
@click.option(
    "--output",
    "output_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Score this recallbench.extraction-output/v1 file instead of extracting.",
)
@rule_option
@name_rule_option
@resamples_option
@seed_option
@click.option(
    "--save-output",
    "save_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the scored output (a recallbench.extraction-output/v1 file) here.",
)
@out_option("Folder for extraction.json and extraction.md.", Path("out"))
@with_judge_cache_options
@config_option
@store_option
@quiet_option
@reports_errors
def extract(
    truth_spec: str,
    conversations: tuple[str, ...],
    extractor: str | None,
    limit: int | None,
    timeout: float,
    output_path: Path | None,
    rule_texts: tuple[str, ...],
    name_rule: str,
    resamples: int,
    seed: int,
    save_path: Path | None,
    out_dir: Path,
    cache_spec: str | None,
    strict: bool,
    config_path: Path | None,
    store_url: str | None,
    quiet: bool,
) -> None:
    """Score a system's extraction (events, entities, observations, connections) against
    ground truth: precision, recall and F1 with 95% bootstrap intervals, per matching rule."""
    if extractor is not None and output_path is not None:
        raise ConfigError("--extractor and --output exclude each other: extract, or score a file")
    from recallbench.extraction import NameRule

    rules = parse_rules(rule_texts)
    names = NameRule.parse(name_rule)
    spec = extractor or "baseline"
    if spec != "llm" and (cache_spec is not None or strict):
        raise ConfigError("--judge-cache and --strict apply to --extractor llm only")
    writable_folder(out_dir, "--out")
    if save_path is not None:
        writable_folder(save_path.parent, "--save-output")
    truth = load_truth(truth_spec, conversations)
    if limit is not None:
        truth = first_documents(truth, limit)
    console = make_console(quiet)
    if output_path is not None:
        output = _output(output_path)
    else:
        options = LLMOptions(config_path, cache_spec, strict, store_url)
        output = extracted(truth, spec, options, console, timeout=timeout)
    report = scored_report(truth, output, rules, resamples, seed, names)
    files = report_files(report, output, out_dir)
    if save_path is not None:
        files[save_path] = output.model_dump_json(indent=2) + "\n"
    from recallbench.extraction._report import extractor_note, render_terminal

    render_terminal(report, console)
    note = extractor_note(output)
    if note is not None:
        console.print(note, highlight=False, markup=False)
    write_files(files, out_dir)
    console.print("wrote " + ", ".join(str(path) for path in files), highlight=False)
    if output_path is None:
        _fail_if_unreliable(output, out_dir)


def parse_rules(rule_texts: Sequence[str]) -> list[MatchRule]:
    """The --rule values as rules (DEFAULT_RULES when none), refusing one given twice."""
    from recallbench.extraction import MatchRule

    rules = [MatchRule.parse(text) for text in rule_texts or DEFAULT_RULES]
    labels = [rule.label for rule in rules]
    if len(set(labels)) < len(labels):
        raise ConfigError(f"--rule: a rule is given twice ({', '.join(labels)})")
    return rules


def scored_report(
    truth: ExtractionGroundTruth,
    output: ExtractionOutput,
    rules: Sequence[MatchRule],
    resamples: int,
    seed: int,
    names: NameRule | None = None,
) -> ExtractionReport:
    """``output`` scored against ``truth`` under every rule, as one report."""
    from recallbench.extraction import DEFAULT_NAME_RULE, score_extraction
    from recallbench.extraction._report import build_report

    results = [
        score_extraction(
            truth, output, rule, resamples=resamples, seed=seed, names=names or DEFAULT_NAME_RULE
        )
        for rule in rules
    ]
    return build_report(truth, output, results)


def report_files(
    report: ExtractionReport, output: ExtractionOutput, folder: Path
) -> dict[Path, str]:
    """extraction.json and extraction.md of ``report`` in ``folder`` (the Markdown names an
    LLM extractor's model and failures), as path -> text, for :func:`write_files`."""
    from recallbench.extraction._report import extractor_note, render_markdown

    return {
        folder / "extraction.json": report.model_dump_json(indent=2) + "\n",
        folder / "extraction.md": _with_note(render_markdown(report), extractor_note(output)),
    }


def _with_note(markdown: str, note: str | None) -> str:
    """The report's Markdown with ``note`` before its first section."""
    return markdown if note is None else markdown.replace("\n\n## ", f"\n\n{note}\n\n## ", 1)


def _fail_if_unreliable(output: ExtractionOutput, out_dir: Path) -> None:
    """Exit 69 (after the outputs are written) when an LLM extractor failed on more
    documents than ``[judge] max_failure_rate`` allows."""
    meta = output.metadata
    if meta.get("unreliable") is True:
        raise ExtractionUnreliableError(
            f"{meta.get('failed')} of {meta.get('asked')} documents failed (more than "
            f"[judge] max_failure_rate {meta.get('max_failure_rate')}): they count as "
            f"nothing extracted; see {out_dir / 'extraction.json'}"
        )


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Where --extractor llm finds its model and cache."""

    config_path: Path | None
    cache_spec: str | None
    strict: bool
    store_url: str | None


def check_llm(options: LLMOptions) -> None:
    """A ConfigError (exit 2) when the configuration has no [judge] table: checked before
    any extractor runs, so that a bench does not run the others in vain."""
    from recallbench.gates import load_config
    from recallbench.judges._setup import require_judge

    loaded = load_config(options.config_path)
    require_judge(loaded.config.judge, loaded.path)


def extracted(
    truth: ExtractionGroundTruth,
    spec: str,
    llm: LLMOptions,
    console: Console,
    *,
    timeout: float = 60.0,
    extractor: Extractor | None = None,
) -> ExtractionOutput:
    """``spec``'s extraction of the ground truth's documents (an LLM's through the judge
    cache, opened and saved here). ``extractor``: ``spec`` already resolved (a bench
    resolves every spec before running any)."""
    from recallbench.extraction._extractors import resolve_extractor

    if spec != "llm":
        made = extractor or resolve_extractor(spec, timeout=timeout)
        return made.extract(truth.documents)
    from recallbench.cli._judge import progress_bar
    from recallbench.extraction._llm import LLMExtractor
    from recallbench.gates import load_config
    from recallbench.judges._setup import JudgeSetup, open_cache, require_judge

    loaded = load_config(llm.config_path)
    config = require_judge(loaded.config.judge, loaded.path)
    with open_cache(llm.cache_spec, llm.store_url) as cache:
        setup = JudgeSetup(config, cache)
        with progress_bar(console, "extracting") as progress:
            model = LLMExtractor(setup, strict=llm.strict, progress=progress)
            return model.extract(truth.documents)


def _output(path: Path) -> ExtractionOutput:
    from recallbench.extraction import load_output

    return load_output(path)


def write_files(files: dict[Path, str], out_dir: Path) -> None:
    """Every file or none (their folders made first); a ConfigError naming --out when the
    disk refuses."""
    from recallbench.core._files import atomic_write_texts

    try:
        for path in files:
            path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_texts(files)
    except OSError as error:
        raise written("--out", out_dir, error) from None
