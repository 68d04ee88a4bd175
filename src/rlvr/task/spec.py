"""The frozen dataclasses a task file becomes (``rlvr.task.load_task`` builds and validates them).

``Task`` is what every stage reads: its model, data splits, prompt, answer format, reward terms
and the success term, generation settings and the ``grpo:``/``sft:`` overrides.
"""

from __future__ import annotations

import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..data import read_rows
from ..episodes.spec import EnvironmentSpec
from ..errors import ConfigError, DataError, Problem, VerifierError
from ..rewards import AnswerFormat, Verifier, build_verifier
from ..rewards.combine import RewardSet, Term
from ..settings.recipe import RECIPE

MAX_ROW_PROBLEMS = 5


@dataclass(frozen=True)
class DataSpec:
    train: str
    eval: str | None = None
    eval_size: int | None = None


@dataclass(frozen=True)
class PromptSpec:
    template: str | None = None
    system: str | None = None
    user: str | None = None

    @property
    def chat(self) -> bool:
        return self.template is None

    def columns(self) -> list[str]:
        """The columns the prompt's placeholders name (``placeholders``), sorted, each once."""
        return sorted({name for _, name in self.placeholders()})

    def placeholders(self) -> list[tuple[str, str]]:
        """(prompt key, column) for every placeholder, in order. The one rule of what a placeholder
        is: ``{column}`` with ``column`` an identifier (``is_placeholder_name``); every other
        ``{...}`` is a fault ``rlvr.task.sections.prompt_problems`` reports, never a column. A text
        that does not parse (an unbalanced ``{``) gives the placeholders before the fault."""
        out: list[tuple[str, str]] = []
        for key in PROMPT_KEYS:
            try:
                for _, f, _, _ in string.Formatter().parse(getattr(self, key) or ""):
                    if f is not None and is_placeholder_name(f):
                        out.append((f"prompt.{key}", f))
            except ValueError:
                continue
        return out


PROMPT_KEYS = ("template", "system", "user")


def is_placeholder_name(name: str) -> bool:
    """Whether the text between a prompt's braces names a column: an identifier (letters, digits and
    ``_``, not starting with a digit). Anything else between single braces -- JSON (``{"name": 1}``),
    a set, code -- is refused at load with the fix ``{{ }}``, so literal braces can never be read as
    a column that happens to be missing."""
    return name.isidentifier()


@dataclass(frozen=True)
class TermSpec:
    name: str
    verifier: str
    weight: float = 1.0
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GenerationSpec:
    # The recipe's values (rlvr.settings.recipe: each default written once).
    temperature: float = RECIPE["temperature"]
    max_completion_length: int = RECIPE["max_completion_length"]
    top_p: float = RECIPE["top_p"]


@dataclass(frozen=True)
class ProbeSpec:
    """Routing thresholds: ``sft`` when no sample succeeds, ``too-easy`` at or above
    ``too_easy``; a sample succeeds when the task's success term's outcome is ``correct``."""

    k: int = 8
    max_prompts: int = 64
    too_easy: float = 0.9


@dataclass(frozen=True)
class EvalSpec:
    """The held-out verified-accuracy eval during training."""

    every: int = 50
    max_prompts: int = 200
    temperature: float = 0.0
    # Above 0: also this many completions per prompt at generation.temperature, logged as pass@1 and
    # pass@k with their intervals (rlvr.evaluate.evaluate_sampled); rlvr report makes pass@1 the headline.
    samples: int = 0


