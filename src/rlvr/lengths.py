"""Generation length, checked before anything loads: the budget against the answers and the model.

``generation.max_completion_length`` decides whether a run can succeed at all. Too small, and
every completion is cut off before its answer ends: the probe then measures the budget, not the
model, and GRPO trains on groups in which nothing can score. Larger than the model's positions,
and generation runs past what the model was trained on (a rotary model does not fail, it just
slows down and produces noise: a run that prints nothing for minutes).

``check_lengths`` reads only the tokenizer and the model's config (no weights; a built-in model's
tokenizer and spec are built in memory) and measures, over the train split:

- the prompt tokens, tokenized the way TRL tokenizes them (``rlvr.generate.prompt_ids``);
- the *reference completion* tokens: the ground truth in the answer format the task requires
  (``<answer>42</answer>``, ``\\boxed{42}``, with ``<think></think>`` when the format requires a
  think block), plus one EOS, which a completion needs to end within the budget. This is what
  SFT trains on (``reference_completion``), so the same numbers say how many SFT targets a
  budget would cut.

Reported as p50/p95/max. A budget that, after the longest prompt, does not fit the model's
maximum positions is a ``ConfigError`` for ``rlvr train``, ``rlvr probe`` and ``rlvr task check``;
reference answers longer than the budget are a warning (``LengthReport.warnings``).

What is approximate, stated honestly:

- A reference completion is the *shortest* well-formed answer: a model that reasons first, or a
  think block with content, needs more. A budget at the reference p95 is a floor, not a target.
- Chat completions are measured as their text plus EOS; a chat template may add a few
  end-of-turn tokens of its own.
- Non-string ground truths (a JSON object for a tool call) are measured as compact JSON
  (``json.dumps``), the same text SFT trains on.
- Over ``MAX_ROWS`` rows, a seeded sample of ``MAX_ROWS`` is measured (the count is reported):
  the maximum is then the sample's, not the split's.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, ModelError, Problem
from .task import Task

MAX_ROWS = 5000
# Config keys that hold a model's maximum positions, in the order transformers' models use them.
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "max_sequence_length", "n_ctx")


@dataclass(frozen=True)
class Spread:
    """Token counts summarised: median, 95th percentile (nearest rank) and maximum."""

    p50: int
    p95: int
    max: int

    @classmethod
    def of(cls, values: Sequence[int]) -> Spread:
        if not values:
            return cls(0, 0, 0)
        v = sorted(values)
        return cls(_rank(v, 0.5), _rank(v, 0.95), v[-1])

    def __str__(self) -> str:
        return f"p50 {self.p50} / p95 {self.p95} / max {self.max}"


def _rank(sorted_values: Sequence[int], q: float) -> int:
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


@dataclass(frozen=True)
class LengthReport:
    """The budget against the answers the format requires and against the model's positions."""

    model: str
    budget: int
    max_positions: int | None
    n_rows: int  # rows measured
    n_total: int  # rows in the split
    prompt: Spread
    answer: Spread  # reference completions, EOS included
    answers_over_budget: int
    think: str = "none"
    prompt_opens_think: bool | None = None  # the rendered prompt ends with <think> (None: not measured)
    training_prompt_differs: bool = False  # grpo.chat_template_kwargs renders another prompt for TRL only
    longest_row: int | None = None  # the train row (1-based) with the longest prompt, among those measured

    @property
    def overflow(self) -> bool:
        """The longest prompt plus the budget does not fit the model's positions."""
        return self.max_positions is not None and self.prompt.max + self.budget > self.max_positions

    def problems(self, where: str = "generation.max_completion_length") -> list[Problem]:
        """What makes the budget unusable (``rlvr train``/``probe`` refuse to start on these)."""
        if not self.overflow:
            return []
        room = (self.max_positions or 0) - self.prompt.max
        fix = (
            f"set generation.max_completion_length to at most {room}"
            if room > 0
            else "shorten the prompts or use a model with more positions"
        )
        return [
            Problem(
                where,
                f"{self.budget} new tokens after prompts of up to {self.prompt.max} tokens"
                + (f" (the longest: train row {self.longest_row})" if self.longest_row else "")
                + f" exceed the {self.max_positions} positions of {self.model}",
                fix,
            )
        ]

    def warnings(self) -> list[str]:
        """What makes the budget doubtful without making it unusable."""
        out = []
        if self.answers_over_budget:
            share = self.answers_over_budget / max(1, self.n_rows)
            shown = f"{share:.0%}" if share >= 0.01 else f"{share * 100:.2g}%"  # 1 of 5000 is 0.02%, not 0%
            out.append(
                f"{self.answers_over_budget} of {self.n_rows} reference answers ({shown}) need more than "
                f"max_completion_length {self.budget} tokens in the required format (answer tokens {self.answer}): "
                "completions are cut off before the answer ends; raise generation.max_completion_length to at least "
                f"{self.answer.max}"
            )
        if self.think in ("required", "prefilled"):
            out.append(
                "the format requires a think block: the reference answers carry an empty one, so reasoning needs "
                f"tokens beyond {self.answer.p95}"
            )
        mismatch = _think_mismatch(self.think, self.prompt_opens_think)
        if mismatch:
            out.append(mismatch)
        if self.training_prompt_differs:
            out.append(
                "grpo.chat_template_kwargs changes the rendered prompt, and only TRL's training reads it: the probe, "
                "the gate, the held-out eval and SFT render prompts without it and measure another prompt than the "
                "one trained on; use a model whose chat template does this by default (e.g. builtin:small-think opens "
                "<think>)"
            )
        return out

    def summary(self) -> str:
        positions = (
            f"model positions {self.max_positions}" if self.max_positions is not None else "model positions unknown"
        )
        sampled = f" (a sample of {self.n_rows} of {self.n_total} rows)" if self.n_rows < self.n_total else ""
        return f"budget {self.budget} tokens; answers {self.answer}; prompts {self.prompt}; {positions}{sampled}"

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "budget": self.budget,
            "max_positions": self.max_positions,
            "n_rows": self.n_rows,
            "n_total": self.n_total,
            "prompt": vars(self.prompt),
            "answer": vars(self.answer),
            "answers_over_budget": self.answers_over_budget,
        }


