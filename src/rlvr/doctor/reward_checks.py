"""Checks of the reward itself, run first: a reward that gives the policy nothing (every sample
masked, non-finite values), a verifier that cannot decide, a reward earned without solving the task
(reward hacking), and a run that lost what it could do (performance collapse). With a broken reward
every other symptom is a consequence, so these come before any check that blames a hyperparameter.
"""

from __future__ import annotations

import math
from pathlib import Path

from .findings import Finding
from .readings import (
    REWARD_RISE,
    TINY,
    Result,
    correctness_term,
    eval_noise,
    held_out_accuracy,
    is_reward_key,
    lower_learning_rate,
    step_of,
)
from .stats import MIN_POINTS, late_mean, mean, shift
from .table import Run

ALL_MASKED = 0.99  # masked rate at or above this: (almost) no sample reached the policy with a reward
ERROR_RATE_MAX = 0.05  # verifier errors are masked, but more than 5 % of samples is infrastructure
SATURATED = 0.95  # a [0, 1] term whose late mean is at least this has nothing left to teach
# Train success rate (the correctness term on training prompts, late window) above the last held-out
# accuracy by at least this many points, while the held-out accuracy did not rise beyond its noise:
# the model is rewarded on its training prompts for something that does not carry to unseen ones
# (memorised rows or a verifier hole). Source: this module's heuristic, sized so that binomial noise
# at an eval of 50 prompts (2 standard errors <= 0.14) cannot produce it; DESIGN.md: the held-out
# verified accuracy is "the only honest check for reward hacking".
TRAIN_HELD_OUT_GAP = 0.3


def reward_broken_evidence(run: Run) -> tuple[list[str], dict[str, float | int | None]]:
    """Evidence that the reward itself gives the policy nothing: every sample masked, rewards that
    are not finite numbers, a reward never logged, an eval that decided nothing."""
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    masked = run.series("rewards/masked_rate")
    lm = late_mean(masked)
    if lm is not None and lm[0] >= ALL_MASKED:
        evidence.append(
            f"rewards/masked_rate averaged {lm[0]:.0%} over steps {lm[1][0]}-{lm[1][1]}: no sample was scored, so no "
            "reward reached the policy"
        )
        numbers["masked_rate"] = lm[0]
    elif not len(masked) and run.train and all("reward" in r and r["reward"] is None for r in run.train):
        evidence.append(
            f"reward was never logged in {len(run.train)} logged steps (TRL logs None when every reward function "
            "returned None for every sample)"
        )
    bad: dict[str, int] = {}
    for r in run.train:
        for k, v in r.items():
            if is_reward_key(k) and isinstance(v, float) and not math.isfinite(v) and k not in bad:
                bad[k] = step_of(r)
    if bad:
        listed = ", ".join(f"{k} (step {st})" for k, st in sorted(bad.items(), key=lambda kv: kv[1])[:4])
        evidence.append(
            f"the reward is not a finite number: {listed}{f' and {len(bad) - 4} more' if len(bad) > 4 else ''}"
        )
        numbers["first_nonfinite_step"] = min(bad.values())
        after = sorted(
            {
                k
                for r in run.train
                for k, v in r.items()
                if not is_reward_key(k) and isinstance(v, float) and not math.isfinite(v)
            }
        )
        if after:
            evidence.append(
                f"{', '.join(after[:4])} went non-finite too (a consequence: the advantage is computed from the reward)"
            )
    if evidence:
        gn = late_mean(run.series("grad_norm"))
        if gn is not None and gn[0] <= TINY:
            evidence.append(
                f"grad_norm was {gn[0]:.2g} over steps {gn[1][0]}-{gn[1][1]} (nothing to learn from, whatever the "
                "learning rate)"
            )
    undecided = [step_of(e) for e in run.evals if e.get("eval/n") == 0 and (e.get("eval/masked") or 0) > 0]
    if undecided:
        evidence.append(f"held-out evals at steps {', '.join(map(str, undecided[:5]))} decided no sample (all masked)")
    if evidence and run.rollout_errors:
        evidence.append(f"the kept rollouts say why: {run.rollout_errors}")
    return evidence, numbers


