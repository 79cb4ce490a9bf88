"""Find a dataset by bundled name, by ``format:path``, or by path (format detected)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module, resources
from pathlib import Path

from recallbench.core import Dataset, UnknownNameError
from recallbench.datasets._beir import is_beir_folder, load_beir
from recallbench.datasets._json_v1 import load_json_dataset

DEFAULT_DATASET = "agent-memory-sample"

Loader = Callable[[Path], Dataset]


def _lazy(module: str, function: str, **options: str) -> Loader:
    """A loader imported when first used (``recallbench.datasets.<module>.<function>``)."""

    def load(path: Path) -> Dataset:
        loader = getattr(import_module(f"recallbench.datasets.{module}"), function)
        dataset: Dataset = loader(path, **options)
        return dataset

    return load


LOADERS: dict[str, Loader] = {
    "json": load_json_dataset,
    "beir": load_beir,
    "locomo": _lazy("_locomo", "load_locomo", granularity="turn"),
    "locomo-sessions": _lazy("_locomo", "load_locomo", granularity="session"),
    "longmemeval": _lazy("_longmemeval", "load_longmemeval", granularity="session"),
    "longmemeval-turns": _lazy("_longmemeval", "load_longmemeval", granularity="turn"),
    "longmemeval-all-turns": _lazy(
        "_longmemeval", "load_longmemeval", granularity="turn", turns="all"
    ),
    "madial": _lazy("_madial", "load_madial", language="en"),
    "madial-zh": _lazy("_madial", "load_madial", language="zh"),
    "smart": _lazy("_smart", "load_smart"),
    "trec": _lazy("_trec_collection", "load_trec_collection"),
}
"""Dataset formats by name, for ``FORMAT:PATH`` specs (third-party loaders import on use)."""


def bundled_datasets() -> list[str]:
    """Names of the datasets shipped in the package."""
    folder = resources.files("recallbench.datasets") / "data"
    return sorted(
        entry.name.removesuffix(".json")
        for entry in folder.iterdir()
        if entry.name.endswith(".json")
    )


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("recallbench.datasets") / "data" / f"{name}.json"))


def load_dataset(spec: str | Path = DEFAULT_DATASET) -> Dataset:
    """Load a dataset from a bundled name, ``json:PATH``, ``beir:PATH`` or a path.

    >>> load_dataset("agent-memory-sample").name
    'agent-memory-sample'
    """
    text = str(spec)
    if text in bundled_datasets():
        return load_json_dataset(bundled_path(text))
    prefix, sep, rest = text.partition(":")
    if sep and prefix in LOADERS:
        if not rest.strip():  # Path("") is ".", which would be read as the current folder
            raise UnknownNameError(f"dataset {text!r}: no path after {prefix}: ({prefix}:PATH)")
        return LOADERS[prefix](Path(rest))
    path = Path(text)
    if is_beir_folder(path):
        return load_beir(path)
    if path.is_dir():
        formats = ", ".join(LOADERS)
        raise UnknownNameError(
            f"not a dataset: {text} (a folder; expected a JSON file or a FORMAT:PATH, "
            f"FORMAT one of {formats})"
        )
    if path.exists() or path.suffix == ".json":
        return load_json_dataset(path)
    names = ", ".join(bundled_datasets())
    formats = ", ".join(f"{name}:PATH" for name in LOADERS)
    raise UnknownNameError(
        f"dataset {text!r}: no such file and no bundled dataset of that name "
        f"(bundled: {names}; or give {formats})"
    )
