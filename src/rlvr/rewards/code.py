"""The ``unit_tests`` reward term: run the sample's code against the row's tests in the sandbox.

The code is taken from the answer span (when the completion has one; a fenced block inside it
wins) or else from the last fenced code block after the think block (code drafted while thinking is never
the answer); ``extract: whole`` takes the whole completion
(HumanEval-style continuations, usually with ``prefix_column: prompt``). No code is
``unparseable``.

Tests come from one column (the task's answer column by default), in one of two styles:

- **assert** (function calls): Python source with ``assert`` statements, either at module level
  (MBPP) or inside HumanEval's ``def check(candidate)`` (then the entry point comes from
  ``entry_point`` or the ``entry_point_column``);
- **stdio**: a list of ``{"input": ..., "output": ...}`` (or a JSON string of one, or APPS-style
  ``{"inputs": [...], "outputs": [...]}``); the whole stdout is compared line by line, with
  trailing whitespace ignored.

Verdicts come from real CPython (``rlvr.sandbox``): the row's test file runs in a sandboxed
*test child*, the program in a sandboxed *candidate child*, and the test reaches the program's
objects only through a proxy; each assert is reported the moment it is decided, and a failed
assert is final. Stdin/stdout programs run as scripts, one fresh child per input; their raw
output is compared here, in the trainer, by the row's or the task's checker
(``rlvr.sandbox.checkers``). ``correct`` when the whole test file runs and every assert passes
(every input's output is accepted and the program exits 0); ``wrong`` otherwise, scored 0 or,
with ``partial_credit``, the fraction of assert statements passed. ``correct`` implies plain
CPython passes: a construct the sandbox cannot keep exact (the program's objects used beyond a
call, their truth or iteration without ``program_objects: true``; an object of the test's that
is neither plain data nor callable) is ``unsupported``: wrong, scored 0 even with
``partial_credit``, counted as ``unsupported``, its detail naming the construct. What the code prints, its exit code, an
exception it raises about itself (``MemoryError``), killing itself or closing its pipes never
grant reward or masking. A ``timeout`` (the deadline, or CPU time at the limit), ``memory`` (the
kernel measured a peak at the budget) or ``sandbox`` failure, as the worker measured
it, is an ``error``, settled by the fail-closed rule (``rlvr.rewards.fault``): the row's
reference solution (``gold_completion``: the first of the declared ``Reads.references`` columns
the row fills) is run through the same path, and the sample is masked only when the reference
fails the same way; otherwise, or when the row has no reference, the failure is the answer's
(``wrong``, 0, counted by cause), so a program cannot buy a mask by looping. ``limits_exceeded:
wrong`` charges every timeout and memory verdict to the answer without running the reference;
the default, ``mask``, settles them by the reference. A row whose tests do not parse, or whose
custom checker fails, is a ``ground_truth`` error (the task's). Each verdict's ``details`` lists
every assert (or input) with its result and, for the first failure, short reprs of what the
program gave and what was expected.

Tests that import a module outside the standard library cannot run in the sandbox (its
interpreter has nothing else): every sample of such a row is an error of kind ``weaker``
(the task's: masked, counted, never rewarded; ``weaker`` accepts only ``error``); ``rlvr task check`` lists such
rows. With ``prefix_column``, the prompt's own complete helper functions (HumanEval's ``poly``)
run in the test child, so a program cannot redefine what the tests rely on.

Python only; the sandbox worker's interpreter has the standard library and nothing else.
"""

from __future__ import annotations

import atexit
import collections
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .base import BaseVerifier, Outcome, Reads, Sample, Verdict
from .codeoptions import CodeOptions
from .fault import charge
from .format import AnswerFormat, read_answer
from .rules import untrusted

if TYPE_CHECKING:  # the sandbox is imported where it runs: `rlvr --help` and light terms stay fast
    from ..sandbox import CheckPlan, Job, Reply, SandboxPool
    from ..sandbox.checkers import CheckerSpec  # not among rlvr.sandbox's public names

_POOLS: dict[tuple[int, float, int, bool, str | None], SandboxPool] = {}
UNSUPPORTED = "unsupported: "  # how an unsupported verdict's detail starts (a wrong verdict, scored 0)
# Columns that may hold a row's reference solution (its gold) when the answer column is its tests.
REFERENCE_COLUMNS = ("reference", "reference_solution", "canonical_solution", "solution", "gold_solution")


