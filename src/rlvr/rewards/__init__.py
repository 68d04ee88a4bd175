"""Reward terms: the verifiers a task composes its reward from, and the TRL adapter.

Built-in verifiers live in ``BUILTINS`` (name -> "module:Class", imported on first use so that
``rlvr --help`` and light verifiers stay fast):

==============  ==============================================================================
format          exactly one well-formed answer span (and the think block the format asks for)
exact           exact match of the answer span, opt-in normalisation rules (``exact.py``)
math            symbolic/numeric equivalence with explicit policies, hard timeouts (``math/``)
json_schema     JSON answer valid for a draft 2020-12 schema (formats enforced) or pydantic model,
                no extra keys
tool_call       tool name known, arguments valid for its schema, equal to the expected call
length_penalty  0 within a token budget, negative past it
overlong        DAPO's soft overlong punishment
repetition      share of repeated word or character n-grams (loops without spaces too), as a penalty
judge           an OpenAI-compatible LLM judge; refuses to run without a calibration record
unit_tests      the code sandbox (``code.py``)
valid_calls     episode terms over the sample's tool calls (``calls.py``); an episode task adds
required_tools  them from its ``environment:`` section
call_budget
==============  ==============================================================================

Anything else is a dotted import path to a verifier class, a verifier instance, a
``fn(sample) -> Verdict | float | None`` or a TRL-style batch function
``fn(prompts, completions, **kwargs) -> list[float | None]``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import math as _math  # not bound as `math`: importing the submodule rlvr.rewards.math rebinds that name here
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Outcome, Reads, Sample, Verdict, Verifier, kind_of, reads_of
from .combine import FLOAT32_MAX
from .format import AnswerFormat, Extraction, extract

BUILTINS: dict[str, str] = {
    "format": "rlvr.rewards.format:FormatVerifier",
    "exact": "rlvr.rewards.exact:ExactMatch",
    "unit_tests": "rlvr.rewards.code:UnitTests",
    "math": "rlvr.rewards.math:MathVerifier",
    "json_schema": "rlvr.rewards.schema:JsonSchemaVerifier",
    "tool_call": "rlvr.rewards.schema:ToolCallVerifier",
    "length_penalty": "rlvr.rewards.length:LengthPenalty",
    "overlong": "rlvr.rewards.length:OverlongPenalty",
    "repetition": "rlvr.rewards.length:RepetitionPenalty",
    "judge": "rlvr.rewards.judge:JudgeVerifier",
    "valid_calls": "rlvr.rewards.calls:ValidCalls",
    "required_tools": "rlvr.rewards.calls:RequiredTools",
    "call_budget": "rlvr.rewards.calls:CallBudget",
}


def import_object(path: str, search: Path | None = None) -> Any:
    """The object a ``module:attr`` or ``module.attr`` path names, importing its module (with
    ``search`` put first on ``sys.path`` when given). Raises ``VerifierError`` naming the reason."""
    if search is not None and str(search) not in sys.path:
        sys.path.insert(0, str(search))
    if ":" in path:
        mod_name, _, attr = path.partition(":")
    else:
        mod_name, _, attr = path.rpartition(".")
    if not mod_name or not attr:
        raise VerifierError(
            f"{path!r} is neither a built-in verifier ({', '.join(sorted(BUILTINS))}) nor a dotted path 'module.attr'"
        )
    try:
        module = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a bad term
        raise VerifierError(f"cannot import {mod_name!r} for reward {path!r}: {type(exc).__name__}: {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise VerifierError(f"module {mod_name!r} has no attribute {attr!r} (reward {path!r})") from None


def source_module(name: str) -> str:
    """The module that defines verifier ``name`` (built-in or dotted), for hashing its code."""
    path = BUILTINS.get(name, name)
    return path.partition(":")[0] if ":" in path else path.rpartition(".")[0]


class FunctionVerifier(BaseVerifier):
    """Wraps ``fn(sample) -> Verdict | float | None``. A float > 0 is ``correct``, <= 0 ``wrong``
    (an approximation: a plain float carries no outcome); ``None``, a non-finite or non-numeric
    value and a raise are ``error`` (see ``as_verdict``)."""

    def __init__(self, fn: Callable[..., Any], kind: str = "custom") -> None:
        self.fn = fn
        self.kind = getattr(fn, "kind", kind)
        self.shapes_length = bool(getattr(fn, "shapes_length", False))

    def verify(self, sample: Sample) -> Verdict:
        return as_verdict(self.fn(sample))


class TrlFunctionVerifier(BaseVerifier):
    """Wraps a TRL-style batch reward function (keyword contract, one value per completion).

    When the function raises on a batch, or returns the wrong number of values, each row is
    retried alone, so one row it cannot score masks that row and not the whole batch.
    """

    def __init__(self, fn: Callable[..., Any], options: Mapping[str, Any] | None = None, kind: str = "custom") -> None:
        self.fn = fn
        self.options = dict(options or {})
        self.kind = getattr(fn, "kind", kind)
        self.shapes_length = bool(getattr(fn, "shapes_length", False))

    def verify(self, sample: Sample) -> Verdict:
        return self.verify_batch([sample])[0]

    def _call(self, samples: Sequence[Sample]) -> list[Any]:
        cols: dict[str, list[Any]] = {}
        for s in samples:
            for k in s.row:
                cols.setdefault(k, [])
        for s in samples:
            for k in cols:
                cols[k].append(s.row.get(k))
        cols.pop("prompt", None)
        values = list(
            self.fn(
                prompts=[s.prompt for s in samples],
                completions=[s.completion for s in samples],
                completion_ids=[list(s.completion_ids or []) for s in samples],
                **cols,
                **self.options,
            )
        )
        if len(values) != len(samples):
            raise ValueError(f"returned {len(values)} values for {len(samples)} completions")
        return values

    def verify_batch(self, samples: Sequence[Sample], offset: int = 0) -> list[Verdict]:
        try:
            values = self._call(samples)
        except Exception as exc:  # noqa: BLE001 - retried row by row: one bad row masks one row
            if len(samples) > 1:
                return [v for i, s in enumerate(samples) for v in self.verify_batch([s], offset + i)]
            return [Verdict.error(f"row {offset}: {type(exc).__name__}: {exc}") for _ in samples]
        return [as_verdict(v, row=offset + i) for i, v in enumerate(values)]


def as_verdict(value: Any, row: int | None = None) -> Verdict:
    """A reward function's value as a verdict. A number > 0 is ``correct``, <= 0 ``wrong``.
    ``None`` is ``error`` (undecided), and so is anything that is not a finite number within
    float32's range (NaN, inf, ``1e39``, a string): TRL would turn NaN into a silent 0 and an
    infinity into a group of zero advantages. ``row`` names the row in the error's detail."""
    where = "" if row is None else f"row {row}: "
    if isinstance(value, Verdict):
        return value
    if value is None:
        return Verdict.error(f"{where}the reward function returned None")
    if isinstance(value, (str, bytes)):
        return Verdict.error(
            f"{where}the reward function returned {type(value).__name__} {str(value)[:40]!r}, not a number"
        )
    try:
        score = float(value)
    except (TypeError, ValueError, OverflowError):
        return Verdict.error(f"{where}the reward function returned {type(value).__name__}, not a number")
    if not _math.isfinite(score) or abs(score) > FLOAT32_MAX:
        return Verdict.error(
            f"{where}the reward function returned {score!r}, not a finite number within float32's range"
        )
    return Verdict.correct(score) if score > 0 else Verdict.wrong(score)


