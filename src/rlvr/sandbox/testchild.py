"""The test child: runs a row's test file in real CPython, against the candidate child through a
proxy. Standard library only; loaded by ``harness.py`` inside the worker's interpreter (never
imported by the trainer), and run after its isolation layers are applied (its own uid, not the
candidate's).

- The program's global names become values in the test's namespace: plain data decoded into
  fresh builtins, a ``Handle`` for anything else, and the test child's *own* import of a standard
  module or class the program imported (``math``, ``Counter``): never the program's copy.
- A ``Handle`` forwards every operation (call, attribute, item, iteration, operators, ``len``,
  ``bool``, ``hash``, ``str``, ...) to the candidate child as a request and decodes the answer
  strictly (``wire.decode``). Comparisons are the exception: a handle compared with anything but
  another handle is equal only to itself, so an expected value never leaves this process.
  ``x in handle`` iterates the handle here. The candidate's exceptions come back as the same
  builtin type with their message; a call's list, dict, set, bytearray and deque arguments are
  written back after the call.
- Each ``assert`` is rewritten to report its result on the result pipe (fd 6) the moment it is
  decided: ``{"at": [line, col], "ok": true}``, or ``ok: false`` with ``got``/``want`` reprs
  (made here, never by asking the candidate) or the exception that stopped it. The last record
  is ``{"end": "passed"}``, ``{"end": "raised", "exc": ...}`` or ``{"end": "gone", ...}`` (the
  candidate child ended or broke the protocol).
"""

from __future__ import annotations

import ast
import builtins
import importlib
import os
import reprlib
from typing import Any

import proxy  # type: ignore[import-not-found]  # sibling modules, loaded by the harness
import wire  # type: ignore[import-not-found]
from proxy import Gone, Handle, Link, rebuild  # type: ignore[import-not-found]

MAX_PASS_RECORDS = 2000  # passing asserts reported one by one; later ones are counted
REPR = reprlib.Repr()
REPR.maxstring = REPR.maxother = 160
REPR.maxlist = REPR.maxtuple = REPR.maxset = REPR.maxfrozenset = REPR.maxdict = REPR.maxdeque = 12
REPR.maxlevel = 4
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def show(x: Any) -> str:
    """A short repr for the review page, made here (a handle is never asked for its repr)."""
    if type(x) is Handle:
        return f"<object of the program's, handle {object.__getattribute__(x, '_n')}>"
    try:
        return REPR.repr(x)[:300]
    except Exception:  # noqa: BLE001 - display only
        return f"<{type(x).__name__}>"


