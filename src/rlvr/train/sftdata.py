"""``rlvr sft --data FILE``: a warm start on rows other than the train split.

SFT on the train split teaches the answers of the very rows GRPO then trains on, so GRPO's reward
on them pays for what SFT taught by heart (measured on ``examples/tool-search``: a warm start on
the train rows scored 70 % on them and 39 % on held-out questions, and GRPO moved neither). A
separate file keeps every train row unseen. Its rows are checked before the model loads:

- each row fills the columns the prompt names and the answer column (one line per row, naming
  the file and the row, at most ``MAX_ROW_PROBLEMS``);
- none of its prompts is a held-out (eval split) prompt: refused, since every later accuracy
  would then measure memory;
- rows whose prompt is also a train row's are counted in a warning (GRPO's reward on those rows
  would pay for answers SFT taught).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data import read_rows
from ..errors import ConfigError, DataError, Problem
from ..task import Task
from ..task.datacheck import prompt_key
from ..task.spec import MAX_ROW_PROBLEMS

__all__ = ["sft_data_rows"]


def _prompts(task: Task, split: str) -> list[str | None]:
    try:
        return [prompt_key(task, r) for r in task.load_split(split)]
    except DataError:  # an unset split, or one that cannot load here (hf: offline): nothing to compare
        return []


def sft_data_rows(task: Task, path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of ``path`` for SFT and the warnings about them (see the module docstring)."""
    rows = read_rows(str(path))
    if not rows:
        raise ConfigError(Problem(f"{path}", "--data: the file has no rows", "point --data at a file with rows"))
    from ..task.rowchecks import rows_size_problems

    if oversized := rows_size_problems(rows, str(path)):  # the one size rule, before anything tokenizes
        raise ConfigError(oversized, source="rlvr sft --data")
    needed = [*task.prompt.columns(), task.answer_column]
    problems = []
    for i, row in enumerate(rows, 1):
        empty = [c for c in needed if row.get(c) is None or str(row.get(c)).strip() == ""]
        if empty:
            problems.append(
                Problem(
                    f"{path}:{i}", f"row {i}: column(s) {', '.join(empty)} missing or empty", "fill in or drop the row"
                )
            )
            if len(problems) >= MAX_ROW_PROBLEMS:
                break
    if problems:
        raise ConfigError(problems, source="rlvr sft --data")
    keys = {prompt_key(task, r) for r in rows}
    held = [i for i, k in enumerate(_prompts(task, "eval"), 1) if k in keys]
    if held:
        raise ConfigError(
            Problem(
                f"{path}",
                f"--data: {len(held)} of its prompts are held-out prompts (eval split row {held[0]} is one)",
                "drop those rows: SFT on held-out prompts makes every later accuracy a measure of memory",
            )
        )
    train = set(_prompts(task, "train"))
    shared = sum(1 for r in rows if prompt_key(task, r) in train)
    warnings = (
        [
            f"{shared} of the {len(rows)} rows of {path} are also train rows: GRPO's reward on those rows would pay "
            "for answers SFT taught by heart"
        ]
        if shared
        else []
    )
    return rows, warnings
