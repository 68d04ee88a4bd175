"""The checker a task file is validated with: it collects every problem (where, what, how to fix)
instead of stopping at the first, and the tables of the keys each section of a task file allows."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..errors import Problem

TOP_KEYS = {
    "name",
    "model",
    "data",
    "prompt",
    "answer",
    "rewards",
    "success",
    "generation",
    "grpo",
    "sft",
    "probe",
    "eval",
    "seed",
    "description",
    "environment",  # tools and episode limits: rlvr.episodes.spec
}
# Keys that named the success term before the top-level ``success:`` key replaced them.
MOVED_KEYS = {("probe", "success_term"), ("eval", "term")}
SECTION_KEYS = {
    "data": {"train", "eval", "eval_size"},
    "prompt": {"template", "system", "user"},
    "answer": {"column", "format", "tag", "think", "boxed", "allow_multiple"},
    "generation": {"temperature", "max_completion_length", "top_p"},
    "probe": {"k", "max_prompts", "too_easy", "success_term"},  # success_term: moved, see MOVED_KEYS
    "eval": {"every", "max_prompts", "temperature", "term", "samples"},
}
TERM_KEYS = {"name", "verifier", "weight", "options"}


class Checker:
    """Collects the problems of one task file; ``load_task`` raises them all at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def add(self, where: str, what: str, fix: str = "") -> None:
        """Record a problem at ``where`` (a key path such as ``data.train``, or a file and row)."""
        self.problems.append(Problem(f"{self.source}: {where}" if where else self.source, what, fix))

    def keys(self, where: str, data: Mapping[str, Any], allowed: set[str]) -> None:
        """Report every key of ``data`` not in ``allowed``, with the closest allowed key as the fix."""
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                fix = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(sorted(allowed))}"
                self.add(f"{where}{key}" if where else str(key), "unknown key", fix)

    def typed(self, where: str, value: Any, kind: type | tuple[type, ...], what: str) -> bool:
        """Whether ``value`` is a ``kind`` (a boolean is never a number); reports it when not."""
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            self.add(where, f"must be {what}, got a boolean {value!r}", f"write {what}")
            return False
        if not isinstance(value, kind):
            self.add(where, f"must be {what}, got {type(value).__name__} {value!r}", f"write {what}")
            return False
        return True

    def section(self, raw: Mapping[str, Any], key: str) -> dict[str, Any]:
        """The mapping under ``key`` (empty when absent), with its unknown keys reported."""
        value = raw.get(key) or {}
        if not isinstance(value, Mapping):
            self.add(key, f"must be a mapping, got {type(value).__name__}", f"write '{key}:' followed by indented keys")
            return {}
        if key in SECTION_KEYS:
            self.keys(f"{key}.", value, SECTION_KEYS[key])
        return dict(value)
