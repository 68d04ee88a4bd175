"""Held-out verified accuracy: the only honest check for reward hacking.

The policy's completions on held-out prompts are judged by the task's *correctness* term alone
(not the weighted reward), so a run whose format reward climbs while answers do not improve
shows up here. Every evaluation samples through ``rlvr.rollouts.rollout_sampler`` (``eval_sampler``:
an episode task's rows are played as episodes, their final answers judged), batched, with the RNG
state saved and restored around sampling so an eval in the middle of training does not reseed the
trainer. Two measures:

- ``evaluate``: one completion per prompt, greedy by default (temperature 0).
- ``evaluate_sampled``: ``k`` completions per prompt at the temperature training samples at, and
  the mean pass@1 and pass@k over prompts, each with a 95 % interval. This is the measure of an RL
  lift: GRPO reweights the sampling distribution, and greedy decoding (its mode) can stay where it
  was while the sampled success rate doubles.

The estimators: a prompt with ``c`` correct of ``n`` decided samples has pass@1 ``c / n`` and
pass@k ``1 - C(n-c, k) / C(n, k)``, the unbiased estimator of Chen et al. 2021 ("Evaluating Large
Language Models Trained on Code"), for ``k <= n``. The samples of one prompt are not independent
(a prompt is easy or hard), so the interval treats the prompt as the unit: a Wilson interval at
the effective sample size ``m(1-m) / se^2`` (``se`` the standard error of the mean over prompts;
Korn and Graubard's design-effect correction for clustered proportions), capped at the number of
values behind the mean. A lift (after minus before) gets Newcombe's MOVER interval from the two;
it treats the two measurements as independent, so on the same prompts it is wider than needed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import RunError
from .rewards.base import Outcome, Sample
from .task import Task

if TYPE_CHECKING:
    from .generate import Sampler


@dataclass(frozen=True)
class EvalResult:
    accuracy: float
    correct: int
    n: int
    masked: int
    mean_length: float
    mean_length_correct: float | None
    mean_length_incorrect: float | None
    temperature: float
    error: str = ""  # the most common error detail among masked samples

    def metrics(self) -> dict[str, Any]:
        return {
            "eval/accuracy": self.accuracy,
            "eval/correct": self.correct,
            "eval/n": self.n,
            "eval/masked": self.masked,
            "eval/mean_length": self.mean_length,
            "eval/mean_length_correct": self.mean_length_correct,
            "eval/mean_length_incorrect": self.mean_length_incorrect,
            "eval/prompts": self.n + self.masked,
        }

    def summary(self) -> str:
        """The one-line result, masked (undecided) samples beside the accuracy, e.g.
        ``41.7% (5 correct of 12 decided, 3 masked)``: an accuracy over few decided samples says so."""
        return f"{self.accuracy:.1%} ({self.correct} correct of {self.n} decided, {self.masked} masked)"

    def raise_if_undecided(self, what: str = "held-out eval") -> None:
        """``RunError`` when the eval decided no sample: an accuracy of 0/0 is not a result."""
        if self.n == 0 and self.masked:
            raise RunError(
                f"{what}: the success term could not decide any of the {self.masked} samples (all "
                f"masked{': ' + self.error if self.error else ''}); "
                "fix the reward (rlvr score on a few completions shows each verdict) before training on it"
            )


def eval_sampler(model: Any, tokenizer: Any, task: Task) -> Sampler:
    """How every evaluation samples ``model``: ``rlvr.rollouts.rollout_sampler`` over batched
    ``model.generate`` (``rlvr.generate.TransformersSampler``: prompts encoded as TRL encodes them,
    explicit sampling values whatever the checkpoint's generation_config, every stop id of the
    checkpoint), so an episode task's eval plays its episodes the way training does."""
    from .generate import TransformersSampler
    from .rollouts import rollout_sampler

    return rollout_sampler(TransformersSampler(model, tokenizer), task, tokenizer)