def shared_pool(o: CodeOptions) -> SandboxPool:
    """One pool per configuration per process, shared by every term that asks for it."""
    from ..sandbox import Limits, SandboxPool

    key = (o.workers, o.timeout, o.memory_mb, o.strict, o.python)
    if key not in _POOLS:
        _POOLS[key] = SandboxPool(o.workers, Limits(o.timeout, o.memory_mb), strict=o.strict, python=o.python)
    return _POOLS[key]


@atexit.register
def _close_pools() -> None:
    for pool in _POOLS.values():
        pool.close()
    _POOLS.clear()


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each complete ``` block, in order. Linear: plain ``str.find``."""
    out: list[tuple[str, str]] = []
    i = 0
    while True:
        start = text.find("```", i)
        if start == -1:
            return out
        eol = text.find("\n", start)
        if eol == -1:
            return out
        end = text.find("```", eol)
        if end == -1:
            return out
        out.append((untrusted.fold_case(untrusted.strip(text[start + 3 : eol])), text[eol + 1 : end]))
        i = end + 3


def extract_code(
    completion: str, fmt: AnswerFormat, how: str = "auto"
) -> tuple[str | None, tuple[int, int] | None, str]:
    """(code, span, problem)."""
    if how == "whole":
        return (
            (completion, (0, len(completion)), "") if untrusted.strip(completion) else (None, None, "empty completion")
        )
    start, problem, ex = read_answer(completion, fmt)
    if how in ("auto", "answer"):
        if ex.ok and ex.answer is not None:
            blocks = [b for lang, b in fenced_blocks(ex.answer) if lang in ("", "python", "py", "python3")]
            return (blocks[-1] if blocks else ex.answer), ex.span, ""
        if how == "answer":
            return None, None, ex.problem or "no answer span"
    # Only after the think block: code drafted while thinking is not the answer (and under
    # think: required a completion without the block has no answer at all).
    if problem:
        return None, None, problem
    blocks = [b for lang, b in fenced_blocks(completion[start:]) if lang in ("", "python", "py", "python3")]
    if not blocks or not untrusted.strip(blocks[-1]):
        return (
            None,
            None,
            "no fenced Python code block after the think block" if start else "no fenced Python code block",
        )
    return blocks[-1], None, ""


def _count_key(v: Verdict) -> str:
    if v.outcome is Outcome.CORRECT:
        return "passed"
    return "unsupported" if v.detail.startswith(UNSUPPORTED) else "failed"


@functools.lru_cache(maxsize=4096)
def _plan(style: str, key: str, is_text: bool, entry: str | None, prefix: str) -> CheckPlan:
    from ..sandbox import BadTestsError, plan_stdio, plan_tests

    tests: Any = key if is_text else json.loads(key)
    if isinstance(tests, str) and style in ("auto", "stdio") and untrusted.lstrip(tests)[:1] in "[{":
        try:
            tests = json.loads(tests)
            style = "stdio"
        except ValueError:
            if style == "stdio":
                raise BadTestsError("the tests are not JSON stdin/stdout cases") from None
    if style == "stdio" or not isinstance(tests, str):
        return plan_stdio(tests)
    return plan_tests(tests, entry, prefix)


@functools.lru_cache(maxsize=1024)
def _row_checker(raw: str, parse: Callable[[Any], CheckerSpec]) -> CheckerSpec:
    """A row's checker from its column: a bare name, or the JSON text of a mapping."""
    return parse(json.loads(raw) if untrusted.lstrip(raw).startswith("{") else raw)


class JobRunner(Protocol):
    """What runs sandbox jobs: a ``SandboxPool``, or a stand-in (a recorder in a benchmark)."""

    def run(self, jobs: Sequence[Job]) -> list[Reply]: ...