def _think_mismatch(think: str, opens: bool | None) -> str | None:
    """The think policy against what the prompt does: a template that opens ``<think>`` (as
    DeepSeek-R1 distills and builtin:small-think do) makes every completion start inside the block."""
    if opens is None:
        return None
    if think == "prefilled" and not opens:
        return (
            "answer.think is prefilled, but the rendered prompt does not end with <think> (the chat template does not "
            "open the block): a completion that opens it fails the format; use think: required, or a model whose "
            "template opens <think>"
        )
    if opens and think in ("none", "required"):
        return (
            "the rendered prompt ends with <think> (the chat template opened the block), so completions start inside "
            f"it and never write <think>: think: {think} fails every one of them; use think: prefilled (or optional)"
        )
    return None


def answer_text(value: Any) -> str:
    """The ground truth as text: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def reference_completion(task: Task, row: Mapping[str, Any]) -> str:
    """The shortest completion the format accepts for ``row``: its ground truth, wrapped."""
    return task.answer.wrap(answer_text(row[task.answer_column]))


def load_length_tools(model_ref: str) -> tuple[Any, int | None]:
    """(tokenizer, maximum positions or None) for a model reference, without loading weights."""
    if model_ref.startswith("builtin:"):
        from .models import BUILTIN_MODELS, build_tokenizer

        name = model_ref.split(":", 1)[1]
        if name not in BUILTIN_MODELS:
            raise ModelError(f"unknown built-in model {name!r}; known: {', '.join(BUILTIN_MODELS)}")
        return build_tokenizer(name), BUILTIN_MODELS[name].max_position_embeddings
    from .models import load_tokenizer

    return load_tokenizer(model_ref), max_positions(model_ref)


def max_positions(model_ref: str) -> int | None:
    """The model's maximum positions from its config (None when the config does not say)."""
    path = Path(model_ref)
    try:
        if (path / "config.json").exists():
            cfg = json.loads((path / "config.json").read_text(encoding="utf-8"))
        else:
            from .models import model_config

            cfg = model_config(model_ref)
    except (OSError, ValueError, ModelError):
        return None
    for section in (cfg, cfg.get("text_config") or {}, cfg.get("llm_config") or {}):
        for key in _POSITION_KEYS:
            value = section.get(key) if isinstance(section, Mapping) else None
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def measure(task: Task, rows: Sequence[Mapping[str, Any]], tokenizer: Any) -> tuple[list[int], list[int]]:
    """(prompt tokens, reference completion tokens with EOS) for each row. On an episode task the
    prompt is counted as training renders it: with the tools listed by the tool template."""
    from .generate import prompt_ids

    if task.environment is not None:
        from .episodes import build_toolbox, prepare_tokenizer
        from .episodes.template import render

        tools = build_toolbox(task.environment, str(task.path)).schemas()
        prepare_tokenizer(tokenizer)
        texts_in = [render(tokenizer, task.render_prompt(r), tools) for r in rows]
        prompts = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts_in]
    else:
        prompts = [len(prompt_ids(tokenizer, task.render_prompt(r))) for r in rows]
    texts = [reference_completion(task, r) for r in rows]
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    return prompts, [len(ids) + 1 for ids in encoded]


