"""Stopping a run that cannot learn: thresholds, the streak counter, and the evidence quoted.

A GRPO update needs samples the reward could decide and groups whose rewards differ. When every
sample is masked (a reward that always raises) or every group is uniform, ``grad_norm`` is 0 and
the run would otherwise finish "successfully" having learnt nothing. ``StopWatch`` counts the
logging steps in a row at or above each threshold of ``StopRules`` (resolved with every other
setting by ``rlvr.settings.resolve``: the recipe's, then the task's ``grpo: {stop: ...}``, then a
config file's) and ``rlvr train`` raises ``RunStopped`` with the reason and, from the kept
rollouts, the most common verdict detail of the masked samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import RunError
from ..settings.recipe import StopRules


class RunStopped(RunError):
    """Training was stopped because the run cannot learn (samples masked, no reward variance)."""


class StopWatch:
    """Counts consecutive logging steps over each threshold; ``update`` returns why to stop, or None."""

    def __init__(self, rules: StopRules) -> None:
        self.rules = rules
        self.masked: list[tuple[int, float]] = []
        self.zero: list[tuple[int, float]] = []

    @staticmethod
    def _streak(streak: list[tuple[int, float]], step: int, value: Any, threshold: float) -> None:
        if not isinstance(value, int | float) or isinstance(value, bool):
            return  # not logged in this window: neither counts nor breaks a streak
        if value >= threshold or value != value:  # NaN: nothing could be measured
            streak.append((step, float(value)))
        else:
            streak.clear()

    def update(self, step: int, logs: Mapping[str, Any]) -> str | None:
        r = self.rules
        self._streak(self.masked, step, logs.get("rewards/masked_rate"), r.masked_rate)
        self._streak(self.zero, step, logs.get("frac_reward_zero_std"), r.zero_std)
        if r.masked_steps and len(self.masked) >= r.masked_steps:
            seen = self.masked[-r.masked_steps :]
            low = min(v for _, v in seen)
            share = "every sample was" if low >= 1 else f"{low:.0%} or more of the samples were"
            return (
                f"{share} masked (a reward term could not decide it) for {r.masked_steps} logging steps in a row "
                f"(steps {seen[0][0]}-{seen[-1][0]}; threshold grpo.stop.masked_rate {r.masked_rate:g}): the reward "
                "is broken, not the policy"
            )
        if r.zero_std_steps and len(self.zero) >= r.zero_std_steps:
            seen = self.zero[-r.zero_std_steps :]
            mean_reward = logs.get("reward")
            rew = f"; reward {mean_reward:.3g}" if isinstance(mean_reward, int | float) else ""
            return (
                f"at least {r.zero_std:.0%} of prompt groups had zero reward variance for {r.zero_std_steps} logging "
                f"steps in a row (steps {seen[0][0]}-{seen[-1][0]}{rew}; threshold grpo.stop.zero_std "
                f"{r.zero_std:g}): zero advantage, no gradient. "
                "Check the base rate with rlvr probe (0 %: SFT first; near 100 %: harder prompts)"
            )
        return None


def stop_evidence(run_dir: Path, step: int) -> str:
    """The most common verdict detail among the masked rollouts of ``step`` (one line), or ''."""
    from .. import keptrollouts as rollouts

    summary = rollouts.error_summary(run_dir, step)
    return f"; {summary} (all: {run_dir / rollouts.FOLDER})" if summary else ""
