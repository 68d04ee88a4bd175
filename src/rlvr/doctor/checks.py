"""The symptom checks: each a pure function ``Run -> list[Finding | Note]``.

A ``Finding`` is a symptom with evidence (numbers and steps), a suggestion and, where the fix is a
config change, a ``Patch`` with exactly one change group. A ``Note`` is something that looks alarming
but the configuration explains (loss ~ 0 with ``num_iterations=1, beta=0``; clip ratios of zero
on-policy): said once, never counted as a symptom.

What is approximate, honestly:
- Trends compare the mean of an early window with the mean of a late window (each a fifth of the
  logged points, at least 3) with a Welch z-score; a run with fewer than ``MIN_POINTS`` logged
  steps is not judged for trends. Short noisy runs can miss a real trend or, rarely, show one.
- Thresholds are the heuristics of the prior-art note (verl's 0.1 truncation rule, "an order of
  magnitude" for entropy collapse, ...), not published constants. Entropy is judged only relative to
  the run's own early entropy, because absolute levels differ by an order of magnitude between runs.
- "Saturated" for a reward term assumes it scores in [0, 1], as the built-in terms do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .findings import Finding, Note, Patch
from .stats import MIN_POINTS, late_mean, mean, shift
from .table import Run, Series, is_moe

ZERO_STD_ERROR = 0.9  # "near 1": most groups carry no advantage at all (1.0 means grad = 0)
ZERO_STD_WARN = 0.5  # "over 0.5 sustained is wasteful" (prior-art note, one report at 0.63)
TINY = 1e-8  # reward_std / grad_norm at or below this is zero
ENTROPY_COLLAPSE = 0.25  # late entropy at or below this share of the early entropy
ENTROPY_COLLAPSE_SEVERE = 0.1  # "an order of magnitude"
ENTROPY_BLOWUP = 2.0  # late entropy at or above this multiple of the early entropy, and rising
LENGTH_RISE = 1.25  # mean completion length up by a quarter
REWARD_RISE = 0.05  # reward units: a change smaller than this is "flat"
TRUNCATION_MAX = 0.1  # verl: clipped_ratio over 0.1 "often means you are truncating too much"
SATURATED = 0.95  # a [0, 1] term whose late mean is at least this has nothing left to teach
KL_SPIKE = 1.0  # nats/token: any logged KL this large is an explosion
KL_HIGH = 0.1  # a late KL above this, 10x its early level, is steady growth
KL_AT_START = 0.01  # KL at the first step (policy == reference) above this: dropout or dtype bug
ERROR_RATE_MAX = 0.05  # verifier errors are masked, but more than 5 % of samples is infrastructure
CLIP_TOKEN_MAX = 0.2  # token-level clip fraction above this is large
CLIP_SEQUENCE_MAX = 0.3  # GSPO clips ~15 % of sequences normally, so the bar is higher
GRAD_RISE = 3.0  # grad_norm late/early ratio that, rising, signals off-policy instability
ALL_MASKED = 0.99  # masked rate at or above this: (almost) no sample reached the policy with a reward
DROPPED_NEAR_ALL = 0.9  # rlvr's filter skipped at least this share of the drawn groups: "near 100 %" (heuristic)


def _g(run: Run, key: str, default: Any = None) -> Any:
    return run.grpo.get(key, default)


def on_policy(run: Run) -> bool | None:
    """TRL reuses the current log-probs as "old" when each generation batch is used for exactly
    one optimizer step, once: then every ratio is 1 and clip ratios are zero by construction."""
    if not run.config_known:
        return None
    ga = int(_g(run, "gradient_accumulation_steps", 1) or 1)
    spg = _g(run, "steps_per_generation") or ga
    return int(spg) == ga and int(_g(run, "num_iterations", 1) or 1) == 1


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


def _lr_halved(run: Run, why: str) -> Patch | None:
    lr = _g(run, "learning_rate")
    if not isinstance(lr, int | float) or lr <= 0:
        return None
    return Patch("lower learning rate", {"learning_rate": float(f"{lr / 2:.3g}")}, why=why)


# ------------------------------------------------------------------------------------------
# The checks, in priority order: a broken run before a misleading reward before a variant.

Result = list[Finding | Note]


def _is_reward_key(key: str) -> bool:
    """A reward value itself (not a spread: a std over one valid sample is NaN in TRL's logs)."""
    return key in ("reward", "eval_reward") or (key.startswith(("rewards/", "eval_rewards/")) and key.endswith("/mean"))


def _reward_broken(run: Run) -> tuple[list[str], dict[str, float | int | None]]:
    """Evidence that the reward itself gives the policy nothing: every sample masked, rewards that
    are not finite numbers, a reward never logged, an eval that decided nothing."""
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    masked = run.series("rewards/masked_rate")
    lm = late_mean(masked)
    if lm is not None and lm[0] >= ALL_MASKED:
        evidence.append(
            f"rewards/masked_rate averaged {lm[0]:.0%} over steps {lm[1][0]}-{lm[1][1]}: no sample was scored, so no reward reached the policy"
        )
        numbers["masked_rate"] = lm[0]
    elif not len(masked) and run.train and all("reward" in r and r["reward"] is None for r in run.train):
        evidence.append(
            f"reward was never logged in {len(run.train)} logged steps (TRL logs None when every reward function returned None for every sample)"
        )
    bad: dict[str, int] = {}
    for r in run.train:
        for k, v in r.items():
            if _is_reward_key(k) and isinstance(v, float) and not math.isfinite(v) and k not in bad:
                bad[k] = int(r["step"])  # type: ignore[arg-type]
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
                if not _is_reward_key(k) and isinstance(v, float) and not math.isfinite(v)
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
                f"grad_norm was {gn[0]:.2g} over steps {gn[1][0]}-{gn[1][1]} (nothing to learn from, whatever the learning rate)"
            )
    undecided = [int(e["step"]) for e in run.evals if e.get("eval/n") == 0 and (e.get("eval/masked") or 0) > 0]  # type: ignore[arg-type]
    if undecided:
        evidence.append(f"held-out evals at steps {', '.join(map(str, undecided[:5]))} decided no sample (all masked)")
    if evidence and run.rollout_errors:
        evidence.append(f"the kept rollouts say why: {run.rollout_errors}")
    return evidence, numbers


