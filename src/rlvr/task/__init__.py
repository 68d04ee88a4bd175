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
"""

from __future__ import annotations

import difflib
import string
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from . import yamlio
from .data import decode_utf8, read_rows
from .errors import ConfigError, DataError, Problem, VerifierError
from .rewards import AnswerFormat
from .taskspec import (  # noqa: F401 - the types are re-exported: rlvr.task is where callers import them from
    MAX_ROW_PROBLEMS,
    DataSpec,
    EvalSpec,
    GenerationSpec,
    ProbeSpec,
    PromptSpec,
    Task,
    TermSpec,
    _looks_like_hub_id,
)

# -- validation --------------------------------------------------------------------------------
_TOP_KEYS = {
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
}
# Verifiers that shape the reward and never decide success (a class derived from one counts too).
SHAPING_VERIFIERS = ("format", "length_penalty", "overlong", "repetition")
# Keys that named the success term before the top-level ``success:`` key replaced them.
_MOVED = {("probe", "success_term"), ("eval", "term")}
_SECTION_KEYS = {
    "data": {"train", "eval", "eval_size"},
    "prompt": {"template", "system", "user"},
    "answer": {"column", "format", "tag", "think", "boxed", "allow_multiple"},
    "generation": {"temperature", "max_completion_length", "top_p"},
    "probe": {"k", "max_prompts", "too_easy", "success_term"},  # success_term: moved, see _MOVED
    "eval": {"every", "max_prompts", "temperature", "term"},
}
_TERM_KEYS = {"name", "verifier", "weight", "options"}


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[Problem] = []

    def add(self, where: str, what: str, fix: str = "") -> None:
        self.problems.append(Problem(f"{self.source}: {where}" if where else self.source, what, fix))

    def keys(self, where: str, data: Mapping[str, Any], allowed: set[str]) -> None:
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                fix = f"did you mean {close[0]!r}?" if close else f"allowed keys: {', '.join(sorted(allowed))}"
                self.add(f"{where}{key}" if where else str(key), "unknown key", fix)

    def typed(self, where: str, value: Any, kind: type | tuple[type, ...], what: str) -> bool:
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            self.add(where, f"must be {what}, got a boolean {value!r}", f"write {what}")
            return False
        if not isinstance(value, kind):
            self.add(where, f"must be {what}, got {type(value).__name__} {value!r}", f"write {what}")
            return False
        return True

    def section(self, raw: Mapping[str, Any], key: str) -> dict[str, Any]:
        value = raw.get(key) or {}
        if not isinstance(value, Mapping):
            self.add(key, f"must be a mapping, got {type(value).__name__}", f"write '{key}:' followed by indented keys")
            return {}
        if key in _SECTION_KEYS:
            self.keys(f"{key}.", value, _SECTION_KEYS[key])
        return dict(value)


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
    c = _Checker(str(path))
    c.keys("", raw, _TOP_KEYS)

    name = raw.get("name", path.parent.name)
    model = raw.get("model")
    if model is None:
        c.add("model", "missing", "set model: to a local path, a hub id or builtin:tiny")
        model = ""
    elif c.typed("model", model, str, "a string"):
        if model.startswith("builtin:"):
            from .models import BUILTIN_MODELS

            if model.split(":", 1)[1] not in BUILTIN_MODELS:
                c.add(
                    "model",
                    f"unknown built-in model {model!r}",
                    f"known: {', '.join('builtin:' + k for k in BUILTIN_MODELS)}",
                )
        else:
            _check_model_path(c, model, path.parent)

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
                "is 0: every completion of a prompt is then the same, so every group has zero variance and GRPO learns nothing (probe and gate would also see one answer per prompt)",
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

    terms = _check_rewards(c, raw.get("rewards"))
    grpo = c.section(raw, "grpo")
    _check_grpo_overrides(c, grpo, len(terms))
    sft = c.section(raw, "sft")
    probe_raw, eval_raw = c.section(raw, "probe"), c.section(raw, "eval")
    for section, key in sorted(_MOVED):
        value = (probe_raw if section == "probe" else eval_raw).get(key)
        if value is not None:
            c.add(
                f"{section}.{key}",
                "has moved: one top-level key names the success term for probe, eval, gate and doctor alike",
                f"write success: {value} at the top level and delete {section}.{key}",
            )
    probe = _dataclass_section(c, "probe", probe_raw, ProbeSpec)
    ev = _dataclass_section(c, "eval", eval_raw, EvalSpec)
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
        # TRL-style weights list (checked in _check_grpo_overrides): applied to the terms here
        task = replace(
            task, rewards=tuple(replace(t, weight=float(w)) for t, w in zip(task.rewards, weights, strict=True))
        )
    shaping = _check_terms_build(c, task)
    success, undecided = _resolve_success(c, raw.get("success"), task.rewards, shaping)
    task = replace(task, success=success, success_problem=undecided)
    if check_data:
        _check_data(c, task)
    if c.problems:
        raise ConfigError(c.problems, source=str(path))
    return task


def _check_model_path(c: _Checker, model: str, root: Path) -> None:
    """A model reference that is a path (not a hub id ``org/name``) must exist: otherwise the
    hub client reports a malformed repo id, seconds later, after trying the network."""
    if model.startswith("hf:"):
        return
    ref = Path(model).expanduser()
    path_like = model.startswith((".", "/", "~")) or model.endswith("/") or "\\" in model or len(model.split("/")) > 2
    local = ref if ref.is_absolute() else root / ref
    if not path_like and not (len(model.split("/")) == 2 and (root / model.split("/")[0]).is_dir()):
        return  # a hub id (or a plain name): checked when it loads
    if not local.exists():
        c.add(
            "model",
            f"local model path not found: {local}",
            "point model: at a folder holding config.json and weights (relative to the task file), or write a hub id org/name",
        )


def _resolve_success(
    c: _Checker, declared: Any, terms: Sequence[TermSpec], shaping: Mapping[str, bool]
) -> tuple[str, Problem | None]:
    """The success term: ``success:`` when declared, else the only non-shaping term.

    A declared name that is wrong is a problem of the file. An undeclared success term that is
    ambiguous (or missing: only shaping terms) is returned as the problem instead: ``rlvr task
    check`` and every command that counts successes report it, commands that do not still run."""
    names = [t.name for t in terms]
    deciders = [t.name for t in terms if not shaping.get(t.name, t.verifier in SHAPING_VERIFIERS)]
    if declared is not None:
        if not c.typed("success", declared, str, "a reward term's name"):
            return "", None
        if declared not in names:
            close = difflib.get_close_matches(declared, names, n=1)
            c.add(
                "success",
                f"names no reward term ({declared!r})",
                f"did you mean {close[0]!r}?" if close else f"one of {', '.join(names)}",
            )
            return "", None
        if declared not in deciders:
            c.add(
                "success",
                f"{declared!r} is a shaping term (format, length, overlong, repetition): it shapes the reward and cannot decide success",
                f"name the term that checks the answer{': ' + ', '.join(deciders) if deciders else ''}",
            )
            return "", None
        return declared, None
    if len(deciders) == 1:
        return deciders[0], None
    if not terms:
        return "", None
    if not deciders:
        return "", Problem(
            f"{c.source}: rewards",
            f"no term checks the answer: {', '.join(names)} only shape the reward (a format-only reward is satisfied by any well-formed answer)",
            "add a correctness term, e.g. {name: correct, verifier: exact}",
        )
    return "", Problem(
        f"{c.source}: success",
        f"not declared, and {len(deciders)} terms could decide success ({', '.join(deciders)})",
        f"add success: NAME at the top level (one of {', '.join(deciders)})",
    )


def _dataclass_section(c: _Checker, key: str, values: Mapping[str, Any], cls: type) -> Any:
    obj = cls()
    for k, v in values.items():
        default = getattr(obj, k, None)
        if k not in cls.__dataclass_fields__:
            continue
        kind: Any = str if default is None else type(default)
        if kind is float:
            kind = (int, float)
        if c.typed(f"{key}.{k}", v, kind, "a number" if kind in ((int, float), int) else f"a {kind.__name__}"):
            obj = replace(obj, **{k: float(v) if default.__class__ is float else v})
    return obj


def _check_rewards(c: _Checker, raw: Any) -> list[TermSpec]:
    if raw is None:
        c.add(
            "rewards",
            "missing",
            "list at least a format term and a correctness term, e.g. [{name: format}, {name: correct, verifier: exact}]",
        )
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str) or not raw:
        c.add(
            "rewards",
            "must be a non-empty list of terms",
            "e.g. rewards: [{name: format, weight: 0.1}, {name: correct, verifier: exact}]",
        )
        return []
    terms = []
    for i, item in enumerate(raw):
        where = f"rewards[{i}]"
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, Mapping):
            c.add(where, f"must be a name or a mapping, got {type(item).__name__}", "write {name: exact} or just exact")
            continue
        c.keys(f"{where}.", item, _TERM_KEYS)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            c.add(
                f"{where}.name",
                "missing or not a string",
                "give each term a name; it is the metric key rewards/<name>/mean",
            )
            continue
        verifier = item.get("verifier", name)
        weight = item.get("weight", 1.0)
        if not c.typed(f"{where}.weight", weight, (int, float), "a number"):
            weight = 1.0
        options = item.get("options") or {}
        if not isinstance(options, Mapping):
            c.add(f"{where}.options", "must be a mapping", "e.g. options: {normalize: [whitespace]}")
            options = {}
        terms.append(TermSpec(name, str(verifier), float(weight), dict(options)))
    names = [t.name for t in terms]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        c.add("rewards", f"term name {dup!r} is used twice", "names are metric keys and must be unique")
    return terms


def _check_terms_build(c: _Checker, task: Task) -> dict[str, bool]:
    """Build every term (reporting the ones that fail); returns term name -> is a shaping term."""
    from .rewards import BUILTINS
    from .rewards.format import FormatVerifier
    from .rewards.length import LengthPenalty, OverlongPenalty, RepetitionPenalty

    shaping: dict[str, bool] = {}
    for i, t in enumerate(task.rewards):
        shaping[t.name] = t.verifier in SHAPING_VERIFIERS
        try:
            v = task.term_verifier(t)
            shaping[t.name] |= isinstance(v, (FormatVerifier, LengthPenalty, OverlongPenalty, RepetitionPenalty))
        except VerifierError as exc:
            if t.verifier not in BUILTINS and "." not in t.verifier and ":" not in t.verifier:
                close = difflib.get_close_matches(t.verifier, sorted(BUILTINS), n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                c.add(
                    f"rewards[{i}].verifier",
                    f"unknown reward {t.verifier!r}",
                    f"{hint}built-ins: {', '.join(sorted(BUILTINS))}; or a dotted path module.function",
                )
            else:
                c.add(f"rewards[{i}]", str(exc), "fix the term's verifier or options")
    return shaping


def _check_grpo_overrides(c: _Checker, grpo: Mapping[str, Any], n_terms: int) -> None:
    weights = grpo.get("reward_weights")
    if weights is not None:
        if not isinstance(weights, list) or not all(
            isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights
        ):
            c.add("grpo.reward_weights", "must be a list of numbers", "or drop it and set weight: on each term")
        elif len(weights) != n_terms:
            c.add(
                "grpo.reward_weights",
                f"has {len(weights)} weights for {n_terms} reward terms",
                "give one weight per term, or set weight: on each term instead",
            )


def _check_data(c: _Checker, task: Task) -> None:
    needed = task.prompt.columns()
    prompts: dict[str, tuple[str, list[str | None]]] = {}  # split -> (file, rendered prompt per row)
    for split in ("train", "eval"):
        ref = task.data.train if split == "train" else task.data.eval
        if not ref:
            continue
        if ref.startswith("hf:"):
            continue  # checked when loaded: needs the network
        resolved = task.resolve(ref)
        where = f"data.{split}"
        if not Path(resolved).exists():
            c.add(where, f"file not found: {resolved}", "check the path (relative to the task file)")
            continue
        try:
            rows = read_rows(resolved)
        except DataError as exc:
            c.add(where, str(exc), "fix the file")
            continue
        if not rows:
            c.add(where, f"dataset {resolved} is empty", "add rows, or point at another file")
            continue
        cols = set().union(*(r.keys() for r in rows))
        for col in [*needed, task.answer_column]:
            if col not in cols:
                c.add(
                    where,
                    f"column {col!r} missing from {resolved} (columns: {', '.join(sorted(cols))})",
                    "add the column or change prompt/answer.column",
                )
        bad = [
            i
            for i, r in enumerate(rows, 1)
            if task.answer_column in cols
            and (r.get(task.answer_column) is None or str(r.get(task.answer_column)).strip() == "")
        ]
        for i in bad[:MAX_ROW_PROBLEMS]:
            c.add(
                f"{resolved}:{i}",
                f"row {i} has a null or empty {task.answer_column!r}",
                "fill in the answer or drop the row",
            )
        if len(bad) > MAX_ROW_PROBLEMS:
            c.add(
                f"{resolved}",
                f"{len(bad) - MAX_ROW_PROBLEMS} more rows with a null {task.answer_column!r}",
                "fill in the answers or drop the rows",
            )
        missing_prompt = [i for i, r in enumerate(rows, 1) if any(col in cols and r.get(col) is None for col in needed)]
        for i in missing_prompt[:MAX_ROW_PROBLEMS]:
            c.add(
                f"{resolved}:{i}",
                f"row {i} has a null prompt column ({', '.join(col for col in needed if rows[i - 1].get(col) is None)})",
                "fill it in or drop the row",
            )
        prompts[split] = (str(Path(resolved).resolve()), [_prompt_key(task, r) for r in rows])
    if "train" in prompts and "eval" in prompts:
        _check_overlap(c, *prompts["train"], *prompts["eval"])


def _prompt_key(task: Task, row: Mapping[str, Any]) -> str | None:
    try:
        rendered = task.render_prompt(row)
    except (KeyError, ValueError, IndexError):
        return None
    return rendered if isinstance(rendered, str) else repr(rendered)


def _check_overlap(
    c: _Checker, train_file: str, train: list[str | None], eval_file: str, evals: list[str | None]
) -> None:
    """A held-out split that repeats training prompts measures memory, not the policy."""
    if train_file == eval_file:
        c.add(
            "data.eval",
            f"is the same file as data.train ({eval_file}): the held-out eval would score prompts the policy trained on",
            "hold out rows the training split does not contain (e.g. split the file 90/10)",
        )
        return
    seen = {p for p in train if p is not None}
    shared = [i for i, p in enumerate(evals, 1) if p is not None and p in seen]
    if shared:
        rows = ", ".join(map(str, shared[:MAX_ROW_PROBLEMS])) + (" ..." if len(shared) > MAX_ROW_PROBLEMS else "")
        what = "every" if len(shared) == len(evals) else f"{len(shared)} of {len(evals)}"
        c.add(
            "data.eval",
            f"{what} held-out prompts also appear in data.train ({eval_file} rows {rows}): they measure memory, not the policy",
            "drop those rows from one of the splits",
        )
