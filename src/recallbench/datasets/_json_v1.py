"""The recallbench JSON dataset format, `recallbench.dataset/v1`."""

from __future__ import annotations

import json
import re
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from recallbench.core import (
    DATASET_FORMAT,
    TIERS,
    Dataset,
    DatasetError,
    Problem,
)
from recallbench.core._dataset import MAX_GRADE
from recallbench.core._validation import json_path, read_json, validate


def load_json_dataset(path: Path) -> Dataset:
    """Read and validate a dataset file, reporting every problem with its JSON path."""
    data = read_json(path)
    if isinstance(data, dict) and data.get("format", DATASET_FORMAT) != DATASET_FORMAT:
        found = json.dumps(data.get("format"))
        raise DatasetError(
            str(path), [Problem("format", f"expected {DATASET_FORMAT!r}, got {found}")]
        )
    return validated_dataset(data, str(path))


def validated_dataset(data: Any, source: str, origins: Mapping[str, str] | None = None) -> Dataset:
    """The one validation of a dataset, whether read from our JSON or built by a loader:
    structure and types (pydantic) and every cross-reference, all problems in one error.

    ``origins`` (document or query id -> where it came from in a third-party source)
    prefixes a problem about that document or query with its source location."""
    problems = list(cross_reference_problems(data))
    try:
        return validate(Dataset, data, source, problems)
    except DatasetError as error:
        if not origins:
            raise
        raise DatasetError(source, [_traced(p, data, origins) for p in error.problems]) from None


def checked_dataset(
    dataset: Dataset,
    source: str,
    problems: Sequence[Problem] = (),
    origins: Mapping[str, str] | None = None,
) -> Dataset:
    """What every loader of a third-party format returns: its own located ``problems``
    raised if there are any, else the dataset it built, through :func:`validated_dataset`
    (loaders build models without validation for speed; nothing leaves unvalidated)."""
    if problems:
        raise DatasetError(source, problems)
    return validated_dataset(dataset.model_dump(mode="json"), source, origins)


_ITEM = re.compile(r"^(documents|queries)\[(\d+)\]")


def _traced(problem: Problem, data: Any, origins: Mapping[str, str]) -> Problem:
    """``problem`` located in the source the dataset was loaded from, when known."""
    item_id: Any = None
    if match := _ITEM.match(problem.location):
        items = data.get(match.group(1)) if isinstance(data, dict) else None
        index = int(match.group(2))
        if isinstance(items, list) and index < len(items) and isinstance(items[index], dict):
            item_id = items[index].get("id")
    elif problem.location.startswith("qrels"):
        item_id = problem.location.removeprefix("qrels.").split(".")[0]
    origin = origins.get(item_id) if isinstance(item_id, str) else None
    if origin is None:
        return problem
    return Problem(origin, f"{problem.message} (as {problem.location})")


def cross_reference_problems(data: Any) -> Iterator[Problem]:
    """Problems pydantic cannot see: no documents or no queries, duplicate ids, unknown ids
    in qrels, grades above 3, unknown tiers, empty texts.

    Works on raw JSON, skipping parts that are structurally wrong (pydantic reports those).
    """
    if not isinstance(data, dict):
        return
    yield from _empty_lists(data)
    doc_ids = yield from _unique_ids(data.get("documents"), "documents")
    query_ids = yield from _unique_ids(data.get("queries"), "queries")
    yield from _empty_texts(data.get("documents"), "documents")
    yield from _empty_texts(data.get("queries"), "queries")
    yield from _tier_problems(data.get("documents"))
    yield from _group_problems(data, doc_ids, query_ids)
    unit_of = yield from _unit_problems(data, doc_ids)
    qrels = data.get("qrels")
    if not isinstance(qrels, dict):
        return
    yield from _label_source_problems(data.get("label_sources"), qrels)
    for query_id, judged in qrels.items():
        if query_ids is not None and query_id not in query_ids:
            yield Problem(json_path(["qrels", query_id]), f"unknown query {json.dumps(query_id)}")
        if not isinstance(judged, dict) or doc_ids is None:
            continue
        members = unit_of.get(query_id)
        for doc_id, grade in judged.items():
            if isinstance(grade, int) and grade > MAX_GRADE:
                yield Problem(json_path(["qrels", query_id, doc_id]), _GRADE_ABOVE.format(grade))
            if doc_id not in doc_ids:
                location = json_path(["qrels", query_id, doc_id])
                yield Problem(location, f"unknown document {json.dumps(doc_id)}")
            elif members is not None and doc_id not in members:
                location = json_path(["qrels", query_id, doc_id])
                yield Problem(
                    location,
                    f"document {json.dumps(doc_id)} is not in the query's unit, "
                    "so no system can return it",
                )


def _label_source_problems(sources: Any, qrels: dict[str, Any]) -> Iterator[Problem]:
    """Every label source must name a judged pair: a source of nothing is a stale edit."""
    if not isinstance(sources, dict):
        return
    for query_id, by_doc in sources.items():
        if not isinstance(by_doc, dict):
            continue
        judged = qrels.get(query_id)
        for doc_id in by_doc:
            if not isinstance(judged, dict) or doc_id not in judged:
                yield Problem(
                    json_path(["label_sources", query_id, doc_id]),
                    "no grade in qrels for this query and document: a label source "
                    "describes a judged pair",
                )


