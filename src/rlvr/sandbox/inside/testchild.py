"""The test child: runs a row's test file in real CPython, against the candidate child through a
proxy, after its isolation layers are applied (its own uid, not the candidate's; the inside
package: standard library only, see its ``__init__``).

- **It acts on nothing the program says.** The names it binds are the free names of the test
  file and the prompt's helpers, plus the task's entry point; it asks the candidate child for
  those and binds the answers (plain data, or a handle: see ``proxy.py``). A standard module or
  name the program imports at its top level (``import math``, ``from typing import List``) is
  bound to this process's own import, found by parsing the program's source here, never from
  what the candidate's process answers.
- Each ``assert`` is rewritten to report its result on the result pipe (fd 6) the moment it is
  decided: ``{"at": [line, col], "ok": true}`` the first time a statement passes, ``ok: false``
  with ``got``/``want`` reprs (made here, ``quiet``: a handle is never asked for its repr) or the
  exception that stopped it, the first time it fails. A failed statement stays failed.
- The last record is ``{"end": "passed"}``, ``{"end": "raised", "exc": ...}``, ``{"end": "gone",
  ...}`` (the candidate child ended or broke the protocol) or ``{"end": "unsupported", "what":
  ...}`` (a construct the boundary cannot keep exact). ``gone`` and ``unsupported`` are written
  where they happen and this process exits there (``end_now``): no ``except`` in the test runs.
"""

from __future__ import annotations

import ast
import base64
import builtins
import importlib
import marshal
import os
import reprlib
import sys
from importlib.util import MAGIC_NUMBER
from types import CodeType
from typing import Any, NoReturn

from . import claims, frames, proxy, wire
from .proxy import Handle, Link
from .tolerance import numbers_close

REPR = reprlib.Repr()
REPR.maxstring = REPR.maxother = 160
REPR.maxlist = REPR.maxtuple = REPR.maxset = REPR.maxfrozenset = REPR.maxdict = REPR.maxdeque = 12
REPR.maxlevel = 4
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def show(x: Any) -> str:
    """A short repr for the review page, made here: quiet, so a handle anywhere inside (a list's
    item, an exception's argument, an object of the test's that holds one) is never asked."""
    if type(x) is Handle:
        return f"<the program's {object.__getattribute__(x, '_t')}>"
    link = proxy.LINK
    if link is not None:
        link.quiet = True
    try:
        return REPR.repr(x)[:300]
    except (Exception, RecursionError):  # noqa: BLE001 - display only (Quiet included)
        return f"<{type(x).__name__}>"
    finally:
        if link is not None:
            link.quiet = False


