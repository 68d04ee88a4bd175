"""Small tasks written into a tmp folder for the foundation tests."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

SHAPING = '''
def digits(completions, **kwargs):
    """A continuous reward (share of digit characters), so a random model's groups have variance."""
    return [sum(c.isdigit() for c in text) / max(len(text), 1) for text in completions]
'''


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


WEAK_REWARDS = Path(__file__).parents[1] / "audit" / "weak_rewards.py"


def weak_rewards_task(
    folder: Path,
    rewards: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    *,
    answer: str = "answer",
    budget: int = 12,
    think: str = "none",
    allow_multiple: bool = False,
    **extra: Any,
) -> Path:
    """A task file over ``rows`` with the deliberately weak test rewards importable as
    ``audit_rewards`` (tests/audit/weak_rewards.py); ``extra`` adds top-level keys (``success``)."""
    shutil.copy(WEAK_REWARDS, folder / "audit_rewards.py")
    write_rows(folder / "train.jsonl", rows)
    spec = {
        "name": "t",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl"},
        "prompt": {"template": "{question}="},
        "answer": {"column": answer, "think": think, "allow_multiple": allow_multiple},
        "rewards": rewards,
        "generation": {"max_completion_length": budget},
        **extra,
    }
    (folder / "task.yaml").write_text(json.dumps(spec))
    return folder / "task.yaml"


def make_task(
    folder: Path,
    *,
    rows: int = 16,
    extra: dict[str, Any] | None = None,
    train_rows: list[dict[str, Any]] | None = None,
    shaping: bool = False,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = (
        train_rows
        if train_rows is not None
        else [{"question": f"{i}+{i}", "answer": str(2 * i)} for i in range(10, 10 + rows)]
    )
    write_rows(folder / "train.jsonl", data)
    write_rows(folder / "eval.jsonl", [{"question": f"{i}+1", "answer": str(i + 1)} for i in range(50, 58)])
    rewards: list[dict[str, Any]] = [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}]
    if shaping:
        (folder / "shaping.py").write_text(SHAPING)
        rewards.insert(1, {"name": "digits", "verifier": "shaping.digits", "weight": 0.5})
    spec: dict[str, Any] = {
        "name": "mini",
        "model": "builtin:tiny",
        "data": {"train": "train.jsonl", "eval": "eval.jsonl"},
        "prompt": {"template": "{question}="},
        "answer": {"column": "answer", "format": "tags"},
        "rewards": rewards,
        "generation": {"temperature": 1.0, "max_completion_length": 8},
        "grpo": {
            "learning_rate": 1e-3,
            "per_device_train_batch_size": 16,
            "gradient_accumulation_steps": 1,
            "num_generations": 8,
            "beta": 0.0,
            "save_steps": 2,
        },
        "eval": {"every": 2, "max_prompts": 8},
    }
    if shaping:
        spec["success"] = "correct"  # digits is a second term that could decide success: say which one does
    for key, value in (extra or {}).items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    path = folder / "task.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def task_values(
    grpo: Mapping[str, Any] | None = None, generation: Mapping[str, Any] | None = None, seed: int | None = None
) -> Any:
    """What ``rlvr.settings.resolve`` reads of a task, without a task file: its ``grpo:`` section,
    the ``generation:`` values it sets (the rest unset) and its seed (None: unset)."""
    from types import SimpleNamespace

    written = frozenset(generation or {}) | ({"seed"} if seed is not None else frozenset())
    return SimpleNamespace(
        grpo=dict(grpo or {}), generation=SimpleNamespace(**(generation or {})), seed=seed, written=written
    )
