"""The conversations that judge a sample, on the trusted side: ``TestRun`` (assert-style tests,
interpreted by ``judge.Pass``), ``StdioRun`` (the whole output compared here) and ``LegacyRun``
(a weaker row run inside the sandbox, flagged), each ending in a ``Judgement``.

The child's answers are decoded within limits (``decoding.py``); decoding and judging run under a
deadline. Over any limit the sample is ``wrong``, with the reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .checkers import EXACT, CheckerFailed, CheckerSpec, check_output
from .decoding import JudgeLimit, decode
from .judge import Pass, quick_round
from .plans import CheckPlan
from .trusted import Unsupported
from .values import MAX_ROUNDS, CandidateError, Diverged, Function, Lost, NeedFlush, Scope, Session, StopPass

MAX_STDOUT = 1 << 20


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
        self.quick: Pass | None = None  # a pass that only put asserts off: the next round decides them
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
            out = self._pass(t0)
        finally:
            self.spent += time.monotonic() - t0
        if isinstance(out, Judgement):
            self.result = out  # decided: nothing more to ask the child
            return None
        return out

    def _pass(self, t0: float) -> list[dict[str, Any]] | Judgement | None:  # noqa: C901 - one decision table
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
                return Judgement(status, passed if failed else total, total, detail, self.sess.memory and only_memory)
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
            return Judgement("over_limit", 0, self.plan.n_tests, f"over a judging limit: {exc}", self.sess.memory)
        except Unsupported as exc:
            return Judgement("weaker", 0, self.plan.n_tests, f"the trusted side cannot run this test: {exc}")
        except Diverged as exc:
            if self.strict:
                return Judgement("error", 0, self.plan.n_tests, str(exc))
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
                return Judgement(
                    "failed",
                    p.passed,
                    max(total, self.plan.n_tests),
                    "; ".join(notes + ["the program ended before the rest ran"]),
                    self.sess.memory and only_memory,
                )
            return Judgement(
                "incomplete",
                p.passed,
                max(total, self.plan.n_tests),
                "the program ended before the tests were decided",
                self.sess.memory,
            )
        if ended_by:
            notes.append(ended_by)
        status = "passed" if not p.failed and not ended_by else "failed"
        detail = f"{p.passed}/{total} checks passed" + ("; " + "; ".join(notes) if notes else "")
        # A failure decided by anything but the candidate's MemoryError stands: a program cannot
        # fail a test and then blow its memory to be masked.
        only_memory = p.failed == p.mem_failures and (not ended_by or "MemoryError" in ended_by)
        return Judgement(
            status, p.passed if status == "failed" else total, total, detail, self.sess.memory and only_memory
        )


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

    def __init__(self, plan: CheckPlan, code: str, timeout: float, checker: CheckerSpec = EXACT) -> None:
        self.plan, self.code, self.timeout, self.checker = plan, code, timeout, checker
        self.result: Judgement | None = None

    def first(self) -> list[dict[str, Any]]:
        return [{"k": "prog", "code": self.code}] + [
            {"k": "stdio", "input": i, "cap": MAX_STDOUT} for i in self.plan.inputs
        ]

    def feed(self, answers: list[Any], ended: bool) -> None:
        total = len(self.plan.inputs)
        passed, memory = 0, False
        notes: list[str] = []
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
                try:
                    ok = isinstance(out, str) and check_output(
                        self.checker, self.plan.inputs[i], self.plan.outputs[i], out
                    )
                except CheckerFailed as exc:  # the task's checker is broken: mask, never score
                    self.result = Judgement("ground_truth", passed, total, f"input {i}: {exc}")
                    return None
                if not ok and len(notes) < 3:
                    notes.append(f"input {i}: wrong output")
            elif isinstance(ans, list) and ans and ans[0] == "mem":
                memory = True
                notes.append(f"input {i}: MemoryError")
            elif len(notes) < 3:
                names = ans[1] if isinstance(ans, list) and len(ans) > 1 and isinstance(ans[1], list) else []
                notes.append(f"input {i}: raised {str(names[0]) if names else 'an exception'}")
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