class Reporter:
    """Writes the assert records on the result pipe, one per statement: its first pass (written
    with the next failure, every 64, or with the end record) and its first failure (written the
    moment it is decided: it is final). Partial credit counts statements, not executions."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.ok: set[tuple[int, int]] = set()
        self.bad: set[tuple[int, int]] = set()
        self.pending: list[dict[str, Any]] = []

    def put(self, rec: dict[str, Any]) -> None:
        self.pending.append(rec)
        frames.send_many(self.fd, self.pending)
        self.pending = []

    def result(
        self, at: list[int], ok: bool, got: Any = None, want: Any = None, exc: BaseException | None = None
    ) -> None:
        key = (at[0], at[1])
        if proxy.LINK is not None and proxy.LINK.shared:
            proxy.LINK.check_shared()  # a verdict on a stale copy would not be CPython's
        if ok:
            if key not in self.ok and key not in self.bad:
                self.ok.add(key)
                self.pending.append({"at": at, "ok": True})
                if len(self.pending) >= 64:
                    frames.send_many(self.fd, self.pending)
                    self.pending = []
            return
        if key in self.bad:
            return
        self.bad.add(key)
        rec: dict[str, Any] = {"at": at, "ok": False}
        if exc is not None:
            rec["exc"] = describe_exc(exc)
        else:
            rec["got"], rec["want"] = show(got), show(want)
        self.put(rec)

    def end(self, rec: dict[str, Any]) -> None:
        rec["passed"], rec["failed"] = len(self.ok - self.bad), len(self.bad)
        self.put(rec)


def describe_exc(exc: BaseException) -> str:
    link = proxy.LINK
    if link is not None:
        link.quiet = True
    try:
        text = str(exc)[:300]
    except (Exception, RecursionError):  # noqa: BLE001 - display only (Quiet included)
        text = ""
    finally:
        if link is not None:
            link.quiet = False
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


REPORT: Reporter | None = None
TOLERANCE = 0.0  # the task's float_tolerance: == and != in an assert accept floats this close


def end_now(rec: dict[str, Any]) -> NoReturn:
    """Write the end record and exit at once: no ``except`` or ``finally`` of the test runs."""
    assert REPORT is not None
    REPORT.end(rec)
    os._exit(0)


def close(a: Any, b: Any) -> bool:
    """``a == b``, with numbers compared by ``tolerance.numbers_close`` when one is a float
    (through lists, tuples and dicts of the same shape)."""
    if (type(a) is float or type(b) is float) and type(a) in (int, float) and type(b) in (int, float):
        try:
            return numbers_close(float(a), float(b), TOLERANCE, TOLERANCE)
        except OverflowError:  # an int beyond the double range: only exact equality
            return bool(a == b)
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
    """``assert test, msg`` -> evaluate, report at once, then raise as Python would. ``tolerant``:
    the task has a float tolerance (every ``==`` / ``!=`` inside an assert uses ``close``)."""

    def __init__(self, tolerant: bool = False) -> None:
        self.tolerant = tolerant

    def visit_Assert(self, node: ast.Assert) -> Any:
        def at() -> ast.List:
            return ast.List([ast.Constant(node.lineno), ast.Constant(node.col_offset)], ast.Load())

        t = node.test
        tol = Tolerant().visit if self.tolerant else (lambda n: n)
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and type(t.ops[0]) in _CMP:
            # _rlvr_cmp applies the tolerance to this comparison itself (and reports both sides).
            parts = [tol(t.left), tol(t.comparators[0])]
            check = _call("_rlvr_cmp", [at(), *parts, ast.Constant(_CMP[type(t.ops[0])])])
        else:
            check = _call("_rlvr_truth", [at(), tol(t)])
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


class TypeCalls(ast.NodeTransformer):
    """``type(x)`` -> ``_rlvr_type(x)`` (``claims.exact_type``): refused for an exception that
    stands in for a builtin class it could not be rebuilt as exactly, the program's answer for
    its object; ``isinstance(x, c)`` -> ``_rlvr_isinstance`` (``claims.exact_isinstance``).
    Applied only to the names the test file never binds itself (``names``)."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Name) and f.id in self.names and not node.keywords:
            if f.id == "type" and len(node.args) == 1:
                return ast.copy_location(_call("_rlvr_type", node.args), node)
            if f.id == "isinstance" and len(node.args) == 2:
                return ast.copy_location(_call("_rlvr_isinstance", node.args), node)
        return node


class ClassReads(ast.NodeTransformer):
    """``x.__class__`` and ``getattr(x, "__class__")`` read -> ``_rlvr_class(x)``
    (``claims.exact_class``): the attribute is found on the proxy's own class before any request
    could ask the program, so it is rewritten where the test file names it (``getattr`` only when
    the test file never binds that name itself: ``getattr``)."""

    def __init__(self, getattr: bool) -> None:
        self.getattr = getattr

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        self.generic_visit(node)
        if node.attr == "__class__" and isinstance(node.ctx, ast.Load):
            return ast.copy_location(_call("_rlvr_class", [node.value]), node)
        return node

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        f, args = node.func, node.args
        if self.getattr and isinstance(f, ast.Name) and f.id == "getattr" and len(args) == 2 and not node.keywords:
            if isinstance(args[1], ast.Constant) and args[1].value == "__class__":
                return ast.copy_location(_call("_rlvr_class", [args[0]]), node)
        return node


class IdentityCompares(ast.NodeTransformer):
    """``a is b`` / ``a is not b`` (one operator, neither side a ``None``, ``True``, ``False`` or
    ``...`` literal) -> ``_rlvr_is(a, b)`` (``claims.exact_is``): values cross as copies, so two
    equal ones are refused rather than answered ``False``. A chain (``a is b is c``) stays as
    written."""

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        if len(node.ops) != 1 or type(node.ops[0]) not in (ast.Is, ast.IsNot):
            return node
        sides = (node.left, node.comparators[0])
        if any(isinstance(x, ast.Constant) and any(x.value is c for c in (None, True, False, ...)) for x in sides):
            return node  # a singleton: exact as written
        check: ast.expr = _call("_rlvr_is", list(sides))
        if type(node.ops[0]) is ast.IsNot:
            check = ast.UnaryOp(ast.Not(), check)
        return ast.copy_location(check, node)


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


