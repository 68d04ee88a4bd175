"""Named stdout checkers for stdin/stdout rows: is a program's output an accepted answer?

A checker never runs in the candidate's process: the sandbox hands the raw stdout back and the
trusted side calls ``check_output(spec, stdin, expected, output)``. Every built-in checker is linear
in the size of the output (``str`` methods and one pass over the tokens; no regular expression
runs on model output; ``bench/sandbox.py --checkers`` measures it on adversarial 1 MiB outputs)
and never raises, whatever the text (hypothesis tests in ``tests/sandbox/test_checkers.py``); the
sandbox caps the output at 1 MiB before it gets here.

``exact`` (the default)
    Line by line after three normalisations, and only these: ``\\r\\n`` becomes ``\\n``, each
    line's trailing whitespace (``str.rstrip``) is removed, trailing empty lines are dropped.
    Leading whitespace, blank lines between lines, the number of lines and case all count. The
    whole output is compared, never a prefix.
``tokens``
    The whitespace-separated tokens (``str.split()``: any run of Unicode whitespace, line breaks
    included) are equal, in order.
``float``
    Tokens as for ``tokens``, same count; a pair of numeric tokens is accepted when
    ``|a - b| <= max(rel_tol * max(|a|, |b|), abs_tol)`` (``rlvr.sandbox.inside.tolerance``, the one
    function the test child's ``float_tolerance`` uses too); other tokens must be equal as
    text. A numeric token is ``[+-]`` digits, an optional ``.`` and digits (at least one digit
    in all), an optional exponent ``e``/``E`` ``[+-]`` digits, ASCII only; or one of ``nan``,
    ``inf``, ``infinity`` with an optional sign, in any case. A NaN token is accepted only when
    identical as text (numerically NaN equals nothing), an infinity only for the infinity of the
    same sign, and a finite number never for either. Numbers are compared as IEEE doubles; when
    a finite literal is beyond the double range (``1e400``), the pair is compared exactly in
    decimal instead, so a huge number never passes for infinity or for another huge number.
    Tokens identical as text are always accepted. Defaults: ``abs_tol = rel_tol = 1e-6`` (the
    usual contest statement "absolute or relative error at most 1e-6").
``case_insensitive``
    ``exact`` after ``str.casefold`` on both sides (``YES``, ``yes`` and ``Yes`` are one answer).
``custom``
    A Python function of the task's, ``f(input, expected, output) -> bool``, named by a dotted
    path ``module.function`` (or ``module:function``) importable from the task folder, or given
    as a callable. It is trusted code and runs on the trusted side, never in the candidate's
    process. Its result must be a ``bool``; when it raises or returns anything else the failure
    is the task's, not the sample's: ``check_output`` raises ``CheckerFailed``, which the
    verifier turns into a masked ``ground_truth`` error (never a wrong answer, never a reward).
    So it must return False, not raise, on a malformed output. Nothing bounds its running time
    (it runs where ``check_output`` is called, with the output already capped at 1 MiB): keep it
    linear in the output, as the built-in checkers are.

``parse_checker`` reads the task-file and row forms (``float``, or ``{name: float, abs_tol:
1e-4}``, or ``{function: checkers.any_order}``) into a ``CheckerSpec`` and raises
``CheckerSpecError`` with a one-line reason for anything else.
"""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal
from pathlib import Path
from typing import Any, cast

from .inside.tolerance import numbers_close

__all__ = [
    "CHECKERS",
    "DEFAULT_ABS_TOL",
    "DEFAULT_REL_TOL",
    "EXACT",
    "CheckerFailed",
    "CheckerSpec",
    "CheckerSpecError",
    "check_output",
    "normalize_lines",
    "parse_checker",
    "resolve_function",
]

CHECKERS = ("exact", "tokens", "float", "case_insensitive", "custom")
DEFAULT_ABS_TOL = 1e-6
DEFAULT_REL_TOL = 1e-6
_KEYS = ("name", "abs_tol", "rel_tol", "function")
_DECIMAL = Context(prec=60, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])
_MAX_EXPONENT_DIGITS = 17  # |exponent| < 10**17 stays inside Decimal's range
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "infinity": math.inf}