class Reporter:
    """Writes the assert records on the result pipe. A failure is written the moment it is
    decided (it is final); passes, which decide nothing on their own, are written with the next
    failure, every 64, or with the end record: one write instead of one per assert."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.sent = 0
        self.passed = 0
        self.failed = 0
        self.pending: list[dict[str, Any]] = []

    def put(self, rec: dict[str, Any]) -> None:
        self.pending.append(rec)
        wire.send_many(self.fd, self.pending)
        self.pending = []

    def result(
        self, at: list[int], ok: bool, got: Any = None, want: Any = None, exc: BaseException | None = None
    ) -> None:
        if ok:
            self.passed += 1
            if self.sent < MAX_PASS_RECORDS:
                self.sent += 1
                self.pending.append({"at": at, "ok": True})
                if len(self.pending) >= 64:
                    wire.send_many(self.fd, self.pending)
                    self.pending = []
            return
        self.failed += 1
        rec: dict[str, Any] = {"at": at, "ok": False}
        if exc is not None:
            rec["exc"] = describe_exc(exc)
            rec["mem"] = isinstance(exc, MemoryError)
        else:
            rec["got"], rec["want"] = show(got), show(want)
        self.sent += 1
        self.put(rec)


def describe_exc(exc: BaseException) -> str:
    try:
        text = str(exc)[:300]
    except Exception:  # noqa: BLE001
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


REPORT: Reporter | None = None


TOLERANCE = 0.0  # the task's float_tolerance: == and != in an assert accept floats this close


def close(a: Any, b: Any) -> bool:
    """``a == b``, with floats compared within ``TOLERANCE`` (through lists, tuples and dicts)."""
    if isinstance(a, float) or isinstance(b, float):
        if type(a) in (int, float) and type(b) in (int, float):
            return bool(a == b or abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b)))
    if type(a) in (list, tuple) and type(b) is type(a) and len(a) == len(b):
        return all(close(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is dict and type(b) is dict and a.keys() == b.keys():
        return all(close(a[k], b[k]) for k in a)
    return bool(a == b)


def _rlvr_cmp(at: list[int], left: Any, right: Any, op: str) -> bool:
    if TOLERANCE and op in ("==", "!="):
        ok = close(left, right) == (op == "==")
    else:
        ok = bool(_CMP_FN[op](left, right))
    assert REPORT is not None
    REPORT.result(at, ok, left, right)
    return ok


def _rlvr_truth(at: list[int], value: Any) -> bool:
    ok = bool(value)
    assert REPORT is not None
    REPORT.result(at, ok, value, True)
    return ok


def _rlvr_raised(at: list[int], exc: BaseException) -> None:
    if isinstance(exc, Gone):
        return  # the candidate ended: the end record says so, and the worker measured why
    assert REPORT is not None
    REPORT.result(at, False, exc=exc)


_CMP_FN = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class Instrument(ast.NodeTransformer):
    """``assert test, msg`` -> evaluate, report at once, then raise as Python would."""

    def visit_Assert(self, node: ast.Assert) -> Any:
        def at() -> ast.List:
            return ast.List([ast.Constant(node.lineno), ast.Constant(node.col_offset)], ast.Load())

        t = node.test
        if TOLERANCE:
            t = Tolerant().visit(t)
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and type(t.ops[0]) in _CMP:
            check = _call("_rlvr_cmp", [at(), t.left, t.comparators[0], ast.Constant(_CMP[type(t.ops[0])])])
        else:
            check = _call("_rlvr_truth", [at(), t])
        ok = ast.Name("_rlvr_ok", ast.Store())
        handler = ast.ExceptHandler(
            ast.Name("BaseException", ast.Load()),
            "_rlvr_e",
            [ast.Expr(_call("_rlvr_raised", [at(), ast.Name("_rlvr_e", ast.Load())])), ast.Raise()],
        )
        fail = ast.Raise(_call("AssertionError", [node.msg] if node.msg else []))
        out = [
            ast.Try([ast.Assign([ok], check)], [handler], [], []),
            ast.If(ast.UnaryOp(ast.Not(), ast.Name("_rlvr_ok", ast.Load())), [fail], []),
        ]
        for n in out:
            ast.copy_location(n, node)
        return out


class Tolerant(ast.NodeTransformer):
    """With a float tolerance, every ``a == b`` / ``a != b`` inside an assert uses ``close``."""

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in (ast.Eq, ast.NotEq):
            return _call("_rlvr_eq", [node.left, node.comparators[0], ast.Constant(_CMP[type(node.ops[0])])])
        return node


def _rlvr_eq(left: Any, right: Any, op: str) -> bool:
    return close(left, right) == (op == "==")


def _call(name: str, args: list[ast.expr]) -> ast.Call:
    return ast.Call(ast.Name(name, ast.Load()), args, [])


def bind_globals(link: Link, names: list[Any], ns: dict[str, Any], used: set[str], entry: str | None) -> None:
    """The program's global names, as the test sees them. A name that shadows a builtin (a
    program's ``isinstance`` that always says True) is bound only when it is the row's entry
    point or, without one, when the tests call no other name of the program (MBPP's ``def sum``):
    otherwise the test's ``isinstance`` stays Python's. Names of the instrumentation are never
    the program's."""
    items = []
    for item in names:
        if type(item) is not list or len(item) < 3 or type(item[0]) is not str:
            raise Gone("the candidate's process sent malformed names")
        items.append(item)
    shadow = {it[0] for it in items if hasattr(builtins, it[0])}
    api = {it[0] for it in items if it[0] in used and it[0] not in shadow}
    allowed = ({entry} & shadow) if entry else (shadow & used if not api else set())
    for item in items:
        name, kind = item[0], item[1]
        if name.startswith("_rlvr_") or (name in shadow and name not in allowed):
            continue
        try:
            if kind == "module":
                ns[name] = importlib.import_module(str(item[2]))
            elif kind == "class" and len(item) == 4:
                obj: Any = importlib.import_module(str(item[2]))
                for part in str(item[3]).split("."):
                    obj = getattr(obj, part)
                if not isinstance(obj, type):
                    raise TypeError("not a class")
                ns[name] = obj
            else:
                ns[name] = link.dec(item[2])
        except (ImportError, AttributeError, TypeError):
            continue  # left unbound: a test that uses it raises NameError, as it would without it


def run(job: dict[str, Any], link: Link, report: Reporter) -> dict[str, Any]:
    """Run the test file; the end record."""
    tree = ast.parse(job["tests"], "<tests>")
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    tree = ast.fix_missing_locations(Instrument().visit(tree))
    code = compile(tree, "<tests>", "exec")
    ns: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "_rlvr_cmp": _rlvr_cmp,
        "_rlvr_truth": _rlvr_truth,
        "_rlvr_raised": _rlvr_raised,
        "_rlvr_eq": _rlvr_eq,
    }
    try:
        ans = link.ask(["load", job["code"]])
        if ans[0] != "ok" or len(ans) < 2 or type(ans[1]) is not list:
            exc = rebuild(ans[1], ans[2]) if ans[0] == "exc" and len(ans) == 3 and type(ans[1]) is list else None
            return {
                "end": "raised",
                "exc": "the program raised " + describe_exc(exc) if exc else "the program did not load",
            }
        bind_globals(link, ans[1], ns, used, job.get("entry") if job.get("check") else None)
        if job.get("helpers"):
            exec(compile(job["helpers"], "<prompt>", "exec"), ns)  # noqa: S102 - the row's own helpers
        exec(code, ns)  # noqa: S102 - the row's test file, in this sandboxed process
        if job.get("check"):
            ns["check"](ns[job["entry"]])
    except Gone as exc:
        return {"end": "gone", "why": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - the test did not complete: it did not pass
        if link.gone:
            return {"end": "gone", "why": link.gone}
        return {"end": "raised", "exc": describe_exc(exc)}
    return {"end": "passed"}


def main(job_fd: int = 3, req_fd: int = 4, ans_fd: int = 5, res_fd: int = 6) -> None:
    """Read the job, run it, report; the worker ends the session when fd 6 closes."""
    global REPORT, TOLERANCE
    job = wire.recv(job_fd, 1 << 30)
    TOLERANCE = float(job.get("tol") or 0.0)
    proxy.LINK = link = Link(req_fd, ans_fd)
    REPORT = Reporter(res_fd)
    end = run(job, link, REPORT)
    end["passed"], end["failed"] = REPORT.passed, REPORT.failed
    REPORT.put(end)
    os.close(req_fd)  # the candidate child sees end of file and stops
