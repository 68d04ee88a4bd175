"""The sections of a task file, each read into its typed spec with every problem reported on the
``Checker``: the model reference, the data splits, the prompt, the answer format, the generation
settings, and the probe and eval thresholds. ``load_task`` calls them in the file's order."""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from ..rewards import AnswerFormat
from ..settings.recipe import RECIPE
from .checker import MOVED_KEYS, Checker
from .spec import PROMPT_KEYS, DataSpec, EvalSpec, GenerationSpec, ProbeSpec, PromptSpec, is_placeholder_name


def read_model(c: Checker, raw: Mapping[str, Any], root: Path) -> str:
    """The ``model:`` reference ("" when missing or not a string): a known built-in, or a path that exists."""
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
            check_model_path(c, model, root)
    return model if isinstance(model, str) else ""


def read_data(c: Checker, raw: Mapping[str, Any]) -> DataSpec:
    """The ``data:`` section: the train split (required), the held-out split and its size."""
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
    return DataSpec(
        str(train), eval_ref if isinstance(eval_ref, str) else None, eval_size if isinstance(eval_size, int) else None
    )


def read_prompt(c: Checker, raw: Mapping[str, Any]) -> PromptSpec:
    """The ``prompt:`` section: a plain template, or chat messages (system and user), never both."""
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
    for where, what, fix in prompt_problems(prompt):
        c.add(where, what, fix)
    return prompt


def prompt_problems(prompt: PromptSpec) -> list[tuple[str, str, str]]:
    """Every fault of a prompt's texts as (key, what, fix): unbalanced braces, and fields that are
    not one column each (``field_problems``). Checked once, when the task is loaded."""
    out: list[tuple[str, str, str]] = []
    for key in PROMPT_KEYS:
        text = getattr(prompt, key)
        try:
            fields = list(string.Formatter().parse(text or ""))
        except ValueError as exc:
            out.append(
                (f"prompt.{key}", f"bad template {text!r}: {exc}", f"{RULE}; write {{{{ and }}}} for literal braces")
            )
            continue
        out.extend((f"prompt.{key}", what, fix) for what, fix in field_problems(fields))
    return out


# The rule every message about a prompt's braces states, word for word.
RULE = "a placeholder is {column} with column an identifier (letters, digits, _)"


def field_problems(fields: list[tuple[str, str | None, str | None, str | None]]) -> list[tuple[str, str]]:
    """What is wrong with a prompt text's ``{...}`` fields (as ``string.Formatter().parse`` splits
    them): each must name one column, ``{question}`` (``is_placeholder_name``), optionally with a
    conversion (``!r``) or a format spec (``:>8``). An empty ``{}`` is the likeliest slip (``\\boxed{}``
    in a math prompt): ``str.format`` reads it as a positional argument, which a row never supplies.
    Literal JSON (``{"name": "Ada"}``) is the next: it is not a placeholder, and the fix shows the
    text with its braces doubled. One problem per field."""
    out: list[tuple[str, str]] = []
    for _, name, spec, conversion in fields:
        if name is None:
            continue
        shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        literal = f"write {_doubled(shown)} for literal braces, or name a column: {{question}}"
        if name == "" or name.isdigit():
            out.append((f"{shown} is a positional field: a prompt's fields name the row's columns", literal))
        elif not is_placeholder_name(name):
            head = name.split(".")[0].split("[")[0]
            if is_placeholder_name(head):
                out.append((f"{shown} reads an attribute or item of a column, which a prompt cannot", literal))
            else:
                out.append((f"{shown} is not a placeholder: {RULE}, and literal braces are written {{{{ }}}}", literal))
        elif conversion not in (None, "r", "s", "a"):
            out.append((f"{shown} has an unknown conversion !{conversion}", "use !r, !s or !a, or none"))
        elif spec and ("{" in spec or "}" in spec):
            out.append((f"{shown} has a field inside its format spec, which a prompt cannot fill", literal))
    return out


