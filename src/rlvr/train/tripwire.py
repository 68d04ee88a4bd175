"""The reward-hack tripwire: while the policy searches for the reward's weak spots, watch what it
is paid for, and stop the run with a finding before it has learnt the hack.

The gate and the audit check the reward before training; this watches the rollouts during it.
``Tripwire.observe`` sees every scored batch (``rlvr train`` through its reward functions,
``rlvr serve`` through ``/get_reward``); every ``every`` steps ``Tripwire.check`` runs one round:

1. **Probes** (``rlvr.audit.tripwire``): the ``top`` rollouts with the highest rewards since the
   last round are re-scored perturbed (answer removed, answer span moved, format only, gold
   absent) and against the row's gold. A rollout whose reward survives a probe that must remove
   it is a finding; ``findings`` of them in this session stop the run.
2. **Signals**, each over ``window`` steps, the session's first window against its latest (a
   trend, not a level; the level of the masked rate is ``rlvr.train.stopping``'s):

   - a term's rate of one failure cause (an ``error`` by kind, a failure charged to the answer by
     kind, an ``unsupported`` construct) rising by ``error_rise`` or more;
   - the success term's rate on training rollouts (the first window against the window that
     ends at the latest held-out eval) rising more than the eval (its sampled pass@1 where the
     task samples, else its accuracy; the first eval against the latest) by ``eval_gap`` plus two
     standard errors (binomial, both windows and both evals);
   - the mean completion length growing ``length_ratio`` times and by ``length_tokens`` tokens;
   - the share of repeated token 4-grams rising by ``repetition_rise``.

On a threshold the round returns a ``Trip``: ``rlvr train`` saves a checkpoint at that step, stops,
records ``status: stopped`` in ``run.json`` and raises ``RunStopped`` with the report; ``rlvr serve``
answers 409. Every round is one line of ``<run>/tripwire.jsonl``; the trip is ``<run>/tripwire.json``
(``rlvr doctor`` reads both: ``rlvr.doctor.checks.check_tripwire``).

What to do on a stop is always the same: fix the reward (the term the report names, with the
probe and three rollouts it paid), re-run the audit and the gate; never the hyperparameters. The
thresholds are heuristics, not published constants (each field's help says what it costs), set
in a task's ``grpo: {tripwire: {...}}`` or a config file's ``rlvr: {tripwire: ...}`` (flat form:
env ``RLVR_TRIPWIRE_<KEY>``); ``every: 0`` turns the tripwire off. A resumed session starts its
own count: the trip that stopped the run is in ``tripwire.json``, and a reward left unfixed trips
again.
"""

from __future__ import annotations

import heapq
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..audit.tripwire import MEANING, Hit, Probed, ProbeRound, TripwireRules, probe_rollouts
from ..rewards.base import Outcome, Sample, Verdict
from ..rewards.code import UNSUPPORTED
from ..rewards.combine import RewardSet, Scored
from ..rewards.fault import is_charged
from ..rewards.format import AnswerFormat

if TYPE_CHECKING:
    from ..task import Task

ROUNDS = "tripwire.jsonl"
REPORT = "tripwire.json"
ADVICE = (
    "fix the reward function, not the hyperparameters: the policy is being paid for something other than the "
    "answer. Re-run rlvr audit and the inspection gate on the fixed reward, then rlvr train --resume continues "
    "from the checkpoint kept at this step"
)


@dataclass(frozen=True)
class Trip:
    """Why the tripwire stopped a run: the signal, the step, the reason (one paragraph, the
    threshold named) and, for findings, the hits (three are quoted)."""

    signal: str  # findings | error_rise | eval_gap | length | repetition
    step: int
    reason: str
    hits: tuple[Hit, ...] = ()

    def message(self) -> str:
        lines = [f"tripwire at step {self.step}: {self.reason}; {ADVICE}"]
        for h in self.hits[:3]:
            lines.append(
                f"  step {h.step}, term {h.term!r}, probe {h.probe}: reward {h.score:g} -> {h.survived:g}; "
                f"completion {h.completion[:120]!r}, probed as {h.perturbed[:120]!r} (gold {h.gold[:40]!r})"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "signal": self.signal,
            "step": self.step,
            "reason": self.reason,
            "advice": ADVICE,
            "hits": [h.to_json() for h in self.hits],
        }


@dataclass
class StepStats:
    """What one step's scored rollouts add up to (several calls per step under accumulation)."""

    n: int = 0
    success: float = 0.0
    success_n: int = 0
    tokens: float = 0.0
    repetition: float = 0.0
    causes: Counter[str] = field(default_factory=Counter)


def repetition(ids: Sequence[int], n: int = 4) -> float:
    """The share of a sequence's token n-grams that repeat an earlier one (0 below n + 1 tokens)."""
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return 1 - len(set(grams)) / len(grams) if len(grams) > 1 else 0.0