@dataclass(frozen=True)
class Task:
    path: Path
    name: str
    model: str
    data: DataSpec
    prompt: PromptSpec
    answer: AnswerFormat
    answer_column: str
    rewards: tuple[TermSpec, ...]  # every term training pays, the environment's episode terms included
    generation: GenerationSpec = GenerationSpec()
    grpo: Mapping[str, Any] = field(default_factory=dict)
    sft: Mapping[str, Any] = field(default_factory=dict)
    probe: ProbeSpec = ProbeSpec()
    eval: EvalSpec = EvalSpec()
    seed: int = RECIPE["seed"]
    written: frozenset[str] = frozenset()  # the generation keys and seed the file sets (the rest: the recipe's)
    success: str = ""  # resolved by load_task: declared, or the only non-shaping term
    success_problem: Problem | None = None  # why there is none (ambiguous, or no term checks the answer)
    environment: EnvironmentSpec | None = None  # tools and episode limits (multi-turn tasks): rlvr.episodes

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def success_term(self) -> str:
        """The term whose outcome is success for the probe, the held-out eval, the gate's
        pass/fail classes and the doctor (see the module docstring). Raises ``ConfigError`` when
        the task does not name one unambiguously: a command that counts successes cannot start,
        while one that does not (``rlvr audit``, ``rlvr score``) still runs."""
        if not self.success:
            raise ConfigError(
                self.success_problem or Problem(f"{self.path}: success", "no success term", "add success: NAME")
            )
        return self.success

    @property
    def correctness_term(self) -> str:
        """Deprecated name of ``success_term``."""
        return self.success_term

    def resolve(self, ref: str) -> str:
        """A data or model reference relative to the task file."""
        if ref.startswith(("hf:", "builtin:")):
            return ref
        p = Path(ref)
        if not p.is_absolute():
            candidate = self.root / p
            if candidate.exists() or not _looks_like_hub_id(ref):
                return str(candidate)
        return ref

    def load_split(self, split: str) -> list[dict[str, Any]]:
        ref = self.data.train if split == "train" else self.data.eval
        if ref is None:
            raise DataError(f"{self.path}: data.{split} is not set")
        rows = read_rows(self.resolve(ref))
        if split == "eval" and self.data.eval_size:
            rows = rows[: self.data.eval_size]
        return rows

    def render_prompt(self, row: Mapping[str, Any], tokenizer: Any = None) -> Any:
        """The prompt for a row: a string for plain templates; for chat prompts a list of messages,
        or (given a tokenizer) the text its chat template renders with the generation prompt."""
        if self.prompt.template is not None:
            return self.prompt.template.format_map(_Row(row))
        messages = []
        if self.prompt.system:
            messages.append({"role": "system", "content": self.prompt.system.format_map(_Row(row))})
        messages.append({"role": "user", "content": (self.prompt.user or "").format_map(_Row(row))})
        if tokenizer is None:
            return messages
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def reward_set(self) -> RewardSet:
        """Every term training pays, the episode terms included (one set for every stage)."""
        terms = [Term(t.name, self.term_verifier(t), t.weight) for t in self.rewards]
        reader = None
        if self.environment is not None:  # TRL hands an episode task's completions as message lists
            from ..episodes.environment import trl_episodes

            reader = trl_episodes
        return RewardSet(terms, answer_format=self.answer, answer_column=self.answer_column, read_episodes=reader)

    def term_verifier(self, term: TermSpec) -> Verifier:
        """The verifier of one reward term, built with the task's answer format and answer column.
        A ``unit_tests`` term's ``checker`` is read here, so that a custom checker's dotted path is
        imported from the task folder (which also goes first on ``sys.path`` for rows' checkers)."""
        options = term.options
        if term.verifier == "unit_tests":
            from ..sandbox.checkers import CheckerSpecError, parse_checker

            try:
                options = {**options, "checker": parse_checker(options.get("checker"), search=self.root)}
            except CheckerSpecError as exc:
                raise VerifierError(f"term {term.name!r}: checker: {exc}") from None
            if str(self.root) not in sys.path:
                sys.path.insert(0, str(self.root))
        return build_verifier(term.verifier, options, self.answer, search=self.root, answer_column=self.answer_column)

    def with_overrides(self, **changes: Any) -> Task:
        return replace(self, **changes)


class _Row(dict):
    def __missing__(self, key: str) -> str:
        raise KeyError(key)


def _looks_like_hub_id(ref: str) -> bool:
    parts = ref.split("/")
    return len(parts) == 2 and all(parts) and not ref.startswith((".", "/"))
