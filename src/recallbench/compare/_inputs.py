"""What `recallbench compare` compares: reports or runs, made paired on the same queries.

A report carries per-query values for its measures and the first results of each query; a
run carries full rankings and is scored here against its dataset. Everything compared must
come from the same dataset (same fingerprint) under the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from recallbench.core import ConfigError, Dataset, Run
from recallbench.core._validation import read_json, validate
from recallbench.datasets import DEFAULT_DATASET, load_dataset
from recallbench.measures import Measure
from recallbench.report import Report, build_report, output_file
from recallbench.report._read import check_finite

MissingPolicy = Literal["error", "drop", "zero"]
MISSING_POLICIES: tuple[MissingPolicy, ...] = ("error", "drop", "zero")


@dataclass(frozen=True, slots=True)
class Compared:
    """One system's results, as read from a report or scored from a run."""

    label: str
    """Unique name in the comparison: the system's name, with its file when names repeat."""
    source: Path
    kind: Literal["report", "run"]
    report: Report
    rankings: dict[str, list[str]]
    """Returned ids per query, best first: whole for runs, the first 20 for reports."""


Input = Path | str | Run | Report
"""What can be compared: a report.json or run.json file (or the folder `recallbench run`
wrote), or a ``Run`` or ``Report`` object."""

DatasetSpec = str | Dataset | None
"""The dataset runs are scored on: a name or path (``--dataset``), a ``Dataset``, or None
(the bundled dataset a run names)."""


def _read(
    path: Path, measures: Sequence[Measure], datasets: dict[str, Dataset], dataset_spec: DatasetSpec
) -> tuple[Literal["report", "run"], Report, dict[str, list[str]]]:
    data = read_json(path)
    kind = data.get("format") if isinstance(data, dict) else None
    if kind == "recallbench.report/v1":
        return _of_report(check_finite(validate(Report, data, str(path)), str(path)))
    if kind == "recallbench.run/v1":
        return _of_run(validate(Run, data, str(path)), path, measures, datasets, dataset_spec)
    raise ConfigError(
        f"{path}: not a recallbench report or run (format {kind!r}); "
        "give report.json or run.json files, or the folders `recallbench run` wrote"
    )


def _of_report(report: Report) -> tuple[Literal["report", "run"], Report, dict[str, list[str]]]:
    return "report", report, {query.id: list(query.returned) for query in report.queries}


def _of_run(
    run: Run,
    path: Path,
    measures: Sequence[Measure],
    datasets: dict[str, Dataset],
    dataset_spec: DatasetSpec,
) -> tuple[Literal["report", "run"], Report, dict[str, list[str]]]:
    dataset = _dataset_of(run, path, datasets, dataset_spec)
    # a measure that scores NaN (a plugin's, say) is as unusable as a NaN read from a file
    report = check_finite(build_report(dataset, run, measures), f"{path} (scored)")
    rankings = {result.query_id: [hit.doc_id for hit in result.hits] for result in run.results}
    return "run", report, rankings


def _dataset_of(
    run: Run, path: Path, datasets: dict[str, Dataset], dataset_spec: DatasetSpec
) -> Dataset:
    """The dataset a run is scored on: --dataset, or the bundled one it was made on."""
    if isinstance(dataset_spec, Dataset):
        datasets[dataset_spec.name] = dataset_spec
    spec = dataset_spec.name if isinstance(dataset_spec, Dataset) else dataset_spec
    ref = run.spec.dataset
    if spec is None:
        if ref is None or ref.name != DEFAULT_DATASET:
            made_on = f"dataset {ref.name!r}" if ref else "an unknown dataset"
            raise ConfigError(
                f"{path}: a run made on {made_on} needs --dataset to be scored "
                "(or compare the report.json files)"
            )
        spec = DEFAULT_DATASET
    if spec not in datasets:
        datasets[spec] = load_dataset(spec)
    dataset = datasets[spec]
    if ref is not None and ref.sha256 != dataset.sha256:
        raise ConfigError(
            f"{path}: the run was made on {ref.name} (sha256 {ref.sha256[:12]}), "
            f"not on {dataset.name} (sha256 {dataset.sha256[:12]})"
        )
    return dataset


