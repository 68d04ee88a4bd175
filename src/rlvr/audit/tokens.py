"""Token lengths for the audit: the task's tokenizer when it loads without the network (built-in
models always do), else an approximation of 4 characters per token, which the report states.

``TokenLengths.pad`` builds the long completions the length exploits need, about a given
number of tokens long.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..task.spec import Task

FILLER = "Let me think about this step by step and check each part again. "


class TokenLengths:
    """Counts tokens with the task's tokenizer, or approximates 4 characters per token."""

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer

    def ids(self, text: str) -> list[int] | None:
        if self.tok is None:
            return None
        return list(self.tok.encode(text, add_special_tokens=False))

    def count(self, text: str) -> int:
        ids = self.ids(text)
        return len(ids) if ids is not None else math.ceil(len(text) / 4)

    def pad(self, budget: int) -> Callable[..., str]:
        def pad(head: str, tail: str, unit: str = FILLER, tokens: int = 0) -> str:
            """head + repeated ``unit`` + tail, about ``tokens`` long in all (at most that when
            head + tail leave room; at least one character of filler)."""
            target = tokens or budget
            unit = unit or FILLER
            # Estimate characters per token from the unit, then trim: a few tokenizer calls
            # instead of one per character.
            sample_text = unit * max(1, 256 // len(unit))
            per_char = self.count(sample_text) / len(sample_text)
            room = target - self.count(head) - self.count(tail)
            m = max(1, int(room / per_char)) if per_char > 0 else 1
            filler = (unit * (m // len(unit) + 2))[:m]
            for _ in range(8):
                over = self.count(head + filler + tail) - target
                if over <= 0 or len(filler) <= 1:
                    break
                filler = filler[: max(1, len(filler) - max(1, int(over / per_char)))]
            return head + filler + tail

        return pad


def task_tokenizer(task: Task) -> tuple[Any, str | None]:
    """(the task model's tokenizer, None), or (None, a note saying why lengths are approximated)."""
    try:
        if task.model.startswith("builtin:"):
            from ..models import build_tokenizer

            return build_tokenizer(task.model.split(":", 1)[1]), None
        from ..models import load_tokenizer

        return load_tokenizer(task.model), None
    except Exception as exc:  # noqa: BLE001 - any failure falls back to an approximation, reported
        return (
            None,
            "token lengths approximated (4 characters per token): "
            f"the tokenizer of {task.model!r} did not load ({type(exc).__name__})",
        )
