"""The reward terms of a task file: the list itself, building each term's verifier, the success
term (declared, or the only term that is not a shaping term) and the ``grpo.reward_weights`` list."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import Problem, VerifierError
from ..settings.layers import GENERATION_KEYS
from .checker import TERM_KEYS, Checker
from .spec import Task, TermSpec

if TYPE_CHECKING:
    from ..episodes.spec import EnvironmentSpec

# Verifiers that shape the reward and never decide success (a class derived from one counts too).
SHAPING_VERIFIERS = (
    "format",
    "length_penalty",
    "overlong",
    "repetition",
    "valid_calls",
    "required_tools",
    "call_budget",
)
CHECKER_FIX = (
    "checker: exact | tokens | case_insensitive | float, or {name: float, abs_tol: 1.0e-6, rel_tol: 0}, "
    "or {function: module.function} (a file in the task folder)"
)


def resolve_success(
    c: Checker, declared: Any, terms: Sequence[TermSpec], shaping: Mapping[str, bool]
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
                f"{declared!r} is a shaping term (format, length, overlong, repetition, an episode term): it "
                "shapes the reward and cannot decide success",
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
            f"no term checks the answer: {', '.join(names)} only shape the reward (a format-only reward is satisfied "
            "by any well-formed answer)",
            "add a correctness term, e.g. {name: correct, verifier: exact}",
        )
    return "", Problem(
        f"{c.source}: success",
        f"not declared, and {len(deciders)} terms could decide success ({', '.join(deciders)})",
        f"add success: NAME at the top level (one of {', '.join(deciders)})",
    )


def episode_terms(environment: EnvironmentSpec) -> tuple[TermSpec, ...]:
    """The ``environment.terms`` as reward terms (``rlvr.rewards.calls``), their options from the
    section: the required tools and the call budget. They join the task's reward list, so every
    stage scores, shows and signs the terms training pays."""
    options: dict[str, dict[str, Any]] = {
        "valid_calls": {},
        "required_tools": {"tools": list(environment.required)},
        "call_budget": {"budget": environment.budget},
    }
    return tuple(TermSpec(name, name, weight, options[name]) for name, weight in environment.terms)


def check_rewards(c: Checker, raw: Any) -> list[TermSpec]:
    if raw is None:
        c.add(
            "rewards",
            "missing",
            "list at least a format term and a correctness term, e.g. [{name: format}, {name: correct, verifier: "
            "exact}]",
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
        c.keys(f"{where}.", item, TERM_KEYS)
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


# The verifier kinds that read the answer span as text (exact, math; code): under the json format
# the span is a JSON record, and comparing its text would score formatting, not the answer.
TEXT_SPAN_KINDS = ("answer", "code")


def check_terms_build(c: Checker, task: Task) -> dict[str, bool]:
    """Build every term (reporting the ones that fail); returns term name -> is a shaping term."""
    from ..rewards import BUILTINS
    from ..rewards.base import kind_of
    from ..rewards.format import FormatVerifier
    from ..rewards.length import LengthPenalty, OverlongPenalty, RepetitionPenalty

    shaping: dict[str, bool] = {}
    for i, t in enumerate(task.rewards):
        shaping[t.name] = t.verifier in SHAPING_VERIFIERS
        if t.verifier == "unit_tests" and t.options.get("checker") is not None:
            from ..sandbox.checkers import CheckerSpecError, parse_checker

            try:
                parse_checker(t.options["checker"], search=task.root)
            except CheckerSpecError as exc:
                c.add(f"rewards[{i}].options.checker", str(exc), CHECKER_FIX)
                continue
        try:
            v = task.term_verifier(t)
            shaping[t.name] |= isinstance(v, (FormatVerifier, LengthPenalty, OverlongPenalty, RepetitionPenalty))
            if task.answer.style == "json" and kind_of(v) in TEXT_SPAN_KINDS:
                c.add(
                    f"rewards[{i}]",
                    f"{t.verifier!r} reads a text answer span, which answer.format json does not have",
                    "use answer.format tags or boxed for it, or a JSON term (json_schema, tool_call)",
                )
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


def check_grpo_overrides(c: Checker, grpo: Mapping[str, Any], n_terms: int) -> None:
    # One spelling per setting: the probe, the gate, the length check and the held-out eval read the
    # sampling values from generation:, so a grpo: copy would train on values none of them saw.
    for key in GENERATION_KEYS:
        if key in grpo:
            c.add(
                f"grpo.{key}",
                "is a generation setting, written under generation: (probe, inspect and the eval sample with it)",
                f"move it to generation.{key}",
            )
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