def check_reward_broken(run: Run) -> Result:
    """First of all checks: with no usable reward, every other symptom (zero grad_norm, zero-std
    groups, NaN) is a consequence, and no hyperparameter can help."""
    evidence, numbers = _reward_broken(run)
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
            f"The reward is broken, not the policy or the learning rate: fix the reward function, then rescore and re-sign the gate. {where}, and `rlvr task check` tries every term on a few rows.",
            None,
            numbers,
        )
    ]


def check_nan(run: Run) -> Result:
    if _reward_broken(run)[0]:
        return []  # NaN downstream of a broken reward is the reward's fault: never blame the learning rate for it
    bad: dict[str, int] = {}
    for rows in (run.train, run.evals):
        for r in rows:
            for k, v in r.items():
                if _is_reward_key(k):
                    continue  # a non-finite reward is the reward's fault (check_reward_broken), not the optimiser's
                if isinstance(v, float) and not math.isfinite(v) and k not in bad:
                    bad[k] = int(r["step"])  # type: ignore[arg-type]
    if not bad:
        return []
    first = min(bad.values())
    listed = ", ".join(f"{k} (step {s})" for k, s in sorted(bad.items(), key=lambda kv: kv[1])[:6])
    more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
    patch: Patch | None
    if _g(run, "fp16"):
        patch = Patch("bf16 instead of fp16", {"fp16": False, "bf16": True}, why="fp16's range overflows in RL updates")
    else:
        lr = _g(run, "learning_rate")
        patch = (
            Patch(
                "lower learning rate",
                {"learning_rate": float(f"{lr / 10:.3g}")},
                why="NaN after updates usually means steps too large",
            )
            if isinstance(lr, int | float) and lr > 0
            else None
        )
    return [
        Finding(
            "nan",
            "error",
            next(iter(bad)),
            f"non-finite values from step {first}: {listed}{more}",
            "Resume from the last checkpoint before the NaN with bf16 (not fp16), gradient clipping (max_grad_norm=1.0) and a lower learning rate; check the micro-batch arithmetic.",
            patch,
            {"first_step": first, "metrics": len(bad)},
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
                f"term {term!r} could not decide {avg:.1%} of samples on average over steps {s.steps[0]}-{s.steps[-1]}{recent} (worst {s.values[worst]:.1%} at step {s.steps[worst]}){hint}",
                "Errors are masked out of the baseline, not scored 0, but this many means the verifier or sandbox is failing: run `rlvr score` on the run's completions and fix the infrastructure (timeouts, crashes, unparseable ground truth) before reading any other metric.",
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
                f"training reward rose from {reward.span()} while held-out accuracy {what} over {len(acc)} evals ({trail}; noise band {noise:.3f})"
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
                f"held-out accuracy fell from {acc.values[peak]:.3f} (step {acc.steps[peak]}) to {acc.values[-1]:.3f} (step {acc.steps[-1]})"
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
    lr = _g(run, "learning_rate")
    patch = (
        Patch(
            "lower learning rate",
            {"learning_rate": float(f"{lr / 10:.3g}")},
            why="updates large enough to destroy what the model could do",
        )
        if isinstance(lr, int | float) and lr > 0
        else None
    )
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
            "Training destroyed a capability the model had: the updates are too large (learning rate, or no gradient clipping)."
            + where,
            patch,
            numbers,
        )
    ]