def check_lengths(
    task: Task,
    model: str | None = None,
    *,
    tokenizer: Any = None,
    positions: int | None = None,
    budget: int | None = None,
    rows: Sequence[Mapping[str, Any]] | None = None,
) -> LengthReport:
    """Measure the task's train split against its budget and the model (``model`` default: the
    task's). Raises nothing for a bad budget: see ``LengthReport.problems`` and ``require_fit``."""
    model_ref = model or task.model
    if tokenizer is None:
        # An explicit model is taken as given (relative to the working directory, like every CLI
        # path); the task's own model is relative to the task file.
        tokenizer, found = load_length_tools(model if model else task.resolve(task.model))
        positions = positions if positions is not None else found
    all_rows = list(rows) if rows is not None else task.load_split("train")
    where = (
        list(range(len(all_rows)))
        if len(all_rows) <= MAX_ROWS
        else random.Random(task.seed).sample(range(len(all_rows)), MAX_ROWS)
    )
    picked = [all_rows[i] for i in where]
    from .task.rowchecks import rows_size_problems

    # Sizes before tokens: a row no model reads is refused as what it is, in milliseconds, never
    # tokenized (a 50 MB row took a minute and 4 GB, then read as a second problem about its tokens).
    if oversized := rows_size_problems(all_rows, task.resolve(task.data.train)):
        raise ConfigError(oversized, source=str(task.path))
    budget = budget if budget is not None else task.generation.max_completion_length
    with quiet_tokenizer():  # our own problem says when prompts exceed the positions, with the row
        prompt_lens, answer_lens = measure(task, picked, tokenizer)
    longest = max(range(len(prompt_lens)), key=lambda i: prompt_lens[i]) if prompt_lens else None
    return LengthReport(
        model=str(model_ref),
        budget=budget,
        max_positions=positions,
        n_rows=len(picked),
        n_total=len(all_rows),
        prompt=Spread.of(prompt_lens),
        answer=Spread.of(answer_lens),
        answers_over_budget=sum(n > budget for n in answer_lens),
        think=task.answer.think,
        prompt_opens_think=_opens_think(task, picked, tokenizer),
        training_prompt_differs=_training_prompt_differs(task, picked, tokenizer),
        longest_row=where[longest] + 1 if longest is not None else None,
    )