def check_reward_broken(run: Run) -> Result:
    """First of all checks: with no usable reward, every other symptom (zero grad_norm, zero-std
    groups, NaN) is a consequence, and no hyperparameter can help."""
    evidence, numbers = reward_broken_evidence(run)
    if not evidence:
        return []
    source = Path(run.source) if Path(run.source).is_dir() else Path(run.source).parent
    kept = source / "rollouts" / "rollouts.jsonl"
    where = (
        f"`rlvr score {kept} --task TASK` shows every verdict of the completions the run kept"
        if kept.exists()
        else "`rlvr score` on a few completions shows every verdict"
    )
    return [
        Finding(
            "reward_broken",
            "error",
            "rewards/masked_rate" if "masked_rate" in numbers else "reward",
            "; ".join(evidence),
            "The reward is broken, not the policy or the learning rate: fix the reward function, then rescore and "
            f"re-sign the gate. {where}, and `rlvr task check` tries every term on a few rows.",
            None,
            numbers,
        )
    ]


def check_verifier_errors(run: Run) -> Result:
    out: Result = []
    for key in run.keys():
        if not (key.startswith("rewards/") and key.endswith("/error_rate")):
            continue
        s = run.series(key)
        if not len(s):
            continue
        avg = mean(s.values)
        late = late_mean(s)
        # The late window too: infrastructure that breaks at step 950 of 1000 barely moves the mean.
        if avg <= ERROR_RATE_MAX and (late is None or late[0] <= ERROR_RATE_MAX):
            continue
        term = key.split("/")[1]
        worst = max(range(len(s)), key=lambda i: s.values[i])
        timeouts = run.series(f"rewards/{term}/timeout_rate")
        hint = f"; timeouts are {mean(timeouts.values):.0%} of samples" if len(timeouts) else ""
        recent = (
            f", {late[0]:.1%} over steps {late[1][0]}-{late[1][1]}"
            if late is not None and late[0] > ERROR_RATE_MAX
            else ""
        )
        out.append(
            Finding(
                "verifier_errors",
                "error",
                key,
                f"term {term!r} could not decide {avg:.1%} of samples on average over steps "
                f"{s.steps[0]}-{s.steps[-1]}{recent} (worst {s.values[worst]:.1%} at step {s.steps[worst]}){hint}",
                "Errors are masked out of the baseline, not scored 0, but this many means the verifier or sandbox is "
                "failing: run `rlvr score` on the run's completions and fix the infrastructure (timeouts, crashes, "
                "unparseable ground truth) before reading any other metric.",
                None,
                {"mean": avg, "max": s.values[worst], "max_step": s.steps[worst]},
            )
        )
    return out


def check_reward_hacking(run: Run) -> Result:
    """Two signatures, one finding: training reward up while held-out accuracy is flat or falling
    over the evals; or one term saturating while the correctness term does not move."""
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    keep = ""
    reward = shift(run.series("reward"))
    acc = held_out_accuracy(run)
    if reward is not None and reward.delta >= REWARD_RISE and reward.rising() and len(acc) >= 3:
        noise = eval_noise(run, mean(acc.values))
        peak = max(range(len(acc)), key=lambda i: acc.values[i])
        falling = peak <= len(acc) - 3 and all(v < acc.values[peak] - noise for v in acc.values[peak + 1 :])
        flat = acc.values[peak] - acc.values[0] <= noise
        if falling or flat:
            trail = ", ".join(f"{v:.3f}@{s}" for s, v in zip(acc.steps, acc.values, strict=True))
            if falling:
                what = f"fell after its peak {acc.values[peak]:.3f} at step {acc.steps[peak]}"
            elif acc.values[-1] < acc.values[0] - noise:
                what = "fell"
            else:
                what = "stayed flat"
            evidence.append(
                f"training reward rose from {reward.span()} while held-out accuracy {what} over {len(acc)} evals "
                f"({trail}; noise band {noise:.3f})"
            )
            keep = f" Keep the checkpoint nearest step {acc.steps[peak]} (the held-out peak)."
            numbers.update(
                reward_early=reward.early,
                reward_late=reward.late,
                acc_first=acc.values[0],
                acc_peak=acc.values[peak],
                acc_peak_step=acc.steps[peak],
                acc_last=acc.values[-1],
                evals=len(acc),
            )
    correct = correctness_term(run)
    c_shift = shift(run.series(f"rewards/{correct}/mean")) if correct else None
    if not evidence and reward is not None and reward.delta >= REWARD_RISE and c_shift is not None and len(acc) >= 1:
        # Too few evals for a trend (one at the start and one at the end is common): the gap itself.
        noise = eval_noise(run, acc.values[-1])
        gap = c_shift.late - acc.values[-1]
        if gap >= TRAIN_HELD_OUT_GAP and acc.values[-1] - acc.values[0] <= max(noise, 0.25 * reward.delta):
            evidence.append(
                f"training reward rose from {reward.span()} and the training {correct!r} rate reached "
                f"{c_shift.late:.2f}, while held-out accuracy was {acc.values[-1]:.3f} at step {acc.steps[-1]} "
                f"(from {acc.values[0]:.3f} at step {acc.steps[0]}): a gap of {gap:.2f}, over the "
                f"{TRAIN_HELD_OUT_GAP:.2f} threshold (rlvr.doctor.reward_checks.TRAIN_HELD_OUT_GAP: beyond the noise "
                f"of a 50-prompt eval; noise band here {noise:.3f})"
            )
            numbers.update(
                reward_early=reward.early,
                reward_late=reward.late,
                train_correct_late=c_shift.late,
                acc_first=acc.values[0],
                acc_last=acc.values[-1],
                gap=gap,
                threshold=TRAIN_HELD_OUT_GAP,
                evals=len(acc),
            )
    if c_shift is not None and c_shift.delta < REWARD_RISE and c_shift.late < SATURATED:
        for term in run.term_names():
            s = shift(run.series(f"rewards/{term}/mean")) if term != correct else None
            if s is not None and s.late >= SATURATED and s.delta >= 0.2:
                evidence.append(
                    f"term {term!r} rose from {s.span()} and is saturated, while {correct!r} went from {c_shift.span()}"
                )
                numbers.update(
                    {
                        f"{term}_early": s.early,
                        f"{term}_late": s.late,
                        f"{correct}_early": c_shift.early,
                        f"{correct}_late": c_shift.late,
                    }
                )
    if not evidence:
        return []
    if run.rollout_quotes:
        evidence.append("the best-rewarded kept rollouts: " + " | ".join(run.rollout_quotes))
    metric = acc.key if "acc_first" in numbers else f"rewards/{correct}/mean"
    return [
        Finding(
            "reward_hacking",
            "error",
            metric,
            "; ".join(evidence),
            "The reward is being earned without solving the task. Read completions with high reward and wrong answers "
            "(`rlvr inspect`), fix the verifier or lower the saturated term's weight, and pass the gate again."
            + keep
            + " Hyperparameters do not fix a reward that measures the wrong thing.",
            None,
            numbers,
        )
    ]