def check_moe(run: Run) -> Result:
    why = is_moe(run.model_config)
    if why is None:
        if run.model_config is None:
            return [
                Note("moe", "no model config.json found beside the run, so the mixture-of-experts check did not run")
            ]
        return []
    level = _g(run, "importance_sampling_level")
    if level == "sequence":
        return []
    ga = int(_g(run, "gradient_accumulation_steps", 1) or 1)
    from ..plan.recipe import VARIANTS

    grpo: dict[str, Any] = {
        **VARIANTS["gspo"],  # sequence level, epsilon 3e-4 / 4e-4, beta 0, loss_type grpo
        # GSPO's sequence ratio only acts off-policy; TRL's docs use 4x gradient accumulation.
        "steps_per_generation": 4 * ga,
    }
    if _g(run, "generation_batch_size") is not None and "generation_batch_size" in run.explicit:
        grpo["generation_batch_size"] = None  # TRL refuses both set at once; it derives this one
    known = (
        f"importance_sampling_level={level!r}"
        if level
        else "importance_sampling_level unknown (no config found; plain GRPO assumed)"
    )
    return [
        Finding(
            "moe_plain_grpo",
            "error",
            "model_config",
            f"the model is a mixture of experts ({why}, from {run.model_config_path}) trained with {known}",
            "Token-level ratios are volatile when routed experts shift after each update; GRPO without routing replay failed to converge on MoE (GSPO paper). Switch to GSPO's sequence-level ratio.",
            Patch("GSPO", grpo, why="sequence-level importance ratio, required for MoE"),
            {},
        )
    ]


