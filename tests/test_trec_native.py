"""The compiled engine (recallbench.measures._ctrec) against trec_eval 10.0 and the Python engine.

Generated UTF-8 files (the compiled engine takes only plain files) with heavy score ties,
grades from -2 to 4, unjudged documents, queries on one side only, queries without
relevant documents, shuffled lines (a query's lines apart), ids that are prefixes of each
other or differ only in case, and scores written every way a plain decimal can be. Every
flag combination of the property test, with the official measures, ``-m all_trec`` and
every family's parameters in every form it takes, is checked against the binary (where
trec_eval 10.0 runs: every judged query in the run unless -c) and against the Python
engine (on everything), byte for byte, the run read whole and streamed (grouped by query,
read in small blocks). Then what it must decline, each for its own reason, and the dict
path of ``recallbench.evaluate``.

Both engines do trec_eval's arithmetic in trec_eval's order, so their values are equal to
the last bit, the means too (see :func:`test_rbp_rounds_as_trec_eval_does`).
"""

from __future__ import annotations

import math
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from recallbench import evaluate
from recallbench.cli import main
from recallbench.measures import _trec_native
from recallbench.measures._trec_native import evaluate_files_text, families
from recallbench.measures._trec_sets import expand_trec_measures
from test_trec_eval_property import FLAGS, build_trec_eval, in_process, options_of, run_binary

pytestmark = pytest.mark.skipif(
    not _trec_native.available(), reason="recallbench.measures._ctrec was not built (no C compiler)"
)

SEED = 20261126
CASES = 600
QUERY_IDS = (
    "{i}",
    "q{i}",
    "Q{i}",
    "a.b{i}",
    "x-{i}_",
    "0{i}",
    "q:{i}",
    "a#{i}",
    "ü{i}",
    "日{i}",
    "n\u0085{i}",
)
DOC_IDS = (
    "d1", "d10", "d2", "D2", "a#b", "0", "00", "-x", "z.z", "doc_3", "doc_30", "10", "9",
    "d-1", "e", "E", "x/y", "1e3", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2",
    "ä", "日本", "Ω", "a\u00a0b", "\U0001f600", "z\u3000z", "n\u0085l", "l\u2028s",
)  # fmt: skip
SCORES = (
    "0", "1", "1", "2", "2", "2.5", "-1", "0.001", "3", "7", "+2", "-0", ".5", "5.", "-.5",
    "0.30000000000000004441", "2.000000000000000000001", "1.0000000000000001",
    "1e-05", "2.5E+3", "1.e2", "-3e0", "7e-400", "1E1",
)  # fmt: skip
MEASURES = (
    "-m", "official", "-m", "P.10,5", "-m", "recall.20,3", "-m", "ndcg_cut.7,2",
    "-m", "map_cut.4", "-m", "success.3,1", "-m", "ndcg", "-m", "runid",
)  # fmt: skip
ALL_TREC = ("-m", "all_trec")
PARAMETERS = (
    "-m", "relstring.4", "-m", "iprec_at_recall.0.5,0.25", "-m", "Rprec_mult.2,0.5",
    "-m", "utility.2,-0.5,1,0.25", "-m", "11pt_avg.0.2,0.5,0.8", "-m", "set_F.0.5",
    "-m", "rbp.p=0.5", "-m", "rbp_resid.p=0.8", "-m", "unj.2,7", "-m", "relative_P.3,1",
    "-m", "gm_bpref", "-m", "num_q", "-m", "runid",
)  # fmt: skip
"""Every family's parameters (labelled with them, so a stand-in ranking keeps its
utility, relstring and rbp_resid), and the families without any."""
SPELLINGS = (
    "-m", "relstring.20", "-m", "iprec_at_recall.1,0,.3", "-m", "Rprec_mult.1.5,0.25,3",
    "-m", "utility.1.5,-1,+0.5,-2", "-m", "11pt_avg.0,0.5,0.5,1", "-m", "set_F.0.5,2",
    "-m", "rbp.p=0.3,p=0.95", "-m", "rbp_resid.p=0", "-m", "unj.1", "-m", "relative_P.1000,2",
    "-m", "P.1,7", "-m", "recall.4", "-m", "ndcg_cut.1", "-m", "num_nonrel_judged_ret",
    "-m", "infAP", "-m", "binG", "-m", "G", "-m", "ndcg_rel", "-m", "Rndcg", "-m", "set_P",
    "-m", "set_relative_P", "-m", "set_recall", "-m", "set_map",
)  # fmt: skip
"""Parameters in other forms: signs, a bare point, repeated levels, set_F's ignored
second number, rbp's last p, lengths past the ranking."""
CUTOFFS_ONLY = (
    "-m", "P.2", "-m", "recall.3", "-m", "ndcg_cut.4,1", "-m", "map_cut.2", "-m", "success.1",
    "-m", "num_ret", "-m", "num_rel", "-m", "num_q",
)  # fmt: skip
"""Only measures that read the first few ranks: grades are looked up to rank 4 only."""
SHALLOW = ("-m", "relstring.2", "-m", "unj.3,1", "-m", "relative_P.2", "-m", "P.1")
"""The families -m all_trec adds that read the first ranks only."""