@contextmanager
def quiet_tokenizer() -> Iterator[None]:
    """transformers' "Token indices sequence length is longer than the specified maximum" warning
    off while lengths are measured: measuring long prompts is the point, and ``LengthReport.problems``
    says what it means, naming the row."""
    import logging

    log = logging.getLogger("transformers.tokenization_utils_base")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def _training_prompt_differs(task: Task, rows: Sequence[Mapping[str, Any]], tokenizer: Any) -> bool:
    kwargs = task.grpo.get("chat_template_kwargs") if isinstance(task.grpo, Mapping) else None
    if not rows or not task.prompt.chat or not isinstance(kwargs, Mapping) or not kwargs:
        return False
    try:
        messages = task.render_prompt(rows[0])
        plain = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return plain != tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, **kwargs)
    except Exception:  # noqa: BLE001 - a template that does not render is reported where prompts are built
        return False


def _opens_think(task: Task, rows: Sequence[Mapping[str, Any]], tokenizer: Any) -> bool | None:
    if not rows:
        return None
    try:
        text = task.render_prompt(rows[0], tokenizer) if task.prompt.chat else task.render_prompt(rows[0])
    except Exception:  # noqa: BLE001 - a template that does not render is reported where prompts are built
        return None
    return str(text).rstrip().endswith("<think>")


# A share of probe samples cut off at the budget above which the probe says truncation, not
# capability, may explain the rate: past half, most of what was scored never reached its end.
TRUNCATION_EXPLAINS = 0.5


def truncation_reason(n_truncated: int, n_total: int, budget: int, report: LengthReport | None) -> str | None:
    """The sentence that leads the probe's reason when most samples ran out of budget, else None.

    Where the reference answers themselves do not fit (their median is over the budget), the
    budget explains the rate; otherwise the model ran on past its answer (or reasoned at length),
    and a larger budget or SFT (which teaches where to stop) are both worth trying.
    """
    if n_total == 0 or n_truncated / n_total < TRUNCATION_EXPLAINS:
        return None
    head = (
        f"{n_truncated} of {n_total} samples ({n_truncated / n_total:.0%}) were cut off at max_completion_length "
        f"{budget} before they ended"
    )
    if report is not None and report.answer.p50 > budget:
        return (
            f"{head}, and most reference answers need more than that ({report.answer}): truncation, not capability, "
            "explains the success rate; raise generation.max_completion_length to at least "
            f"{report.answer.max} and probe again before acting on this route."
        )
    fits = f" (the reference answers fit: {report.answer})" if report is not None else ""
    return (
        f"{head}{fits}: truncation, not capability, may explain the success rate; raise "
        "generation.max_completion_length and probe again -- if the samples still run to the budget, the model does "
        "not end its answers."
    )


def require_fit(task: Task, model: str | None = None, *, budget: int | None = None) -> LengthReport:
    """``check_lengths``, raising ``ConfigError`` when the budget (default: the task's) exceeds
    the model's positions (what ``rlvr train`` calls before any weights load)."""
    report = check_lengths(task, model, budget=budget)
    problems = report.problems()
    if problems:
        raise ConfigError(problems, source=str(task.path))
    return report


def for_task_check(task: Task) -> tuple[list[Problem], list[str]]:
    """What ``rlvr task check`` adds: the problems (a budget past the model's positions) and the
    lines to print (the lengths, then each warning). A model whose tokenizer cannot be read here
    (a hub id not in the local cache) is reported as not measured, not as a problem."""
    try:
        report = check_lengths(task)
    except ModelError as exc:
        return [], [f"  lengths     not measured: {exc}"]
    return report.problems(), [f"  lengths     {report.summary()}", *(f"  warning     {w}" for w in report.warnings())]


__all__ = [
    "LengthReport",
    "Spread",
    "answer_text",
    "check_lengths",
    "for_task_check",
    "load_length_tools",
    "max_positions",
    "reference_completion",
    "require_fit",
    "truncation_reason",
]
