"""The task file: one YAML file describes a task end to end.

```yaml
name: arithmetic
model: builtin:tiny                 # a local path, a hub id, or builtin:<name>
data:
  train: data/train.jsonl           # JSONL or Parquet next to the task file, or hf:<name>[:<config>]
  eval: data/eval.jsonl             # held-out split: the only honest check for reward hacking
prompt:
  template: "{question}="           # plain text, {column} placeholders
  # or chat: a system prompt and a user template, rendered with the tokenizer's chat template
  # system: "You are a careful calculator."
  # user: "{question}"
answer:
  column: answer                    # ground truth column
  format: tags                      # tags | boxed | json (a bare JSON record or one ```json block)
  tag: answer
  think: none                       # none | optional | required | prefilled
rewards:                            # composite: a format term plus a correctness term
  - {name: format, weight: 0.1}
  - {name: correct, verifier: exact, weight: 1.0}
success: correct                    # the term whose outcome is success (probe, eval, gate, doctor);
                                    # optional when exactly one term is not a shaping term
generation: {temperature: 0.7, max_completion_length: 16}
grpo: {...}                         # any TRL GRPOConfig field, on top of the recipe (generation: keys refused)
sft: {...}                          # settings of the supervised warm start
probe: {...}                        # routing thresholds
```

``load_task`` validates everything that can be checked without a model -- keys, types, files,
columns, null answers, reward names and options, weights, the success term -- and raises one
``ConfigError`` that lists every problem with where, what and how to fix it.

The success term decides what "success" means everywhere: the probe's base rate, the held-out
eval, the gate's pass/fail classes and the doctor's accuracy. Shaping terms (``format``,
``length_penalty``, ``overlong``, ``repetition``, and any verifier class derived from them) only
shape the reward and can never be it. ``success: NAME`` declares it; without the key it defaults
to the only term that is not a shaping term, and a task with several such terms must declare it.

The validation reads top to bottom in ``load_task``; its parts live beside it: ``checker`` (the
problem collector and the allowed keys), ``sections`` (model, data, prompt, answer, generation,
probe and eval), ``terms`` (reward terms and the success term) and ``datacheck`` (the data files
and the train/eval overlap).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from .. import yamlio
from ..data import decode_utf8
from ..errors import ConfigError, DataError, Problem
from ..settings.layers import GENERATION_KEYS
from ..settings.recipe import RECIPE
from . import datacheck
from .checker import TOP_KEYS, Checker
from .sections import read_answer, read_data, read_generation, read_model, read_probe_and_eval, read_prompt
from .spec import MAX_ROW_PROBLEMS, DataSpec, EvalSpec, GenerationSpec, ProbeSpec, PromptSpec, Task, TermSpec
from .terms import check_grpo_overrides, check_rewards, check_terms_build, episode_terms, resolve_success

# The task's types are re-exported: rlvr.task is where callers import them from.
__all__ = [
    "MAX_ROW_PROBLEMS",
    "DataSpec",
    "EvalSpec",
    "GenerationSpec",
    "ProbeSpec",
    "PromptSpec",
    "Task",
    "TermSpec",
    "load_task",
]


def written_keys(raw: Mapping[str, Any]) -> frozenset[str]:
    """The run settings the task file writes itself: its ``generation:`` keys and ``seed``."""
    gen = raw.get("generation")
    keys = {k for k in GENERATION_KEYS if isinstance(gen, Mapping) and k in gen}
    return frozenset(keys | ({"seed"} if "seed" in raw else set()))


def load_task(path: str | Path, *, check_data: bool = True) -> Task:
    """Read and validate a task file. Raises ``ConfigError`` listing every problem found."""
    path = Path(path)
    if path.is_dir():
        path = path / "task.yaml"
    if not path.exists():
        raise ConfigError(Problem(str(path), "no such task file", "pass the path of a task.yaml"))
    try:
        raw = yamlio.load(decode_utf8(path.read_bytes(), path))
    except DataError as exc:
        raise ConfigError(
            Problem(str(path), str(exc).removeprefix(f"{path}:").strip(), "save the file as UTF-8")
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        raise ConfigError(
            Problem(
                f"{path}: {where}".rstrip(": "),
                f"not valid YAML: {getattr(exc, 'problem', exc)}",
                "fix the YAML syntax",
            )
        ) from None
    if not isinstance(raw, Mapping):
        raise ConfigError(Problem(str(path), "a task file must be a YAML mapping", "see examples/arithmetic/task.yaml"))
    c = Checker(str(path))
    c.keys("", raw, TOP_KEYS)

    name = raw.get("name", path.parent.name)
    model = read_model(c, raw, path.parent)
    data = read_data(c, raw)
    prompt = read_prompt(c, raw)
    answer_column, answer = read_answer(c, raw)
    gen = read_generation(c, raw)

    terms = check_rewards(c, raw.get("rewards"))
    grpo = c.section(raw, "grpo")
    check_grpo_overrides(c, grpo, len(terms))
    sft = c.section(raw, "sft")
    probe, ev = read_probe_and_eval(c, raw)
    seed = raw.get("seed", RECIPE["seed"])
    c.typed("seed", seed, int, "an integer")
    environment = None
    if raw.get("environment") is not None:
        from ..episodes.spec import read_environment

        environment, env_problems = read_environment(raw["environment"], path.parent, str(path))
        c.problems.extend(env_problems)
        if prompt.template is not None:
            c.add("environment", "an episode needs a chat prompt", "write prompt.user, not prompt.template")
        for name in sorted({t.name for t in terms} & {n for n, _ in environment.terms} if environment else ()):
            c.add(f"environment.terms.{name}", "is also the name of a reward term", "rename the reward term")

    task = Task(
        path=path.resolve(),
        name=str(name),
        model=model,
        data=data,
        prompt=prompt,
        answer=answer,
        answer_column=answer_column,
        rewards=tuple(terms),
        generation=gen,
        grpo=grpo,
        sft=sft,
        probe=probe,
        eval=ev,
        seed=seed if isinstance(seed, int) else RECIPE["seed"],
        written=written_keys(raw),
        environment=environment,
    )
    weights = task.grpo.get("reward_weights")
    if (
        isinstance(weights, list)
        and len(weights) == len(terms)
        and all(isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights)
    ):
        # TRL-style weights list (checked in check_grpo_overrides): applied to the terms here
        task = replace(
            task, rewards=tuple(replace(t, weight=float(w)) for t, w in zip(task.rewards, weights, strict=True))
        )
    if environment is not None:  # the episode terms are reward terms like the others (rlvr.rewards.calls)
        task = replace(task, rewards=task.rewards + episode_terms(environment))
    shaping = check_terms_build(c, task)
    success, undecided = resolve_success(c, raw.get("success"), task.rewards, shaping)
    task = replace(task, success=success, success_problem=undecided)
    if check_data:
        datacheck.check_data(c, task)
    if c.problems:
        raise ConfigError(c.problems, source=str(path))
    return task
