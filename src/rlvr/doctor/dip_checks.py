"""A run whose first updates broke the policy for a while: the training success rate fell to half
or less within the first half of the run, then came back. ``check_collapse`` owns a fall that
stays (the late window at half or less); this check owns the dip a run recovers from, which costs
steps and leaves the end of the run looking healthy, so neither the late-vs-early trend nor the
end state shows it.

Measured on ``examples/tool-search`` (builtin:tiny after an SFT warm start, 2 prompts x 8 a
step, learning rate 1e-4, no warmup): the success rate was 0.74 over steps 1-6, 0.23 over steps
12-17, and back near 0.65 only after about 100 steps; at 3e-5 the same start showed no dip.

How it is judged, approximately: windows of ``w`` logged steps (a fiftieth of the run, 5 to 10);
the first window against the lowest window that starts in the first half of the run. A dip counts
when that window is at half the first one or less, at least ``DIP_MIN`` lower, and lower by at
least ``Z_SIGNIFICANT`` standard errors of the two windows' own spread and ``DIP_Z`` standard
errors of the run's step-to-step noise (its second half's spread: the lowest of many windows is
low by chance more often than one window), and the late window (a fifth of the run) is above half
the first one. On flat simulated runs (per-step rates of 1-4 prompts x 8 samples, prompt
difficulty spread, 60-500 steps) it fired on 1 of 1,000; the measured dip above is at 4.2 run
standard errors, so a stricter bar would miss it.
"""

from __future__ import annotations

import math

from .findings import Finding
from .readings import Result, correctness_term, lower_learning_rate
from .stats import Z_SIGNIFICANT, mean, var, window
from .table import Run

__all__ = ["DIP_MIN", "DIP_RATIO", "DIP_Z", "check_early_dip"]

DIP_RATIO = 0.5  # the lowest early window at this share of the first window or less
DIP_MIN = 0.2  # ... and at least this much lower (reward units), so a run near 0 never shows one
DIP_Z = 4.0  # ... by this many of the run's own window standard errors (the lowest of many windows)


def _width(n: int) -> int:
    return max(5, min(10, n // 50))


def check_early_dip(run: Run) -> Result:
    """The training success rate dipped to half or less early in the run and came back."""
    correct = correctness_term(run)
    key = f"rewards/{correct}/mean" if correct else "reward"
    s = run.series(key)
    n = len(s)
    w = _width(n)
    if n < 6 * w:
        return []
    vals = s.values
    first = vals[:w]
    start = mean(first)
    lows = [(mean(vals[j : j + w]), j) for j in range(w, n // 2 - w + 1)]
    if not lows:
        return []
    low, j = min(lows)
    dip = vals[j : j + w]
    se = math.sqrt(var(first) / w + var(dip) / w)
    drop = start - low
    late_n = window(n)
    late = mean(vals[n - late_n :])
    z = drop / se if se > 0 else (math.inf if drop > 0 else 0.0)
    # The run's own step-to-step noise, from its second half, judges the lowest of many windows:
    # DIP_Z of these standard errors, where one window would need Z_SIGNIFICANT.
    sigma = math.sqrt(var(vals[n // 2 :]))
    noise = sigma * math.sqrt(2 / w)
    z_run = drop / noise if noise > 0 else (math.inf if drop > 0 else 0.0)
    if not (
        low <= DIP_RATIO * start
        and drop >= DIP_MIN
        and min(z, z_run) >= Z_SIGNIFICANT
        and z_run >= DIP_Z
        and late > DIP_RATIO * start
    ):
        return []
    back = next((k for k in range(j + w, n - w + 1) if mean(vals[k : k + w]) >= start - drop / 2), None)
    what = f"the training {correct!r} rate" if correct else "the training reward"
    evidence = (
        f"{what} fell from {start:.3g} (steps {s.steps[0]}-{s.steps[w - 1]}) to {low:.3g} (steps {s.steps[j]}-"
        f"{s.steps[j + w - 1]}), "
        + (
            f"was back above {start - drop / 2:.3g} over steps {s.steps[back]}-{s.steps[back + w - 1]}"
            if back is not None
            else "and came back only partly"
        )
        + f", and ends at {late:.3g} (steps {s.steps[n - late_n]}-{s.steps[-1]})"
    )
    numbers: dict[str, float | int | None] = {
        "start": start,
        "low": low,
        "low_step": s.steps[j],
        "late": late,
        "back_step": s.steps[back] if back is not None else None,
        "z": z,
        "z_run": z_run,
    }
    return [
        Finding(
            "early_dip",
            "warning",
            key,
            evidence,
            "The first updates were large enough to break what the model could do, and the run spent steps "
            "winning it back. Lower the learning rate (or warm it up with warmup_steps) and compare held-out "
            "accuracy at the same step.",
            lower_learning_rate(run, 3, "the first updates broke the policy for a while"),
            numbers,
        )
    ]
