"""JSON Schema files for recallbench's formats, generated from the models.

``python -m recallbench.schemas`` rewrites them; a test fails when they are stale.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from recallbench.compare import COMPARISON_FORMAT, Comparison
from recallbench.core import DATASET_FORMAT, RUN_FORMAT, Dataset, Run
from recallbench.extraction import (
    GROUND_TRUTH_FORMAT,
    OUTPUT_FORMAT,
    ExtractionGroundTruth,
    ExtractionOutput,
)
from recallbench.report import REPORT_FORMAT, Report

FORMATS: dict[str, type[BaseModel]] = {
    "dataset.v1": Dataset,
    "run.v1": Run,
    "report.v1": Report,
    "comparison.v2": Comparison,
    "extraction.v1": ExtractionGroundTruth,
    "extraction-output.v1": ExtractionOutput,
}
"""Schema file stem -> the model it describes."""

_IDS = {
    "dataset.v1": DATASET_FORMAT,
    "run.v1": RUN_FORMAT,
    "report.v1": REPORT_FORMAT,
    "comparison.v2": COMPARISON_FORMAT,
    "extraction.v1": GROUND_TRUTH_FORMAT,
    "extraction-output.v1": OUTPUT_FORMAT,
}


def generate(stem: str) -> dict[str, Any]:
    """The JSON Schema of a format, as generated from its model."""
    schema = FORMATS[stem].model_json_schema(mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": _IDS[stem], **schema}


def render(stem: str) -> str:
    return json.dumps(generate(stem), indent=2, ensure_ascii=False) + "\n"


def schema_path(stem: str) -> Path:
    return Path(str(resources.files("recallbench.schemas") / f"{stem}.json"))


def load(stem: str) -> dict[str, Any]:
    """The shipped schema of a format."""
    value: dict[str, Any] = json.loads(schema_path(stem).read_text(encoding="utf-8"))
    return value
