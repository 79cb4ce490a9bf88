"""Sample the pairs a matching rule accepted and rejected on LoCoMo, for people to read.

For every default rule (exact, lcs>=0.7, fuzzy>=85) and two extractors -- the built-in
baseline on all 272 LoCoMo sessions and SmolLM2-135M through llama.cpp's server on conv-30's
first five sessions (replayed from the committed judge cache, so no model runs here) --
the events and observations of every session are matched as `recallbench extract` matches
them, and

- matched pairs are drawn at random from the one-to-one assignment's pairs;
- unmatched pairs are the near misses: for each expected item the assignment left
  unmatched, the extracted item of the same session closest to it, when at least half
  the threshold close (a pair with little in common says little about the rule), drawn at
  random. Closeness is the rule's own score; for ``exact``, which scores only 0 or 1, it
  is the ``lcs`` score (the near misses ``exact`` refuses).

Up to 50 of each per rule (25 per extractor when both have them), with the rule's score
and verdict, into ``tests/data/extraction/rule_validity.json``. The file also holds a
person's reading of each pair (``reading``: true when the two state the same fact,
``note`` where it was not obvious); re-sampling keeps the readings of pairs it draws again.
``tests/test_extraction_rule_validity.py`` keeps the verdicts stable and counts the
readings that overturn them, the numbers docs/extraction.md quotes.

    python benchmarks/rule_validity_sample.py [--seed 0] [--per-side 50]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from llama_server import MODEL_NAME, extract_toml  # noqa: E402
from recallbench.extraction import (  # noqa: E402
    DEFAULT_RULES,
    BaselineExtractor,
    ExtractionGroundTruth,
    ExtractionOutput,
    MatchRule,
    assign,
    similarity,
    validated_output,
)
from recallbench.extraction._counting import stored_facts  # noqa: E402
from recallbench.extraction._sources import load_truth  # noqa: E402

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
CACHE = ROOT / "tests" / "data" / "judge" / "smollm2-135m.extract.jsonl"
FIXTURE = ROOT / "tests" / "data" / "extraction" / "rule_validity.json"
LLM_SESSIONS = 5
LCS = MatchRule.parse("lcs>=0.7")
READING = (
    "true when the extracted item states the expected item's main fact (wording may differ, "
    "details may be missing); false when the actor, the object or the fact differs, or the "
    "extracted item lacks what makes it that fact (a pronoun for the thing, a garbled rewrite)"
)
LCS = MatchRule.parse("lcs>=0.7")
READING = (
    "true when the extracted item states the expected item's main fact (wording may differ, "
    "details may be missing); false when the actor, the object or the fact differs, or the "
    "extracted item lacks what makes it that fact (a pronoun for the thing, a garbled rewrite)"
)


def _llm_output(truth: ExtractionGroundTruth) -> ExtractionOutput:
    """SmolLM2's extraction of conv-30's first sessions, replayed from the judge cache."""
    from click.testing import CliRunner

    from recallbench.cli._extract import extract

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "recallbench.toml").write_text(extract_toml("http://127.0.0.1:9/v1"))
        shutil.copyfile(CACHE, work / "cache.jsonl")
        args = [
            "--ground-truth", f"locomo-events:{LOCOMO}", "--conversation", "conv-30",
            "--documents", str(LLM_SESSIONS), "--extractor", "llm",
            "--config", str(work / "recallbench.toml"), "--judge-cache", str(work / "cache.jsonl"),
            "--strict", "--rule", "exact", "--resamples", "20", "--quiet",
            "--out", str(work / "out"), "--save-output", str(work / "output.json"),
        ]  # fmt: skip
        result = CliRunner().invoke(extract, args)
        if result.exit_code not in (0, 69):
            raise SystemExit(f"replaying {CACHE} failed:\n{result.output}")
        return validated_output(json.loads((work / "output.json").read_text()), "replay")


def _pairs(
    rule: MatchRule, truth: ExtractionGroundTruth, output: ExtractionOutput, source: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(matched, near-miss) pairs of events and observations over every document."""
    found = {document.id: document for document in output.documents}
    matched: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    for gold in truth.documents:
        if gold.id not in found:
            continue
        out = found[gold.id]
        for kind, expected, extracted in (
            ("event", [e.description for e in gold.events], [e.description for e in out.events]),
            ("observation", [o.text for o in gold.observations], stored_facts(out)),
        ):
            if not expected or not extracted:
                continue
            scores = similarity(rule, expected, extracted)
            pairs = assign(scores, rule.threshold)
            taken = {i for i, _, _ in pairs}
            for i, j, score in pairs:
                matched.append(_pair(rule, source, gold.id, kind, expected[i], extracted[j], score))
            close = scores if rule.kind != "exact" else similarity(LCS, expected, extracted)
            half = (rule.threshold if rule.kind != "exact" else LCS.threshold) / 2
            for i in range(len(expected)):
                j = int(close[i].argmax())
                if i not in taken and close[i, j] >= half:
                    pair = _pair(
                        rule, source, gold.id, kind, expected[i], extracted[j], scores[i, j]
                    )
                    missed.append(pair | {"closeness": round(float(close[i, j]), 6)})
    return matched, missed