@pytest.fixture(scope="module")
def trec_eval(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_trec_eval(tmp_path_factory)


def generate(rng: random.Random, index: int, every_judged_ran: bool) -> tuple[list[str], list[str]]:
    qid = rng.choice(QUERY_IDS).format(i=index)
    kind = rng.choices(["both", "qrels only", "run only"], weights=[8, 1, 1])[0]
    if kind == "qrels only" and every_judged_ran:
        kind = "both"
    docs = rng.sample(DOC_IDS, rng.randint(1, len(DOC_IDS)))
    qrels: list[str] = []
    if kind != "run only":
        judged = rng.sample(docs, rng.randint(1, min(9, len(docs))))
        low = rng.random() < 0.15
        grades = [
            rng.choice([-2, -1, 0, 0] if low else [-2, -1, 0, 0, 1, 1, 2, 3, 4]) for _ in judged
        ]
        grades[0] = max(grades[0], 0)  # a grade of 0 or more (else both decline or fail)
        qrels = [f"{qid} 0 {d} {g}" for d, g in zip(judged, grades, strict=True)]
    run: list[str] = []
    if kind != "qrels only":
        returned = rng.sample(docs, rng.randint(1, min(14, len(docs))))
        extra = rng.choice(["", "", " extra", " more fields here"])  # ignored after the tag
        run = [f"{qid}\tQ0 {d} {r} {rng.choice(SCORES)} tag{extra}" for r, d in enumerate(returned)]
    return qrels, run


def write(folder: Path, qrels: list[str], run: list[str], rng: random.Random) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng.shuffle(run)  # a query's lines apart, too
    (folder / "qrels").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    ending = "\n" if rng.random() < 0.5 else ""
    (folder / "run").write_text("\r\n".join(run) + ending, encoding="utf-8")
    return folder / "qrels", folder / "run"


def generated(folder: Path, seed: int, every_judged_ran: bool) -> tuple[Path, Path]:
    rng = random.Random(seed)
    qrels: list[str] = []
    run: list[str] = []
    for index in range(CASES):
        q, r = generate(rng, index, every_judged_ran)
        qrels += q
        run += r
    return write(folder, qrels, run, rng)


def native(
    qrels: Path, run: Path, flags: Sequence[str], measures: Sequence[str], block: int = 0
) -> str | None:
    """The compiled engine's ``-q`` output, the run read whole or streamed (``block``)."""
    options = options_of(flags)
    done = evaluate_files_text(
        qrels,
        run,
        [measures[i + 1] for i in range(0, len(measures), 2)],
        relevance_level=options.relevance_level,
        complete=options.complete,
        max_docs=options.max_docs,
        judged_only=options.judged_only,
        per_query=True,
        block=block,
    )
    return None if done is None else done[0]


def group_by_query(run: Path) -> Path:
    """A copy of ``run`` with each query's lines together (queries in order of first
    appearance, a query's lines in file order), as a streamed run must be."""
    groups: dict[bytes, list[bytes]] = {}
    for line in run.read_bytes().split(b"\n"):
        if line:
            fields = line.split()  # C isspace, as the engines split
            groups.setdefault(fields[0] if fields else b"", []).append(line + b"\n")
    grouped = run.with_name(run.name + ".grouped")
    grouped.write_bytes(b"".join(b"".join(lines) for lines in groups.values()))
    return grouped


@pytest.mark.parametrize(
    "measures",
    [MEASURES, CUTOFFS_ONLY, ALL_TREC, PARAMETERS, SPELLINGS, SHALLOW],
    ids=["all", "cutoffs only", "all_trec", "parameters", "spellings", "shallow"],
)
@pytest.mark.parametrize("flags", FLAGS, ids=[" ".join(f) or "none" for f in FLAGS])
def test_matches_trec_eval_and_the_python_engine(
    trec_eval: Path, tmp_path: Path, flags: tuple[str, ...], measures: tuple[str, ...]
) -> None:
    for number, every_judged_ran in enumerate((True, False)):
        qrels, run = generated(tmp_path / str(number), SEED + number, every_judged_ran)
        ours = native(qrels, run, flags, measures)
        assert ours is not None, "the compiled engine declined plain files"
        assert ours == in_process(qrels, run, flags, measures), f"Python engine, {flags}"
        grouped = group_by_query(run)  # streamed: a block's end inside lines and queries
        for block in (7, 4096):
            streamed = native(qrels, grouped, flags, measures, block)
            assert streamed == ours, f"streamed in blocks of {block} bytes, {flags}"
        if every_judged_ran or "-c" in flags:  # else trec_eval 10.0 exits 4
            expected = run_binary(trec_eval, [*flags, *measures, "-q", str(qrels), str(run)])
            assert ours == expected, f"trec_eval, {flags}"
    named = {m.partition(".")[0] for m in measures[1::2]} - {"official", "all_trec", "runid"}
    assert all(f"\n{name}" in "\n" + ours for name in named or ("relstring", "unj_20"))


@pytest.mark.parametrize("flags", [(), ("-c",), ("-J", "-M", "2")], ids=["none", "-c", "-J -M 2"])
def test_rbp_rounds_as_trec_eval_does(
    trec_eval: Path, tmp_path: Path, flags: tuple[str, ...]
) -> None:
    """rbp with p = 0.3 lands on printed ties (0.00945): trec_eval's running product of p
    rounds them one way, powers of p the other (the binary decides; the Python engine's
    side: test_trec_eval_exact_sums)."""
    qrels, run = generated(tmp_path, SEED, True)
    measures = ("-m", "rbp.p=0.3", "-m", "rbp_resid.p=0.3")
    ours = native(qrels, run, flags, measures)
    assert ours == run_binary(trec_eval, [*flags, *measures, "-q", str(qrels), str(run)])


def test_comments_as_the_line_reader_skips_them(tmp_path: Path) -> None:
    """qrels: '#' in the first column is a comment, after a blank it is a query id; run:
    '#' after leading blanks. (trec_eval 10.0 mishandles runs of comment lines, so this is
    checked against the Python engine only.)"""
    qrels, run = generated(tmp_path, SEED, True)
    qrels.write_text("# a comment, any fields\n" + qrels.read_text() + "#x\n #q 0 d1 1\n")
    run.write_text("  # 1 2\n#\n" + run.read_text() + "\n #q Q0 d1 1 1 t\n")
    measures = ("-m", "official", "-m", "ndcg_cut.3")
    ours = native(qrels, run, ("-c",), measures)
    assert ours is not None, "the compiled engine declined comments"
    assert ours == in_process(qrels, run, ("-c",), measures)
    # qrels " #q": judged; run " #q": a comment, so -c evaluates #q as missing from the run
    assert "num_ret               \t#q\t0\n" in ours


def test_numbers_are_read_and_printed_in_the_c_locale(tmp_path: Path) -> None:
    """An application that set a locale with a decimal comma changes neither what is read
    (strtod) nor what is printed (%6.4f)."""
    localedef = shutil.which("localedef")
    if localedef is None:
        pytest.skip("no localedef to build a locale with a decimal comma")
    built = subprocess.run(
        [localedef, "-i", "de_DE", "-f", "UTF-8", str(tmp_path / "de_DE.UTF-8")],
        capture_output=True,
    )
    if built.returncode not in (0, 1) or not (tmp_path / "de_DE.UTF-8").exists():
        pytest.skip(f"localedef could not build de_DE: {built.stderr.decode()[-200:]}")
    qrels, run = generated(tmp_path / "data", SEED, True)
    script = (
        "import locale, sys\n"
        "locale.setlocale(locale.LC_ALL, 'de_DE.UTF-8')\n"
        "from recallbench.measures._trec_native import evaluate_files_text\n"
        "sys.stdout.write(evaluate_files_text(sys.argv[1], sys.argv[2], ['official'])[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(qrels), str(run)],
        capture_output=True,
        text=True,
        env={**os.environ, "LOCPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    expected = evaluate_files_text(qrels, run, ["official"])
    assert expected is not None
    assert done.stdout == expected[0]
    assert "," not in done.stdout


def test_summary_only_and_no_summary_match_the_python_engine(tmp_path: Path) -> None:
    qrels, run = generated(tmp_path, SEED, True)
    specs = ["official"]
    evaluation_text = in_process(qrels, run, (), ("-m", "official"))
    summary = "".join(line for line in evaluation_text.splitlines(True) if "\tall\t" in line)
    assert evaluate_files_text(qrels, run, specs) == (summary, "tag")
    per_query = "".join(line for line in evaluation_text.splitlines(True) if "\tall\t" not in line)
    assert evaluate_files_text(qrels, run, specs, per_query=True, summary=False) == (
        per_query,
        "tag",
    )


@pytest.mark.parametrize("layout", ["json", "csv", "trec"])
@pytest.mark.parametrize(
    "flags", [(), ("-q",), ("-q", "-n"), ("-c", "-J", "-m", "P.5"), ("-q", "-c", "-m", "all_trec")]
)
def test_every_layout_prints_what_the_python_engine_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str, flags: tuple[str, ...]
) -> None:
    qrels, run = generated(tmp_path, SEED, True)
    args = ["evaluate", *flags, "--format", layout, str(qrels), str(run)]
    compiled = CliRunner().invoke(main, args)
    monkeypatch.setattr(_trec_native, "_ctrec", None)
    python = CliRunner().invoke(main, args)
    assert compiled.exit_code == python.exit_code == 0, compiled.output + python.output
    assert compiled.stdout == python.stdout
    assert "P_5" in compiled.stdout


@pytest.mark.parametrize(
    ("qrels", "run", "why"),
    [
        ("q 0 a 1\n", "q Q0 a 1 1 t\nq Q0 a 2 0.5 t\n", "a document returned twice"),
        ("q 0 a 1\nq 0 a 0\n", "q Q0 a 1 1 t\n", "a pair judged twice"),
        ("q 0 a 1\nz 0 b 1\nz 0 b 0\n", "q Q0 a 1 1 t\n", "judged twice, unevaluated query"),
        ("q 0 a 1\n", "q Q0 a 1 1e t\n", "an exponent without digits"),
        ("q 0 a 1\n", "q Q0 a 1 1e400 t\n", "an infinite score"),
        ("q 0 a 1\n", "q Q0 a 1 0x1p3 t\n", "a hexadecimal score"),
        ("q 0 a 1\n", "# \0 comment\nq Q0 a 1 1 t\n", "a NUL in a comment"),
        ("q 0 a 1\n", "q Q0 a 1 1_0 t\n", "an underscore in a number"),
        ("q 0 a 1\n", "q Q0 a 1 nan t\n", "not a decimal"),
        ("q 0 a 1.5\n", "q Q0 a 1 1 t\n", "a decimal grade"),
        ("q 0 a 1234567890123456\n", "q Q0 a 1 1 t\n", "a grade of 16 digits"),
        ("q 0 \udcff 1\n", "q Q0 a 1 1 t\n", "not UTF-8"),
        ("q 0 a 1\n", "q Q0 a\udcc0\udcaf 1 1 t\n", "an overlong form"),
        ("q 0 a\udced\udca0\udc80 1\n", "q Q0 a 1 1 t\n", "a surrogate"),
        ("q 0 a 1\n", "q Q0 a 1 1 t\udcf4\n", "a sequence cut short"),
        ("q 0 a\x1cb 1\n", "q Q0 a 1 1 t\n", "a separator control"),
        ("q 0 a 1\n", "q Q0 a 1 t\n", "five run fields"),
        ("q 0 a 1 x\n", "q Q0 a 1 1 t\n", "five qrels fields"),
        ("q 0 a 1\n", "z Q0 a 1 1 t\n", "nothing evaluated"),
        ("", "q Q0 a 1 1 t\n", "empty qrels"),
    ],
)
def test_declines_what_the_python_engine_must_read(
    tmp_path: Path, qrels: str, run: str, why: str
) -> None:
    (tmp_path / "qrels").write_bytes(qrels.encode("utf-8", "surrogateescape"))
    (tmp_path / "run").write_bytes(run.encode("utf-8", "surrogateescape"))
    assert evaluate_files_text(tmp_path / "qrels", tmp_path / "run", ["official"]) is None, why


@pytest.mark.parametrize("flags", FLAGS, ids=[" ".join(f) or "none" for f in FLAGS])
def test_queries_graded_below_0_only_take_the_python_engines_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...]
) -> None:
    """A query whose grades are all below 0 (trec_eval reads stale levels there, or fails):
    nothing relevant, non-relevant or of any gain, as the Python engine has it."""
    plain = generate

    def below_0(rng: random.Random, index: int, every_judged_ran: bool) -> Any:
        qrels, run = plain(rng, index, every_judged_ran)
        if qrels and index % 3 == 0:
            qrels = [" ".join([*line.split(" ")[:3], str(-1 - index % 2)]) for line in qrels]
        return qrels, run

    monkeypatch.setattr(sys.modules[__name__], "generate", below_0)
    qrels, run = generated(tmp_path, SEED, False)
    for measures in (ALL_TREC, PARAMETERS):
        ours = native(qrels, run, flags, measures)
        assert ours is not None, "the compiled engine declined them"
        assert ours == in_process(qrels, run, flags, measures)


