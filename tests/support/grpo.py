"""The small GRPOConfig the episode tests run real TRL steps with on a built-in model."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tiny_grpo_args(tmp_path: Path, max_completion_length: int, max_steps: int = 1) -> Any:
    """4 completions of one prompt a step, CPU, no KL, no report, every step logged."""
    from trl import GRPOConfig

    return GRPOConfig(
        output_dir=str(tmp_path / "out"),
        num_generations=4,
        per_device_train_batch_size=4,
        max_completion_length=max_completion_length,
        max_steps=max_steps,
        learning_rate=1e-3,
        beta=0.0,
        report_to="none",
        logging_steps=1,
        use_cpu=True,
        seed=3407,
    )


def episode_reward_set(spec: Any, *terms: Any) -> Any:
    """The ``RewardSet`` a task with ``terms`` and the environment ``spec`` scores with: the answer
    terms, then the environment's episode terms, as ``rlvr.task.load_task`` adds them."""
    from rlvr.episodes.environment import trl_episodes
    from rlvr.rewards import build_verifier
    from rlvr.rewards.combine import RewardSet, Term
    from rlvr.task.terms import episode_terms

    extra = [Term(t.name, build_verifier(t.verifier, t.options), t.weight) for t in episode_terms(spec)]
    return RewardSet([*terms, *extra], read_episodes=trl_episodes)
