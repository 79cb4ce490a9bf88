"""Quality gates: thresholds, rolling and committed baselines, regression verdicts."""

from recallbench.gates._baseline import (
    BASELINE_FORMAT,
    Baseline,
    BaselineFile,
    baseline_from_report,
    baseline_from_store,
    pooled_values,
    read_baseline,
    rolling_baseline,
    stored_run,
    write_baseline,
)
from recallbench.gates._checks import Check, Status
from recallbench.gates._choice import BaselineChoice, choose_baseline
from recallbench.gates._config import Config, Gates, LoadedConfig, baseline_path, load_config
from recallbench.gates._gate import GateResult, run_gate
from recallbench.gates._outputs import render_gate, render_gate_markdown, render_junit
from recallbench.gates._regression import relative_drop
from recallbench.gates._write_back import regression_note, write_back, write_back_target

__all__ = [
    "BASELINE_FORMAT",
    "Baseline",
    "BaselineChoice",
    "BaselineFile",
    "Check",
    "Config",
    "GateResult",
    "Gates",
    "LoadedConfig",
    "Status",
    "baseline_from_report",
    "baseline_from_store",
    "baseline_path",
    "choose_baseline",
    "load_config",
    "pooled_values",
    "read_baseline",
    "regression_note",
    "relative_drop",
    "render_gate",
    "render_gate_markdown",
    "render_junit",
    "rolling_baseline",
    "run_gate",
    "stored_run",
    "write_back",
    "write_back_target",
    "write_baseline",
]