def check_no_learning_signal(run: Run) -> Result:
    if _reward_broken(run)[0]:
        return []  # explained: a broken reward gives every group the same (no) reward
    zs, rs, gn = run.series("frac_reward_zero_std"), run.series("reward_std"), run.series("grad_norm")
    parts, severity = [], None
    numbers: dict[str, float | int | None] = {}
    if (lm := late_mean(zs)) is not None and len(zs) >= 3:
        v, (a, b) = lm
        numbers["frac_reward_zero_std"] = v
        if v >= ZERO_STD_WARN:
            parts.append(f"frac_reward_zero_std averaged {v:.2f} over steps {a}-{b}")
            severity = "error" if v >= ZERO_STD_ERROR else "warning"
    for s, name in ((rs, "reward_std"), (gn, "grad_norm")):
        lm = late_mean(s)
        if lm is not None and len(s) >= 3 and lm[0] <= TINY:
            parts.append(f"{name} was {lm[0]:.2g} over steps {lm[1][0]}-{lm[1][1]}")
            numbers[name] = lm[0]
            severity = "error"
    if severity is None:
        return []
    correct = correctness_term(run)
    cseries = run.series(f"rewards/{correct}/mean") if correct else None
    cm = late_mean(cseries) if cseries is not None else None
    early = mean(cseries.slice(0, 3).values) if cseries is not None and len(cseries) >= MIN_POINTS else None
    # rlvr's dynamic sampling (rlvr.train.dynamic) keeps flat groups out of the batch: the config change
    # for prompts that are too easy or mixed. Not for all-wrong prompts (every group would be
    # dropped and the batch starves: SFT first), nor when training itself removed the signal.
    filter_on = _dynamic_mode(run) in ("filter", "resample")
    patch = (
        None
        if filter_on
        else Patch(
            "dynamic sampling (online filter)",
            {"dynamic": {"mode": "filter"}},
            why="skip prompts whose last groups all had the same reward; rlvr train reads grpo: {dynamic: ...}",
        )
    )
    if cm is not None and early is not None and abs(early - cm[0]) >= 0.1:
        fix = f"The groups were not uniform at the start ({correct!r} averaged {early:.2f} over the first steps, {cm[0]:.2f} at the end): training itself removed the signal. Read the other findings first; the prompts are not the cause."
        patch = None
    elif cm is not None and cm[0] >= 0.9:
        fix = f"Groups are all correct ({correct!r} averages {cm[0]:.2f}): the prompts are too easy. Filter the train split to mid-difficulty prompts with `rlvr probe` (it emits a difficulty-filtered prompt set) or add harder ones."
        fix += (
            " The online filter (dynamic: {mode: filter}) skips the solved prompts during training meanwhile."
            if patch
            else ""
        )
    elif cm is not None and cm[0] <= 0.1:
        fix = f"Groups are all wrong ({correct!r} averages {cm[0]:.2f}): the model cannot solve these prompts yet. Route through `rlvr probe`: a 0 % base rate means SFT first; otherwise keep only prompts with a nonzero pass rate."
        patch = None
    else:
        fix = "Filter the train split to prompts whose base pass rate is neither 0 nor 1 (`rlvr probe` emits that set); more generations per prompt or temperature 1.0 also widen the spread."
        fix += (
            " The online filter (dynamic: {mode: filter}) skips prompts whose groups stay flat during training."
            if patch
            else ""
        )
    if filter_on:
        fix += f" Dynamic sampling ({_dynamic_mode(run)}) was already on: the groups it could not replace are the data's problem (see dynamic/* in the metrics)."
    return [
        Finding(
            "no_learning_signal",
            severity,
            "frac_reward_zero_std" if "frac_reward_zero_std" in numbers else next(iter(numbers)),
            "; ".join(parts) + " (a zero-variance group has zero advantage: no gradient, whatever the scaling)",
            fix,
            patch,
            numbers,
        )
    ]


def _dynamic_mode(run: Run) -> str | None:
    """Dynamic sampling's mode as the run's config records it (rlvr: {dynamic: ...}, or a patched
    grpo: {dynamic: ...}); else what its metrics show (resample logs rounds, the filter does not)."""
    for section in (run.grpo, run.rlvr):
        d = section.get("dynamic")
        if isinstance(d, Mapping) and isinstance(d.get("mode"), str):
            return str(d["mode"])
    if len(run.series("dynamic/rounds")):
        return "resample"
    return "filter" if len(run.series("dynamic/zero_std_before")) else None


