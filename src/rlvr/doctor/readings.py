"""What the checks read from a run, shared by every symptom family: a config setting, whether
the run is on-policy, which term verifies the answer, the held-out accuracy and its noise band, and
whether a logged key is a reward value. Also the thresholds that more than one family uses.

The result type of every check, ``Result``, lives here too: a check is a pure ``Run -> Result``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .findings import Finding, Note, Patch
from .table import Row, Run, Series

TINY = 1e-8  # reward_std / grad_norm at or below this is zero
REWARD_RISE = 0.05  # reward units: a change smaller than this is "flat"

Result = list[Finding | Note]


def step_of(row: Row) -> int:
    """The step a log line belongs to (``load_run`` sets one on every line it keeps, as in ``Run.series``)."""
    return int(row["step"] or 0)


def setting(run: Run, key: str, default: Any = None) -> Any:
    """The run's GRPOConfig value for ``key`` (as the doctor found or was given the config), else ``default``."""
    return run.grpo.get(key, default)


def on_policy(run: Run) -> bool | None:
    """TRL reuses the current log-probs as "old" when each generation batch is used for exactly
    one optimizer step, once: then every ratio is 1 and clip ratios are zero by construction."""
    if not run.config_known:
        return None
    ga = int(setting(run, "gradient_accumulation_steps", 1) or 1)
    spg = setting(run, "steps_per_generation") or ga
    return int(spg) == ga and int(setting(run, "num_iterations", 1) or 1) == 1


def correctness_term(run: Run) -> str | None:
    """The term that verifies the answer: the run's success term (rlvr train records the task's),
    else a guess from the term names of a plain TRL run."""
    ev = run.rlvr.get("eval")
    for v in (
        run.rlvr.get("success_term"),
        run.rlvr.get("correctness_term"),
        ev.get("term") if isinstance(ev, Mapping) else None,
    ):
        if isinstance(v, str) and v:
            return v
    terms = run.term_names()
    for t in terms:
        if any(w in t.lower() for w in ("correct", "accuracy", "exact", "math", "code", "unit", "verif")):
            return t
    others = [
        t
        for t in terms
        if "format" not in t.lower() and t.lower() not in ("fmt", "length", "length_penalty", "overlong", "repetition")
    ]
    return others[0] if len(others) == 1 else None


def held_out_accuracy(run: Run) -> Series:
    """rlvr's held-out verified accuracy; for a plain TRL run with an eval set, TRL's held-out mean
    of the correctness term (``eval_rewards/<term>/mean``, sampled, so noisier) stands in."""
    acc = run.series("eval/accuracy", evals=True)
    if len(acc):
        return acc
    correct = correctness_term(run)
    return run.series(f"eval_rewards/{correct}/mean", evals=True) if correct else acc


def eval_noise(run: Run, p: float) -> float:
    """Two binomial standard errors of a held-out accuracy near ``p`` (at least 0.02): differences
    smaller than this between evals are not read as a trend. 0.02 when the eval size is unknown."""
    ns = [v for v in run.series("eval/n", evals=True).values if v >= 1]
    p = min(max(p, 0.0), 1.0)
    return max(0.02, 2 * math.sqrt(p * (1 - p) / min(ns))) if ns else 0.02


def lower_learning_rate(run: Run, divisor: int, why: str) -> Patch | None:
    """The run's learning rate divided by ``divisor`` as a patch, or ``None`` when the config does
    not state one."""
    lr = setting(run, "learning_rate")
    if not isinstance(lr, int | float) or lr <= 0:
        return None
    return Patch("lower learning rate", {"learning_rate": float(f"{lr / divisor:.3g}")}, why=why)


def is_reward_key(key: str) -> bool:
    """A reward value itself (not a spread: a std over one valid sample is NaN in TRL's logs)."""
    return key in ("reward", "eval_reward") or (key.startswith(("rewards/", "eval_rewards/")) and key.endswith("/mean"))


def dynamic_mode(run: Run) -> str | None:
    """Dynamic sampling's mode as the run's config records it (rlvr: {dynamic: ...}, or a patched
    grpo: {dynamic: ...}); else what its metrics show (resample logs rounds, the filter does not)."""
    for section in (run.grpo, run.rlvr):
        d = section.get("dynamic")
        if isinstance(d, Mapping) and isinstance(d.get("mode"), str):
            return str(d["mode"])
    if len(run.series("dynamic/rounds")):
        return "resample"
    return "filter" if len(run.series("dynamic/zero_std_before")) else None