def _judged(
    model: Any,
    tokenizer: Any,
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    temperature: float,
    max_new_tokens: int,
    seed: int | None,
) -> tuple[list[Any], list[int]]:
    """One completion per row, judged by the success term: (verdicts, completion lengths in tokens)."""
    term = task.success_term
    rewards = task.reward_set()
    verifier = next(t.verifier for t in rewards.terms if t.name == term)
    prompts = [task.render_prompt(r) for r in rows]
    import torch

    # The RNG state is restored afterwards: an eval in the middle of training does not reseed the trainer.
    with torch.random.fork_rng(devices=[]):
        groups = eval_sampler(model, tokenizer, task).sample(prompts, 1, temperature, max_new_tokens, seed=seed)
    gens = [g[0] for g in groups]  # an episode task's completion is its episode's final answer
    samples = [
        Sample(completion=c.text, row=row, prompt=str(p), completion_ids=list(c.token_ids))
        for c, row, p in zip(gens, rows, prompts, strict=True)
    ]
    return list(verifier.verify_batch(samples)), [len(c.token_ids) for c in gens]


def evaluate(
    model: Any,
    tokenizer: Any,
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    *,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
) -> EvalResult:
    """Verified accuracy of ``model`` on ``rows`` under the task's success term."""
    temperature = task.eval.temperature if temperature is None else temperature
    max_new_tokens = max_new_tokens or task.generation.max_completion_length
    verdicts, lengths = _judged(model, tokenizer, task, rows, temperature, max_new_tokens, seed)
    ok = [v.outcome is Outcome.CORRECT for v in verdicts]
    masked = sum(v.outcome is Outcome.ERROR for v in verdicts)
    decided = len(rows) - masked
    lc = [n for n, o in zip(lengths, ok, strict=True) if o]
    li = [n for n, o, v in zip(lengths, ok, verdicts, strict=True) if not o and v.outcome is not Outcome.ERROR]
    return EvalResult(
        accuracy=sum(ok) / decided if decided else 0.0,
        correct=sum(ok),
        n=decided,
        masked=masked,
        mean_length=sum(lengths) / len(lengths) if lengths else 0.0,
        mean_length_correct=sum(lc) / len(lc) if lc else None,
        mean_length_incorrect=sum(li) / len(li) if li else None,
        temperature=temperature,
        error=_common_error(verdicts),
    )