def test_negative_levels_count_as_trec_eval_counts_and_the_api_keeps_the_python_engine(
    trec_eval: Path, tmp_path: Path
) -> None:
    """Below 0 trec_eval counts unjudged documents relevant (their codes -1 and -2 pass
    its ">= level"): the compiled engine prints what it prints; the API, which took the
    Python engine's values there (it never counts them), still does."""
    qrels, run = generated(tmp_path, SEED, True)
    for level in ("-1", "-2"):
        for measures in (("-m", "official"), ALL_TREC):
            ours = native(qrels, run, ("-l", level), measures)
            expected = run_binary(trec_eval, ["-l", level, *measures, "-q", str(qrels), str(run)])
            assert ours == expected
    dict_qrels, dict_run = random_dicts(SEED)
    calls: list[object] = []
    for source in ((str(qrels), str(run)), (dict_qrels, dict_run)):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_trec_native, "evaluate_values", lambda *a, **k: calls.append(a))
            fast = evaluate(*source, ["all_trec"], relevance_level=-1)
        assert not calls, "the compiled engine was asked"
        with _declined():
            slow = evaluate(*source, ["all_trec"], relevance_level=-1)
        assert repr(fast.means()) == repr(slow.means())


def test_a_missing_file_is_declined(tmp_path: Path) -> None:
    (tmp_path / "qrels").write_text("q 0 a 1\n")
    assert evaluate_files_text(tmp_path / "qrels", tmp_path / "none", ["map"]) is None