class CheckerSpecError(ValueError):
    """A checker setting that cannot be used (unknown name, bad tolerance, missing function)."""


class CheckerFailed(RuntimeError):
    """A custom checker raised or returned a non-bool: a problem of the task, not of the sample."""


@dataclass(frozen=True)
class CheckerSpec:
    """Which checker compares a stdin/stdout case, with its settings. ``function`` (``custom``
    only) is a callable or a dotted path, imported on first use."""

    name: str = "exact"
    abs_tol: float = DEFAULT_ABS_TOL
    rel_tol: float = DEFAULT_REL_TOL
    function: Callable[[str, str, str], Any] | str | None = None

    def __post_init__(self) -> None:
        if self.name not in CHECKERS:
            raise CheckerSpecError(f"unknown checker {self.name!r} (one of {', '.join(CHECKERS)})")
        for key in ("abs_tol", "rel_tol"):
            tol = getattr(self, key)
            if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol < math.inf:
                raise CheckerSpecError(f"{key} must be a finite number >= 0, got {tol!r}")
        if (self.name == "custom") != (self.function is not None):
            raise CheckerSpecError(
                "a custom checker needs function: module.function"
                if self.name == "custom"
                else f"function: is only for the custom checker, not {self.name!r}"
            )
        if isinstance(self.function, str) and not _dotted(self.function):
            raise CheckerSpecError(f"function must be a dotted path module.function, got {self.function!r}")
        if self.function is not None and not isinstance(self.function, str) and not callable(self.function):
            raise CheckerSpecError(f"function must be callable or a dotted path, got {type(self.function).__name__}")


EXACT = CheckerSpec()


def parse_checker(raw: Any, search: Path | None = None) -> CheckerSpec:
    """A ``CheckerSpec`` from a task-file or row value: a name (``tokens``), a mapping
    (``{name: float, abs_tol: 1e-4, rel_tol: 0}``; ``{function: mod.fn}`` implies ``custom``), a
    JSON-free ``CheckerSpec`` as is, or None (``exact``). With ``search`` (the task folder) a
    custom function is imported now, so a bad path fails at load time."""
    if raw is None:
        return EXACT
    if isinstance(raw, CheckerSpec):
        spec = raw
    elif isinstance(raw, str):
        name = raw.strip()
        if name not in CHECKERS:
            raise CheckerSpecError(f"unknown checker {raw!r} (one of {', '.join(CHECKERS)})")
        if name == "custom":
            raise CheckerSpecError("a custom checker needs a mapping: {function: module.function}")
        spec = CheckerSpec(name)
    elif isinstance(raw, Mapping):
        unknown = sorted(str(k) for k in raw if k not in _KEYS)
        if unknown:
            raise CheckerSpecError(f"unknown checker key(s) {', '.join(unknown)} (known: {', '.join(_KEYS)})")
        name = raw.get("name", "custom" if "function" in raw else "exact")
        if not isinstance(name, str):
            raise CheckerSpecError(f"checker name must be a string, got {type(name).__name__}")
        if name not in ("float",) and ("abs_tol" in raw or "rel_tol" in raw):
            raise CheckerSpecError(f"abs_tol and rel_tol apply to the float checker only, not {name!r}")
        spec = CheckerSpec(
            name,
            _tolerance(raw.get("abs_tol", DEFAULT_ABS_TOL)),
            _tolerance(raw.get("rel_tol", DEFAULT_REL_TOL)),
            raw.get("function"),
        )
    else:
        raise CheckerSpecError(f"a checker is a name or a mapping, got {type(raw).__name__}")
    if search is not None and isinstance(spec.function, str):
        spec = replace(spec, function=resolve_function(spec.function, search))
    return spec