def cause(v: Verdict) -> str | None:
    """A verdict's failure cause as the tripwire counts it, or None when it decided plainly."""
    if v.outcome is Outcome.ERROR:
        return f"error {v.error_kind or 'crash'}"
    if is_charged(v):
        return f"charged {v.error_kind}"
    if v.detail.startswith(UNSUPPORTED):
        return "unsupported"
    return None


class Tripwire:
    """One session's tripwire (see the module docstring). ``run_dir``: where the rounds and the
    trip are written (None: nowhere, as in tests and ``rlvr serve`` without a folder)."""

    def __init__(
        self,
        rules: TripwireRules,
        reward_set: RewardSet,
        *,
        fmt: AnswerFormat,
        column: str,
        success: str | None,
        run_dir: Path | None = None,
        seed: int = 0,
        where: str = "grpo.tripwire",
    ) -> None:
        self.rules, self.reward_set, self.fmt, self.column, self.success = rules, reward_set, fmt, column, success
        self.run_dir, self.seed, self.where = run_dir, seed, where
        self.best: list[tuple[float, int, Probed]] = []  # a min-heap of the top rollouts since the last round
        self.seen = 0
        self.stats: dict[int, StepStats] = {}
        self.evals: list[tuple[int, float, int]] = []  # (step, rate, decided samples)
        self.found = 0
        self.hits: list[Hit] = []
        self.tripped: Trip | None = None
        self.halted = False  # the run was stopped at a step end (by this process's trip or another's)

    # -- what it sees -------------------------------------------------------------------------
    def observe(self, step: int, samples: Sequence[Sample], scored: Sequence[Scored]) -> None:
        """One scored batch of ``step``: its statistics and its best rollouts (masked ones never)."""
        if not self.rules.enabled:
            return
        st = self.stats.setdefault(step, StepStats())
        for s, sc in zip(samples, scored, strict=True):
            st.n += 1
            ids = list(s.completion_ids) if s.completion_ids is not None else None
            st.tokens += len(ids) if ids is not None else len(s.completion) / 4
            st.repetition += repetition(ids if ids is not None else [ord(c) for c in s.completion])
            for name, v in sc.verdicts.items():
                c = cause(v)
                if c is not None:
                    st.causes[f"term {name!r}: {c}"] += 1
            total = self.reward_set.total(sc)
            ok = self.success in sc.verdicts and sc.verdicts[self.success or ""].score is not None
            if ok and not sc.masked:
                score = sc.verdicts[self.success or ""].score or 0.0
                st.success += min(max(score, 0.0), 1.0)
                st.success_n += 1
            if total is None:
                continue
            scores = {k: float(v.score) for k, v in sc.verdicts.items() if v.score is not None}
            self.seen += 1
            item = (total, -self.seen, Probed(step, s, scores, total))  # earlier first among equals
            if len(self.best) < self.rules.top:
                heapq.heappush(self.best, item)
            elif item[:2] > self.best[0][:2]:
                heapq.heapreplace(self.best, item)

    def observe_eval(self, step: int, rate: float, decided: int) -> None:
        """A held-out eval: its success rate and the samples it decided."""
        if decided > 0 and math.isfinite(rate):
            self.evals.append((step, rate, decided))

    # -- rounds -------------------------------------------------------------------------------
    def check(self, step: int) -> Trip | None:
        """At the end of ``step``: a round when it is due; the trip when a threshold is crossed."""
        r = self.rules
        if not r.enabled or step % r.every or self.tripped is not None:
            return None
        picked = [p for _, _, p in sorted(self.best, key=lambda t: (-t[0], -t[1]))]
        self.best = []
        found = probe_rollouts(
            self.reward_set, picked, fmt=self.fmt, column=self.column, success=self.success, step=step, seed=self.seed
        )
        self.found += found.found
        self.hits.extend(found.hits)
        signals = self.signals()
        trip = self._trip(step, found, signals)
        self._write_round(found, signals, trip)
        self.tripped = trip
        return trip

    def _trip(self, step: int, found: ProbeRound, signals: Mapping[str, Any]) -> Trip | None:
        r, w = self.rules, self.where
        if r.findings and self.found >= r.findings:
            term, probe = Counter((h.term, h.probe) for h in self.hits).most_common(1)[0][0]
            examples = [h for h in self.hits if (h.term, h.probe) == (term, probe)]
            examples += [h for h in self.hits if h not in examples]
            what = self._verifier(term)
            return Trip(
                "findings",
                step,
                f"{self.found} probed rollout(s) kept a reward a probe must remove (threshold {w}.findings "
                f"{r.findings}): term {term!r}{what} {MEANING[probe]} (probe {probe}; "
                f"{sum(h.probe == probe and h.term == term for h in self.hits)} hit(s))",
                tuple(examples),
            )
        for name, (first, last) in signals.get("causes", {}).items():
            if r.error_rise and last - first >= r.error_rise:
                return Trip(
                    "error_rise",
                    step,
                    f"{name} rose from {first:.0%} to {last:.0%} of the samples (threshold {w}.error_rise "
                    f"{r.error_rise:g} over windows of {r.window} steps): the verifier fails more as the policy "
                    "learns, which it may be learning to provoke",
                )
        gap = signals.get("eval_gap")
        if r.eval_gap and gap is not None and gap["gap"] > r.eval_gap + 2 * gap["se"]:
            return Trip(
                "eval_gap",
                step,
                f"the success rate on training rollouts rose {gap['train']:+.0%} while the held-out eval moved "
                f"{gap['eval']:+.0%} (gap {gap['gap']:.2f} > {w}.eval_gap {r.eval_gap:g} + 2 SE {2 * gap['se']:.2f}): "
                f"the reward pays for something the held-out check does not count",
            )
        length = signals.get("length")
        if r.length_ratio and length is not None:
            first, last = length
            if last >= r.length_ratio * first and last - first >= r.length_tokens:
                return Trip(
                    "length",
                    step,
                    f"the mean completion length went from {first:.1f} to {last:.1f} tokens (thresholds "
                    f"{w}.length_ratio {r.length_ratio:g} and {w}.length_tokens {r.length_tokens}): check that no term "
                    "pays for length (rlvr audit's long probes); raise the thresholds only if the growth is reasoning",
                )
        rep = signals.get("repetition")
        if r.repetition_rise and rep is not None and rep[1] - rep[0] >= r.repetition_rise:
            return Trip(
                "repetition",
                step,
                f"the share of repeated token 4-grams rose from {rep[0]:.2f} to {rep[1]:.2f} (threshold "
                f"{w}.repetition_rise {r.repetition_rise:g}): the policy repeats itself for reward",
            )
        return None

    def _verifier(self, term: str) -> str:
        from ..audit.run import verifier_name

        t = next((t for t in self.reward_set.terms if t.name == term), None)
        return f" ({verifier_name(t.verifier)})" if t is not None else ""

    def signals(self) -> dict[str, Any]:
        """The trend signals: the session's first window against its latest (None: too few steps)."""
        w = max(1, self.rules.window)
        steps = sorted(s for s, st in self.stats.items() if st.n)
        if len(steps) < 2 * w:
            return {}
        first, last = [self.stats[s] for s in steps[:w]], [self.stats[s] for s in steps[-w:]]
        n0, n1 = sum(s.n for s in first), sum(s.n for s in last)
        out: dict[str, Any] = {
            "length": (sum(s.tokens for s in first) / n0, sum(s.tokens for s in last) / n1),
            "repetition": (sum(s.repetition for s in first) / n0, sum(s.repetition for s in last) / n1),
        }
        names = set().union(*(s.causes for s in first + last))
        out["causes"] = {
            c: (sum(s.causes[c] for s in first) / n0, sum(s.causes[c] for s in last) / n1) for c in sorted(names)
        }
        # The training window compared with the latest eval is the one that ends at that eval:
        # an eval many steps old says nothing about the rollouts since.
        if len(self.evals) >= 2:
            s1 = self.evals[-1][0]
            at = [self.stats[s] for s in steps if s <= s1][-w:]
            clear = len([s for s in steps if s <= s1]) >= 2 * w  # the two windows do not overlap
            k0, k1 = sum(s.success_n for s in first), sum(s.success_n for s in at)
            if clear and k0 and k1:
                p0, p1 = sum(s.success for s in first) / k0, sum(s.success for s in at) / k1
                (_, e0, m0), (_, e1, m1) = self.evals[0], self.evals[-1]
                var = p0 * (1 - p0) / k0 + p1 * (1 - p1) / k1 + e0 * (1 - e0) / m0 + e1 * (1 - e1) / m1
                gap = (p1 - p0) - (e1 - e0)
                out["eval_gap"] = {"train": p1 - p0, "eval": e1 - e0, "gap": gap, "se": math.sqrt(var), "at": s1}
        return out

    # -- files --------------------------------------------------------------------------------
    def _write_round(self, found: ProbeRound, signals: Mapping[str, Any], trip: Trip | None) -> None:
        if self.run_dir is None:
            return
        line = {**found.to_json(), "total_found": self.found, "signals": signals, "tripped": trip is not None}
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            with (self.run_dir / ROUNDS).open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, ensure_ascii=False, default=str) + "\n")
            if trip is not None:
                (self.run_dir / REPORT).write_text(json.dumps(trip.to_json(), indent=2, ensure_ascii=False))
        except OSError:
            pass  # a full disk must not hide the trip itself: the exception still carries it