@pytest.mark.parametrize(
    "specs",
    [
        ["official"],
        ["P.10,5", "P.3"],
        ["official", "P.10"],
        ["ndcg_cut.10", "ndcg", "map", "recip_rank", "runid"],
        ["success", "map_cut", "recall.7", "num_q", "num_rel_ret", "Rprec", "bpref"],
        ["gm_map", "iprec_at_recall", "num_ret", "num_rel"],
        ["all_trec"],
        ["official", "all_trec", "relstring.5", "P.3"],
        ["all_trec", "P.3", "utility.1,2,3,4"],  # the first -m with parameters
        list(PARAMETERS[1::2]),
        list(SPELLINGS[1::2]),
        ["iprec_at_recall.0.5,0.501", "Rprec_mult.0.333,12.5"],  # one label, two values
    ],
)
def test_measures_and_labels_are_the_python_engines(specs: list[str]) -> None:
    chosen = families(specs)
    assert chosen is not None
    measures, runid, _ = expand_trec_measures(specs)
    assert [label for _, _, labels in chosen[0] for label in labels] == [
        m.trec_label() for m in measures
    ]
    assert chosen[1] == runid


@pytest.mark.parametrize(
    "specs",
    [
        ["ndcg@10"],  # recallbench's own names
        ["all_trec", "ndcg@10"],
        ["P.0"],
        ["P.05"],
        ["P.-5"],
        ["P.5,5"],
        ["P.x"],
        ["P.5.5"],  # the Python engine reads 5, trec_eval 5 too: left to it all the same
        ["P." + ",".join(map(str, range(1, 66)))],  # more values than the engine holds
        ["map.5"],
        ["ndcg.5"],  # the Python engine reads it as ndcg_cut.5, trec_eval as a gain map
        ["ndcg.1=2"],  # gain maps: the Python engine refuses them
        ["G.1=2"],
        ["Rndcg.0=1"],
        ["rbp.1=2"],
        ["rbp.p=1"],
        ["rbp.q=0.5"],
        ["rbp_resid.p=0.5,2=1"],
        ["relstring.5,10"],  # the Python engine prints two strings, trec_eval one
        ["relstring.101"],  # longer than the engine holds
        ["relstring.0"],
        ["iprec_at_recall.1.5"],
        ["iprec_at_recall.0.5,0.50"],  # one level twice: the Python engine names it
        ["iprec_at_recall.1e-1"],  # numbers in other spellings
        ["iprec_at_recall. 0.5"],
        ["iprec_at_recall.0x1"],
        ["Rprec_mult.0"],
        ["utility.1,2,3"],
        ["utility.1,2,3,4,5"],
        ["utility.1,,2,3"],
        ["11pt_avg.0.5,0.2"],  # trec_eval walks them ascending
        ["11pt_avg.1.5"],
        ["set_F.-1"],
        ["infAP.3"],
        ["set_P.3"],
        ["num_nonrel_judged_ret.1"],
        ["nosuch"],
    ],
)
def test_declines_measures_it_does_not_compute(specs: list[str]) -> None:
    assert families(specs) is None


def random_dicts(seed: int) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for index in range(300):
        qid = rng.choice(("q{i}", "é{i}", "{i}")).format(i=index)
        docs = rng.sample([*DOC_IDS, "ü", "日本", "Ω"], rng.randint(2, 20))
        if rng.random() < 0.9:
            judged = rng.sample(docs, rng.randint(1, len(docs) // 2 + 1))
            qrels[qid] = {d: rng.choice([-1, 0, 0, 1, 2, 3]) for d in judged}
            qrels[qid][judged[0]] = max(qrels[qid][judged[0]], 0)
        if rng.random() < 0.9:
            returned = rng.sample(docs, rng.randint(1, len(docs)))
            run[qid] = {d: rng.choice((0.5, 1, 1, 2, 2.25, -1.0, 3)) for d in returned}
    return qrels, run


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"complete": True},
        {"judged_only": True},
        {"max_docs": 3},
        {"relevance_level": 2},
        {"relevance_level": 0},
        {"complete": True, "judged_only": True, "max_docs": 5, "relevance_level": 2},
    ],
)
@pytest.mark.parametrize(
    "measures",
    [
        ["official", "ndcg_cut.10,3", "ndcg", "recall.5", "success.1"],
        ["ndcg_cut.3", "P.2", "map_cut.1", "success.1", "num_ret"],  # the first ranks only
        ["all_trec"],
        list(PARAMETERS[1::2]),
        list(SPELLINGS[1::2]),
        list(SHALLOW[1::2]),
    ],
    ids=["official", "first ranks", "all_trec", "parameters", "spellings", "shallow"],
)
def test_dicts_give_the_python_engines_values(
    options: dict[str, object], measures: list[str]
) -> None:
    qrels, run = random_dicts(SEED)
    assert_same_evaluations(qrels, run, measures, options)