def free_names(*trees: ast.AST) -> set[str]:
    """Names the trees read and never bind anywhere (assignment, def, class, import, argument):
    the only names the test child asks the program for."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for tree in trees:
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(n.name)
            elif isinstance(n, ast.arg):
                bound.add(n.arg)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                bound |= {(a.asname or a.name).split(".")[0] for a in n.names}
            elif isinstance(n, ast.ExceptHandler) and n.name:
                bound.add(n.name)
    return {n for n in loaded - bound if not n.startswith(("_rlvr_", "__"))}


def program_facts(code: str) -> tuple[dict[str, tuple[str, str | None]], set[str]]:
    """From the program's source, parsed here (never asked of the program): the standard-library
    names it imports at its top level (name -> (module, attribute or None)), and the names its
    functions declare ``global`` or ``nonlocal`` (a call may rebind them)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}, set()
    out: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in sys.stdlib_module_names:
                    out[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if node.module.split(".")[0] in sys.stdlib_module_names:
                for a in node.names:
                    if a.name != "*":
                        out[a.asname or a.name] = (node.module, a.name)
    rebound = {n for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names}
    return out, rebound


_IMMUTABLE = (int, float, complex, str, bytes, bool, type(None), range, type)


def immutable(x: Any, depth: int = 0) -> bool:
    """Plain data no call can change in place (tuples and frozensets of such)."""
    if type(x) in _IMMUTABLE or type(x).__name__ in ("Fraction", "Decimal"):
        return True
    if type(x) in (tuple, frozenset) or (isinstance(x, tuple) and hasattr(type(x), "_fields")):
        return depth < 100 and all(immutable(v, depth + 1) for v in x)
    return False


def bind(link: Link, code: str, wanted: set[str], ns: dict[str, Any], entry: str | None) -> None:
    """The program's names the tests read. A standard import of the program's is this process's
    own import. A name that shadows a builtin (a program's ``isinstance`` that always says True)
    is bound only when it is the row's entry point or, without one, when the tests read no other
    name of the program (MBPP's ``def sum``): otherwise the test's ``isinstance`` stays Python's.

    The program's text is parsed here (``program_facts``) only when an answer needs it: when
    every name comes back as a function of the program shadowing no builtin (a row's entry
    point, nearly always), neither of its facts can change a binding: an imported function
    bound to that name is the program's to call, as in CPython, and only plain data can go
    stale. The answers' kinds decide only whether to parse, never what is bound: a program that
    calls a module or plain value a function gets a handle that can only be called."""
    ans = link.ask(["load", code, sorted(wanted)])
    if ans[0] == "exc":
        end_now({"end": "raised", "exc": "the program raised " + describe_exc(link.rebuild(ans))})
    if ans[0] == "unsupported" and len(ans) == 2 and type(ans[1]) is str:
        link.refuse(ans[1])
    if ans[0] != "ok" or len(ans) < 2 or type(ans[1]) is not list:
        link.gone("the candidate's process sent a malformed answer to load")
    given = {}
    for item in ans[1]:
        if type(item) is not list or len(item) != 2 or item[0] not in wanted:
            link.gone("the candidate's process sent a malformed name")
        given[item[0]] = item[1]
    rebound: set[str] = set()
    if not all(_a_function(value) and not hasattr(builtins, name) for name, value in given.items()):
        imports, rebound = program_facts(code)
        for name in sorted(wanted & imports.keys()):
            given.pop(name, None)
            module, attr = imports[name]
            try:
                obj: Any = importlib.import_module(module)
                ns[name] = getattr(obj, attr) if attr else obj
            except (ImportError, AttributeError):
                continue  # left unbound: the test raises NameError
    shadow = {n for n in given if hasattr(builtins, n)}
    api = set(given) - shadow
    allowed = ({entry} & shadow) if entry else (shadow if not api else set())
    for name, value in given.items():
        if name in shadow and name not in allowed:
            continue
        try:
            ns[name] = link.dec(value)
        except wire.WireLimit as exc:
            link.refuse(f"the program's {name!r} is beyond the wire's limits ({exc})")
        except wire.WireError as exc:
            link.gone(f"the candidate's process sent a bad value: {exc}")
        if type(ns[name]) is not Handle and (name in rebound or not immutable(ns[name])):
            # A copy taken at load time would go stale when a call changes it: CPython's test
            # would see the change.
            link.refuse(f"the test reads the program's global {name!r}, a value a call can change")


def _a_function(value: Any) -> bool:
    """A load answer that is a handle of kind ``f`` (``wire``'s ``["h", n, "f", name]``)."""
    return type(value) is list and len(value) == 4 and value[0] == "h" and value[2] == "f"


def prepare(tests: str, helpers: str, entry: str | None, tolerant: bool) -> tuple[CodeType, CodeType, set[str]]:
    """The row's test file instrumented and compiled, the prompt's helpers compiled, and the names
    to ask the program for (their free names, and ``entry`` when ``check(entry)`` is called).
    The same for every sample of a row: the trainer makes it once (``checks.tests_job``, sent
    marshalled when this interpreter's bytecode is the trainer's), else it is made here."""
    tree = ast.parse(tests, "<tests>")
    htree = ast.parse(helpers or "", "<prompt>")
    wanted = free_names(tree, htree) | ({entry} if entry else set())
    if wanted & {"type", "isinstance"}:
        tree = TypeCalls(wanted & {"type", "isinstance"}).visit(tree)
    if "__class__" in tests:
        tree = ClassReads("getattr" in wanted).visit(tree)
    tree = IdentityCompares().visit(tree)
    tree = ast.fix_missing_locations(Instrument(tolerant).visit(tree))
    return compile(tree, "<tests>", "exec"), compile(htree, "<prompt>", "exec"), wanted


def prepared(job: dict[str, Any]) -> tuple[CodeType, CodeType, set[str]]:
    """``prepare`` for this job: the trainer's, when it is this interpreter's bytecode."""
    entry = job.get("entry") if job.get("check") else None
    pre = job.get("pre")
    if isinstance(pre, dict) and pre.get("magic") == MAGIC_NUMBER.hex():
        code, helpers = marshal.loads(base64.b64decode(pre["code"])), marshal.loads(base64.b64decode(pre["helpers"]))
        return code, helpers, set(pre["wanted"])
    return prepare(job["tests"], job.get("helpers") or "", entry, bool(job.get("tol")))


def run(job: dict[str, Any], link: Link) -> dict[str, Any]:
    """Run the test file; the end record (``gone`` and ``unsupported`` end the process where they
    happen instead)."""
    entry = job.get("entry") if job.get("check") else None
    code, helpers, wanted = prepared(job)
    ns: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "_rlvr_cmp": _rlvr_cmp,
        "_rlvr_truth": _rlvr_truth,
        "_rlvr_raised": _rlvr_raised,
        "_rlvr_eq": _rlvr_eq,
        "_rlvr_type": claims.exact_type,
        "_rlvr_isinstance": claims.exact_isinstance,
        "_rlvr_class": claims.exact_class,
        "_rlvr_is": claims.exact_is,
    }
    try:
        bind(link, job["code"], wanted, ns, entry)
        if job.get("helpers"):
            exec(helpers, ns)  # noqa: S102 - the row's own helpers
        exec(code, ns)  # noqa: S102 - the row's test file, in this sandboxed process
        if job.get("check"):
            ns["check"](ns[job["entry"]])
    except BaseException as exc:  # noqa: BLE001 - the test did not complete: it did not pass
        link.check_shared()
        return {"end": "raised", "exc": describe_exc(exc)}
    link.check_shared()
    return {"end": "passed"}


def main(job_fd: int = 3, req_fd: int = 4, ans_fd: int = 5, res_fd: int = 6) -> None:
    """Read the job, run it, report; the worker ends the session when fd 6 closes."""
    global REPORT, TOLERANCE
    job = frames.recv(job_fd, 1 << 30)
    TOLERANCE = float(job.get("tol") or 0.0)
    REPORT = Reporter(res_fd)
    proxy.LINK = link = Link(req_fd, ans_fd, end_now, objects=bool(job.get("objects")))
    REPORT.end(run(job, link))
    os.close(req_fd)  # the candidate child sees end of file and stops