Z95 = 1.959963984540054


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``c`` correct of ``n`` samples (``1 <= k <= n``): the
    chance that ``k`` of the ``n``, drawn without replacement, hold at least one correct."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    # 1 - C(n-c, k) / C(n, k) as a product: no huge binomials (Chen et al. 2021, figure 3).
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def _wilson(p: float, n: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``p`` at a (possibly fractional) sample size ``n``."""
    z2 = Z95 * Z95
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = Z95 * math.sqrt(max(0.0, p * (1 - p)) / n + z2 / (4 * n * n)) / denom
    return max(0.0, min(p, centre - half)), min(1.0, max(p, centre + half))


def mean_interval(values: Sequence[float], per_value: float = 1.0) -> tuple[float, float]:
    """A 95 % interval for the mean of per-prompt values in [0, 1] (pass@1 or pass@k of each prompt),
    the prompt as the unit: Wilson at the effective sample size ``m(1-m) / se^2``, capped at
    ``len(values) * per_value`` (the samples behind the mean). (0, 1) for no values."""
    if not values:
        return 0.0, 1.0
    m = sum(values) / len(values)
    cap = len(values) * max(1.0, per_value)
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    n_eff = cap if var == 0.0 or m in (0.0, 1.0) else min(cap, m * (1 - m) * len(values) / var)
    return _wilson(m, max(1.0, n_eff))


def lift_interval(before: tuple[float, float, float], after: tuple[float, float, float]) -> tuple[float, float, float]:
    """(lift, low, high) for ``after - before``, each given as (estimate, low, high): Newcombe's
    MOVER interval, which treats the two as independent (wider than needed on the same prompts)."""
    (p1, l1, u1), (p2, l2, u2) = before, after
    d = p2 - p1
    low = d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2)
    high = d + math.sqrt((u2 - p2) ** 2 + (p1 - l1) ** 2)
    return d, max(-1.0, low), min(1.0, high)


@dataclass(frozen=True)
class SampledEval:
    """``samples`` completions per held-out prompt at ``temperature``: mean pass@1 and pass@k over
    the prompts, each with its 95 % interval (see the module docstring)."""

    samples: int  # completions drawn per prompt
    k: int  # the k of pass@k (at most ``samples``)
    temperature: float
    prompts: int  # prompts with at least one decided sample (pass@1 is over these)
    correct: int  # correct samples, over every prompt
    decided: int  # decided samples (masked ones are left out)
    masked: int
    pass1: float
    pass1_low: float
    pass1_high: float
    passk: float
    passk_low: float
    passk_high: float
    passk_prompts: int  # prompts with at least k decided samples (pass@k is over these)

    @property
    def pass1_ci(self) -> tuple[float, float, float]:
        return self.pass1, self.pass1_low, self.pass1_high

    def summary(self) -> str:
        """``pass@1 41.2% [35.0%, 47.6%], pass@8 78.0% [69.0%, 85.0%] (8 samples x 100 prompts, T=1.0)``."""
        masked = f", {self.masked} masked" if self.masked else ""
        return (
            f"pass@1 {self.pass1:.1%} [{self.pass1_low:.1%}, {self.pass1_high:.1%}], pass@{self.k} {self.passk:.1%} "
            f"[{self.passk_low:.1%}, {self.passk_high:.1%}] ({self.samples} samples x {self.prompts} prompts, "
            f"T={self.temperature:g}{masked})"
        )

    def metrics(self) -> dict[str, Any]:
        """The eval-line keys a run logs (``rlvr report`` makes pass@1 the headline when present)."""
        return {
            "eval/pass@1": self.pass1,
            "eval/pass@1_low": self.pass1_low,
            "eval/pass@1_high": self.pass1_high,
            "eval/pass@k": self.passk,
            "eval/pass@k_low": self.passk_low,
            "eval/pass@k_high": self.passk_high,
            "eval/k": self.k,
            "eval/samples": self.samples,
            "eval/temperature": self.temperature,
        }


def sampled_result(counts: Sequence[tuple[int, int]], *, samples: int, k: int, temperature: float) -> SampledEval:
    """The ``SampledEval`` of (correct, decided) counts per prompt (pure: no model)."""
    if not 1 <= k <= samples:
        raise ValueError(f"pass@k needs 1 <= k <= samples, got k={k}, samples={samples}")
    decided = [(c, n) for c, n in counts if n > 0]
    p1 = [c / n for c, n in decided]
    pk = [pass_at_k(n, c, k) for c, n in decided if n >= k]
    low1, high1 = mean_interval(p1, samples)
    lowk, highk = mean_interval(pk)
    return SampledEval(
        samples=samples,
        k=k,
        temperature=temperature,
        prompts=len(decided),
        correct=sum(c for c, _ in counts),
        decided=sum(n for _, n in counts),
        masked=samples * len(counts) - sum(n for _, n in counts),
        pass1=sum(p1) / len(p1) if p1 else 0.0,
        pass1_low=low1,
        pass1_high=high1,
        passk=sum(pk) / len(pk) if pk else 0.0,
        passk_low=lowk,
        passk_high=highk,
        passk_prompts=len(pk),
    )


def evaluate_sampled(
    model: Any,
    tokenizer: Any,
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    *,
    samples: int = 8,
    k: int | None = None,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
) -> SampledEval:
    """``samples`` completions per row at ``temperature`` (default: the task's
    ``generation.temperature``, the one training samples at); pass@1 and pass@``k`` (default
    ``k = samples``) over the rows, under the task's success term."""
    temperature = task.generation.temperature if temperature is None else temperature
    if temperature <= 0:
        raise ValueError("a sampled eval needs a temperature above 0 (greedy decoding gives one answer per prompt)")
    max_new_tokens = max_new_tokens or task.generation.max_completion_length
    repeated = [r for r in rows for _ in range(samples)]
    verdicts, _ = _judged(model, tokenizer, task, repeated, temperature, max_new_tokens, seed)
    counts = []
    for i in range(len(rows)):
        mine = verdicts[i * samples : (i + 1) * samples]
        counts.append(
            (sum(v.outcome is Outcome.CORRECT for v in mine), sum(v.outcome is not Outcome.ERROR for v in mine))
        )
    return sampled_result(counts, samples=samples, k=samples if k is None else k, temperature=temperature)


def _common_error(verdicts: Sequence[Any]) -> str:
    from collections import Counter

    from .keptrollouts import error_text

    details = Counter(error_text(str(v.detail or v.error_kind or "")) for v in verdicts if v.outcome is Outcome.ERROR)
    return details.most_common(1)[0][0] if details else ""
