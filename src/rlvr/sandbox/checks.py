"""Trusted-side test plans and verdicts: the child returns outputs, this module decides.

Assert-style tests are parsed with ``ast`` (never executed here) and turned into pairs of a call
expression, which runs in the child, and an expected value, which is evaluated *here* from
literals and arithmetic only and never enters the child. Converted forms:

- ``assert CALL == EXPECTED`` (either side), ``!=``, ``assert CALL is None/True/False``;
- ``assert abs(CALL - EXPECTED) < TOL`` (also ``<=``, ``math.fabs``, either operand order);
- ``assert CALL`` / ``assert not CALL`` (truthiness of the *decoded* value, decided here).

Everything else (loops, helpers, expected values computed by code) stays *residual*: it runs in
the child and its pass/fail comes back from there, so it is forgeable by code that patches the
interpreter. Such a plan is flagged ``weaker`` and the verdict says so.

Values come back as tagged JSON (``harness.encode``) and are decoded into plain builtins, so an
object with ``__eq__`` returning True, or a subclass of ``int``, never reaches a comparison.
Types are compared exactly, with one approximation: an ``int`` and a ``float`` that are equal
compare equal (as Python's ``==`` does; HumanEval's canonical solutions rely on it). ``bool`` is
never equal to ``int``. Floats compare exactly unless a tolerance is given (by the test or the
``float_tolerance`` option).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MAX_EXPECTED_ITEMS = 1_000_000


@dataclass(frozen=True)
class Pair:
    """One converted test: ``call`` runs in the child; ``op`` and ``expected`` are decided here."""

    call: str
    expected: Any = None
    op: str = "eq"  # eq | ne | lt | le (abs difference against tol) | truthy | falsy
    tol: float = 0.0


@dataclass(frozen=True)
class CheckPlan:
    """What a sample is checked against. ``calls`` mode uses ``setup`` + ``pairs`` (+ ``residual``);
    ``stdio`` mode uses ``inputs`` and ``outputs``."""

    mode: str
    setup: str = ""
    pairs: tuple[Pair, ...] = ()
    residual: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    @property
    def weaker(self) -> bool:
        return bool(self.residual)

    @property
    def n_tests(self) -> int:
        if self.mode == "stdio":
            return len(self.inputs)
        return len(self.pairs) + (1 if self.residual else 0)


@dataclass(frozen=True)
class Judgement:
    """``status``: passed | failed | memory. ``passed`` of ``total`` tests."""

    status: str
    passed: int
    total: int
    detail: str = ""


class BadTestsError(ValueError):
    """The tests of a row cannot be parsed (a ground-truth problem, not the sample's)."""


# -- safe evaluation of expected values (no names, no calls except a few constructors) --------
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}


class _NotLiteral(Exception):
    pass


def literal(node: ast.AST) -> Any:
    """Evaluate literals and arithmetic on them; raise ``_NotLiteral`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [literal(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else list(items) if isinstance(node, ast.List) else set(items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _NotLiteral
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        v = literal(node.operand)
        return -v if isinstance(node.op, ast.USub) else +v if isinstance(node.op, ast.UAdd) else not v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = literal(node.left), literal(node.right)
        if isinstance(node.op, ast.Pow) and (not isinstance(b, (int, float)) or abs(b) > 256):
            raise _NotLiteral
        if isinstance(node.op, ast.Mult) and any(isinstance(x, (str, bytes, list, tuple)) for x in (a, b)):
            n = b if isinstance(b, int) else a
            if not isinstance(n, int) or n > MAX_EXPECTED_ITEMS:
                raise _NotLiteral
        try:
            return _BINOPS[type(node.op)](a, b)
        except Exception as exc:  # noqa: BLE001
            raise _NotLiteral from exc
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, [literal(a) for a in node.args]
        if name == "float" and len(args) == 1 and isinstance(args[0], (str, int, float)):
            try:
                return float(args[0])
            except ValueError as exc:
                raise _NotLiteral from exc
        if name in ("set", "frozenset", "tuple", "list") and len(args) <= 1:
            return {"set": set, "frozenset": frozenset, "tuple": tuple, "list": list}[name](*args)
    raise _NotLiteral


def _is_literal(node: ast.AST) -> bool:
    try:
        literal(node)
        return True
    except (_NotLiteral, RecursionError):
        return False


# -- assert conversion ---------------------------------------------------------------------------
def _abs_diff(node: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """``abs(A - B)`` / ``math.fabs(A - B)`` -> (A, B)."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords):
        return None
    f = node.func
    ok = (isinstance(f, ast.Name) and f.id == "abs") or (isinstance(f, ast.Attribute) and f.attr == "fabs" and isinstance(f.value, ast.Name) and f.value.id == "math")
    arg = node.args[0]
    if ok and isinstance(arg, ast.BinOp) and isinstance(arg.op, ast.Sub):
        return arg.left, arg.right
    return None


