"""Test plans: a row's tests, parsed once in the trainer (the G samples of a group share one).

Nothing here runs a test: assert-style tests are parsed to check they are well formed, to find
the entry point and the prompt's helper functions, and to know each assert's source text (the
test child reports asserts by position; the review page shows the text). Stdin/stdout tests
become inputs and expected outputs; the expected outputs stay in the trainer.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_SHOWN = 300  # characters of an assert's source or an input kept for display


class BadTestsError(ValueError):
    """The tests of a row cannot be parsed (a ground-truth problem, not the sample's)."""


@dataclass(frozen=True)
class CheckPlan:
    """What a sample is checked against. ``tests`` mode: the test source, the entry point, the
    prompt's helpers (source run in the test child), whether ``check(entry)`` is called, each
    assert's source by (line, column); ``weaker`` lists why the test child cannot run the tests
    (empty: it can). ``stdio`` mode: inputs and expected outputs."""

    mode: str
    source: str = ""
    entry: str | None = None
    helpers: str = ""
    auto_check: bool = False
    weaker: tuple[str, ...] = ()
    n_asserts: int = 0
    asserts: Mapping[tuple[int, int], str] = field(default_factory=dict, compare=False, repr=False)
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    @property
    def n_tests(self) -> int:
        return len(self.inputs) if self.mode == "stdio" else max(1, self.n_asserts)


def plan_tests(test_code: str, entry_point: str | None = None, prefix: str = "") -> CheckPlan:
    """A plan for assert-style tests: module-level asserts (MBPP), HumanEval's
    ``def check(candidate)``, helper functions, loops. Raises ``BadTestsError`` when the code
    does not parse or checks nothing."""
    try:
        tree = ast.parse(test_code)
    except SyntaxError as exc:
        raise BadTestsError(f"the tests do not parse: {exc.msg} (line {exc.lineno})") from None
    asserts = [n for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    n_checks = len(asserts) + sum(isinstance(n, ast.Raise) for n in ast.walk(tree))
    if not n_checks:
        raise BadTestsError("the tests contain no assert that checks the sample")
    check = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None)
    calls_check = any(
        isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id == "check"
        for s in tree.body
    )
    if check is not None and not calls_check and not entry_point:
        raise BadTestsError("the tests define check(candidate) but the row names no entry point")
    helpers: list[str] = []
    if prefix.strip():
        try:
            ptree: ast.Module | None = ast.parse(prefix)
        except SyntaxError:
            ptree = None
        for node in ptree.body if ptree else []:
            # The prompt's own complete helpers (HumanEval's poly, encode_cyclic) run in the test
            # child, so a program cannot redefine what the tests rely on. The entry point is the
            # candidate's.
            if isinstance(node, ast.FunctionDef) and node.name != entry_point and not _stub(node):
                helpers.append(ast.unparse(node))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                helpers.append(ast.unparse(node))
    helper_src = "\n".join(helpers)
    reasons = foreign_imports(tree) + [
        f"the prompt's helpers {why}" for why in foreign_imports(ast.parse(helper_src) if helper_src else None)
    ]
    lines = [line.encode() for line in test_code.splitlines(keepends=True)]
    shown = {(a.lineno, a.col_offset): segment(lines, a)[:MAX_SHOWN] for a in asserts}
    return CheckPlan(
        "tests",
        source=test_code,
        entry=entry_point,
        helpers=helper_src,
        auto_check=check is not None and not calls_check,
        weaker=tuple(reasons),
        n_asserts=max(1, len(asserts)),
        asserts=shown,
    )


def segment(lines: list[bytes], node: ast.stmt) -> str:
    """A statement's source text (``ast.get_source_segment`` splits the whole source per call:
    quadratic over a test file of thousands of asserts)."""
    first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
    end = node.end_col_offset if node.end_col_offset is not None else len(lines[last])
    if first == last:
        text = lines[first][node.col_offset : end]
    else:
        text = lines[first][node.col_offset :] + b"".join(lines[first + 1 : last]) + lines[last][:end]
    return text.decode("utf-8", "replace")


def foreign_imports(tree: ast.AST | None) -> list[str]:
    """Imports the sandbox's interpreter cannot satisfy: it has the standard library only."""
    if tree is None:
        return []
    names: list[str] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            names += [a.name for a in n.names]
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            names.append(n.module)
    top = sorted({m.split(".")[0] for m in names} - set(sys.stdlib_module_names))
    return [f"import {m}, which is not in the standard library (the sandbox has nothing else)" for m in top]


def _stub(node: ast.FunctionDef) -> bool:
    body = [
        s
        for s in node.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str))
    ]
    return all(isinstance(s, ast.Pass) for s in body)


def plan_stdio(cases: Any) -> CheckPlan:
    """A plan for stdin/stdout tests: ``[{"input": ..., "output": ...}, ...]`` or APPS-style
    ``{"inputs": [...], "outputs": [...]}``."""
    if isinstance(cases, Mapping) and "inputs" in cases and "outputs" in cases:
        ins, outs = cases["inputs"], cases["outputs"]
        if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs):
            raise BadTestsError("inputs and outputs must be lists of the same length")
        cases = [{"input": i, "output": o} for i, o in zip(ins, outs, strict=True)]
    if not isinstance(cases, list) or not cases:
        raise BadTestsError("stdin/stdout tests must be a non-empty list of {input, output}")
    inputs, outputs = [], []
    for i, c in enumerate(cases):
        if not isinstance(c, Mapping) or not isinstance(c.get("input"), str) or not isinstance(c.get("output"), str):
            raise BadTestsError(f"test case {i} must be an object with string 'input' and 'output'")
        inputs.append(c["input"])
        outputs.append(c["output"])
    return CheckPlan("stdio", inputs=tuple(inputs), outputs=tuple(outputs))