def check_dynamic_dropping_nearly_all(run: Run) -> Result:
    """rlvr's dynamic sampling drops (nearly) every group the sampler draws: the filter trains on the
    few prompts left, over and over; resample spends its rounds; either ends up training flat
    groups once nothing is left (``dynamic/starved_groups``)."""
    before = run.series("dynamic/zero_std_before")
    lm = late_mean(before)
    if lm is None or len(before) < 3 or lm[0] < DROPPED_NEAR_ALL:
        return []
    v, (a, b) = lm
    numbers: dict[str, float | int | None] = {"zero_std_before": v}
    mode = _dynamic_mode(run)
    what = "skipped" if mode == "filter" else "found flat"
    parts = [f"dynamic sampling ({mode}) {what} {v:.0%} of the groups the sampler drew over steps {a}-{b}"]
    rounds = late_mean(run.series("dynamic/rounds"))
    if rounds is not None:
        numbers["rounds"] = rounds[0]
        parts.append(f"{rounds[0]:.2g} generation rounds per batch")
    starved = late_mean(run.series("dynamic/starved_groups"))
    if starved is not None and starved[0] > 0:
        numbers["starved_groups"] = starved[0]
        parts.append(f"{starved[0]:.2g} groups per generation had no replacement (trained flat, or masked)")
    solved, unsolved = (
        late_mean(run.series("dynamic/skipped_solved")),
        late_mean(run.series("dynamic/skipped_unsolved")),
    )
    if solved is not None and unsolved is not None:
        numbers.update(skipped_solved=solved[0], skipped_unsolved=unsolved[0])
        parts.append(f"skipped prompts: {solved[0]:.0f} last solved by every completion, {unsolved[0]:.0f} by none")
        if solved[0] >= unsolved[0]:
            fix = "Most prompts are solved every time: the task is too easy for this model now. Add harder prompts (or stop: the run has learnt what these prompts teach)."
        else:
            fix = "Most prompts are failed every time: the model cannot solve them. Route through `rlvr probe` (SFT first at a 0 % base rate) or keep prompts with a nonzero pass rate."
    else:
        fix = "Nearly every prompt's groups are flat: change the data (`rlvr probe` emits a difficulty-filtered prompt set); no sampling setting can make a flat group teach."
    return [
        Finding(
            "dynamic_sampling_drops_nearly_all",
            "error" if "starved_groups" in numbers else "warning",
            "dynamic/zero_std_before",
            "; ".join(parts),
            fix,
            None,
            numbers,
        )
    ]


def check_kl(run: Run) -> Result:
    s = run.series("kl")
    if not len(s):
        return []
    peak = max(range(len(s)), key=lambda i: s.values[i])
    sh = shift(s)
    first = s.values[0]
    # Only a value logged at step 1 is "at the start": with logging_steps > 1 the first point
    # already averages a window of updates.
    if s.steps[0] <= 1 and first > KL_AT_START:
        what = f"KL was already {first:.3g} at step {s.steps[0]}, when the policy still equals the reference"
        if _g(run, "disable_dropout") is False:
            patch: Patch | None = Patch(
                "disable dropout", {"disable_dropout": True}, why="dropout makes policy and reference differ at step 0"
            )
        else:
            patch = None
        return [
            Finding(
                "kl_explosion",
                "error",
                "kl",
                what,
                "Large KL at the start means dropout is on or the reference runs in another dtype (TRL #3500): set disable_dropout=True and load both models in the same dtype.",
                patch,
                {"kl_first": first},
            )
        ]
    if s.values[peak] >= KL_SPIKE:
        what = f"KL reached {s.values[peak]:.3g} at step {s.steps[peak]}"
    elif sh is not None and sh.late >= KL_HIGH and sh.late >= 10 * max(sh.early, 1e-6) and sh.rising():
        what = f"KL grew steadily from {sh.span()}"
    else:
        return []
    if _g(run, "disable_dropout") is False:
        patch = Patch("disable dropout", {"disable_dropout": True}, why="dropout noise inflates the KL estimate")
    elif _g(run, "max_grad_norm") in (None, 0) or (
        isinstance(_g(run, "max_grad_norm"), int | float) and _g(run, "max_grad_norm") > 1.0
    ):
        patch = Patch("gradient clipping", {"max_grad_norm": 1.0}, why="bound each update")
    else:
        patch = _lr_halved(run, "smaller updates keep the policy near the reference")
    return [
        Finding(
            "kl_explosion",
            "error",
            "kl",
            what,
            "The policy is running away from the reference. Lower the learning rate (or clip gradients); if reward is flat while KL grows, learning has finished: stop at the best held-out checkpoint.",
            patch,
            {"kl_max": s.values[peak], "kl_max_step": s.steps[peak]},
        )
    ]