def resolve_function(path: str, search: Path | None = None) -> Callable[[str, str, str], Any]:
    """Import the custom checker ``module.function`` (``search`` first on ``sys.path``)."""
    if not _dotted(path):
        raise CheckerSpecError(f"function must be a dotted path module.function, got {path!r}")
    mod_name, _, attr = path.partition(":") if ":" in path else path.rpartition(".")
    if search is not None and str(search) not in sys.path:
        sys.path.insert(0, str(search))
    try:
        module = importlib.import_module(mod_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a bad setting
        raise CheckerSpecError(f"cannot import {mod_name!r} for checker {path!r}: {type(exc).__name__}: {exc}") from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise CheckerSpecError(f"module {mod_name!r} has no function {attr!r} (checker {path!r})")
    return cast("Callable[[str, str, str], Any]", fn)


def check_output(checker: CheckerSpec, stdin: str, expected: str, output: str) -> bool:
    """Is ``output`` an accepted answer for ``stdin`` whose reference output is ``expected``?
    Built-in checkers never raise; a custom one that raises or returns a non-bool raises
    ``CheckerFailed`` (mask the sample: the task's checker is broken, not the program)."""
    name = checker.name
    if name != "custom" and output == expected:
        return True  # every built-in accepts the reference output itself (one memcmp)
    if name == "exact":
        return normalize_lines(output) == normalize_lines(expected)
    if name == "case_insensitive":
        return normalize_lines(output.casefold()) == normalize_lines(expected.casefold())
    if name == "tokens":
        return output.split() == expected.split()
    if name == "float":
        got, want = output.split(), expected.split()
        if len(got) != len(want):
            return False
        return all(_token_close(g, w, checker.abs_tol, checker.rel_tol) for g, w in zip(got, want, strict=True))
    fn = checker.function
    try:
        if isinstance(fn, str):
            fn = resolve_function(fn)
        verdict = fn(stdin, expected, output) if fn is not None else None
    except Exception as exc:  # noqa: BLE001 - any failure of the task's checker is the task's
        raise CheckerFailed(f"custom checker {_label(checker.function)} raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(verdict, bool):
        raise CheckerFailed(
            f"custom checker {_label(checker.function)} returned {type(verdict).__name__}, not True or False"
        )
    return verdict


def normalize_lines(text: str) -> list[str]:
    """The ``exact`` checker's view of an output: ``\\r\\n`` as ``\\n``, each line's trailing
    whitespace removed, trailing empty lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _token_close(got: str, want: str, abs_tol: float, rel_tol: float) -> bool:
    if got == want:
        return True
    a, b = _number(got), _number(want)
    if a is None or b is None:
        return False
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return _decimal_close(got, want, abs_tol, rel_tol)
    return numbers_close(a, b, rel_tol, abs_tol)


def _number(token: str) -> float | Decimal | None:
    """The token's value: a float, a Decimal when a finite literal is beyond the double range,
    None when the token is not numeric. Linear in the token's length."""
    body = token[1:] if token[:1] in "+-" else token
    word = body.lower()
    if word in _NON_FINITE:
        value = _NON_FINITE[word]
        return -value if token[:1] == "-" else value
    mantissa, e, exponent = word.partition("e")
    if e:
        digits = exponent[1:] if exponent[:1] in "+-" else exponent
        if not _digits(digits) or len(digits.lstrip("0")) > _MAX_EXPONENT_DIGITS:
            return None
    whole, _, fraction = mantissa.partition(".")
    if not (whole or fraction) or (whole and not _digits(whole)) or (fraction and not _digits(fraction)):
        return None
    value = float(token)
    return Decimal(token) if math.isinf(value) else value


def _decimal_close(got: str, want: str, abs_tol: float, rel_tol: float) -> bool:
    a, b = Decimal(got), Decimal(want)
    if a.is_infinite() or b.is_infinite() or a.is_nan() or b.is_nan():
        return False  # one side is a literal infinity or NaN, the other a finite huge number
    diff = _DECIMAL.abs(_DECIMAL.subtract(a, b))
    scale = _DECIMAL.max(_DECIMAL.abs(a), _DECIMAL.abs(b))
    return diff <= _DECIMAL.max(_DECIMAL.multiply(Decimal(rel_tol), scale), Decimal(abs_tol))


def _tolerance(value: Any) -> Any:
    """YAML 1.1 reads ``1e-6`` (no dot) as a string: accept a numeric string as its number."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _dotted(path: str) -> bool:
    mod, sep, attr = path.partition(":") if ":" in path else path.rpartition(".")
    return bool(mod and sep and attr) and all(p.isidentifier() for p in (*mod.split("."), attr))


def _label(fn: Any) -> str:
    if isinstance(fn, str):
        return fn
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
