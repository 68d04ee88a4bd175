"""The suite's one fake sampler: rlvr's sampler protocol (``rlvr.generate``) with no model behind it.

Each completion's text comes from a rule of the prompt (and a ``random.Random`` seeded by the
call's ``seed``, so reruns and resumes draw the same texts); every call is recorded."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.generate import Completion

Rule = Callable[[str, random.Random], str]
TokenIds = Callable[[str, int], tuple[int, ...]]


@dataclass(frozen=True)
class Call:
    """One ``sample`` call, as the sampler saw it."""

    prompts: tuple[str, ...]
    n: int
    temperature: float
    max_new_tokens: int
    top_p: float
    seed: int | None


def one_token_per_character(text: str, max_new_tokens: int) -> tuple[int, ...]:
    return tuple(range(len(text)))


class FakeSampler:
    """``n`` completions per prompt, each ``text`` (a fixed string, or a rule of the prompt and a
    seeded rng), ending with ``finish_reason``; ``token_ids`` gives each completion's ids (one per
    character unless told). ``fail_after_calls``: raise ``KeyboardInterrupt`` once that many calls
    were made (an interrupted run)."""

    backend = "fake"

    def __init__(
        self,
        text: str | Rule,
        *,
        finish_reason: str = "stop",
        token_ids: TokenIds = one_token_per_character,
        fail_after_calls: int | None = None,
    ) -> None:
        self.rule: Rule = (lambda prompt, rng: text) if isinstance(text, str) else text
        self.finish_reason = finish_reason
        self.token_ids = token_ids
        self.fail_after_calls = fail_after_calls
        self.calls: list[Call] = []

    def sample(
        self,
        prompts: Sequence[Any],
        n: int,
        temperature: float,
        max_new_tokens: int,
        top_p: float = 1.0,
        seed: int | None = None,
        progress: Any = None,
    ) -> list[list[Completion]]:
        if self.fail_after_calls is not None and len(self.calls) >= self.fail_after_calls:
            raise KeyboardInterrupt
        self.calls.append(Call(tuple(prompts), n, temperature, max_new_tokens, top_p, seed))
        rng = random.Random(seed)
        out = []
        for prompt in prompts:
            texts = [self.rule(prompt, rng) for _ in range(n)]
            out.append([Completion(t, self.token_ids(t, max_new_tokens), self.finish_reason) for t in texts])
        return out