def check_entropy(run: Run) -> Result:
    s = run.series("entropy")
    sh = shift(s)
    if sh is None:
        if 0 < len(s) < MIN_POINTS:
            return [Note("entropy", f"only {len(s)} logged steps: entropy trends are not judged below {MIN_POINTS}")]
        return []
    if sh.early > 0 and sh.ratio <= ENTROPY_COLLAPSE and sh.falling():
        half = next((st for st, v in zip(s.steps, s.values, strict=True) if v <= sh.early / 2), None)
        if _g(run, "use_adaptive_entropy"):
            patch: Patch | None = None  # every config lever for this symptom is already pulled
            advice = "DAPO's clip and adaptive entropy are already on: read completions for repetition, and check the group ids (a grouping bug also looks like this)."
        elif _g(run, "loss_type") == "dapo" and (_g(run, "epsilon_high") or 0) >= 0.28:
            advice = (
                "DAPO is already on: hold entropy with TRL's adaptive entropy coefficient, targeting the early entropy."
            )
            patch = Patch(
                "adaptive entropy",
                {"use_adaptive_entropy": True, "entropy_target": round(sh.early, 4)},
                why="DAPO's clip-higher is already on; hold entropy at its early level",
            )
        else:
            # The overlay and its soft overlong punishment term come from the recipe, so `rlvr plan
            # --variant dapo` and the doctor can never disagree on what DAPO means.
            from ..plan.recipe import VARIANTS, term_patch

            terms = (
                tuple(term_patch("dapo", run.grpo, set(run.term_names())))
                if isinstance(_g(run, "max_completion_length"), int)
                else ()
            )
            patch = Patch(
                "DAPO",
                dict(VARIANTS["dapo"]),
                add_terms=terms,
                why="clip-higher lets low-probability tokens rise; token-level loss; overlong filtering and soft punishment",
            )
            advice = "Apply DAPO's decoupled clip (epsilon_high 0.28) with token-level loss and overlong shaping."
        return [
            Finding(
                "entropy_collapse",
                "error" if sh.ratio <= ENTROPY_COLLAPSE_SEVERE else "warning",
                "entropy",
                f"entropy fell from {sh.span()}, {sh.ratio:.0%} of its early level"
                + (f"; below half by step {half}" if half is not None else ""),
                "Completions within a group are becoming identical, so exploration (and soon the advantage) is gone. "
                + advice,
                patch,
                {"entropy_early": sh.early, "entropy_late": sh.late, "ratio": sh.ratio},
            )
        ]
    if sh.early > 0 and sh.ratio >= ENTROPY_BLOWUP and sh.rising():
        eps, eps_high = _g(run, "epsilon"), _g(run, "epsilon_high")
        if isinstance(eps, int | float) and isinstance(eps_high, int | float) and eps_high > max(eps, 0.24):
            patch = Patch(
                "lower epsilon_high",
                {"epsilon_high": 0.24},
                why="a wide upper clip lets unlikely tokens grow without bound",
            )
        else:
            patch = _lr_halved(run, "smaller steps keep the distribution from spreading")
        return [
            Finding(
                "entropy_blowup",
                "warning",
                "entropy",
                f"entropy rose from {sh.span()}, {sh.ratio:.1f}x its early level",
                "Rising entropy turns into gibberish and repetition: read recent completions (a slow drift with readable completions can be healthy exploration, e.g. after clip-higher). If they degrade, lower epsilon_high or the learning rate; token-level loss and overlong filtering also help.",
                patch,
                {"entropy_early": sh.early, "entropy_late": sh.late, "ratio": sh.ratio},
            )
        ]
    return []


