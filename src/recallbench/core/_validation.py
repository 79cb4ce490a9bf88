"""Turn malformed input into a complete list of located problems.

Pydantic checks structure and types; the dataset's cross-references (duplicate ids, unknown
documents in judgments) are checked on the raw JSON so that all problems are reported in
one pass, whatever else is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from recallbench.core._errors import DatasetError, Problem

ModelT = TypeVar("ModelT", bound=BaseModel)

_PLAIN_KEY = re.compile(r"^[A-Za-z_][\w\-]*$")


def json_path(location: Sequence[int | str]) -> str:
    """Render a location as a JSON path: ``queries[12].id``, ``qrels.q3.d2``."""
    out = ""
    for part in location:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "string_type": "a string",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def _message(error: ErrorDetails) -> str:
    kind = error["type"]
    location = error["loc"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "value_error":  # a model's own check: its message says it all
        return str(error.get("ctx", {}).get("error", error["msg"]))
    if kind in _EXPECTED:
        is_grade = len(location) == 3 and location[0] == "qrels"
        return (
            f"{'grade ' if is_grade else ''}must be {_EXPECTED[kind]}, got {_shown(error['input'])}"
        )
    return f"{error['msg'][0].lower()}{error['msg'][1:]}, got {_shown(error['input'])}"


def problems_of(error: ValidationError, prefix: Sequence[int | str] = ()) -> list[Problem]:
    """Every pydantic error as a located problem."""
    return [
        Problem(json_path([*prefix, *item["loc"]]), _message(item))
        for item in error.errors(include_url=False)
    ]


def read_json(path: Path) -> Any:
    """Parse a JSON file; syntax errors are reported as ``file:line:column``."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DatasetError(str(path), [Problem("", "file not found")]) from None
    except OSError as exc:  # a folder, no permission: the reason, located at the path
        reason = exc.strerror or type(exc).__name__
        raise DatasetError(str(path), [Problem("", f"cannot read it: {reason}")]) from None
    except UnicodeDecodeError as exc:
        raise DatasetError(str(path), [Problem("", f"not UTF-8 text ({exc.reason})")]) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"{path}:{exc.lineno}:{exc.colno}"
        raise DatasetError(str(path), [Problem(where, f"invalid JSON: {exc.msg}")]) from None


def validate(model: type[ModelT], data: Any, source: str, extra: Sequence[Problem] = ()) -> ModelT:
    """Validate ``data`` as ``model``; raise one error listing this and ``extra``'s problems."""
    problems = list(extra)
    try:
        value = model.model_validate(data)
    except ValidationError as exc:
        problems = problems_of(exc) + problems
        raise DatasetError(source, problems) from None
    if problems:
        raise DatasetError(source, problems)
    return value