def _pair(
    rule: MatchRule,
    source: str,
    document: str,
    kind: str,
    expected: str,
    extracted: str,
    score: float,
) -> dict[str, Any]:
    return {
        "rule": rule.label,
        "extractor": source,
        "document": document,
        "kind": kind,
        "expected": expected,
        "extracted": extracted,
        "score": round(float(score), 6),
        "matched": bool(score >= rule.threshold),
    }


def _draw(pools: list[list[dict[str, Any]]], total: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``total`` pairs, split evenly over the pools, the rest from whichever has more.
    A pool is ordered by a hash of the seed and each pair's text, not by a generator's
    draws, so a pair drawn once is drawn again when other pairs join or leave its pool (a
    change to an extractor does not throw away the readings of the pairs it kept)."""
    shuffled = [sorted(pool, key=lambda pair: _rank(pair, seed)) for pool in pools]
    share = total // len(pools)
    chosen = [pool[:share] for pool in shuffled]
    spare = sorted((p for pool in shuffled for p in pool[share:]), key=lambda p: _rank(p, seed))
    picked = [pair for part in chosen for pair in part]
    return picked + spare[: total - len(picked)]


def _rank(pair: dict[str, Any], seed: int) -> str:
    return hashlib.sha256(f"{seed}\0{chr(0).join(_key(pair))}".encode()).hexdigest()


def _key(pair: dict[str, Any]) -> tuple[str, ...]:
    return (pair["rule"], pair["extractor"], pair["document"], pair["expected"], pair["extracted"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--per-side", type=int, default=50, help="matched and unmatched pairs per rule"
    )
    args = parser.parse_args(argv)
    if not LOCOMO.exists():
        raise SystemExit(f"needs LoCoMo at {LOCOMO}")
    truth = load_truth(f"locomo-events:{LOCOMO}", ())
    llm_truth = load_truth(f"locomo-events:{LOCOMO}", ("conv-30",))
    outputs = [
        ("baseline", truth, BaselineExtractor().extract(truth.documents)),
        (f"llm:{MODEL_NAME}", llm_truth, _llm_output(llm_truth)),
    ]
    readings: dict[tuple[str, ...], dict[str, Any]] = {}
    if FIXTURE.exists():
        for pair in json.loads(FIXTURE.read_text())["pairs"]:
            if "reading" in pair:
                readings[_key(pair)] = {k: pair[k] for k in ("reading", "note") if k in pair}
    sampled: list[dict[str, Any]] = []
    for rule in DEFAULT_RULES:
        matched_pools, missed_pools = [], []
        for source, scope, output in outputs:
            matched, missed = _pairs(rule, scope, output, source)
            matched_pools.append(matched)
            missed_pools.append(missed)
            print(
                f"{rule.label:10} {source:40} matched {len(matched):5}  near misses {len(missed):5}"
            )
        for pools in (matched_pools, missed_pools):
            for pair in _draw(pools, args.per_side, args.seed):
                sampled.append(pair | readings.get(_key(pair), {}))
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "format": "recallbench.rule-validity/v1",
        "description": "Pairs the default matching rules accepted and rejected on LoCoMo, "
        "with a person's reading; see benchmarks/rule_validity_sample.py.",
        "reading": READING,
        "seed": args.seed,
        "pairs": sampled,
    }
    FIXTURE.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written: {FIXTURE} ({len(sampled)} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
