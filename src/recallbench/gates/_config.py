"""Project configuration: ``recallbench.toml`` or ``[tool.recallbench]`` in pyproject.toml.

Datasets, systems and measures that commands use when no flag says otherwise, and the
``[gates]`` that ``recallbench gate`` checks. Unknown keys and bad values are errors naming
the key and the file (exit 2).

    datasets = ["agent-memory-sample"]
    systems = ["builtin-hybrid"]
    measures = ["mrr@10", "ndcg@10", "recall@10"]

    [gates]
    max_error_rate = 0.0
    min_stability = 0.95

    [gates.measures."mrr@10"]
    min = 0.6          # blocking: below it the gate fails
    target = 0.75      # non-blocking: below it the gate warns

    [gates.measures."ndcg@10"]
    min = 0.7
    target = 0.85
    blocking = false   # below min the gate warns only

    [gates.categories.causal."recall@10"]
    min = 0.5

    [gates.latency]    # milliseconds
    p95 = 200

    [gates.regression]
    window = 5         # rolling baseline: mean of the last 5 accepted runs
    drop = 0.15        # relative drop that fails; exact = 0.10, judge = 0.20 by kind

    [gates.extraction] # `recallbench extract` reports (recallbench.gates._extraction)
    rule = "jaccard>=0.5"
    [gates.extraction.measures.event_f1]
    min = 0.4

    [gates.cost]       # USD spent by the judge on the labels a run's dataset carries
    max_usd = 2.0
    max_usd_per_query = 0.02

    [judge]            # the judge model (see recallbench.judges._config)
    base_url = "http://localhost:11434/v1"
    model = "qwen2.5:7b-instruct"
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from recallbench.core import ConfigError, DatasetError, UnknownMeasureError
from recallbench.core._model import Settings
from recallbench.core._validation import problems_of
from recallbench.judges._config import JudgeConfig

CONFIG_FILE = "recallbench.toml"
PYPROJECT = "pyproject.toml"


def _measure_name(name: str) -> str:
    """The canonical name (``nDCG@10`` -> ``ndcg@10``); unknown names are errors."""
    from recallbench.measures import parse_measure

    try:
        return str(parse_measure(name))
    except UnknownMeasureError as error:
        raise ValueError(str(error)) from None


class Threshold(Settings):
    """Bounds on a mean: ``min`` / ``max`` block (unless ``blocking = false``), ``target``
    warns; ``target`` is met at or above it, or at or below it for a lower-is-better measure."""

    min: float | None = None
    max: float | None = None
    target: float | None = None
    blocking: bool = True
    kind: Literal["graded", "exact", "judge"] | None = None
    """The kind of evaluation for the regression threshold (default: the measure's own)."""

    @model_validator(mode="after")
    def _ordered(self) -> Threshold:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min} is above max {self.max}")
        return self


class Latency(Settings):
    """Latency SLOs in milliseconds over the run's queries."""

    p50: float | None = Field(default=None, gt=0)
    p95: float | None = Field(default=None, gt=0)
    p99: float | None = Field(default=None, gt=0)
    blocking: bool = True


class Regression(Settings):
    """The verdict against a baseline: a relative drop beyond the threshold of the measure's
    kind fails when the one-sided paired test against the baseline's per-query values says
    it is not noise (see :mod:`recallbench.gates._regression`)."""

    window: int = Field(default=5, ge=1)
    """Accepted runs whose mean is the rolling baseline."""
    drop: float = Field(default=0.15, gt=0, lt=1)
    """Relative drop allowed for graded measures (nDCG, MRR, recall, ...)."""
    exact: float = Field(default=0.10, gt=0, lt=1)
    """Relative drop allowed for exact-match checks (hit@k, recall_all@k, ...)."""
    judge: float = Field(default=0.20, gt=0, lt=1)
    """Relative drop allowed for judge-based scores."""
    significance: bool = True
    """Fail a drop only when the one-sided paired randomisation test against the baseline's
    per-query values (the per-query mean of the window's runs) is significant at ``alpha``;
    a drop that may be noise warns, and one on fewer differing queries than the test needs
    to reach ``alpha`` (5 at 0.05) warns that it cannot be judged."""
    alpha: float = Field(default=0.05, gt=0, lt=1)
    resamples: int = Field(default=10_000, ge=1_000)
    seed: int = 0


class Cost(Settings):
    """Bounds on what the judge spent on the labels a run was measured with (the
    ``[judge]`` prices); blocking unless ``blocking = false``."""

    max_usd: float | None = Field(default=None, ge=0)
    max_usd_per_query: float | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, ge=0)
    """Tokens in and out together."""
    blocking: bool = True


Statistic = Literal["macro", "micro", "lower"]