def convert_assert(test: ast.expr) -> Pair | None:
    """A pair for one assert's test expression, or None when it cannot be decided here."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(op, (ast.Eq, ast.NotEq)):
            for call, exp in ((left, right), (right, left)):
                if _is_literal(exp) and not _is_literal(call):
                    return Pair(ast.unparse(call), literal(exp), "eq" if isinstance(op, ast.Eq) else "ne")
            return None
        if isinstance(op, ast.Is) and isinstance(right, ast.Constant) and right.value in (None, True, False) and not _is_literal(left):
            return Pair(ast.unparse(left), right.value, "eq")
        if isinstance(op, (ast.Lt, ast.LtE)) and _is_literal(right):
            parts = _abs_diff(left)
            tol = literal(right)
            if parts and isinstance(tol, (int, float)) and not isinstance(tol, bool):
                a, b = parts
                for call, exp in ((a, b), (b, a)):
                    if _is_literal(exp) and not _is_literal(call):
                        value = literal(exp)
                        if isinstance(value, (int, float)) and not isinstance(value, bool):
                            return Pair(ast.unparse(call), value, "lt" if isinstance(op, ast.Lt) else "le", float(tol))
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and not _is_literal(test.operand):
        return Pair(ast.unparse(test.operand), None, "falsy")
    if isinstance(test, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)) and not _is_literal(test):
        return Pair(ast.unparse(test), None, "truthy")
    return None


def _stored(nodes: Sequence[ast.AST]) -> set[str]:
    out: set[str] = set()
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
                out.add(sub.id)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(sub.name)
            elif isinstance(sub, ast.arg):
                out.add(sub.arg)
    return out


def _loaded(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _references(node: ast.AST, names: set[str]) -> bool:
    return bool(_loaded(node) & names)


def plan_asserts(test_code: str, entry_point: str | None = None) -> CheckPlan:
    """A plan for assert-style tests: HumanEval's ``def check(candidate): ...`` or plain
    module-level asserts (MBPP). Raises ``BadTestsError`` when the code does not parse."""
    try:
        tree = ast.parse(test_code)
    except SyntaxError as exc:
        raise BadTestsError(f"the tests do not parse: {exc.msg} (line {exc.lineno})") from None
    check = next((s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"), None)
    if check is not None:
        module = [s for s in tree.body if s is not check and not _calls_check(s)]
        body = check.body
        params = [a.arg for a in check.args.args]
        alias = params[0] if params else "candidate"
        if not entry_point:
            raise BadTestsError("the tests define check(candidate) but the row names no entry point")
        setup_nodes: list[ast.stmt] = list(module)
        local_names = _stored(body) - {alias}
        hoisted = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))]
        setup = ast.unparse(ast.Module(body=setup_nodes + hoisted, type_ignores=[]))
        setup += f"\n{alias} = {entry_point}\n"
        blocked = local_names - _stored(hoisted)
    else:
        body = [s for s in tree.body if isinstance(s, ast.Assert)]
        others = [s for s in tree.body if not isinstance(s, ast.Assert)]
        setup = ast.unparse(ast.Module(body=others, type_ignores=[]))
        blocked = set()
    pairs: list[Pair] = []
    residual: list[ast.stmt] = []
    for stmt in body:
        if isinstance(stmt, ast.Assert):
            if _is_literal(stmt.test):
                continue  # `assert True`: tests nothing about the sample
            pair = convert_assert(stmt.test)
            if pair is not None and not _references(stmt.test, blocked):
                pairs.append(pair)
                continue
        if check is not None and isinstance(stmt, (ast.Import, ast.ImportFrom)):
            continue  # hoisted into the setup
        residual.append(stmt)
    has_assert = any(isinstance(n, (ast.Assert, ast.Raise)) for s in residual for n in ast.walk(s))
    residual_code = ""
    if has_assert:
        inner = ast.unparse(ast.Module(body=residual, type_ignores=[]))
        indented = "\n".join("    " + line for line in inner.splitlines())
        residual_code = f"def __rlvr_residual():\n{indented}\n__rlvr_residual()\n"
    if not pairs and not residual_code:
        raise BadTestsError("the tests contain no assert that checks the sample")
    return CheckPlan("calls", setup=setup, pairs=tuple(pairs), residual=residual_code)


def _calls_check(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id == "check"


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


# -- decoding and comparing ---------------------------------------------------------------------
class Opaque:
    """A value the child could not express as plain data (a custom object): equal to nothing."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<{self.name} object>"


