"""What the shadow's candidate is given for the agent's calls (``--shadow PROFILE``):
which searches are sampled (:func:`sampled`), the candidate's arguments for the agent's
writes (:func:`write_calls`) and searches (:func:`search_arguments`), mapped between the
two profiles, and how the candidate's hits are read (:func:`mirrored_reader`).

Writes: with the same ingest tool and item template the arguments go as they came;
otherwise each item is read back through the primary's template (the strings that are
exactly ``{id}``, ``{text}``, ``{title}``) and written with the candidate's. Searches:
sampled by the sha256 of the query text, so the same query is always in or always out;
the candidate gets the primary's arguments (same tool and template) or its own template
filled with the query and ``k``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from recallbench.core._query_key import query_digest
from recallbench.online._hits import text_id
from recallbench.systems._answers import fill, select, text_of

if TYPE_CHECKING:
    from recallbench.systems._profile import Ingest, Profile
    from recallbench.systems._profile import Search as SearchSpec

DEFAULT_K = 10
"""``k`` for a candidate whose template needs it when the agent's search gave none."""
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][\w.]*)\}")


def sampled(query: str, percent: float) -> bool:
    """Whether a search of ``query`` is mirrored: the first 8 bytes of the sha256 of its
    words (:func:`recallbench.core._query_key.words`, the normalisation a test's unit of
    analysis uses), modulo a million, below ``percent`` * 10,000 (a pure function of the
    text: never re-drawn, and the same for "Kestrel decision" and "kestrel decision?")."""
    if percent >= 100:
        return True
    digest = query_digest(query)
    return int.from_bytes(digest[:8], "big") % 1_000_000 < percent * 10_000


def bindings(template: Any, value: Any) -> dict[str, Any]:
    """What the placeholders of an arguments template stood for in ``value`` (the inverse
    of ``fill`` for strings that are exactly one placeholder; a one-item list template
    such as ``["{text}"]`` binds the whole list, joined)."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        return {} if whole is None or value is None else {whole.group(1): value}
    found: dict[str, Any] = {}
    if isinstance(template, list) and isinstance(value, list):
        if len(template) == 1 and isinstance(template[0], str):
            return bindings(template[0], text_of(value)) if value else {}
        for part, item in zip(template, value, strict=False):
            found.update(bindings(part, item))
    elif isinstance(template, dict) and isinstance(value, dict):
        for key, part in template.items():
            found.update(bindings(part, value.get(key)))
    return found


def write_calls(primary: Ingest, candidate: Ingest, arguments: Mapping[str, Any]) -> list[Any]:
    """The candidate's ingest arguments for one of the agent's writes (none when nothing in
    it has a text)."""
    if (primary.tool, primary.item, primary.batch_field) == (
        candidate.tool,
        candidate.item,
        candidate.batch_field,
    ):
        return [dict(arguments)]  # the same kind of server: the agent's call as it was
    items = arguments.get(primary.batch_field) if primary.batch_field else [arguments]
    documents = []
    for item in items if isinstance(items, list) else []:
        found = bindings(primary.item, item)
        if found.get("text") is None:
            continue
        text = text_of(found["text"])
        values = {"title": "", **found, "text": text}
        values["id"] = str(found.get("id") or text_id(text))
        documents.append(fill(candidate.item, values))
    if not candidate.batch_field:
        return documents
    size = candidate.batch_size
    return [
        {candidate.batch_field: documents[at : at + size]} for at in range(0, len(documents), size)
    ]


def search_arguments(
    primary: SearchSpec, candidate: SearchSpec, arguments: Mapping[str, Any], query: str
) -> dict[str, Any]:
    """The candidate's arguments for the agent's search of ``query``."""
    if (primary.tool, primary.arguments) == (candidate.tool, candidate.arguments):
        return dict(arguments)
    k = bindings(primary.arguments, dict(arguments)).get("k")
    k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else DEFAULT_K
    if candidate.max_k is not None:
        k = min(k, candidate.max_k)
    filled: dict[str, Any] = fill(candidate.arguments, {"query": query, "k": k})
    return filled


def mirrored_reader(profile: Profile) -> Profile:
    """How the candidate's hits are read in shadow mode: by the id the mirrored writes gave
    them (:func:`write_calls` fills the candidate's ingest template with the primary's ids)
    when the candidate's ``[results].id`` is where its template puts ``{id}``, so that both
    lists name a memory alike; otherwise as the proxy reads that server (``[proxy].id``).
    agentrecall, for one, keeps the id given at ``metadata.doc_id`` while its proxy view
    uses its own row ids (an agent's memories carry no doc_id)."""
    id_path = profile.results.id
    if not id_path or profile.proxy.id in (None, id_path):
        return profile
    if select(profile.ingest.item, id_path) != "{id}":
        return profile
    return profile.model_copy(update={"proxy": profile.proxy.model_copy(update={"id": id_path})})