def read_rounds(run_dir: Path) -> list[dict[str, Any]]:
    """Every round a run's tripwire wrote, oldest first (a torn last line is skipped)."""
    path = run_dir / ROUNDS
    if not path.is_file():
        return []
    out = []
    for text in path.read_text(encoding="utf-8").split("\n"):
        try:
            rec = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


def read_trip(run_dir: Path) -> dict[str, Any] | None:
    """The trip that stopped the run (``tripwire.json``), or None."""
    try:
        data = json.loads((run_dir / REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


class Feed:
    """Wraps a reward set's TRL functions so the tripwire sees every scored batch (the first
    function scores every term; the others read the reward set's cache)."""

    def __init__(self, tripwire: Tripwire) -> None:
        self.tripwire = tripwire

    def wrap(self, funcs: Sequence[Any]) -> list[Any]:
        if not funcs or not self.tripwire.rules.enabled:
            return list(funcs)
        first = funcs[0]

        def fed(*args: Any, **kwargs: Any) -> Any:
            out = first(*args, **kwargs)
            self.observe(kwargs)
            return out

        fed.__name__ = first.__name__
        fed.__qualname__ = getattr(first, "__qualname__", first.__name__)
        return [fed, *funcs[1:]]

    def observe(self, kwargs: Mapping[str, Any]) -> None:
        state = kwargs.get("trainer_state")
        step = int(getattr(state, "global_step", 0)) + 1  # the optimizer step these completions train
        # The batch as the reward set read and scored it (cached): never read a second time here.
        samples, scored = self.tripwire.reward_set.trl_batch(**kwargs)
        self.tripwire.observe(step, samples, scored)


def reading(run_dir: Path) -> dict[str, Any]:
    """What ``rlvr doctor`` reads of a run's tripwire: the rounds, the probed rollouts with a hit,
    the hits by term and probe (``term/probe`` -> count), up to three example hits, and the trip
    (None: it did not stop the run). {} when the run has no tripwire rounds."""
    rounds = read_rounds(run_dir)
    trip = read_trip(run_dir)
    if not rounds and trip is None:
        return {}
    hits = [h for r in rounds for h in r.get("hits") or () if isinstance(h, Mapping)]
    by = Counter(f"{h.get('term')}/{h.get('probe')}" for h in hits)
    return {
        "rounds": len(rounds),
        "last_step": max((int(r.get("step") or 0) for r in rounds), default=0),
        "rollouts": sum(int(r.get("rollouts") or 0) for r in rounds),
        "found": sum(int(r.get("found") or 0) for r in rounds),
        "by": dict(by.most_common()),
        "examples": hits[:3] if trip is None else list(trip.get("hits") or [])[:3],
        "trip": trip,
    }


class ServedTripwire:
    """The tripwire in ``rlvr serve`` (verl, OpenRLHF): each scored batch is one step; once it has
    tripped, ``watch`` returns the trip for every later batch too, so the engine's run stops."""

    def __init__(self, tripwire: Tripwire) -> None:
        import threading

        self.tripwire = tripwire
        self.batches = 0
        self.lock = threading.Lock()  # batches are scored concurrently; a round sees them in order

    @classmethod
    def for_task(cls, task: Task, reward_set: RewardSet) -> ServedTripwire:
        from ..audit.tripwire import rules_for

        rules = rules_for(task.grpo, str(task.path))
        try:
            success: str | None = task.success_term
        except Exception:  # noqa: BLE001 - a task without a success term still serves (no eval signal anyway)
            success = None
        return cls(
            Tripwire(rules, reward_set, fmt=task.answer, column=task.answer_column, success=success, seed=task.seed)
        )

    def watch(self, samples: Sequence[Sample], scored: Sequence[Scored]) -> Trip | None:
        with self.lock:
            if self.tripwire.tripped is not None or not self.tripwire.rules.enabled:
                return self.tripwire.tripped
            self.batches += 1
            self.tripwire.observe(self.batches, samples, scored)
            return self.tripwire.check(self.batches)

    def prometheus(self) -> str:
        tw = self.tripwire
        lines = [
            "# HELP rlvr_tripwire_batches_total Scored batches the tripwire has seen (one step each).",
            "# TYPE rlvr_tripwire_batches_total counter",
            f"rlvr_tripwire_batches_total {self.batches}",
            "# HELP rlvr_tripwire_findings_total Probed rollouts whose reward survived a probe that must remove it.",
            "# TYPE rlvr_tripwire_findings_total counter",
            f"rlvr_tripwire_findings_total {tw.found}",
            "# HELP rlvr_tripwire_tripped 1 once the tripwire has tripped (scoring requests then get 409).",
            "# TYPE rlvr_tripwire_tripped gauge",
            f"rlvr_tripwire_tripped {int(tw.tripped is not None)}",
        ]
        return "\n".join(lines) + "\n"
