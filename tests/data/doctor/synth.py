"""Synthetic run directories for the doctor's tests: one healthy run, and one run per symptom with
exactly that symptom planted on top of the healthy one.

Deterministic (seeded); ``python tests/data/doctor/synth.py`` rewrites the committed fixtures and
``tests/doctor/test_doctor.py`` checks that doing so reproduces them byte for byte. The metric names and
the config layout are those `rlvr train` writes (``metrics.jsonl``, ``config.yaml`` with ``grpo:``,
``rlvr:`` and ``trl_resolved:``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).parent
STEPS = 60
EVAL_EVERY = 10

GRPO: dict[str, Any] = {
    "loss_type": "grpo",
    "scale_rewards": "group",
    "beta": 0.01,
    "epsilon": 0.2,
    "epsilon_high": 0.2,
    "importance_sampling_level": "token",
    "num_iterations": 1,
    "learning_rate": 5e-7,
    "num_generations": 8,
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 4,
    "seed": 3407,
    "temperature": 0.7,
    "top_p": 1.0,
    "max_completion_length": 256,
    "mask_truncated_completions": False,
    "max_grad_norm": 1.0,
    "logging_steps": 1,
    "disable_dropout": True,
    "bf16": False,
    "use_vllm": False,
    "max_steps": STEPS,
}
TRL_RESOLVED_EXTRA = {"steps_per_generation": 4, "generation_batch_size": 32, "fp16": False}
RLVR: dict[str, Any] = {
    "task": "examples/arithmetic/task.yaml",
    "model": "builtin:tiny",
    "variant": "grpo",
    "reward_terms": ["format", "correct"],
    "reward_weights": [0.1, 1.0],
    "gate": {"bypassed": True, "reason": "synthetic fixture"},
    "no_gate_reason": "synthetic fixture",
    "eval": {"every": EVAL_EVERY, "prompts": 200, "term": "correct", "temperature": 0.0},
}


def lerp(a: float, b: float, t: float) -> float:
    return a + (b - a) * t


def healthy(step: int, rng: random.Random) -> dict[str, Any]:
    t = (step - 1) / (STEPS - 1)

    def n(x: float, sd: float) -> float:
        return round(x + rng.gauss(0, sd), 6)

    fmt, cor = min(1.0, n(lerp(0.7, 0.9, t), 0.03)), max(0.0, n(lerp(0.25, 0.55, t), 0.03))
    return {
        "step": step,
        "time": 1000.0 + 2.5 * step,
        "loss": n(0.0, 0.002),
        "grad_norm": abs(n(0.5, 0.08)),
        "learning_rate": 5e-7,
        "reward": round(0.1 * fmt + cor, 6),
        "reward_std": abs(n(0.32, 0.03)),
        "rewards/format/mean": fmt,
        "rewards/format/std": abs(n(0.3, 0.03)),
        "rewards/correct/mean": cor,
        "rewards/correct/std": abs(n(0.45, 0.03)),
        "rewards/format/error_rate": 0.0,
        "rewards/correct/error_rate": abs(n(0.003, 0.002)),
        "frac_reward_zero_std": min(1.0, abs(n(lerp(0.2, 0.3, t), 0.04))),
        "entropy": n(lerp(0.8, 0.65, t), 0.03),
        "kl": round(abs(lerp(0.0, 0.02, t) + rng.gauss(0, 0.002)) if step > 1 else 0.0, 6),
        "completions/mean_length": n(40, 1.5),
        "completions/clipped_ratio": abs(n(0.02, 0.01)),
        "completions/mean_terminated_length": n(39, 1.5),
        "clip_ratio/region_mean": 0.0,
        "clip_ratio/low_mean": 0.0,
        "clip_ratio/high_mean": 0.0,
        "step_time": n(2.5, 0.1),
    }


def healthy_eval(step: int, rng: random.Random) -> dict[str, Any]:
    t = step / STEPS
    acc = round(lerp(0.25, 0.5, t) + rng.gauss(0, 0.01), 3)
    return {
        "step": step,
        "time": 1000.0 + 2.5 * step + 1,
        "eval/accuracy": acc,
        "eval/correct": int(acc * 200),
        "eval/n": 200,
        "eval/masked": 0,
        "eval/mean_length": 41.0,
        "eval/mean_length_correct": 38.0,
        "eval/mean_length_incorrect": round(45.0 + rng.gauss(0, 0.5), 2),
    }


Plant = Callable[[dict[str, Any], float, random.Random], None]


def _set(**kv: Callable[[float, random.Random], float]) -> Plant:
    def plant(row: dict[str, Any], t: float, rng: random.Random) -> None:
        for k, f in kv.items():
            row[k.replace("__", "/")] = round(f(t, rng), 6)

    return plant


def _reward_from_terms(row: dict[str, Any]) -> None:
    row["reward"] = round(0.1 * row["rewards/format/mean"] + row["rewards/correct/mean"], 6)


# name -> (training-row change, eval-row change, grpo overrides, model config.json or None)
SCENARIOS: dict[str, tuple[Plant | None, Plant | None, dict[str, Any], dict[str, Any] | None]] = {
    "healthy": (None, None, {}, None),
    "nan": (
        lambda r, t, g: r.update({"grad_norm": float("nan"), "loss": float("nan")}) if t > 0.75 else None,
        None,
        {},
        None,
    ),
    "no_signal": (
        _set(
            frac_reward_zero_std=lambda t, g: min(1.0, lerp(0.5, 0.98, min(1, 2 * t)) + g.gauss(0, 0.005)),
            reward_std=lambda t, g: abs(lerp(0.2, 0.0, min(1, 2 * t)) + g.gauss(0, 0.001)),
            rewards__correct__mean=lambda t, g: min(1.0, 0.97 + g.gauss(0, 0.005)),
            rewards__format__mean=lambda t, g: 1.0,
        ),
        lambda r, t, g: r.update({"eval/accuracy": round(0.9 + g.gauss(0, 0.005), 3)}),
        {},
        None,
    ),
    "entropy_collapse": (_set(entropy=lambda t, g: 0.8 * math.exp(-4 * t) + g.gauss(0, 0.005)), None, {}, None),
    "entropy_blowup": (_set(entropy=lambda t, g: lerp(0.5, 1.6, t) + g.gauss(0, 0.03)), None, {}, None),
    "length_flat_reward": (
        _set(
            **{
                "completions__mean_length": lambda t, g: lerp(40, 90, t) + g.gauss(0, 1.5),
                "rewards__correct__mean": lambda t, g: 0.4 + g.gauss(0, 0.03),
                "rewards__format__mean": lambda t, g: 0.8 + g.gauss(0, 0.03),
            }
        ),
        lambda r, t, g: r.update(
            {
                "eval/accuracy": round(0.35 + g.gauss(0, 0.005), 3),
                "eval/mean_length_incorrect": round(lerp(45, 100, t), 2),
            }
        ),
        {},
        None,
    ),
    "length_cotrend": (
        _set(**{"completions__mean_length": lambda t, g: lerp(40, 80, t) + g.gauss(0, 1.5)}),
        None,
        {},
        None,
    ),
    "truncation": (_set(**{"completions__clipped_ratio": lambda t, g: abs(0.25 + g.gauss(0, 0.02))}), None, {}, None),
    "reward_hacking": (
        _set(rewards__correct__mean=lambda t, g: lerp(0.25, 0.7, t) + g.gauss(0, 0.03)),
        lambda r, t, g: r.update({"eval/accuracy": round([0.30, 0.33, 0.34, 0.30, 0.27, 0.25, 0.22][round(t * 6)], 3)}),
        {},
        None,
    ),
    "term_saturation": (
        _set(
            rewards__format__mean=lambda t, g: min(1.0, lerp(0.4, 1.05, min(1, 1.5 * t))),
            rewards__correct__mean=lambda t, g: abs(0.1 + g.gauss(0, 0.02)),
        ),
        lambda r, t, g: r.update({"eval/accuracy": round(0.1 + g.gauss(0, 0.005), 3)}),
        {},
        None,
    ),
    "collapse": (
        _set(rewards__correct__mean=lambda t, g: abs(lerp(0.4, 0.05, t) + g.gauss(0, 0.03))),
        lambda r, t, g: r.update({"eval/accuracy": round(lerp(0.4, 0.1, t) + g.gauss(0, 0.005), 3)}),
        {},
        None,
    ),
    # A reward returning inf (a plain TRL run; rlvr makes it an error verdict): the advantage and then
    # the loss and gradients go NaN, which looks like an optimiser blow-up and is not one.
    "reward_nonfinite": (
        lambda r, t, g: (
            r.update(
                {
                    "reward": float("inf"),
                    "rewards/correct/mean": float("inf"),
                    "reward_std": float("nan"),
                    "loss": float("nan"),
                    "grad_norm": float("nan"),
                }
            )
            if t > 0.5
            else None
        ),
        None,
        {},
        None,
    ),
    "kl_explosion": (_set(kl=lambda t, g: 0.01 if t < 0.7 else lerp(0.05, 2.5, (t - 0.7) / 0.3)), None, {}, None),
    "verifier_errors": (_set(rewards__correct__error_rate=lambda t, g: abs(0.15 + g.gauss(0, 0.02))), None, {}, None),
    "off_policy": (
        _set(**{"clip_ratio__region_mean": lambda t, g: abs(lerp(0.1, 0.35, t) + g.gauss(0, 0.01))}),
        None,
        {"num_iterations": 4},
        None,
    ),
    "healthy_off_policy": (
        _set(**{"clip_ratio__region_mean": lambda t, g: abs(0.03 + g.gauss(0, 0.005))}),
        None,
        {"num_iterations": 2},
        None,
    ),
    "moe": (
        None,
        None,
        {},
        {"model_type": "qwen3_moe", "num_experts": 64, "num_experts_per_tok": 8, "hidden_size": 128},
    ),
    "dapo_entropy_collapse": (
        _set(entropy=lambda t, g: 0.8 * math.exp(-4 * t) + g.gauss(0, 0.005)),
        None,
        {"loss_type": "dapo", "epsilon_high": 0.28, "beta": 0.0, "mask_truncated_completions": True},
        None,
    ),
}


def build(name: str, dest: Path) -> None:
    plant, plant_eval, grpo_over, model_cfg = SCENARIOS[name]
    rng = random.Random(f"doctor-{name}")
    lines = []
    for step in range(1, STEPS + 1):
        t = (step - 1) / (STEPS - 1)
        row = healthy(step, rng)
        if plant is not None:
            plant(row, t, rng)
            if name in ("no_signal", "reward_hacking", "term_saturation", "length_flat_reward", "collapse"):
                _reward_from_terms(row)
        lines.append(row)
        if step % EVAL_EVERY == 0 or step == 1:
            ev = healthy_eval(0 if step == 1 else step, rng)
            if plant_eval is not None:
                plant_eval(ev, ev["step"] / STEPS, rng)
            lines.insert(len(lines) - 1 if step == 1 else len(lines), ev)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    grpo = {**GRPO, **grpo_over}
    rlvr = dict(RLVR)
    cfg = {"grpo": grpo, "rlvr": rlvr, "trl_resolved": {**GRPO, **TRL_RESOLVED_EXTRA, **grpo_over}}
    (dest / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False, default_flow_style=False))
    if model_cfg is not None:
        (dest / "final").mkdir(exist_ok=True)
        (dest / "final" / "config.json").write_text(json.dumps(model_cfg, indent=2) + "\n")


def main(root: Path = HERE / "synthetic") -> None:
    for name in SCENARIOS:
        build(name, root / name)


if __name__ == "__main__":
    main()