class ExtractionGates(Settings):
    """``[gates.extraction]``: thresholds on an extraction report's measures."""

    rule: str | None = None
    """The matching rule whose scores are checked (its canonical label, e.g. ``exact``)."""
    statistic: Statistic = "macro"
    measures: dict[str, Threshold] = Field(default_factory=dict)

    @field_validator("measures")
    @classmethod
    def _known(cls, value: dict[str, Threshold]) -> dict[str, Threshold]:
        from recallbench.extraction import MEASURES

        unknown = sorted(set(value) - set(MEASURES))
        if unknown:
            raise ValueError(
                f"unknown extraction measure {', '.join(unknown)} (known: {', '.join(MEASURES)})"
            )
        return value

    @field_validator("rule")
    @classmethod
    def _canonical_rule(cls, value: str | None) -> str | None:
        from recallbench.extraction import MatchRule

        if value is None:
            return None
        try:
            return MatchRule.parse(value).label
        except ConfigError as error:  # located by pydantic at gates.extraction.rule
            raise ValueError(str(error)) from None


class Gates(Settings):
    measures: dict[str, Threshold] = Field(default_factory=dict)
    categories: dict[str, dict[str, Threshold]] = Field(default_factory=dict)
    """Category -> measure -> thresholds on the category's mean."""
    min_recall_measure: str = "recall@10"
    """The per-query measure that a query's ``min_recall`` (in the dataset) bounds."""
    latency: Latency = Field(default_factory=Latency)
    max_error_rate: float | None = Field(default=None, ge=0, le=1)
    """Largest share of queries whose search may fail."""
    min_stability: float | None = Field(default=None, ge=0, le=1)
    """Least share of queries with the same ranking on every repetition (run --repeat)."""
    baseline: str | None = None
    """A committed baseline file (``recallbench baseline accept``), relative to the config."""
    regression: Regression = Field(default_factory=Regression)
    cost: Cost = Field(default_factory=Cost)
    extraction: ExtractionGates = Field(default_factory=lambda: ExtractionGates())
    """Thresholds on `recallbench extract` reports (see :mod:`recallbench.gates._extraction`)."""

    @field_validator("measures", mode="before")
    @classmethod
    def _canonical_measures(cls, value: Any) -> Any:
        return _canonical_keys(value)

    @field_validator("categories", mode="before")
    @classmethod
    def _canonical_category_measures(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {name: _canonical_keys(measures) for name, measures in value.items()}

    @field_validator("min_recall_measure")
    @classmethod
    def _known_measure(cls, value: str) -> str:
        return _measure_name(value)


def _canonical_keys(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {_measure_name(str(name)): threshold for name, threshold in value.items()}


class Config(Settings):
    """The whole configuration (all keys optional)."""

    datasets: list[str] = Field(default_factory=list)
    systems: list[str] = Field(default_factory=list)
    measures: list[str] = Field(default_factory=list)
    k: int | None = Field(default=None, ge=1)
    gates: Gates = Field(default_factory=Gates)
    judge: JudgeConfig | None = None
    """The judge model of `recallbench judge` and of `recallbench qa`'s verdicts."""
    reader: JudgeConfig | None = None
    """The answer model of `recallbench qa` (default: the judge's model)."""

    @field_validator("measures")
    @classmethod
    def _known_measures(cls, value: list[str]) -> list[str]:
        return [_measure_name(name) for name in value]


class LoadedConfig(Settings):
    config: Config
    path: Path | None
    """Where it was read from; None when there is no configuration."""


def find_config(folder: Path) -> Path | None:
    """``recallbench.toml`` in ``folder``, else a pyproject.toml with ``[tool.recallbench]``."""
    own = folder / CONFIG_FILE
    if own.is_file():
        return own
    pyproject = folder / PYPROJECT
    if pyproject.is_file() and "recallbench" in _read(pyproject).get("tool", {}):
        return pyproject
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: configuration file not found") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def load_config(path: Path | None = None, folder: Path | None = None) -> LoadedConfig:
    """Read ``path``, or the configuration found in ``folder`` (default: the current one);
    no file found gives the empty configuration."""
    if path is None:
        path = find_config(folder or Path.cwd())
        if path is None:
            return LoadedConfig(config=Config(), path=None)
    data = _read(path)
    prefix: tuple[str, ...] = ()
    if path.name == PYPROJECT:
        data = data.get("tool", {}).get("recallbench")
        prefix = ("tool", "recallbench")
        if data is None:
            raise ConfigError(f"{path}: no [tool.recallbench] table")
    try:
        config = Config.model_validate(data)
    except ValidationError as error:
        raise DatasetError(str(path), problems_of(error, prefix)) from None
    return LoadedConfig(config=config, path=path)


def baseline_path(loaded: LoadedConfig) -> Path | None:
    """The committed baseline file the configuration names, relative to its folder."""
    name = loaded.config.gates.baseline
    if name is None:
        return None
    path = Path(name)
    if not path.is_absolute() and loaded.path is not None:
        path = loaded.path.parent / path
    return path


__all__ = [
    "Config",
    "Cost",
    "Gates",
    "Latency",
    "LoadedConfig",
    "Regression",
    "Threshold",
    "baseline_path",
    "find_config",
    "load_config",
]