def check_length(run: Run) -> Result:
    from ..plan.recipe import VARIANTS

    dr_grpo = Patch(
        "Dr. GRPO", dict(VARIANTS["dr_grpo"]), why="no per-sequence length normalisation, no std scaling of advantages"
    )
    if _g(run, "loss_type") == "dr_grpo":
        dr_grpo = None  # type: ignore[assignment]
    evidence: list[str] = []
    numbers: dict[str, float | int | None] = {}
    length, reward = shift(run.series("completions/mean_length")), shift(run.series("reward"))
    has_length_term = any(w in t.lower() for t in run.term_names() for w in ("length", "overlong", "concise"))
    if (
        length is not None
        and reward is not None
        and length.early > 0
        and length.ratio >= LENGTH_RISE
        and length.rising()
    ):
        if reward.delta < REWARD_RISE or not reward.rising():
            how = "fell" if reward.falling() else "stayed flat"
            evidence.append(
                f"mean completion length rose from {length.span()} ({length.ratio:.2f}x) while reward {how} ({reward.early:.3g} to {reward.late:.3g})"
            )
        elif not has_length_term:
            evidence.append(
                f"mean completion length rose from {length.span()} ({length.ratio:.2f}x) together with reward ({reward.early:.3g} to {reward.late:.3g}), and no reward term asks for length"
            )
        if evidence:
            numbers.update(
                length_early=length.early, length_late=length.late, reward_early=reward.early, reward_late=reward.late
            )
    inc = run.series("eval/mean_length_incorrect", evals=True)
    if (
        len(inc) >= 3
        and inc.values[0] > 0
        and inc.values[-1] / inc.values[0] >= LENGTH_RISE
        and inc.values[-1] >= inc.values[-2] >= inc.values[-3]
    ):
        trail = ", ".join(f"{v:.1f}@{s}" for s, v in zip(inc.steps, inc.values, strict=True))
        evidence.append(f"held-out incorrect answers grew longer over {len(inc)} evals ({trail})")
        numbers.update(incorrect_length_first=inc.values[0], incorrect_length_last=inc.values[-1])
    if not evidence:
        return []
    return [
        Finding(
            "length_hacking",
            "warning",
            "completions/mean_length" if "length_early" in numbers else "eval/mean_length_incorrect",
            "; ".join(evidence),
            "GRPO's 1/|o| normalisation penalises long wrong answers less, so they keep growing (Dr. GRPO). Drop the length normalisation and the std scaling."
            if dr_grpo
            else "Dr. GRPO is already on: add a soft overlong punishment term, or a length budget in the reward.",
            dr_grpo,
            numbers,
        )
    ]


def check_truncation(run: Run) -> Result:
    s = run.series("completions/clipped_ratio")
    lm = late_mean(s)
    if lm is None or len(s) < 3 or lm[0] <= TRUNCATION_MAX:
        return []
    L = _g(run, "max_completion_length")
    patch = (
        Patch(
            "raise the completion budget",
            {"max_completion_length": int(L) * 2},
            why="truncated completions get a reward for text that never ended",
        )
        if isinstance(L, int)
        else None
    )
    return [
        Finding(
            "truncation",
            "warning",
            "completions/clipped_ratio",
            f"{lm[0]:.0%} of completions hit max_completion_length (={L if L is not None else 'unknown'}) over steps {lm[1][0]}-{lm[1][1]}",
            "Over 0.1 usually means the budget is too small (verl). Raise max_completion_length; if the extra length is rambling, mask truncated completions instead.",
            patch,
            {"clipped_ratio": lm[0]},
        )
    ]