def _doubled(text: str) -> str:
    """``text`` as a prompt writes it literally: every brace doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def read_answer(c: Checker, raw: Mapping[str, Any]) -> tuple[str, AnswerFormat]:
    """The ``answer:`` section: the ground-truth column and the answer format."""
    a = c.section(raw, "answer")
    answer_column = a.get("column", "answer")
    c.typed("answer.column", answer_column, str, "a column name")
    fmt_kw: dict[str, Any] = {}
    choices = {
        "format": ("tags", "boxed", "json"),
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
    return (answer_column if isinstance(answer_column, str) else "answer"), answer


def read_generation(c: Checker, raw: Mapping[str, Any]) -> GenerationSpec:
    """The ``generation:`` section: temperature (above 0), top_p and the completion budget."""
    g = c.section(raw, "generation")
    gen = GenerationSpec()
    if "temperature" in g and c.typed("generation.temperature", g["temperature"], (int, float), "a number"):
        if g["temperature"] == 0:
            c.add(
                "generation.temperature",
                "is 0: every completion of a prompt is then the same, so every group has zero variance and GRPO "
                "learns nothing (probe and gate would also see one answer per prompt)",
                f"sample at the recipe's {RECIPE['temperature']} (greedy decoding belongs to the held-out eval: "
                "eval.temperature)",
            )
        elif not 0 < g["temperature"] <= 5:
            c.add(
                "generation.temperature",
                f"must be above 0 and at most 5, got {g['temperature']}",
                f"the recipe samples at {RECIPE['temperature']}",
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
    return gen


def read_probe_and_eval(c: Checker, raw: Mapping[str, Any]) -> tuple[ProbeSpec, EvalSpec]:
    """The ``probe:`` and ``eval:`` sections; a key that moved to the top-level ``success:`` is reported."""
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
    return probe, ev


def is_hub_id(model: str, root: Path) -> bool:
    """Whether ``model`` names a hub model (``org/name``, or a plain name) rather than a local
    path: a path starts with ``.``, ``/`` or ``~``, has more than one ``/``, or its first part is a
    folder beside the task file (``runs/sft``)."""
    if model.startswith(("hf:", "builtin:")):
        return False
    parts = model.split("/")
    path_like = model.startswith((".", "/", "~")) or model.endswith("/") or "\\" in model or len(parts) > 2
    return not path_like and not (len(parts) == 2 and (root / parts[0]).is_dir()) and not (root / model).exists()


def check_model_path(c: Checker, model: str, root: Path) -> None:
    """A model reference that is a path (not a hub id ``org/name``) must exist: otherwise the
    hub client reports a malformed repo id, seconds later, after trying the network."""
    if model.startswith(("hf:", "builtin:")) or is_hub_id(model, root):
        return  # a hub id (or a plain name): checked when it loads (rlvr task check: in the cache when offline)
    ref = Path(model).expanduser()
    local = ref if ref.is_absolute() else root / ref
    if not local.exists():
        c.add(
            "model",
            f"local model path not found: {local}",
            "point model: at a folder holding config.json and weights (relative to the task file), or write a hub id "
            "org/name",
        )


Spec = TypeVar("Spec", ProbeSpec, EvalSpec)


def dataclass_section(c: Checker, key: str, values: Mapping[str, Any], cls: type[Spec]) -> Spec:
    """``cls`` with the section's values of the right type applied; keys it lacks are skipped here
    (``Checker.section`` reported them), a value of the wrong type is reported and left at its default."""
    obj = cls()
    for k, v in values.items():
        default = getattr(obj, k, None)
        if k not in cls.__dataclass_fields__:
            continue
        kind: Any = str if default is None else type(default)
        if kind is float:
            kind = (int, float)
        if c.typed(f"{key}.{k}", v, kind, "a number" if kind in ((int, float), int) else f"a {kind.__name__}"):
            value: Any = float(v) if default.__class__ is float else v
            obj = replace(obj, **{k: value})
    return obj