@pytest.mark.parametrize("options", [{}, {"complete": True, "judged_only": True, "max_docs": 4}])
def test_files_through_the_api_give_the_python_engines_values(
    tmp_path: Path, options: dict[str, object]
) -> None:
    qrels, run = generated(tmp_path, SEED, False)
    for measures in (
        ["official", "ndcg", "ndcg_cut.10,3"],
        ["P.2", "success.1", "num_q"],
        ["all_trec"],
        list(PARAMETERS[1::2]),
    ):
        assert_same_evaluations(str(qrels), run, measures, options)


def assert_same_evaluations(
    qrels: object, run: object, measures: list[str], options: dict[str, object]
) -> None:
    """The compiled engine's Evaluation equals the Python engine's, value for value (to the
    last bit), string for string."""
    calls: list[object] = []
    real = _trec_native.evaluate_values

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(done := real(*args, **kwargs))  # type: ignore[arg-type]
        return done

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_trec_native, "evaluate_values", counted)
        fast = evaluate(qrels, run, measures, **options)  # type: ignore[arg-type]
    assert calls and calls[0] is not None, "the compiled engine declined"
    with _declined():
        slow = evaluate(qrels, run, measures, **options)  # type: ignore[arg-type]
    assert fast.query_ids == slow.query_ids
    assert list(fast.values) == list(slow.values)
    assert fast.texts == slow.texts
    for name in slow.values:
        for a, b in zip(fast.values[name], slow.values[name], strict=True):
            assert a == b or (math.isnan(a) and math.isnan(b)), (name, options)
        if name not in slow.texts:
            assert repr(fast.mean(name)) == repr(slow.mean(name)), (name, options)
    assert list(fast.missing) == list(slow.missing)
    assert list(fast.included) == list(slow.included)
    assert list(fast.no_relevant) == list(slow.no_relevant)