def build_verifier(
    name: str,
    options: Mapping[str, Any] | None = None,
    answer_format: AnswerFormat | None = None,
    search: Path | None = None,
    answer_column: str | None = None,
) -> Verifier:
    """Build the verifier a reward term names: a built-in or a dotted path.

    ``answer_format`` (the task's) is passed to verifiers whose constructor takes it, unless the
    term's options set their own. ``answer_column`` (the task's) is passed as ``column`` to a
    built-in verifier class that takes one, unless the options set it, and otherwise as
    ``reference_column`` to one that takes that (``unit_tests`` whose tests are another column:
    the answer column then holds the reference solution); a custom class's columns are left
    alone (what they name is the class's own business). Raises ``VerifierError`` with the reason.
    """
    options = dict(options or {})
    target = import_object(BUILTINS.get(name, name), None if name in BUILTINS else search)
    if inspect.isclass(target):
        params = option_params(target)
        if name in BUILTINS and answer_column is not None and "column" in params and "column" not in options:
            options["column"] = answer_column
        elif name in BUILTINS and answer_column not in (None, options.get("column")) and "reference_column" in params:
            options.setdefault("reference_column", answer_column)
        if "answer_format" in params and answer_format is not None and "answer_format" not in options:
            options["answer_format"] = answer_format
        elif isinstance(options.get("answer_format"), Mapping):
            options["answer_format"] = AnswerFormat(**options["answer_format"])
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            unknown = sorted(set(options) - set(params))
            if unknown:
                plural = "s" if len(unknown) > 1 else ""
                raise VerifierError(
                    f"unknown option{plural} {', '.join(map(repr, unknown))} for reward {name!r}"
                    f"{_closest(unknown, params)}; its options: {_describe_options(params)}"
                )
        try:
            obj: Any = target(**options)
        except VerifierError:
            raise
        except TypeError as exc:
            raise VerifierError(f"bad options for reward {name!r}: {exc}") from exc
        if not hasattr(obj, "verify"):
            raise VerifierError(f"{name!r} built an object without a verify() method")
        if not hasattr(obj, "verify_batch"):
            raise VerifierError(f"{name!r} has no verify_batch(); derive it from rlvr.rewards.BaseVerifier")
        return obj
    if hasattr(target, "verify") and hasattr(target, "verify_batch"):
        return target
    if callable(target):
        fn_params = inspect.signature(target).parameters
        batch = "completions" in fn_params or any(p.kind is p.VAR_KEYWORD for p in fn_params.values())
        if batch:
            return TrlFunctionVerifier(target, options)
        if options:
            raise VerifierError(f"reward {name!r} is a plain function and takes no options (got {sorted(options)})")
        return FunctionVerifier(target)
    raise VerifierError(f"{name!r} is not a verifier class, instance or function")


def option_params(target: type) -> dict[str, inspect.Parameter]:
    """The options a verifier class takes: its constructor's parameters, where a class that
    declares its options as a dataclass (``Options``: ``unit_tests``'s ``CodeOptions``) takes
    that dataclass's fields in place of its ``options`` and ``**fields`` parameters."""
    params = dict(inspect.signature(target).parameters)
    spec = getattr(target, "Options", None)
    if isinstance(spec, type) and dataclasses.is_dataclass(spec):
        params = {k: p for k, p in params.items() if k != "options" and p.kind is not p.VAR_KEYWORD}
        for f in dataclasses.fields(spec):
            params[f.name] = inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default)
    return params


def _closest(unknown: Sequence[str], params: Mapping[str, inspect.Parameter]) -> str:
    import difflib

    hints = [f"{m[0]!r} for {u!r}" for u in unknown if (m := difflib.get_close_matches(u, list(params), n=1))]
    return f" (did you mean {', '.join(hints)}?)" if hints else ""


def _describe_options(params: Mapping[str, inspect.Parameter]) -> str:
    """``name (default D)`` for each option; required ones say so."""
    out = []
    for p in params.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        out.append(f"{p.name} (required)" if p.default is p.empty else f"{p.name} (default {p.default!r})")
    return ", ".join(out) or "none"


__all__ = [
    "AnswerFormat",
    "BUILTINS",
    "BaseVerifier",
    "Extraction",
    "FunctionVerifier",
    "Outcome",
    "Reads",
    "Sample",
    "TrlFunctionVerifier",
    "Verdict",
    "Verifier",
    "as_verdict",
    "build_verifier",
    "extract",
    "import_object",
    "kind_of",
    "option_params",
    "reads_of",
    "source_module",
]
