"""Trusted-side test plans: a row's tests, parsed once (the G samples of a group share the plan).

Assert-style tests are parsed (never executed here at plan time); anything the trusted
interpreter does not run makes the plan *weaker*, with the reasons, so the caller can refuse the
row (the default) or run it inside the sandbox and flag the verdict (forgeable, and said so).
Stdin/stdout tests become a list of inputs and expected outputs, compared whole
(``normalize_output``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .trusted import static_reasons


class BadTestsError(ValueError):
    """The tests of a row cannot be parsed (a ground-truth problem, not the sample's)."""


@dataclass(frozen=True)
class CheckPlan:
    """What a sample is checked against. ``tests`` mode: the test source (and its parse tree),
    the entry point, the trusted prompt's helper functions; ``weaker`` lists why the trusted
    side cannot run it (empty: it can). ``stdio`` mode: inputs and expected outputs."""

    mode: str
    source: str = ""
    entry: str | None = None
    tree: Any = field(default=None, compare=False, repr=False)
    prefix_nodes: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    auto_check: bool = False
    weaker: tuple[str, ...] = ()
    n_asserts: int = 0
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
    n_asserts = sum(isinstance(n, (ast.Assert, ast.Raise)) for n in ast.walk(tree))
    if not n_asserts:
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
    reasons = static_reasons(tree)
    prefix_nodes: list[ast.stmt] = []
    if prefix.strip():
        try:
            ptree = ast.parse(prefix)
        except SyntaxError:
            ptree = None
        for node in ptree.body if ptree else []:
            # The prompt's own complete helpers (HumanEval's poly, encode_cyclic) run here, so a
            # program cannot redefine what the tests rely on. The entry point is the candidate's.
            if isinstance(node, ast.FunctionDef) and node.name != entry_point and not _stub(node):
                why = static_reasons(ast.Module(body=[node], type_ignores=[]))
                if why:
                    reasons.append(f"the prompt's helper {node.name} runs in the sandbox ({why[0]})")
                else:
                    prefix_nodes.append(node)
            elif isinstance(node, (ast.Import, ast.ImportFrom)) and not static_reasons(
                ast.Module(body=[node], type_ignores=[])
            ):
                prefix_nodes.append(node)
    return CheckPlan(
        "tests",
        source=test_code,
        entry=entry_point,
        tree=tree,
        prefix_nodes=tuple(prefix_nodes),
        auto_check=check is not None and not calls_check,
        weaker=tuple(reasons),
        n_asserts=n_asserts,
    )


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


def normalize_output(text: str) -> list[str]:
    """Lines with trailing whitespace removed and trailing blank lines dropped; the *whole*
    output is compared, never a prefix."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines
