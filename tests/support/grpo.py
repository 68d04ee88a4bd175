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