def decode(t: Any, depth: int = 0) -> Any:
    """Tagged JSON -> plain builtins. Raises ValueError on anything malformed."""
    if depth > 100 or not isinstance(t, list) or not t or not isinstance(t[0], str):
        raise ValueError("malformed value")
    tag = t[0]
    v = t[1] if len(t) > 1 else None
    if tag == "n":
        return None
    if tag == "b" and type(v) is bool:
        return v
    if tag == "i" and type(v) in (int, str):
        return int(v)
    if tag == "f" and type(v) is str:
        return float(v)
    if tag == "s" and type(v) is str:
        return v
    if tag in ("l", "t", "S", "F") and type(v) is list:
        items = [decode(x, depth + 1) for x in v]
        return {"l": list, "t": tuple, "S": set, "F": frozenset}[tag](items)
    if tag == "d" and type(v) is list:
        return {decode(k, depth + 1): decode(x, depth + 1) for k, x in v}
    if tag == "y" and type(v) is str:
        return bytes.fromhex(v)
    if tag == "c" and len(t) == 3:
        return complex(float(t[1]), float(t[2]))
    if tag == "?":
        return Opaque(str(v))
    raise ValueError(f"malformed value tag {tag!r}")


def same(got: Any, exp: Any, tol: float = 0.0) -> bool:
    """Exact-type equality of plain values (see the module docstring for the int/float rule)."""
    tg, te = type(got), type(exp)
    if tg is bool or te is bool:
        return tg is te and got == exp
    if tg in (int, float) and te in (int, float):
        if got == exp:
            return True
        return bool(tol) and math.isclose(float(got), float(exp), rel_tol=tol, abs_tol=tol)
    if tg is not te:
        return False
    if tg in (list, tuple):
        return len(got) == len(exp) and all(same(a, b, tol) for a, b in zip(got, exp, strict=True))
    if tg is dict:
        return got.keys() == exp.keys() and all(same(got[k], exp[k], tol) for k in exp)
    if tg is complex:
        return got == exp
    return bool(got == exp)


def _check_pair(pair: Pair, value: Any, tol: float) -> bool:
    if isinstance(value, Opaque):
        return False
    if pair.op == "eq":
        return same(value, pair.expected, tol)
    if pair.op == "ne":
        return not same(value, pair.expected, tol)
    if pair.op in ("lt", "le"):
        if type(value) not in (int, float):
            return False
        diff = abs(value - pair.expected)
        return diff < pair.tol if pair.op == "lt" else diff <= pair.tol
    if pair.op == "truthy":
        return bool(value)
    if pair.op == "falsy":
        return not value
    return False


def normalize_output(text: str) -> list[str]:
    """Lines with trailing whitespace removed and trailing blank lines dropped; the *whole*
    output is compared, never a prefix."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def judge(plan: CheckPlan, payload: Mapping[str, Any], float_tolerance: float = 0.0) -> Judgement:
    """Compare the child's outputs with the plan's expected values."""
    total = plan.n_tests
    load = payload.get("load")
    if load is not None:
        if load == "mem":
            return Judgement("memory", 0, total, "out of memory while loading the program")
        return Judgement("failed", 0, total, f"the program did not load: {load}")
    calls = payload.get("calls")
    expected_n = len(plan.inputs) if plan.mode == "stdio" else len(plan.pairs)
    if not isinstance(calls, list) or len(calls) != expected_n:
        return Judgement("failed", 0, total, "the sandbox returned a malformed result")
    passed, notes, memory = 0, [], False
    for i, r in enumerate(calls):
        ok = False
        if isinstance(r, list) and r and r[0] == "ok" and len(r) == 2:
            try:
                value = decode(r[1])
            except (ValueError, TypeError, RecursionError):
                value = Opaque("malformed")
            if plan.mode == "stdio":
                ok = isinstance(value, str) and normalize_output(value) == normalize_output(plan.outputs[i])
            else:
                ok = _check_pair(plan.pairs[i], value, float_tolerance)
            if not ok and len(notes) < 3:
                what = plan.pairs[i].call if plan.mode != "stdio" else f"input {i}"
                notes.append(f"{what[:80]} -> {_short(value)}")
        elif isinstance(r, list) and r and r[0] == "mem":
            memory = True
        elif isinstance(r, list) and len(r) == 2 and r[0] == "exc" and len(notes) < 3:
            what = plan.pairs[i].call if plan.mode != "stdio" else f"input {i}"
            notes.append(f"{what[:80]} raised {str(r[1])[:40]}")
        passed += ok
    if plan.residual:
        res = payload.get("residual")
        if res == "ok":
            passed += 1
        elif res == "mem":
            memory = True
        else:
            notes.append(f"in-child tests: {str(res)[:60]}")
    if memory:
        return Judgement("memory", passed, total, "out of memory during the tests")
    status = "passed" if passed == total else "failed"
    detail = f"{passed}/{total} tests passed"
    if plan.weaker:
        detail += " (1 test ran inside the sandbox: weaker, forgeable)"
    if notes:
        detail += "; " + "; ".join(notes)
    return Judgement(status, passed, total, detail)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