def check_collapse(run: Run) -> Result:
    """The run lost a capability it had: held-out accuracy or the training correctness rate fell
    to half or less, without the training reward rising (that would be reward hacking)."""
    reward = shift(run.series("reward"))
    if reward is not None and reward.rising() and reward.delta >= REWARD_RISE:
        return []
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    acc = held_out_accuracy(run)
    peak_step = None
    if len(acc) >= 2:
        noise = eval_noise(run, acc.values[0])
        peak = max(range(len(acc)), key=lambda i: acc.values[i])
        if acc.values[peak] - acc.values[-1] > noise and acc.values[-1] <= 0.5 * acc.values[peak]:
            evidence.append(
                f"held-out accuracy fell from {acc.values[peak]:.3f} (step {acc.steps[peak]}) to {acc.values[-1]:.3f} "
                f"(step {acc.steps[-1]})"
            )
            numbers.update(acc_peak=acc.values[peak], acc_peak_step=acc.steps[peak], acc_last=acc.values[-1])
            peak_step = acc.steps[peak]
    correct = correctness_term(run)
    c = shift(run.series(f"rewards/{correct}/mean")) if correct else None
    if c is not None and c.falling() and c.delta <= -REWARD_RISE and c.late <= 0.5 * c.early:
        evidence.append(f"training {correct!r} rate fell from {c.span()}")
        numbers.update(correct_early=c.early, correct_late=c.late)
    if not evidence:
        return []
    gn = run.series("grad_norm")
    if len(gn) >= MIN_POINTS:
        top = max(range(len(gn)), key=lambda i: gn.values[i])
        typical = sorted(gn.values)[len(gn) // 2]
        if gn.values[top] >= 3 * max(typical, 1e-12):
            evidence.append(f"grad_norm peaked at {gn.values[top]:.3g} at step {gn.steps[top]} (median {typical:.3g})")
            numbers.update(grad_norm_peak=gn.values[top], grad_norm_peak_step=gn.steps[top])
    patch = lower_learning_rate(run, 10, "updates large enough to destroy what the model could do")
    if peak_step is None:
        where = ""
    elif peak_step == 0:
        where = " The held-out peak was before any update: restart from the starting model, not from a checkpoint."
    else:
        where = f" Resume from the checkpoint nearest step {peak_step} (the held-out peak), not from the end."
    return [
        Finding(
            "performance_collapse",
            "error",
            acc.key if "acc_peak" in numbers else f"rewards/{correct}/mean",
            "; ".join(evidence),
            "Training destroyed a capability the model had: the updates are too large (learning rate, or no gradient "
            "clipping)." + where,
            patch,
            numbers,
        )
    ]
