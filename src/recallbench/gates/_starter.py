"""The starter files of ``recallbench init``: a ``recallbench.toml``, a small golden
dataset and a CI workflow that runs ``recallbench run`` and ``recallbench gate``.

Each file is checked as recallbench will read it (the configuration through
:class:`~recallbench.gates._config.Config`, the dataset through the dataset validation),
then all are written at once or none (:func:`~recallbench.core._files.atomic_write_texts`).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from recallbench.core import ConfigError
from recallbench.core._files import atomic_write_texts
from recallbench.gates._config import CONFIG_FILE, Config

DATASET_FILE = "golden.json"
WORKFLOW_FILE = ".github/workflows/recallbench.yml"

CONFIG_TEXT = f"""\
# recallbench's configuration: `recallbench run` and `recallbench gate` read it from the
# folder they run in (flags override it). Reference: the module doc of recallbench.gates._config.

datasets = ["{DATASET_FILE}"]     # your golden dataset (`recallbench datasets validate` it)
systems = ["builtin-hybrid"]      # the system under test; for an MCP memory server, write a
                                  # profile with `recallbench systems init -- COMMAND ...` and
                                  # name its file here ("my-memory.toml")
measures = ["ndcg@10", "mrr@10", "recall@10"]   # the first ranks a leaderboard
k = 10                            # results asked for per query

[gates]                           # `recallbench gate` fails (exit 1) below a blocking min
max_error_rate = 0.0              # no search may fail

[gates.measures."ndcg@10"]
min = 0.5                         # blocking
target = 0.8                      # below it the gate warns only

[gates.measures."recall@10"]
min = 0.6

[gates.regression]                # against the mean of the last accepted runs
window = 5                        # (`recallbench gate --accept` accepts a run)
drop = 0.15                       # a relative drop beyond 15% fails, when significant
"""

_DOCUMENTS = [
    ("mem-db", "The ledger service moved from MySQL to PostgreSQL in March 2026."),
    ("mem-freeze", "Deploys are frozen on Fridays after the billing outage."),
    ("mem-pr", "Priya asks for a test plan in every pull request description."),
    ("mem-oncall", "The on-call rotation changes every Monday at 09:00 UTC."),
    ("mem-secrets", "API keys live in the vault, never in environment files."),
    ("mem-retries", "Payment webhooks are retried five times with exponential backoff."),
]
_QUERIES = [
    ("q-database", "Which database does the ledger use?", {"mem-db": 3}),
    ("q-deploy", "Can I deploy on a Friday?", {"mem-freeze": 3}),
    ("q-review", "What should a pull request description contain?", {"mem-pr": 3}),
    ("q-secrets", "Where are the API keys kept?", {"mem-secrets": 3}),
    ("q-webhooks", "How often are payment webhooks retried?", {"mem-retries": 3}),
]


def starter_dataset() -> dict[str, object]:
    """A small golden dataset in recallbench's JSON format: replace its documents, queries
    and judgments (grades 0-3) with your own."""
    return {
        "format": "recallbench.dataset/v1",
        "name": "golden",
        "version": "1",
        "description": "A starter golden dataset written by `recallbench init`: replace it "
        "with memories and questions of your own, each question judged 0-3 per document.",
        "documents": [{"id": doc_id, "text": text} for doc_id, text in _DOCUMENTS],
        "queries": [{"id": query_id, "text": text} for query_id, text, _ in _QUERIES],
        "qrels": {query_id: judged for query_id, _, judged in _QUERIES},
    }


WORKFLOW_TEXT = """\
# Gate every pull request on retrieval quality (written by `recallbench init`).
# Thresholds: [gates] in recallbench.toml. The history store (one SQLite file) is kept
# between runs by actions/cache; every push to main that passes the gate is accepted into
# it (--accept), which gives the rolling baseline of [gates.regression].
name: retrieval quality

on:
  pull_request:
  push:
    branches: [main]

jobs:
  recallbench:
    runs-on: ubuntu-latest
    env:
      RECALLBENCH_STORE: sqlite:///${{ github.workspace }}/.recallbench/history.db
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: pip install recallbench
      - name: Restore the history store (rolling baseline)
        uses: actions/cache@v4
        with:
          path: .recallbench
          key: recallbench-history-${{ github.run_id }}
          restore-keys: recallbench-history-
      - name: Evaluate
        run: recallbench run --out out      # datasets, systems, measures: recallbench.toml
      - name: Gate
        run: >
          recallbench gate out --strict
          --junit out/gate.xml --summary-md out/gate.md
          ${{ github.event_name == 'push' && '--accept' || '' }}
      - name: Summary
        if: always()
        run: cat out/gate.md >> "$GITHUB_STEP_SUMMARY" || true
      - uses: actions/upload-artifact@v4
        if: always()
        with:
          name: recallbench
          path: out/
"""


def starter_files(folder: Path) -> dict[Path, str]:
    """The files ``recallbench init`` writes into ``folder``, path -> text, each checked."""
    from recallbench.datasets._json_v1 import validated_dataset

    Config.model_validate(tomllib.loads(CONFIG_TEXT))
    dataset = starter_dataset()
    validated_dataset(dataset, DATASET_FILE)
    return {
        folder / CONFIG_FILE: CONFIG_TEXT,
        folder / DATASET_FILE: json.dumps(dataset, indent=2, ensure_ascii=False) + "\n",
        folder / WORKFLOW_FILE: WORKFLOW_TEXT,
    }


def write_starter(folder: Path, force: bool = False) -> list[Path]:
    """Write the starter files into ``folder``, all or none. ConfigError (exit 2) naming
    every file that exists already, unless ``force``."""
    files = starter_files(folder)
    if not force:
        existing = [path for path in files if path.exists()]
        if existing:
            names = ", ".join(str(path) for path in existing)
            raise ConfigError(f"already there, not replaced: {names} (give --force to replace)")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder")
    atomic_write_texts(files)
    return list(files)