_GRADE_ABOVE = (
    "grade {} is above "
    + str(MAX_GRADE)
    + ": grades run from 0 (not relevant) to 3 (highly relevant); a negative grade means "
    "judged non-relevant"
)

_EMPTY = {
    "documents": "the dataset has no documents: there is nothing to search",
    "queries": "the dataset has no queries: there is nothing to evaluate",
}


def _empty_lists(data: dict[str, Any]) -> Iterator[Problem]:
    for field, message in _EMPTY.items():
        items = data.get(field)
        if isinstance(items, list | tuple) and not items:
            yield Problem(field, message)


def _group_problems(
    data: dict[str, Any], doc_ids: set[str] | None, query_ids: set[str] | None
) -> Iterator[Problem]:
    """Chains and equivalence classes name known documents; a document is in one class at
    most; a query's chain exists."""
    class_of: dict[str, str] = {}
    for field in ("chains", "equivalence"):
        groups = data.get(field)
        if not isinstance(groups, dict):
            continue
        for group, members in groups.items():
            if not isinstance(members, list):
                continue
            for index, doc_id in enumerate(members):
                if not isinstance(doc_id, str):
                    continue
                where = json_path([field, group, index])
                if doc_ids is not None and doc_id not in doc_ids:
                    yield Problem(where, f"unknown document {json.dumps(doc_id)}")
                if field == "equivalence":
                    if doc_id in class_of and class_of[doc_id] != group:
                        first = json.dumps(class_of[doc_id])
                        yield Problem(where, f"{json.dumps(doc_id)} is already in class {first}")
                    class_of[doc_id] = group
    chains = data.get("chains")
    if not isinstance(chains, dict):
        chains = {}
    queries = data.get("queries")
    if not isinstance(queries, list) or query_ids is None:
        return
    for index, query in enumerate(queries):
        chain = query.get("chain") if isinstance(query, dict) else None
        if isinstance(chain, str) and chain not in chains:
            yield Problem(
                json_path(["queries", index, "chain"]), f"unknown chain {json.dumps(chain)}"
            )


def _unit_problems(
    data: dict[str, Any], doc_ids: set[str] | None
) -> Generator[Problem, None, dict[str, set[str]]]:
    """Units name known documents; with units, every query names a known unit. Returns
    query id -> the documents of its unit."""
    units = data.get("units")
    queries = data.get("queries")
    if not isinstance(units, dict) or not units or not isinstance(queries, list):
        return {}
    members: dict[str, set[str]] = {}
    for unit, doc_list in units.items():
        if not isinstance(doc_list, list):
            continue
        members[unit] = set()
        for index, doc_id in enumerate(doc_list):
            if doc_ids is not None and isinstance(doc_id, str) and doc_id not in doc_ids:
                yield Problem(
                    json_path(["units", unit, index]), f"unknown document {json.dumps(doc_id)}"
                )
            members[unit].add(doc_id)
    unit_of: dict[str, set[str]] = {}
    for index, query in enumerate(queries):
        if not isinstance(query, dict) or not isinstance(query.get("id"), str):
            continue
        unit = query.get("unit")
        if unit is None:
            yield Problem(
                json_path(["queries", index]), 'the dataset has units: name one in "unit"'
            )
        elif isinstance(unit, str) and unit not in members:
            yield Problem(json_path(["queries", index, "unit"]), f"unknown unit {json.dumps(unit)}")
        elif isinstance(unit, str):
            unit_of[query["id"]] = members[unit]
    return unit_of


def _unique_ids(items: Any, field: str) -> Generator[Problem, None, set[str] | None]:
    """Yield duplicate-id problems; return the set of ids (None when not a list)."""
    if not isinstance(items, list):
        return None
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            continue
        item_id = item["id"]
        if item_id in first_seen:
            where = json_path([field, first_seen[item_id]])
            message = f"duplicate id {json.dumps(item_id)} (first at {where})"
            yield Problem(json_path([field, index, "id"]), message)
        else:
            first_seen[item_id] = index
    return set(first_seen)


def _empty_texts(items: Any, field: str) -> Iterator[Problem]:
    """A document or query whose text is empty or blank: nothing a system could match."""
    if not isinstance(items, list):
        return
    for index, item in enumerate(items):
        text = item.get("text") if isinstance(item, dict) else None
        if isinstance(text, str) and not text.strip():
            yield Problem(json_path([field, index, "text"]), "text is empty")


def _tier_problems(documents: Any) -> Iterator[Problem]:
    if not isinstance(documents, list):
        return
    for index, document in enumerate(documents):
        metadata = document.get("metadata") if isinstance(document, dict) else None
        if isinstance(metadata, dict) and "tier" in metadata and metadata["tier"] not in TIERS:
            found = json.dumps(metadata["tier"])
            yield Problem(
                json_path(["documents", index, "metadata", "tier"]),
                f"tier must be one of {', '.join(TIERS)}; got {found}",
            )


def dump_json_dataset(dataset: Dataset) -> str:
    """The dataset as pretty-printed `recallbench.dataset/v1` JSON."""
    return dataset.model_dump_json(indent=2, exclude_defaults=False) + "\n"