class UnitTests(BaseVerifier):
    """Runs the extracted code against the row's unit tests in ``rlvr.sandbox``. Its options are
    one ``CodeOptions`` (``options``, or the same fields as keyword arguments)."""

    kind = "code"
    Options = CodeOptions  # rlvr.rewards.build_verifier reads the term's options from its fields

    def __init__(
        self,
        answer_format: AnswerFormat | None = None,
        pool: JobRunner | None = None,
        options: CodeOptions | None = None,
        **fields: Any,
    ) -> None:
        from ..sandbox.checkers import parse_checker

        if options is not None and fields:
            raise TypeError(f"give options or fields, not both (got {sorted(fields)})")
        self.options = o = options if options is not None else CodeOptions(**fields)
        self.fmt = answer_format or AnswerFormat()
        self.pool = pool  # a pool to use instead of the shared one (tests, benchmarks)
        self.checker = parse_checker(o.checker)  # stdin/stdout rows: the task's checker
        # Outcomes of every sample run so far (the golds settle runs too): passed, failed,
        # unsupported, timeout, memory, sandbox, weaker. Infrastructure failures are counted.
        self.counts: collections.Counter[str] = collections.Counter()

    # -- per row -----------------------------------------------------------------------------
    def plan(self, row: Mapping[str, Any]) -> CheckPlan:
        """The row's test plan; raises ``BadTestsError`` (a ground-truth problem). Plans are
        cached by the tests' text: the G samples of a GRPO group share one row. A plan's
        ``weaker`` lists why the test child cannot run the tests (``weaker_reasons``)."""
        from ..sandbox import BadTestsError

        tests = row.get(self.options.column)
        if tests is None or (isinstance(tests, str) and not untrusted.strip(tests)):
            raise BadTestsError(f"row has no tests in column {self.options.column!r}")
        entry = self.options.entry_point or row.get(self.options.entry_point_column)
        prefix = str(row.get(self.options.prefix_column) or "") if self.options.prefix_column else ""
        try:
            key = tests if isinstance(tests, str) else json.dumps(tests, sort_keys=True)
        except (TypeError, ValueError):
            raise BadTestsError(f"column {self.options.column!r} holds {type(tests).__name__}, not tests") from None
        return _plan(self.options.style, key, isinstance(tests, str), str(entry) if entry else None, prefix)

    def weaker_reasons(self, row: Mapping[str, Any]) -> tuple[str, ...]:
        """Why this row's tests cannot be decided on the trusted side (empty when they can).
        ``rlvr audit`` and ``rlvr inspect`` can show it per row."""
        from ..sandbox import BadTestsError

        try:
            return tuple(self.plan(row).weaker)
        except BadTestsError:
            return ()

    def checker_for(self, row: Mapping[str, Any]) -> CheckerSpec:
        """The row's stdout checker: its ``checker_column`` (a name, a mapping or the JSON text of
        one) or else the task's. Raises ``BadTestsError`` naming the column when it is unusable."""
        from ..sandbox import BadTestsError
        from ..sandbox.checkers import CheckerSpecError, parse_checker

        raw = row.get(self.options.checker_column)
        if raw is None or (isinstance(raw, str) and not untrusted.strip(raw)):
            return self.checker
        try:
            return _row_checker(raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True), parse_checker)
        except (CheckerSpecError, ValueError) as exc:
            raise BadTestsError(f"column {self.options.checker_column!r}: {exc}") from None

    def reads(self) -> Reads:
        """The tests column is also the ground truth (``answer``) a row must have."""
        o = self.options
        entry_column = None if o.entry_point else o.entry_point_column
        return Reads(
            answer=o.column,
            columns=tuple(c for c in (o.column, entry_column, o.prefix_column, o.checker_column) if c),
            tests=o.column,
            entry_point=o.entry_point,
            entry_point_column=o.entry_point_column,
            prefix_column=o.prefix_column,
            checker_column=o.checker_column,
            references=tuple(dict.fromkeys(c for c in (o.reference_column, *REFERENCE_COLUMNS) if c and c != o.column)),
        )

    def completion(self, code: str) -> str:
        """``code`` written as a completion this term extracts it from."""
        return code if self.options.extract == "whole" else self.fmt.wrap(f"```python\n{code}\n```")

    def gold_completion(self, row: Mapping[str, Any]) -> str | None:
        """The row's reference solution (the first ``Reads.references`` column it fills) as a
        completion, or None: the gold ``rlvr.rewards.fault`` scores to decide whose fault a
        timeout, memory or sandbox verdict is."""
        for col in self.reads().references:
            code = row.get(col)
            if isinstance(code, str) and untrusted.strip(code):
                return self.completion(code)
        return None

    def verify(self, sample: Sample) -> Verdict:
        return self.verify_batch([sample])[0]

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        from ..sandbox import BadTestsError, stdio_job, tests_job

        o = self.options
        out: list[Verdict | None] = [None] * len(samples)
        todo: list[tuple[int, CheckPlan, CheckerSpec | None, Job, str | None, tuple[int, int] | None]] = []
        for i, s in enumerate(samples):
            code, span, problem = extract_code(s.completion, self.fmt, o.extract)
            if code is None:
                out[i] = Verdict.unparseable(problem)
                continue
            try:
                plan = self.plan(s.row)
                checker = self.checker_for(s.row) if plan.mode == "stdio" else None
            except BadTestsError as exc:
                out[i] = Verdict.error(str(exc), kind="ground_truth")
                continue
            if plan.weaker:
                self.counts["weaker"] += 1
                out[i] = Verdict.error(
                    "the sandbox cannot run these tests (weaker): " + "; ".join(plan.weaker[:3]),
                    kind="weaker",
                    answer=code,
                    span=span,
                )
                continue
            prefix = str(s.row.get(o.prefix_column) or "") if o.prefix_column else ""
            job = (
                stdio_job(code, plan.inputs, o.timeout, plan=plan, checker=checker or self.checker)
                if plan.mode == "stdio"
                else tests_job(plan, prefix + code, o.timeout, o.float_tolerance, o.program_objects)
            )
            todo.append((i, plan, checker, job, code, span))
        if todo:
            pool = self.pool or shared_pool(o)
            replies = pool.run([t[3] for t in todo])  # a sandbox that cannot start raises: a setup problem
            for (i, plan, checker, _job, code, span), reply in zip(todo, replies, strict=True):
                v = out[i] = self._verdict(plan, checker, reply, code, span)
                self.counts[v.error_kind or _count_key(v)] += 1
        return [v if v is not None else Verdict.error("no verdict", kind="sandbox") for v in out]

    def _verdict(
        self, plan: CheckPlan, checker: CheckerSpec | None, reply: Reply, code: str | None, span: tuple[int, int] | None
    ) -> Verdict:
        """The outcome class is decided here from what the worker measured, never from what the
        child claims: a MemoryError it raised, its exit code, a closed pipe are ``wrong`` unless
        the worker saw the limit hit (wall clock or CPU time at the deadline; a measured peak
        memory at the budget). A failed assert or input is final: nothing after it masks it."""
        from ..sandbox import judge_stdio, judge_tests

        end = reply.end
        if end.why.startswith("sandbox"):
            return Verdict.error(end.why, kind="sandbox", answer=code, span=span)
        j = judge_stdio(plan, reply, checker or self.checker) if plan.mode == "stdio" else judge_tests(plan, reply)
        kw: dict[str, Any] = {"answer": code, "span": span, "details": j.details}
        if j.status == "passed":
            return Verdict.correct(detail=j.detail, **kw)
        if j.status == "error":
            return Verdict.error(j.detail, kind="sandbox", **kw)
        if j.status == "ground_truth":  # the task's custom stdout checker failed: masked
            return Verdict.error(j.detail, kind="ground_truth", **kw)
        if j.status == "unsupported":  # scored as wrong: a policy gains nothing by provoking it
            return Verdict.wrong(detail=j.detail, **kw)
        budget = self.options.memory_mb << 20
        if plan.mode == "stdio":  # the first failing input's peak, as the worker measured it
            memory = j.peak >= budget
        else:
            memory = end.maxrss >= budget and (j.memory or j.status == "incomplete")
        timeout = end.why == "timeout" and j.status == "incomplete"
        limit = "timeout" if timeout else "memory" if memory else ""
        if limit:
            what = (
                f"timed out after {self.options.timeout:g}s"
                if limit == "timeout"
                else f"exceeded the {self.options.memory_mb} MB memory budget (peak {end.maxrss >> 20} MB, measured)"
            )
            v = Verdict.error(f"0/{plan.n_tests} tests passed: {what}", kind=limit, **kw)
            return charge(v, "limits_exceeded: wrong") if self.options.limits_exceeded == "wrong" else v
        if j.status == "incomplete":
            how = "its output went over the size limit" if end.why == "output_limit" else j.detail
            return Verdict.wrong(detail=f"0/{plan.n_tests} tests passed: the program ended abnormally: {how}", **kw)
        score = j.passed / j.total if self.options.partial_credit and j.total else 0.0
        return Verdict.wrong(score, detail=j.detail, **kw)
