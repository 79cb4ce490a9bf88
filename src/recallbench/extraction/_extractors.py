"""Systems under test for the write path: extractors and write deciders, named by a spec.

An **extractor** is any object with a ``name`` and ``extract(documents)`` returning a
``recallbench.extraction-output/v1`` value (:class:`Extractor`); a **decider** answers
``decide(cases)`` with an ADD / UPDATE / DELETE / NOOP :class:`Decision` per case id
(:class:`Decider`). Specs, as for search systems:

- ``baseline``: the built-in deterministic extractor or decider (no model);
- ``llm``: the judge model of ``[judge]`` through the versioned ``extract`` / ``decide``
  prompts (:mod:`recallbench.extraction._llm`);
- ``python:MODULE:NAME`` or ``python:path/file.py:NAME``: a callable given one document
  as a dict ``{id, text, title, metadata}`` that returns the extracted document
  (``{events, entities, observations}``, its ``id`` optional) or a one-document
  ``recallbench.extraction-output/v1`` object; or an object (or a class, instantiated
  with no arguments) with ``extract(documents)``, given the :class:`GoldDocument` values.
  A decider callable is given ``{existing: [{id, content}], incoming}`` and returns
  ``{action, target}``;
- ``command:CMD ARGS``: the command is run **once per document** (once per decision
  case), with that document (case) as JSON on standard input, the same dicts as the
  callable's; it prints the same answers as JSON on standard output and exits 0. Once per
  document, so that a timeout, a crash or a bad answer is located at its document, and a
  command keeps no state between documents (each extraction stands on its own);
- ``mcp:PROFILE``: an MCP server that extracts on ingest, through its profile's
  ``[extract]`` table (:mod:`recallbench.extraction._mcp_extractor`, loaded on use).

What a system returns is validated like a file: every problem located (document, JSON
path) in one message. A system that raises, exits non-zero, hangs past the timeout or
answers off the format has failed: :class:`~recallbench.runner.SystemFailedError`
(exit 3), as for a failed search run. A spec that cannot be loaded is a ConfigError
(exit 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import shlex
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

from recallbench.core import ConfigError, DatasetError
from recallbench.core._validation import validate
from recallbench.extraction._baseline import BaselineExtractor
from recallbench.extraction._decisions import Decision, DecisionCase, decide, target_problem
from recallbench.extraction._formats import (
    OUTPUT_FORMAT,
    ExtractedDocument,
    ExtractionOutput,
    GoldDocument,
    validated_output,
)
from recallbench.systems._python import importable_here

if TYPE_CHECKING:
    from recallbench.judges._setup import JudgeSetup

TIMEOUT: Final = 60.0
"""Seconds a command may take for one document (one decision case), by default."""
T = TypeVar("T")

SHOWN: Final = 200
"""Characters of a bad answer or of standard error quoted in an error."""

Ask = Callable[[Mapping[str, Any], str], Any]
"""One call of a python: or command: system: (JSON payload, where, for errors) -> answer."""


@runtime_checkable
class Extractor(Protocol):
    """What ``recallbench extract`` drives: a name for reports and one call over the
    corpus (run to completion: an asynchronous system runs its own event loop)."""

    name: str

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput: ...


@runtime_checkable
class Decider(Protocol):
    """What ``recallbench decisions`` drives: a name and a decision per case id. A case
    left out is scored as unanswered (``MISSING``)."""

    name: str

    def decide(self, cases: Sequence[DecisionCase]) -> Mapping[str, Decision]: ...


def _system_failed(message: str) -> Exception:
    from recallbench.runner import SystemFailedError

    return SystemFailedError(message)


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "...")


# ---------------------------------------------------------------- reading answers


def document_payload(document: GoldDocument) -> dict[str, Any]:
    """What a python: or command: extractor is given: the document without its gold."""
    return document.model_dump(mode="json", include={"id", "text", "title", "metadata"})


def case_payload(case: DecisionCase) -> dict[str, Any]:
    """What a decider is given: the stored memories and the incoming one, no answer."""
    existing = [{"id": memory.id, "content": memory.content} for memory in case.existing]
    return {"existing": existing, "incoming": case.incoming}


def _as_data(answer: Any) -> Any:
    return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer


def extracted_document(answer: Any, document_id: str, source: str) -> ExtractedDocument:
    """A system's answer for one document as an :class:`ExtractedDocument`: an object with
    events, entities and observations (``id`` optional, else the document's), or a
    ``recallbench.extraction-output/v1`` object holding that one document. Anything else
    fails the system, every problem located under ``source``."""
    data = _as_data(answer)
    if isinstance(data, dict) and data.get("format") == OUTPUT_FORMAT:
        output = _validated(lambda: validated_output(data, source))
        ids = [document.id for document in output.documents]
        if ids != [document_id]:
            raise _system_failed(
                f"{source}: the output must hold document {document_id!r} only, "
                f"it holds {ids or 'none'}"
            )
        return output.documents[0]
    if not isinstance(data, dict):
        raise _system_failed(
            f"{source}: expected an object with events, entities and observations, "
            f"got {type(data).__name__} {_shown(json.dumps(data, default=str))}"
        )
    if data.get("id", document_id) != document_id:
        raise _system_failed(
            f"{source}: id: the answer is for {data['id']!r}, not for {document_id!r}"
        )
    return _validated(lambda: validate(ExtractedDocument, {**data, "id": document_id}, source))


def checked_decision(answer: Any, case: DecisionCase, source: str) -> Decision:
    """A system's answer for one case as a :class:`Decision`, its target checked."""
    data = _as_data(answer)
    if not isinstance(data, dict):
        raise _system_failed(
            f"{source}: expected an object {{action, target}}, got {type(data).__name__} "
            f"{_shown(json.dumps(data, default=str))}"
        )
    decision = _validated(lambda: validate(Decision, data, source))
    problem = target_problem(decision, [memory.id for memory in case.existing])
    if problem is not None:
        raise _system_failed(f"{source}: target: {problem}")
    return decision


def _validated(check: Callable[[], T]) -> T:
    """``check()``, a located DatasetError turned into the system's failure (the system
    under test answered off the format: it failed, the user's input is not at fault)."""
    try:
        return check()
    except DatasetError as error:
        raise _system_failed(str(error)) from None


# ---------------------------------------------------------------- python: and command:


def load_python(target: str, option: str) -> Any:
    """The object ``MODULE:NAME`` or ``path/file.py:NAME`` names; ConfigError naming the
    option when it cannot be loaded."""
    where, colon, attribute = target.rpartition(":")
    spec = f"{option} python:{target}"
    if not colon or not where or not attribute.isidentifier():
        raise ConfigError(f"{spec}: expected python:MODULE:NAME or python:FILE.py:NAME")
    try:
        module = _module_file(where) if where.endswith(".py") or "/" in where else None
        if module is None:
            importable_here()  # as for python: systems, no PYTHONPATH=. needed
            module = importlib.import_module(where)
    except ConfigError as error:
        raise ConfigError(f"{spec}: {error}") from None
    except Exception as error:  # the user's module failed to import: say how, exit 2
        raise ConfigError(f"{spec}: cannot load it ({type(error).__name__}: {error})") from None
    found = getattr(module, attribute, None)
    if found is None:
        raise ConfigError(f"{spec}: {where} has no {attribute!r}")
    if not callable(found) and not hasattr(found, "extract"):
        raise ConfigError(f"{spec}: {attribute!r} is not callable")
    return found


def _module_file(path_text: str) -> Any:
    path = Path(path_text)
    if not path.is_file():
        raise ConfigError(f"{path}: no such file")
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"_recallbench_user_{digest}", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def python_ask(name: str, function: Callable[..., Any]) -> Ask:
    """Call ``function(payload)`` (awaited when it is a coroutine); an exception it raises
    fails the system, located at the document or case."""

    def ask(payload: Mapping[str, Any], where: str) -> Any:
        try:
            answer = function(dict(payload))
            if inspect.isawaitable(answer):
                answer = asyncio.run(_awaited(answer))
        except Exception as error:
            raise _system_failed(
                f"{name}: {where}: raised {type(error).__name__}: {error}"
            ) from None
        return answer

    return ask


async def _awaited(value: Any) -> Any:
    return await value


def command_ask(name: str, command: str, timeout: float) -> Ask:
    """Run ``command`` with ``payload`` as JSON on its input and read one JSON value from
    its output. It runs in its own process group, killed whole on a timeout (a shell's
    children too, which would otherwise hold the output open)."""
    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise ConfigError(f"{name}: cannot split the command ({error})") from None
    if not argv:
        raise ConfigError(f"{name}: no command given (command:CMD ARGS)")

    def ask(payload: Mapping[str, Any], where: str) -> Any:
        out, err, code = _run(argv, json.dumps(payload).encode(), timeout, f"{name}: {where}")
        if code != 0:
            tail = f"; stderr: {_shown(err)}" if err.strip() else ""
            raise _system_failed(f"{name}: {where}: exited {code}{tail}")
        try:
            return json.loads(out)
        except json.JSONDecodeError as error:
            raise _system_failed(
                f"{name}: {where}: its output is not JSON ({error.msg} at line {error.lineno} "
                f"column {error.colno}): {_shown(out)}"
            ) from None

    return ask


def _run(argv: list[str], payload: bytes, timeout: float, where: str) -> tuple[str, str, int]:
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        raise ConfigError(
            f"{where}: cannot start {argv[0]!r} ({error.strerror or error})"
        ) from None
    with process:
        try:
            out, err = process.communicate(payload, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise _system_failed(
                f"{where}: no answer within {timeout:g} s; the command was stopped"
            ) from None
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), process.returncode


# ---------------------------------------------------------------- extractors


class AskingExtractor:
    """An extractor asking a python: callable or a command once per document."""

    def __init__(self, name: str, ask: Ask, kind: str) -> None:
        self.name = name
        self._ask = ask
        self._kind = kind

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput:
        """Every document's extraction, each answer validated as it comes."""
        extracted = []
        for document in documents:
            where = f"document {document.id!r}"
            answer = self._ask(document_payload(document), where)
            extracted.append(extracted_document(answer, document.id, f"{self.name}: {where}"))
        return ExtractionOutput(
            system=self.name,
            documents=tuple(extracted),
            metadata={"extractor": self._kind, "model": None},
        )


class ObjectExtractor:
    """A Python object with ``extract(documents)``: its output validated like a file."""

    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self._target = target

    def extract(self, documents: Iterable[GoldDocument]) -> ExtractionOutput:
        corpus = list(documents)
        try:
            answer = self._target.extract(corpus)
        except Exception as error:
            raise _system_failed(f"{self.name}: raised {type(error).__name__}: {error}") from None
        if isinstance(answer, ExtractionOutput):  # checked again: duplicates, as for a file
            answer = answer.model_dump(mode="json")
        if not isinstance(answer, dict):
            raise _system_failed(
                f"{self.name}: extract() returned {type(answer).__name__}, not a "
                f"{OUTPUT_FORMAT} object"
            )
        return _validated(lambda: validated_output(answer, self.name))


def resolve_extractor(
    spec: str,
    *,
    judge: JudgeSetup | None = None,
    strict: bool = False,
    timeout: float = TIMEOUT,
    option: str = "--extractor",
) -> Extractor:
    """The extractor ``spec`` names (see the module doc). ``llm`` needs ``judge`` (the
    configured model and cache) and replays only under ``strict``."""
    if spec == "baseline":
        return BaselineExtractor()
    if spec == "llm":
        from recallbench.extraction._llm import LLMExtractor

        return LLMExtractor(_require(judge, option), strict=strict)
    kind, colon, rest = spec.partition(":")
    if colon and rest and kind == "python":
        found = load_python(rest, option)
        made: Any = _instance(spec, found) if inspect.isclass(found) else found
        if hasattr(made, "extract"):
            return ObjectExtractor(spec, made)
        if inspect.isclass(found):
            raise ConfigError(f"{option} {spec}: the class has no extract(documents) method")
        return AskingExtractor(spec, python_ask(spec, made), "python")
    if colon and rest and kind == "command":
        return AskingExtractor(spec, command_ask(spec, rest, timeout), "command")
    if colon and rest and kind == "mcp":
        return _mcp(rest)
    raise ConfigError(
        f"{option} {spec}: unknown extractor; use baseline, llm, python:MODULE:NAME, "
        "command:CMD or mcp:PROFILE"
    )


def _instance(spec: str, cls: type) -> Any:
    """An instance of a python: extractor class (made with no arguments)."""
    try:
        return cls()
    except Exception as error:
        raise _system_failed(
            f"{spec}: {cls.__name__}() raised {type(error).__name__}: {error}"
        ) from None


def _require(judge: JudgeSetup | None, option: str) -> JudgeSetup:
    if judge is None:
        raise ConfigError(f"{option} llm: needs the [judge] table of recallbench.toml")
    return judge


def _mcp(profile: str) -> Extractor:
    """The MCP extractor of ``profile``, imported only now (it brings the MCP SDK)."""
    try:
        from recallbench.extraction._mcp_extractor import mcp_extractor
    except ImportError as error:
        raise ConfigError(
            f"--extractor mcp:{profile}: MCP extraction is unavailable ({error})"
        ) from None
    made: Extractor = mcp_extractor(profile)
    return made


# ---------------------------------------------------------------- deciders


class BaselineDecider:
    """The built-in deterministic decider (``baseline``; see :func:`decide`)."""

    name = "baseline"

    def decide(self, cases: Sequence[DecisionCase]) -> dict[str, Decision]:
        return {case.id: decide(case.existing, case.incoming) for case in cases}


class AskingDecider:
    """A decider asking a python: callable or a command once per case."""

    def __init__(self, name: str, ask: Ask) -> None:
        self.name = name
        self._ask = ask

    def decide(self, cases: Sequence[DecisionCase]) -> dict[str, Decision]:
        decisions: dict[str, Decision] = {}
        for case in cases:
            where = f"case {case.id!r}"
            answer = self._ask(case_payload(case), where)
            decisions[case.id] = checked_decision(answer, case, f"{self.name}: {where}")
        return decisions


def resolve_decider(
    spec: str,
    *,
    judge: JudgeSetup | None = None,
    strict: bool = False,
    timeout: float = TIMEOUT,
    option: str = "--decider",
) -> Decider:
    """The decider ``spec`` names: baseline, llm, python:MODULE:NAME, command:CMD."""
    if spec == "baseline":
        return BaselineDecider()
    if spec == "llm":
        from recallbench.extraction._llm import LLMDecider

        return LLMDecider(_require(judge, option), strict=strict)
    kind, colon, rest = spec.partition(":")
    if colon and rest and kind == "python":
        found = load_python(rest, option)
        if inspect.isclass(found) or not callable(found):
            raise ConfigError(f"{option} {spec}: give a function of {{existing, incoming}}")
        return AskingDecider(spec, python_ask(spec, found))
    if colon and rest and kind == "command":
        return AskingDecider(spec, command_ask(spec, rest, timeout))
    raise ConfigError(
        f"{option} {spec}: unknown decider; use baseline, llm, python:MODULE:NAME or command:CMD"
    )
