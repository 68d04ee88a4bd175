"""Trusted-side test plans, bounded decoding of the child's answers, and the conversations that
judge a sample (``judge.py`` interprets assert-style tests; stdin/stdout is compared here).

A plan is made once per row (the G samples of a group share it). Assert-style tests are parsed
(never executed here at plan time); anything the trusted interpreter does not run makes the plan
*weaker*, with the reasons, so the caller can refuse the row (the default) or run it inside the
sandbox and flag the verdict (forgeable, and said so).

Decoding is bounded, because the answers come from the attacker: one answer is at most
``pool.MAX_FRAME`` bytes (the worker caps a sample's answers at 4 MiB in all), at most
``MAX_ITEMS`` values, ``MAX_DEPTH`` deep, integers at most ``MAX_INT_HEX`` hex digits, and at most
``MAX_SAME_HASH`` hashable values sharing one hash (a set of integers built to collide would cost
the trainer quadratic time). Decoding and judging run under a deadline. Over any limit the sample
is ``wrong``, with the reason.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_ITEMS = 200_000
MAX_DEPTH = 100
MAX_INT_HEX = 100_000
MAX_SAME_HASH = 32
MAX_STDOUT = 1 << 20


class BadTestsError(ValueError):
    """The tests of a row cannot be parsed (a ground-truth problem, not the sample's)."""


class JudgeLimit(Exception):
    """Over a size, time or count limit while decoding or judging: the sample is wrong."""


class Opaque:
    """A value the child could not express as plain data (an object of its own class): equal to
    nothing, not even itself, so its ``__eq__`` never decides anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<{self.name} object>"


_HASHED = (int, float, complex, tuple, frozenset)


def decode(t: Any) -> Any:
    """Tagged JSON -> plain builtins, within the limits above. Raises ``JudgeLimit`` over a limit
    and ``ValueError`` on anything malformed."""
    budget = [MAX_ITEMS]
    hashes: dict[int, list[Any]] = {}
    return _decode(t, 0, budget, hashes)


def _decode(t: Any, depth: int, budget: list[int], hashes: dict[int, list[Any]]) -> Any:  # noqa: C901
    budget[0] -= 1
    if budget[0] < 0:
        raise JudgeLimit(f"the answer holds more than {MAX_ITEMS} values")
    if depth > MAX_DEPTH:
        raise JudgeLimit(f"the answer is nested more than {MAX_DEPTH} deep")
    if type(t) is not list or not t or type(t[0]) is not str:
        raise ValueError("malformed value")
    tag = t[0]
    v = t[1] if len(t) > 1 else None
    if tag == "n":
        return None
    if tag == "b" and type(v) is bool:
        return v
    if tag == "s" and type(v) is str:
        return v
    if tag == "i" and type(v) is int:
        out: Any = v
    elif tag == "I" and type(v) is str:
        if len(v) > MAX_INT_HEX:
            raise JudgeLimit("an integer of more than 400,000 bits")
        out = int(v, 16)
    elif tag == "f" and type(v) is str and len(v) < 40:
        out = float(v)
    elif tag == "c" and len(t) == 3 and type(t[1]) is str and type(t[2]) is str and len(t[1]) < 40 and len(t[2]) < 40:
        out = complex(float(t[1]), float(t[2]))
    elif tag == "y" and type(v) is str:
        return bytes.fromhex(v)
    elif tag in ("l", "t", "S", "F") and type(v) is list:
        items = [_decode(x, depth + 1, budget, hashes) for x in v]
        if tag == "l":
            return items
        if tag in ("S", "F"):
            for x in items:
                if not isinstance(x, (int, float, complex, str, bytes, tuple, frozenset, type(None), bool)):
                    raise ValueError("unhashable value in a set")
        out = {"t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "S":
            return out
    elif tag == "d" and type(v) is list:
        pairs = []
        for pair in v:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            k = _decode(pair[0], depth + 1, budget, hashes)
            if not isinstance(k, (int, float, complex, str, bytes, tuple, frozenset, type(None), bool)):
                raise ValueError("unhashable dict key")
            pairs.append((k, _decode(pair[1], depth + 1, budget, hashes)))
        return dict(pairs)
    elif tag == "?":
        return Opaque("candidate")
    else:
        raise ValueError(f"malformed value tag {tag!r}")
    # Numbers and tuples hash the same in every process: count collisions before any set or
    # dict (here or in the test) is built from them.
    if isinstance(out, _HASHED):
        try:
            h = hash(out)
        except TypeError:
            return out
        seen = hashes.setdefault(h, [])
        if not any(type(x) is type(out) and x == out for x in seen):
            seen.append(out)
            if len(seen) > MAX_SAME_HASH:
                raise JudgeLimit(
                    f"more than {MAX_SAME_HASH} distinct values in the answer share one hash (built to collide)"
                )
    return out


# -- plans ------------------------------------------------------------------------------------------
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
    from .trusted import static_reasons

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


# -- judging a sample: conversations with the child ----------------------------------------------
@dataclass(frozen=True)
class Judgement:
    """``status``: ``passed``, ``failed`` (decided: a test failed, or the program raised before
    finishing), ``incomplete`` (the child ended before the test could be decided: the session's
    end says why), ``over_limit`` (the answers or the judging went over a limit: wrong),
    ``weaker`` (the trusted side cannot run this test) or ``error`` (a fault on the trusted side).
    ``memory``: every failure was the candidate's MemoryError (a claim, checked against the
    worker's measurement before it counts; a failure decided otherwise stands)."""

    status: str
    passed: int
    total: int
    detail: str = ""
    memory: bool = False


class TestRun:
    """The conversation for assert-style tests (see ``judge.py``)."""

    def __init__(
        self, plan: CheckPlan, code: str, timeout: float, judge_s: float | None = None, float_tolerance: float = 0.0
    ) -> None:
        self.plan, self.code, self.timeout = plan, code, timeout
        self.tol = float_tolerance
        self.judge_s = judge_s if judge_s is not None else max(2.0, timeout)
        self.result: Judgement | None = None
        self.rounds = 0
        self.spent = 0.0
        self.strict = False  # set after a diverged replay: the sample is run again, exactly
        self.restart = False
        self.quick: Any = None
        from .values import Session

        self.sess = Session()

    def first(self) -> list[dict[str, Any]] | None:
        return self._round()

    def feed(self, answers: list[Any], ended: bool) -> list[dict[str, Any]] | None:
        # The child's answers are untrusted: anything but ["ok", value, ...], ["exc", names] or
        # ["mem"] is garbled (the trusted side treats it as an exception of the candidate).
        self.sess.answers.extend(a if _well_formed(a) else ["garbled"] for a in answers)
        self.sess.ended = self.sess.ended or ended
        return self._round()

    def _round(self) -> list[dict[str, Any]] | None:
        if self.result is not None:
            return None
        t0 = time.monotonic()
        try:
            return self._pass(t0)
        finally:
            self.spent += time.monotonic() - t0

    def _pass(self, t0: float) -> list[dict[str, Any]] | None:  # noqa: C901 - one decision table
        from .judge import Pass, quick_round
        from .trusted import Unsupported
        from .values import MAX_ROUNDS, CandidateError, Diverged, Function, Lost, NeedFlush, Scope, StopPass

        self.rounds += 1
        deadline = t0 + max(0.0, self.judge_s - self.spent)
        if self.quick is not None:
            # The last pass only put asserts off: decide just those (the common case: a list of
            # asserts, loops over literals), else replay the whole test below.
            first, self.quick = self.quick, None
            q = Pass(self.sess, deadline, self.plan.entry, tol=self.tol)
            try:
                done = quick_round(q, first.deferred)
            except RecursionError:
                done = False
            if done:
                passed, failed = first.passed + q.passed, first.failed + q.failed
                total = max(1, passed + failed)
                notes = (first.notes + q.notes)[:3]
                status = "passed" if not failed else "failed"
                detail = f"{passed if failed else total}/{total} checks passed" + (
                    "; " + "; ".join(notes) if notes else ""
                )
                only_memory = failed == first.mem_failures + q.mem_failures
                return self._final(
                    Judgement(status, passed if failed else total, total, detail, self.sess.memory and only_memory)
                )
        p = Pass(self.sess, deadline, self.plan.entry, self.strict, self.tol)
        ended_by = ""
        try:
            if self.rounds > MAX_ROUNDS * (5 if self.strict else 1):
                raise JudgeLimit(f"the test needed more than {MAX_ROUNDS} exchanges with the program")
            scope = Scope({}, None)
            p.remote({"k": "load", "code": self.code})
            p.block(list(self.plan.prefix_nodes), scope)
            p.block(self.plan.tree.body, scope)
            if self.plan.auto_check:
                fn = scope.vars.get("check")
                if isinstance(fn, Function):
                    fn(p.lookup(self.plan.entry or "", scope))
        except (NeedFlush, StopPass):
            p.pending = True
        except Lost:
            ended_by = "lost"
        except (JudgeLimit, RecursionError) as exc:
            return self._final(
                Judgement("over_limit", 0, self.plan.n_tests, f"over a judging limit: {exc}", self.sess.memory)
            )
        except Unsupported as exc:
            return self._final(
                Judgement("weaker", 0, self.plan.n_tests, f"the trusted side cannot run this test: {exc}")
            )
        except Diverged as exc:
            if self.strict:
                return self._final(Judgement("error", 0, self.plan.n_tests, str(exc)))
            from .values import Session

            # Speculation ran ahead into operations a later pass orders differently. Start over
            # in a fresh child, one operation per exchange (exact, slower).
            self.strict, self.restart, self.rounds, self.sess, self.quick = True, True, 0, Session(), None
            return None
        except CandidateError as exc:
            ended_by = f"the candidate's code raised {exc.names[0] if exc.names else 'an exception'}"
        except ValueError as exc:
            if "malformed" in str(exc):
                ended_by = "the program sent a malformed answer"
            else:
                ended_by = f"the test raised ValueError: {exc}"
        except Exception as exc:  # noqa: BLE001 - the test itself raised: it did not pass
            ended_by = f"the test raised {type(exc).__name__}"
        if p.pending and not self.sess.ended:
            new = self.sess.ops[self.sess.sent :]
            if new:
                self.sess.sent = len(self.sess.ops)
                if p.quick_ok and not ended_by and p.deferred:
                    self.quick = p
                return new
        total = max(1, p.passed + p.failed + (1 if ended_by and ended_by != "lost" else 0))
        notes = list(p.notes)
        if ended_by == "lost" or (p.pending and self.sess.ended):
            if p.failed:
                only_memory = p.failed == p.mem_failures
                return self._final(
                    Judgement(
                        "failed",
                        p.passed,
                        max(total, self.plan.n_tests),
                        "; ".join(notes + ["the program ended before the rest ran"]),
                        self.sess.memory and only_memory,
                    )
                )
            return self._final(
                Judgement(
                    "incomplete",
                    p.passed,
                    max(total, self.plan.n_tests),
                    "the program ended before the tests were decided",
                    self.sess.memory,
                )
            )
        if ended_by:
            notes.append(ended_by)
        status = "passed" if not p.failed and not ended_by else "failed"
        detail = f"{p.passed}/{total} checks passed" + ("; " + "; ".join(notes) if notes else "")
        # A failure decided by anything but the candidate's MemoryError stands: a program cannot
        # fail a test and then blow its memory to be masked.
        only_memory = p.failed == p.mem_failures and (not ended_by or "MemoryError" in ended_by)
        return self._final(
            Judgement(
                status, p.passed if status == "failed" else total, total, detail, self.sess.memory and only_memory
            )
        )

    def _final(self, j: Judgement) -> None:
        self.result = j
        return None


def _well_formed(a: Any) -> bool:
    if type(a) is not list or not a or a[0] not in ("ok", "exc", "mem"):
        return False
    if a[0] == "ok":
        return len(a) >= 2
    if a[0] == "exc":
        return len(a) == 2 and type(a[1]) is list and all(type(n) is str for n in a[1])
    return True


class StdioRun:
    """The conversation for stdin/stdout tests: the whole output is compared here."""

    def __init__(self, plan: CheckPlan, code: str, timeout: float) -> None:
        self.plan, self.code, self.timeout = plan, code, timeout
        self.result: Judgement | None = None

    def first(self) -> list[dict[str, Any]]:
        return [{"k": "prog", "code": self.code}] + [
            {"k": "stdio", "input": i, "cap": MAX_STDOUT} for i in self.plan.inputs
        ]

    def feed(self, answers: list[Any], ended: bool) -> None:
        total = len(self.plan.inputs)
        passed, notes, memory = 0, [], False
        for i in range(total):
            if i + 1 >= len(answers):
                if passed < i:
                    break  # an earlier case already failed: decided
                self.result = Judgement("incomplete", passed, total, "the program ended before every input ran", memory)
                return None
            ans = answers[i + 1]
            ok = False
            if isinstance(ans, list) and ans and ans[0] == "ok" and len(ans) >= 2:
                try:
                    out = decode(ans[1])
                except (ValueError, JudgeLimit):
                    out = None
                ok = isinstance(out, str) and normalize_output(out) == normalize_output(self.plan.outputs[i])
                if not ok and len(notes) < 3:
                    notes.append(f"input {i}: wrong output")
            elif isinstance(ans, list) and ans and ans[0] == "mem":
                memory = True
                notes.append(f"input {i}: MemoryError")
            elif len(notes) < 3:
                notes.append(
                    f"input {i}: raised {str(ans[1][0]) if isinstance(ans, list) and len(ans) > 1 and isinstance(ans[1], list) and ans[1] else 'an exception'}"
                )
            passed += ok
        status = "passed" if passed == total else "failed"
        self.result = Judgement(
            status,
            passed,
            total,
            f"{passed}/{total} inputs passed" + ("; " + "; ".join(notes) if notes else ""),
            memory,
        )
        return None


class LegacyRun:
    """A weaker row run the old way, when the task asks for it: the whole test file executes in
    the child and only "it raised nothing" comes back. Forgeable; the verdict says so."""

    def __init__(self, plan: CheckPlan, code: str, timeout: float) -> None:
        self.plan, self.code, self.timeout = plan, code, timeout
        self.result: Judgement | None = None

    def first(self) -> list[dict[str, Any]]:
        entry = self.plan.entry if self.plan.auto_check else None
        return [{"k": "load", "code": self.code}, {"k": "legacy", "tests": self.plan.source, "entry": entry}]

    def feed(self, answers: list[Any], ended: bool) -> None:
        why = "weaker (ran inside the sandbox, forgeable): " + "; ".join(self.plan.weaker[:2])
        if len(answers) < 2:
            if answers and answers[0][0] != "ok":
                self.result = Judgement("failed", 0, 1, "the program did not load; " + why)
            else:
                self.result = Judgement("incomplete", 0, 1, why)
            return None
        ok = all(isinstance(a, list) and a and a[0] == "ok" for a in answers[:2])
        memory = any(isinstance(a, list) and a and a[0] == "mem" for a in answers)
        self.result = Judgement("passed" if ok else "failed", int(ok), 1, why, memory)
        return None