def check_off_policy(run: Run) -> Result:
    clip = run.series("clip_ratio/region_mean")
    pol = on_policy(run)
    if pol is True:
        if len(clip) and max(clip.values) == 0:
            return [
                Note(
                    "off_policy",
                    "clip ratios are zero by construction: the run is on-policy (steps_per_generation == gradient_accumulation_steps, num_iterations 1), so there is nothing to clip",
                )
            ]
        if len(clip):
            return [
                Note(
                    "off_policy",
                    f"clip ratios are nonzero (max {max(clip.values):.3g}) although the run is on-policy: that comes from vLLM importance-sampling correction or numerics, not staleness",
                )
            ]
        return []
    if not len(clip):
        return []
    level = _g(run, "importance_sampling_level", "token")
    bar = CLIP_SEQUENCE_MAX if level == "sequence" else CLIP_TOKEN_MAX
    lm = late_mean(clip)
    gn = shift(run.series("grad_norm"))
    evidence = []
    if lm is not None and lm[0] > bar:
        evidence.append(
            f"clip_ratio/region_mean averaged {lm[0]:.3f} over steps {lm[1][0]}-{lm[1][1]} (bar {bar} at {level} level)"
        )
    if gn is not None and gn.early > 0 and gn.ratio >= GRAD_RISE and gn.rising():
        evidence.append(f"grad_norm rose from {gn.span()}")
    if not evidence:
        return []
    if pol is None:
        return [
            Finding(
                "off_policy_instability",
                "warning",
                "clip_ratio/region_mean",
                "; ".join(evidence) + " (no config found: cannot tell whether the run is off-policy; pass --config)",
                "If the run reuses generations (num_iterations > 1 or steps_per_generation > gradient_accumulation_steps), go back on-policy.",
                None,
                {},
            )
        ]
    ga = int(_g(run, "gradient_accumulation_steps", 1) or 1)
    if int(_g(run, "num_iterations", 1) or 1) > 1:
        patch = Patch("on-policy updates", {"num_iterations": 1}, why="each generation batch is optimised once")
    else:
        grpo: dict[str, Any] = {"steps_per_generation": ga}
        if _g(run, "generation_batch_size") is not None and "generation_batch_size" in run.explicit:
            grpo["generation_batch_size"] = None
        patch = Patch("on-policy updates", grpo, why="one optimizer step per generation batch")
    return [
        Finding(
            "off_policy_instability",
            "warning",
            "clip_ratio/region_mean",
            "; ".join(evidence),
            "Generations are reused for too many updates and the ratios run off. Reuse them less; on an MoE model use GSPO instead.",
            patch,
            {"clip_late": lm[0] if lm else None},
        )
    ]


def check_loss_explained(run: Run) -> Result:
    s = run.series("loss")
    if not len(s) or max(abs(v) for v in s.values) > 1e-3:
        return []
    if not run.config_known:
        return [
            Note(
                "loss",
                "loss is about 0; with num_iterations=1 and beta=0 that is expected (ratio 1, mean-centred advantages), and the config is unknown here: judge the run by reward and grad_norm",
            )
        ]
    if int(_g(run, "num_iterations", 1) or 1) == 1 and not _g(run, "beta"):
        return [
            Note(
                "loss",
                "loss is about 0, as expected with num_iterations=1 and beta=0 (ratio 1, mean-centred advantages): judge the run by reward and grad_norm",
            )
        ]
    return [
        Note(
            "loss",
            f"loss is about 0 with num_iterations={_g(run, 'num_iterations', 1)} and beta={_g(run, 'beta')}; the displayed loss is still not the gradient: judge the run by reward and grad_norm",
        )
    ]


CHECKS: tuple[Callable[[Run], Result], ...] = (
    check_reward_broken,
    check_nan,
    check_verifier_errors,
    check_reward_hacking,
    check_collapse,
    check_moe,
    check_no_learning_signal,
    check_dynamic_dropping_nearly_all,
    check_kl,
    check_entropy,
    check_length,
    check_truncation,
    check_off_policy,
    check_loss_explained,
)
