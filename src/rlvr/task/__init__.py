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
  format: tags                      # tags | boxed
  tag: answer
  think: none                       # none | optional | required | prefilled
rewards:                            # composite: a format term plus a correctness term
  - {name: format, weight: 0.1}
  - {name: correct, verifier: exact, weight: 1.0}
success: correct                    # the term whose outcome is success (probe, eval, gate, doctor);
                                    # optional when exactly one term is not a shaping term
generation: {temperature: 0.7, max_completion_length: 16}
grpo: {...}                         # any TRL GRPOConfig field, on top of the recipe
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
problem collector and the allowed keys), ``terms`` (reward terms and the success term) and
``datacheck`` (the data files and the train/eval overlap).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from .. import yamlio
from ..data import decode_utf8
from ..errors import ConfigError, DataError, Problem
from ..rewards import AnswerFormat
from ..taskspec import (  # noqa: F401 - the types are re-exported: rlvr.task is where callers import them from
    MAX_ROW_PROBLEMS,
    DataSpec,
    EvalSpec,
    GenerationSpec,
    ProbeSpec,
    PromptSpec,
    Task,
    TermSpec,
)
from . import datacheck
from .checker import MOVED_KEYS, TOP_KEYS, Checker, check_model_path, dataclass_section
from .terms import check_grpo_overrides, check_rewards, check_terms_build, resolve_success


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
    model = raw.get("model")
    if model is None:
        c.add("model", "missing", "set model: to a local path, a hub id or builtin:tiny")
        model = ""
    elif c.typed("model", model, str, "a string"):
        if model.startswith("builtin:"):
            from ..models import BUILTIN_MODELS

            if model.split(":", 1)[1] not in BUILTIN_MODELS:
                c.add(
                    "model",
                    f"unknown built-in model {model!r}",
                    f"known: {', '.join('builtin:' + k for k in BUILTIN_MODELS)}",
                )
        else:
            check_model_path(c, model, path.parent)

    data_raw = c.section(raw, "data")
    train = data_raw.get("train")
    if train is None:
        c.add("data.train", "missing", "set data.train to a JSONL or Parquet file, or hf:<dataset>")
        train = ""
    else:
        c.typed("data.train", train, str, "a path string")
    eval_ref = data_raw.get("eval")
    if eval_ref is not None:
        c.typed("data.eval", eval_ref, str, "a path string")
    eval_size = data_raw.get("eval_size")
    if eval_size is not None and c.typed("data.eval_size", eval_size, int, "an integer"):
        if eval_size < 1:
            c.add("data.eval_size", f"must be at least 1, got {eval_size}", "remove it to use the whole split")
    data = DataSpec(
        str(train), eval_ref if isinstance(eval_ref, str) else None, eval_size if isinstance(eval_size, int) else None
    )

    p = c.section(raw, "prompt")
    for k in ("template", "system", "user"):
        if k in p and p[k] is not None:
            c.typed(f"prompt.{k}", p[k], str, "a string")
    if p.get("template") is not None and (p.get("user") or p.get("system")):
        c.add(
            "prompt",
            "has both template and chat messages (system/user)",
            "use template for plain prompts, or system + user for chat prompts",
        )
    if p.get("template") is None and not p.get("user"):
        c.add(
            "prompt",
            "no prompt: set prompt.template, or prompt.user (and optionally prompt.system)",
            "for example template: '{question}='",
        )
    prompt = PromptSpec(**{k: p.get(k) for k in ("template", "system", "user") if isinstance(p.get(k), str)})
    for text in (prompt.template, prompt.system, prompt.user):
        try:
            if text:
                list(string.Formatter().parse(text))
        except ValueError as exc:
            c.add(
                "prompt",
                f"bad template {text!r}: {exc}",
                "use {column} placeholders; write {{ and }} for literal braces",
            )

    a = c.section(raw, "answer")
    answer_column = a.get("column", "answer")
    c.typed("answer.column", answer_column, str, "a column name")
    fmt_kw: dict[str, Any] = {}
    choices = {
        "format": ("tags", "boxed"),
        "think": ("none", "optional", "required", "prefilled"),
        "boxed": ("only", "first", "last"),
    }
    for key, allowed in choices.items():
        if key in a:
            if a[key] not in allowed:
                c.add(
                    f"answer.{key}",
                    f"must be one of {', '.join(allowed)}, got {a[key]!r}",
                    f"write one of {', '.join(allowed)}",
                )
            else:
                fmt_kw["style" if key == "format" else key] = a[key]
    if "tag" in a and c.typed("answer.tag", a["tag"], str, "a tag name"):
        if not a["tag"].replace("_", "").replace("-", "").isalnum():
            c.add("answer.tag", f"{a['tag']!r} is not a plain tag name", "write the name without brackets, e.g. answer")
        else:
            fmt_kw["tag"] = a["tag"]
    if "allow_multiple" in a and c.typed("answer.allow_multiple", a["allow_multiple"], bool, "true or false"):
        fmt_kw["allow_multiple"] = a["allow_multiple"]
    answer = AnswerFormat(**fmt_kw)

    g = c.section(raw, "generation")
    gen = GenerationSpec()
    if "temperature" in g and c.typed("generation.temperature", g["temperature"], (int, float), "a number"):
        if g["temperature"] == 0:
            c.add(
                "generation.temperature",
                "is 0: every completion of a prompt is then the same, so every group has zero variance and GRPO "
                "learns nothing (probe and gate would also see one answer per prompt)",
                "sample at the recipe's 0.7 (greedy decoding belongs to the held-out eval: eval.temperature)",
            )
        elif not 0 < g["temperature"] <= 5:
            c.add(
                "generation.temperature",
                f"must be above 0 and at most 5, got {g['temperature']}",
                "the recipe samples at 0.7",
            )
        gen = replace(gen, temperature=float(g["temperature"]))
    if "top_p" in g and c.typed("generation.top_p", g["top_p"], (int, float), "a number"):
        gen = replace(gen, top_p=float(g["top_p"]))
    if "max_completion_length" in g and c.typed(
        "generation.max_completion_length", g["max_completion_length"], int, "an integer"
    ):
        if g["max_completion_length"] < 1:
            c.add("generation.max_completion_length", "must be at least 1", "a token budget such as 256")
        gen = replace(gen, max_completion_length=g["max_completion_length"])

    terms = check_rewards(c, raw.get("rewards"))
    grpo = c.section(raw, "grpo")
    check_grpo_overrides(c, grpo, len(terms))
    sft = c.section(raw, "sft")
    probe_raw, eval_raw = c.section(raw, "probe"), c.section(raw, "eval")
    for section, key in sorted(MOVED_KEYS):
        value = (probe_raw if section == "probe" else eval_raw).get(key)
        if value is not None:
            c.add(
                f"{section}.{key}",
                "has moved: one top-level key names the success term for probe, eval, gate and doctor alike",
                f"write success: {value} at the top level and delete {section}.{key}",
            )
    probe = dataclass_section(c, "probe", probe_raw, ProbeSpec)
    ev = dataclass_section(c, "eval", eval_raw, EvalSpec)
    seed = raw.get("seed", 3407)
    c.typed("seed", seed, int, "an integer")

    task = Task(
        path=path.resolve(),
        name=str(name),
        model=model if isinstance(model, str) else "",
        data=data,
        prompt=prompt,
        answer=answer,
        answer_column=answer_column if isinstance(answer_column, str) else "answer",
        rewards=tuple(terms),
        generation=gen,
        grpo=grpo,
        sft=sft,
        probe=probe,
        eval=ev,
        seed=seed if isinstance(seed, int) else 3407,
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
    shaping = check_terms_build(c, task)
    success, undecided = resolve_success(c, raw.get("success"), task.rewards, shaping)
    task = replace(task, success=success, success_problem=undecided)
    if check_data:
        datacheck.check_data(c, task)
    if c.problems:
        raise ConfigError(c.problems, source=str(path))
    return task
