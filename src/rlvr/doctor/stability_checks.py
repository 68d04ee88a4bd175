"""Checks of the optimisation's stability: non-finite values, a mixture-of-experts model on
token-level ratios (GSPO), KL running away from the reference, entropy collapsing or blowing up
(DAPO), off-policy ratios running off, and a loss of about zero that the configuration explains.
"""

from __future__ import annotations

import math
from typing import Any

from .findings import Finding, Note, Patch
from .readings import Result, is_reward_key, lower_learning_rate, on_policy, setting, step_of
from .reward_checks import reward_broken_evidence
from .stats import MIN_POINTS, late_mean, shift
from .table import Run, is_moe

ENTROPY_COLLAPSE = 0.25  # late entropy at or below this share of the early entropy
ENTROPY_COLLAPSE_SEVERE = 0.1  # "an order of magnitude"
ENTROPY_BLOWUP = 2.0  # late entropy at or above this multiple of the early entropy, and rising
KL_SPIKE = 1.0  # nats/token: any logged KL this large is an explosion
KL_HIGH = 0.1  # a late KL above this, 10x its early level, is steady growth
KL_AT_START = 0.01  # KL at the first step (policy == reference) above this: dropout or dtype bug
CLIP_TOKEN_MAX = 0.2  # token-level clip fraction above this is large
CLIP_SEQUENCE_MAX = 0.3  # GSPO clips ~15 % of sequences normally, so the bar is higher
GRAD_RISE = 3.0  # grad_norm late/early ratio that, rising, signals off-policy instability