def test_dicts_outside_its_form_take_the_python_engine() -> None:
    qrels = {"q": {"a": 1, "b": 0}}
    for run in ({"q": {"a": float("nan")}}, {"q": {"a": "1"}}, {"q": {}}, {1: {"a": 1.0}}):
        assert _trec_native.evaluate_values(
            qrels, run, families(["map"])[0],  # type: ignore[index]
            relevance_level=1, complete=False, max_docs=None, judged_only=False,
        ) is None  # fmt: skip


class _declined:
    """The compiled engine is missing, so the Python engine evaluates."""

    def __enter__(self) -> None:
        self.patch = pytest.MonkeyPatch()
        self.patch.setattr(_trec_native, "_ctrec", None)

    def __exit__(self, *exc: object) -> None:
        self.patch.undo()


def test_large_grades_are_ordered_as_the_python_engine_orders_them(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    qrels, run = [], []
    for q in range(50):
        docs = rng.sample(DOC_IDS, 12)
        qrels += [f"q{q} 0 {d} {rng.choice((0, 1, 64, 65, 300, 70000))}" for d in docs[:8]]
        run += [f"q{q} Q0 {d} {r} {rng.choice((1, 2, 3))} t" for r, d in enumerate(docs)]
    qrels_path, run_path = write(tmp_path, qrels, run, rng)
    measures = ("-m", "ndcg", "-m", "ndcg_cut.3,10", "-m", "map")
    ours = native(qrels_path, run_path, (), measures)
    assert ours is not None
    assert ours == in_process(qrels_path, run_path, (), measures)


def test_measures_may_be_any_iterable() -> None:
    """A generator of measure names is read once (it was read twice before, and came out
    empty the second time)."""
    qrels, run = random_dicts(SEED)
    listed = evaluate(qrels, run, ["map", "P.1", "ndcg@10"])
    generated = evaluate(qrels, run, (m for m in ["map", "P.1", "ndcg@10"]))
    assert list(generated.values) == list(listed.values) == ["map", "P@1", "ndcg@10"]
    assert generated.means() == listed.means()