def load_compared(
    paths: Sequence[Input], measures: Sequence[Measure], dataset_spec: DatasetSpec = None
) -> list[Compared]:
    """Read every input (a file or folder, or a ``Run`` or ``Report`` object, named
    ``<Run 2>`` by its position); runs are scored with ``measures``."""
    if len(paths) < 2:
        raise ConfigError("compare needs at least two runs or reports")
    datasets: dict[str, Dataset] = {}
    read = []
    for position, given in enumerate(paths, start=1):
        if isinstance(given, Report):
            path = Path(f"<Report {position}>")
            kind, report, rankings = _of_report(check_finite(given, str(path)))
        elif isinstance(given, Run):
            path = Path(f"<Run {position}>")
            kind, report, rankings = _of_run(given, path, measures, datasets, dataset_spec)
        else:
            path = output_file(Path(given), ("report.json", "run.json"))
            kind, report, rankings = _read(path, measures, datasets, dataset_spec)
        read.append((path, kind, report, rankings))
    names = [report.system.system for _, _, report, _ in read]
    compared = []
    for (path, kind, report, rankings), name in zip(read, names, strict=True):
        label = name if names.count(name) == 1 else f"{name} ({path.parent}/{path.name})"
        compared.append(Compared(label, path, kind, report, rankings))
    _check_same_ground(compared)
    return compared


def _check_same_ground(compared: Sequence[Compared]) -> None:
    """Same dataset, same relevance threshold, same rules: otherwise nothing is paired."""
    first = compared[0].report
    for other in compared[1:]:
        report = other.report
        if report.dataset.sha256 != first.dataset.sha256:
            raise ConfigError(
                "not the same dataset: "
                + "; ".join(
                    f"{c.label}: {c.report.dataset.name} (sha256 {c.report.dataset.sha256[:12]})"
                    for c in compared
                )
            )
        if report.relevance_threshold != first.relevance_threshold:
            raise ConfigError(
                f"relevance thresholds differ: {compared[0].label} {first.relevance_threshold}, "
                f"{other.label} {report.relevance_threshold}"
            )
        differing = sorted(
            k for k in {*first.rules, *report.rules} if first.rules.get(k) != report.rules.get(k)
        )
        if differing:
            raise ConfigError(
                f"{compared[0].label} and {other.label} were scored under different rules "
                f"({', '.join(differing)}); score both with the same recallbench version"
            )


def measures_of(compared: Sequence[Compared], chosen: Sequence[str]) -> list[str]:
    """The measures to compare: those asked for, else those every input has."""
    available = [m.name for m in compared[0].report.measures]
    common = [m for m in available if all(m in c.report.means for c in compared)]
    if not chosen:
        if not common:
            raise ConfigError("the inputs have no measure in common")
        return common
    for name in chosen:
        lacking = [c.label for c in compared if name not in c.report.means]
        if lacking:
            raise ConfigError(
                f"measure {name}: no per-query values in {', '.join(lacking)} "
                f"(it has: {', '.join(available)}); compare the run.json files to score it"
            )
    return list(chosen)


def paired_queries(
    compared: Sequence[Compared], missing: MissingPolicy
) -> tuple[list[str], list[str], list[str]]:
    """Query ids to pair, ids dropped, and ids missing from every input.

    A query missing from some inputs and not others is an error unless ``missing`` says
    to drop it everywhere or to keep it scored 0 where missing (the reports' own rule).
    """
    if missing not in MISSING_POLICIES:
        raise ConfigError(f"--missing must be one of {', '.join(MISSING_POLICIES)}")
    statuses = [{q.id: q.status for q in c.report.queries} for c in compared]
    order = [q.id for q in compared[0].report.queries]
    partial, everywhere = [], []
    for query_id in order:
        absent = sum(1 for status in statuses if status[query_id] == "missing")
        if absent == len(compared):
            everywhere.append(query_id)
        elif absent:
            partial.append(query_id)
    if partial and missing == "error":
        shown = ", ".join(partial[:10]) + (" ..." if len(partial) > 10 else "")
        lacking = [
            f"{c.label} lacks {sum(1 for q in partial if s[q] == 'missing')}"
            for c, s in zip(compared, statuses, strict=True)
            if any(s[q] == "missing" for q in partial)
        ]
        raise ConfigError(
            f"{len(partial)} queries are in some runs and not in others ({'; '.join(lacking)}): "
            f"{shown}. Use --missing drop to compare on the queries every run answered, or "
            "--missing zero to score a missing query 0 (trec_eval -c)"
        )
    dropped = partial if missing == "drop" else []
    dropped_set = set(dropped)
    kept = [q for q in order if q not in dropped_set]
    return kept, dropped, everywhere
