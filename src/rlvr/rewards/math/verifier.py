"""The ``math`` term: symbolic and numeric equivalence of the answer span with the ground truth.

What is compared and how is in ``rlvr.rewards.math.core`` (policies, structures, tolerance).
This module adds what a reward needs around it:

- Extraction is the task's answer span (``<answer>`` tags or ``\\boxed{}``), never "a number
  somewhere". A completion without one is ``unparseable``.
- Plain rationals on both sides (most arithmetic and GSM8K-style answers) are decided in this
  process with exact ``Fraction`` arithmetic: bounded by construction, no worker round trip.
- Everything else runs in a worker process from ``rlvr.rewards.pool`` with a hard timeout
  (default 5 s) that works from any thread or process. A timeout, a worker out of memory or a
  crash is an ``error`` verdict (``error_kind`` ``timeout``/``memory``/``crash``), never
  ``wrong``; a ground truth that does not parse is ``error`` with ``error_kind="ground_truth"``.
  The exception is a cost the answer causes: values too large to evaluate are found by a size
  estimate before anything is evaluated (``math.sym.too_big``: the comparison decides), and a
  timeout whose ground truth alone compares within the timeout is ``wrong``.
- An answer that restates an expression from the prompt (``12+5`` for "What is 12+5?",
  ``(x+1)(x+2)`` for "Expand (x+1)(x+2)") is ``wrong``: evaluating it would reward copying the
  question. Plain numbers are exempt, since a correct number may well appear in the prompt, and
  so is an answer written exactly as the ground truth (a multiple-choice prompt lists it).
- An answer that does not parse as math is ``wrong`` (the policy wrote something, just not a
  readable answer), with the parser's reason in ``detail``.

Ground-truth parses are cached (an LRU in each worker) because every group of G completions
shares one ground truth; identical (ground truth, answer) pairs in a batch are compared once,
and decided comparisons are remembered (up to 65,536 pairs per verifier; errors never are).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ...errors import VerifierError
from ..base import BaseVerifier, Reads, Sample, Verdict, ground_truth
from ..format import AnswerFormat, extract
from ..pool import Result, WorkerPool, shared_pool
from .core import fast_compare, fast_rational
from .policy import MathPolicy
from .question import asks_for_all, renames_a_mentioned_name

PRELOAD = ("sympy", "rlvr.rewards.math.core")
_SPACE = re.compile(r"\s+")
_OPERATOR = re.compile(r"[-+*/^]|\\frac|\\times|\\cdot|\\sqrt")


@dataclass(frozen=True)
class _Job:
    index: int
    gold: str
    answer: str
    span: tuple[int, int] | None
    policy: MathPolicy


def _restates_prompt(answer: str, prompt: str) -> bool:
    """An expression (not a plain number) that appears verbatim, spaces aside, in the prompt."""
    a = _SPACE.sub("", answer)
    if len(a) < 3 or fast_rational(a) is not None or not _OPERATOR.search(a):
        return False
    return a in _SPACE.sub("", prompt)


class MathVerifier(BaseVerifier):
    """1.0 when the answer is mathematically equal to the ground truth under the policy.

    Options: every ``MathPolicy`` field (``ordered_lists``, ``rel_tol``, ``abs_tol``, ``form``,
    ``angles``, ``percent``, ``assignment``, and the opt-ins ``decimal_comma`` and ``chained``),
    ``timeout`` (seconds per comparison), ``workers`` (worker processes; default min(4, cores)),
    ``reject_restated`` (default true), plus the task's ``answer_format`` and ``column``.

    ``rlvr task check`` scores every row's ground truth as an answer to itself, so a gold this
    verifier cannot parse is listed there with its row (``error_kind="ground_truth"``) before
    any training; ``rlvr.rewards.math.core.gold_problem`` gives the same reason for one text.
    """

    kind = "answer"

    def __init__(
        self,
        answer_format: AnswerFormat | None = None,
        column: str = "answer",
        timeout: float = 5.0,
        workers: int | None = None,
        reject_restated: bool = True,
        pool: WorkerPool | None = None,
        **policy: Any,
    ) -> None:
        known = {f.name for f in fields(MathPolicy)}
        unknown = sorted(set(policy) - known)
        if unknown:
            options = sorted(known | {"timeout", "workers", "reject_restated", "column"})
            raise VerifierError(f"unknown math option(s) {unknown}; known: {', '.join(options)}")
        try:
            self.policy = MathPolicy(**policy)
        except TypeError as exc:
            raise VerifierError(f"bad math options: {exc}") from exc
        problems = []
        for name in ("ordered_lists", "assignment", "decimal_comma", "chained", "rename"):
            if not isinstance(getattr(self.policy, name), bool):
                problems.append(f"{name} must be true or false, got {getattr(self.policy, name)!r}")
        for name in ("rel_tol", "abs_tol"):
            value = getattr(self.policy, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                problems.append(f"{name} must be a number >= 0, got {value!r}")
        if self.policy.form not in ("equivalent", "structural"):
            problems.append(f"form must be 'equivalent' or 'structural', got {self.policy.form!r}")
        if self.policy.angles not in ("plain", "degrees", "either"):
            problems.append(f"angles must be 'plain', 'degrees' or 'either', got {self.policy.angles!r}")
        if self.policy.percent not in ("strip", "fraction", "either"):
            problems.append(f"percent must be 'strip', 'fraction' or 'either', got {self.policy.percent!r}")
        if not timeout or timeout <= 0:
            problems.append(f"timeout must be a positive number of seconds, got {timeout!r}")
        if problems:
            raise VerifierError("; ".join(problems))
        self.fmt = answer_format or AnswerFormat()
        self.column = column
        self.timeout = float(timeout)
        self.workers = workers
        self.reject_restated = reject_restated
        self._pool = pool
        self._decided: dict[tuple[str, str, MathPolicy], tuple[str, str]] = {}
        self._lock = threading.Lock()

    @property
    def pool(self) -> WorkerPool:
        # Resolved on first use, so building a task (validation, --help) starts no process.
        return self._pool or shared_pool(PRELOAD, self.workers)

    def reads(self) -> Reads:
        return Reads(answer=self.column, columns=(self.column,))

    def verify(self, sample: Sample) -> Verdict:
        return self.verify_batch([sample])[0]

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        out: list[Verdict | None] = [None] * len(samples)
        jobs: list[_Job] = []
        for i, s in enumerate(samples):
            gold = ground_truth(s.row, self.column)
            if gold is None:
                out[i] = Verdict.error(f"row has no ground truth in column {self.column!r}", kind="ground_truth")
                continue
            ex = extract(s.completion, self.fmt)
            if not ex.ok or ex.answer is None:
                out[i] = Verdict.unparseable(ex.problem or "no answer span")
                continue
            if (
                self.reject_restated
                and _restates_prompt(ex.answer, s.prompt)
                and _SPACE.sub("", ex.answer) != _SPACE.sub("", gold)
            ):
                out[i] = Verdict.wrong(
                    answer=ex.answer, span=ex.span, detail="the answer restates an expression from the prompt"
                )
                continue
            policy = self._policy_for(s.prompt, gold, ex.answer)
            fast = fast_compare(gold, ex.answer, policy)
            if fast is not None:
                out[i] = self._verdict(("equal" if fast else "unequal", ""), gold, ex.answer, ex.span)
                continue
            cached = self._decided.get((gold, ex.answer, policy))
            if cached is not None:
                out[i] = self._verdict(cached, gold, ex.answer, ex.span)
                continue
            jobs.append(_Job(i, gold, ex.answer, ex.span, policy))
        if jobs:
            # A GRPO group often repeats an answer: compare each distinct pair once.
            unique = list(dict.fromkeys((j.gold, j.answer, j.policy) for j in jobs))
            try:
                answers = self.pool.map(
                    "rlvr.rewards.math.core:compare_texts", [(g, a, p) for g, a, p in unique], timeout=self.timeout
                )
            except Exception as exc:  # noqa: BLE001 - no worker at all: undecided, never wrong
                answers = [
                    Result(False, error_kind="crash", detail=f"verifier pool failed: {type(exc).__name__}: {exc}")
                ] * len(unique)
            results = dict(zip(unique, answers, strict=True))
            self._charge_candidates(results)
            for job in jobs:
                res = results[(job.gold, job.answer, job.policy)]
                if res.ok:
                    self._remember((job.gold, job.answer, job.policy), res.value)
                out[job.index] = self._from_result(res, job)
        return [v for v in out if v is not None]

    def _policy_for(self, prompt: str, gold: str, answer: str) -> MathPolicy:
        """The task's policy as this question reads it (``math.question``): a question asking for
        all solutions takes a bare list in any order; a name the question mentions is not renamed."""
        policy = self.policy
        if policy.ordered_lists and asks_for_all(prompt):
            policy = replace(policy, ordered_lists=False)
        if policy.rename and renames_a_mentioned_name(prompt, gold, answer):
            policy = replace(policy, rename=False)
        return policy

    def _charge_candidates(self, results: dict[tuple[str, str, MathPolicy], Result]) -> None:
        """A comparison that timed out is the answer's doing when its ground truth alone is cheap:
        the gold compared with itself and with ``0`` finishes within the timeout. Then the answer
        is wrong (a policy must not mask a wrong answer by writing ``\\Gamma(10^7)``); when the gold
        alone times out too, the sample stays masked (``error``, ``timeout``)."""
        golds = list(dict.fromkeys(g for (g, _, _), r in results.items() if not r.ok and r.error_kind == "timeout"))
        if not golds:
            return
        try:
            probes = self.pool.map(
                "rlvr.rewards.math.core:probe_gold", [(g, self.policy) for g in golds], timeout=self.timeout
            )
        except Exception:  # noqa: BLE001 - no worker: the timeouts stay undecided
            return
        cheap = {g for g, r in zip(golds, probes, strict=True) if r.ok}
        for key, res in list(results.items()):
            if not res.ok and res.error_kind == "timeout" and key[0] in cheap:
                detail = f"the answer takes over {self.timeout:g} s to compare; the ground truth alone does not"
                results[key] = Result(True, ("unequal", detail))

    def _remember(self, key: tuple[str, str, MathPolicy], status: tuple[str, str]) -> None:
        """Decided comparisons are deterministic, so they are cached (timeouts and crashes are
        not: the next try may succeed)."""
        with self._lock:
            if len(self._decided) >= 65536:
                self._decided.pop(next(iter(self._decided)))
            self._decided[key] = status

    def _from_result(self, res: Result, job: _Job) -> Verdict:
        if not res.ok:
            return Verdict.error(res.detail, kind=res.error_kind or "crash", answer=job.answer, span=job.span)
        return self._verdict(res.value, job.gold, job.answer, job.span)

    @staticmethod
    def _verdict(status: tuple[str, str], gold: str, answer: str, span: tuple[int, int] | None) -> Verdict:
        code, detail = status
        if code == "equal":
            return Verdict.correct(answer=answer, span=span)
        if code == "gold_unparseable":
            return Verdict.error(
                f"ground truth {gold[:80]!r} does not parse: {detail}", kind="ground_truth", answer=answer, span=span
            )
        if code == "pred_unparseable":
            return Verdict.wrong(answer=answer, span=span, detail=f"answer does not parse as math: {detail}")
        return Verdict.wrong(
            answer=answer, span=span, detail=f"expected {gold[:80]!r}" + (f" ({detail})" if detail else "")
        )
