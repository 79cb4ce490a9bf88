"""Join the runs of a dataset's shards (``run --shard I/N``) into the run one machine would
have made: every shard present once, all made alike, results back in dataset order.

Anything that does not fit is a ConfigError (exit 2) naming the shard folder and what
differs, raised before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from recallbench.core import ConfigError, Dataset, Run
from recallbench.core._validation import read_json, validate
from recallbench.runner._shard import SHARD_FILE, Shard, ShardManifest, shard_queries

_WALL_CLOCK = {"started_at", "finished_at", "ingest_seconds", "restarts"}
"""RunSpec fields a shard has of its own; joined (earliest start, latest finish, sums)."""


@dataclass(frozen=True, slots=True)
class ShardFolder:
    path: Path
    manifest: ShardManifest


def read_shards(folders: Sequence[Path]) -> list[ShardFolder]:
    """The shards in ``folders``, ordered by index: refused unless they are the N shards of
    one run (same command, datasets, systems, k, measures, N), each exactly once."""
    if not folders:
        raise ConfigError("give the shard folders to merge")
    shards = []
    for folder in folders:
        if not folder.is_dir():
            raise ConfigError(f"{folder}: no such folder")
        path = folder / SHARD_FILE
        if not path.is_file():
            raise ConfigError(
                f"{folder}: not a shard folder (no {SHARD_FILE}; write one with "
                "`recallbench run --shard I/N --out FOLDER`)"
            )
        shards.append(ShardFolder(folder, validate(ShardManifest, read_json(path), str(path))))
    first = shards[0]
    expected = first.manifest.agreement()
    for other in shards[1:]:
        for what, value in other.manifest.agreement().items():
            if value != expected[what]:
                raise ConfigError(
                    f"{other.path}: its {what} ({_shown(value)}) differs from that of "
                    f"{first.path} ({_shown(expected[what])}): not shards of one run"
                )
    count = first.manifest.shard.count
    seen: dict[int, Path] = {}
    for shard in shards:
        index = shard.manifest.shard.index
        if index in seen:
            raise ConfigError(
                f"{shard.path}: shard {index}/{count} again (already given as {seen[index]})"
            )
        seen[index] = shard.path
    missing = [str(index) for index in range(1, count + 1) if index not in seen]
    if missing:
        raise ConfigError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count} "
            f"missing: give all {count} shard folders"
        )
    return sorted(shards, key=lambda shard: shard.manifest.shard.index)


def _shown(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value) or "none"
    if isinstance(value, tuple):
        return " ".join(str(item) for item in value)
    return str(value)


def join_runs(
    dataset: Dataset, position: int, system: str, shards: Sequence[ShardFolder]
) -> tuple[Run, list[Path]]:
    """The run of ``system`` on the manifests' dataset number ``position`` (``dataset``,
    checked against its fingerprint by the caller), joined from every shard, and the run
    files read. Each shard must hold exactly its part of the split, in dataset order."""
    runs, paths = [], []
    for shard in shards:
        manifest = shard.manifest
        entry = manifest.datasets[position]
        path = shard.path / entry.folder / manifest.folders[system] / "run.json"
        run = validate(Run, read_json(path), str(path))
        part = [
            q.id for q in shard_queries(dataset, Shard(manifest.shard.index, manifest.shard.count))
        ]
        _check(run, path, dataset, system, manifest.k, part, entry.queries)
        runs.append(run)
        paths.append(path)
    return _joined(dataset, runs, paths), paths


def _check(
    run: Run,
    path: Path,
    dataset: Dataset,
    system: str,
    k: int,
    part: list[str],
    listed: list[str],
) -> None:
    spec = run.spec
    if spec.dataset is None or spec.dataset.sha256 != dataset.sha256:
        found = "none" if spec.dataset is None else spec.dataset.sha256[:12]
        raise ConfigError(
            f"{path}: made on dataset {found}, not {dataset.name} ({dataset.sha256[:12]})"
        )
    if spec.system != system or spec.k != k:
        raise ConfigError(f"{path}: a run of {spec.system} at k={spec.k}, not of {system} at k={k}")
    asked = [result.query_id for result in run.results]
    if asked != part or listed != part:
        raise ConfigError(
            f"{path}: its queries are not this shard's part of {dataset.name} "
            f"({len(asked)} results, {len(part)} queries in the part)"
        )


def _joined(dataset: Dataset, runs: Sequence[Run], paths: Sequence[Path]) -> Run:
    first = runs[0].spec
    shared = first.model_dump(exclude=_WALL_CLOCK)
    for run, path in zip(runs[1:], paths[1:], strict=True):
        theirs = run.spec.model_dump(exclude=_WALL_CLOCK)
        differing = [key for key in shared if shared[key] != theirs.get(key)]
        if differing:
            raise ConfigError(
                f"{path}: its {', '.join(differing)} differ{'s' if len(differing) == 1 else ''} "
                f"from {paths[0]}'s: the shards ran different systems or software"
            )
    results = {r.query_id: r for run in runs for r in run.results}
    repeats = {r.query_id: r for run in runs for r in run.repeats}
    order = [q.id for q in dataset.queries]
    starts = [run.spec.started_at for run in runs if run.spec.started_at is not None]
    ends = [run.spec.finished_at for run in runs if run.spec.finished_at is not None]
    ingest = [run.spec.ingest_seconds for run in runs if run.spec.ingest_seconds is not None]
    spec = first.model_copy(
        update={
            "started_at": min(starts) if starts else None,
            "finished_at": max(ends) if ends else None,
            "ingest_seconds": sum(ingest) if ingest else None,
            "restarts": sum(run.spec.restarts for run in runs),
        }
    )
    return Run(
        spec=spec,
        results=tuple(results[i] for i in order if i in results),
        repeats=tuple(repeats[i] for i in order if i in repeats),
    )