def check_nan(run: Run) -> Result:
    if reward_broken_evidence(run)[0]:
        return []  # NaN downstream of a broken reward is the reward's fault: never blame the learning rate for it
    bad: dict[str, int] = {}
    for rows in (run.train, run.evals):
        for r in rows:
            for k, v in r.items():
                if is_reward_key(k):
                    continue  # a non-finite reward is the reward's fault (check_reward_broken), not the optimiser's
                if isinstance(v, float) and not math.isfinite(v) and k not in bad:
                    bad[k] = step_of(r)
    if not bad:
        return []
    first = min(bad.values())
    listed = ", ".join(f"{k} (step {s})" for k, s in sorted(bad.items(), key=lambda kv: kv[1])[:6])
    more = f" and {len(bad) - 6} more" if len(bad) > 6 else ""
    patch: Patch | None
    if setting(run, "fp16"):
        patch = Patch("bf16 instead of fp16", {"fp16": False, "bf16": True}, why="fp16's range overflows in RL updates")
    else:
        patch = lower_learning_rate(run, 10, "NaN after updates usually means steps too large")
    return [
        Finding(
            "nan",
            "error",
            next(iter(bad)),
            f"non-finite values from step {first}: {listed}{more}",
            "Resume from the last checkpoint before the NaN with bf16 (not fp16), gradient clipping "
            "(max_grad_norm=1.0) and a lower learning rate; check the micro-batch arithmetic.",
            patch,
            {"first_step": first, "metrics": len(bad)},
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
    level = setting(run, "importance_sampling_level")
    if level == "sequence":
        return []
    ga = int(setting(run, "gradient_accumulation_steps", 1) or 1)
    from ..settings.recipe import VARIANTS

    grpo: dict[str, Any] = {
        **VARIANTS["gspo"],  # sequence level, epsilon 3e-4 / 4e-4, beta 0, loss_type grpo
        # GSPO's sequence ratio only acts off-policy; TRL's docs use 4x gradient accumulation.
        "steps_per_generation": 4 * ga,
    }
    if setting(run, "generation_batch_size") is not None and "generation_batch_size" in run.explicit:
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
            "Token-level ratios are volatile when routed experts shift after each update; GRPO without routing replay "
            "failed to converge on MoE (GSPO paper). Switch to GSPO's sequence-level ratio.",
            Patch("GSPO", grpo, why="sequence-level importance ratio, required for MoE"),
            {},
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
        if setting(run, "disable_dropout") is False:
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
                "Large KL at the start means dropout is on or the reference runs in another dtype (TRL #3500): set "
                "disable_dropout=True and load both models in the same dtype.",
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
    if setting(run, "disable_dropout") is False:
        patch = Patch("disable dropout", {"disable_dropout": True}, why="dropout noise inflates the KL estimate")
    elif setting(run, "max_grad_norm") in (None, 0) or (
        isinstance(setting(run, "max_grad_norm"), int | float) and setting(run, "max_grad_norm") > 1.0
    ):
        patch = Patch("gradient clipping", {"max_grad_norm": 1.0}, why="bound each update")
    else:
        patch = lower_learning_rate(run, 2, "smaller updates keep the policy near the reference")
    return [
        Finding(
            "kl_explosion",
            "error",
            "kl",
            what,
            "The policy is running away from the reference. Lower the learning rate (or clip gradients); if reward is "
            "flat while KL grows, learning has finished: stop at the best held-out checkpoint.",
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
        if setting(run, "use_adaptive_entropy"):
            patch: Patch | None = None  # every config lever for this symptom is already pulled
            advice = (
                "DAPO's clip and adaptive entropy are already on: read completions for repetition, and check the "
                "group ids (a grouping bug also looks like this)."
            )
        elif setting(run, "loss_type") == "dapo" and (setting(run, "epsilon_high") or 0) >= 0.28:
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
            from ..settings.recipe import VARIANTS, term_patch

            terms = (
                tuple(term_patch("dapo", run.grpo, set(run.term_names())))
                if isinstance(setting(run, "max_completion_length"), int)
                else ()
            )
            patch = Patch(
                "DAPO",
                dict(VARIANTS["dapo"]),
                add_terms=terms,
                why=(
                    "clip-higher lets low-probability tokens rise; token-level loss; overlong filtering and soft "
                    "punishment"
                ),
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
        eps, eps_high = setting(run, "epsilon"), setting(run, "epsilon_high")
        if isinstance(eps, int | float) and isinstance(eps_high, int | float) and eps_high > max(eps, 0.24):
            patch = Patch(
                "lower epsilon_high",
                {"epsilon_high": 0.24},
                why="a wide upper clip lets unlikely tokens grow without bound",
            )
        else:
            patch = lower_learning_rate(run, 2, "smaller steps keep the distribution from spreading")
        return [
            Finding(
                "entropy_blowup",
                "warning",
                "entropy",
                f"entropy rose from {sh.span()}, {sh.ratio:.1f}x its early level",
                "Rising entropy turns into gibberish and repetition: read recent completions (a slow drift with "
                "readable completions can be healthy exploration, e.g. after clip-higher). If they degrade, lower "
                "epsilon_high or the learning rate; token-level loss and overlong filtering also help.",
                patch,
                {"entropy_early": sh.early, "entropy_late": sh.late, "ratio": sh.ratio},
            )
        ]
    return []


def check_off_policy(run: Run) -> Result:
    clip = run.series("clip_ratio/region_mean")
    pol = on_policy(run)
    if pol is True:
        if len(clip) and max(clip.values) == 0:
            return [
                Note(
                    "off_policy",
                    "clip ratios are zero by construction: the run is on-policy (steps_per_generation == "
                    "gradient_accumulation_steps, num_iterations 1), so there is nothing to clip",
                )
            ]
        if len(clip):
            return [
                Note(
                    "off_policy",
                    f"clip ratios are nonzero (max {max(clip.values):.3g}) although the run is on-policy: that comes "
                    "from vLLM importance-sampling correction or numerics, not staleness",
                )
            ]
        return []
    if not len(clip):
        return []
    level = setting(run, "importance_sampling_level", "token")
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
                "If the run reuses generations (num_iterations > 1 or steps_per_generation > "
                "gradient_accumulation_steps), go back on-policy.",
                None,
                {},
            )
        ]
    ga = int(setting(run, "gradient_accumulation_steps", 1) or 1)
    if int(setting(run, "num_iterations", 1) or 1) > 1:
        patch = Patch("on-policy updates", {"num_iterations": 1}, why="each generation batch is optimised once")
    else:
        grpo: dict[str, Any] = {"steps_per_generation": ga}
        if setting(run, "generation_batch_size") is not None and "generation_batch_size" in run.explicit:
            grpo["generation_batch_size"] = None
        patch = Patch("on-policy updates", grpo, why="one optimizer step per generation batch")
    return [
        Finding(
            "off_policy_instability",
            "warning",
            "clip_ratio/region_mean",
            "; ".join(evidence),
            "Generations are reused for too many updates and the ratios run off. Reuse them less; on an MoE model use "
            "GSPO instead.",
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
                "loss is about 0; with num_iterations=1 and beta=0 that is expected (ratio 1, mean-centred "
                "advantages), and the config is unknown here: judge the run by reward and grad_norm",
            )
        ]
    if int(setting(run, "num_iterations", 1) or 1) == 1 and not setting(run, "beta"):
        return [
            Note(
                "loss",
                "loss is about 0, as expected with num_iterations=1 and beta=0 (ratio 1, mean-centred advantages): "
                "judge the run by reward and grad_norm",
            )
        ]
    return [
        Note(
            "loss",
            f"loss is about 0 with num_iterations={setting(run, 'num_iterations', 1)} and "
            f"beta={setting(run, 'beta')}; the displayed loss is still not the gradient: judge the run by reward and "
            "grad_norm",
        )
    ]
