"""The one strict JSON reader: model text, tool-call arguments (in tags or structured) and the
reward server's request bodies all go through ``read_json``.

What it refuses, where Python's ``json`` accepts it:

- a duplicate key (``{"ok": false, "ok": true}``: which one a consumer reads depends on the
  parser, so a schema check and the program that uses the value can disagree);
- ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; they pass or poison numeric comparisons);
- a number with more than ``max_digits`` digits, or an exponent past ``max_exponent`` (a
  5,000-digit integer made Python's ``int`` raise outside every guard; ``1e-999999`` read exactly
  is a million-digit fraction), and a non-integer past the float range (``1e999``: a consumer
  that reads floats gets infinity);
- nesting deeper than ``max_depth`` (deep nesting made the parser raise ``RecursionError``);
- a lone surrogate, raw or escaped (``"\\ud800"``: not valid Unicode; the linear pattern engine
  and every UTF-8 writer fail on it), unless ``surrogates=True`` (a request body that carries a
  model's text as it was);
- two keys equal after NFC (``"café"`` precomposed and decomposed).

A non-zero number below every float (``1e-400``) reads as 0: the value a consumer reading floats
gets, so ``exclusiveMinimum: 0`` refuses it as the program that uses it would.

Numbers keep their value: integers are ``int``, and with ``decimals="exact"`` (model text and
tool arguments) every other number is a ``decimal.Decimal`` holding exactly what was written, so
``10000000000000001.0`` is not ``1e16`` (as floats they are equal). Request bodies use
``decimals="float"``: their rows are dataset rows, which the task's data reader gives as floats;
a float that overflows (``1e999``) is refused.

``JsonError.limit`` says whether a limit (as opposed to the syntax) was broken; callers map both
to a wrong answer for model text and to a 400 JSON error for a request.

``json_equal`` and ``json_key`` compare and sort parsed values exactly: numbers by value (an
``int``, a ``Decimal`` and a float -- read as the shortest decimal that round-trips, the form it
was written in -- are equal when their values are), ``True`` never equals ``1``.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Literal

from . import untrusted

__all__ = [
    "JsonError",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_EXPONENT",
    "depth",
    "exact_number",
    "has_lone_surrogate",
    "json_equal",
    "json_key",
    "load_json",
    "read_json",
    "safe_dumps",
    "scrub_surrogates",
]

MAX_DIGITS = 4300  # Python's own default limit for int(str)
MAX_EXPONENT = 4300
MAX_DEPTH = 64
_FLOAT_MAX = Decimal(sys.float_info.max)


class JsonError(ValueError):
    """Why a text is not strict JSON. ``limit``: a limit was broken (not the syntax)."""

    def __init__(self, message: str, limit: bool = False) -> None:
        super().__init__(message)
        self.limit = limit


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    seen: set[str] = set()
    for k, v in pairs:
        # Keys are compared after NFC: "café" written precomposed and decomposed are one key to
        # any consumer that normalises, two to one that does not.
        nfc = k if k.isascii() else unicodedata.normalize("NFC", k)
        if nfc in seen:
            raise JsonError(f"duplicate key {k[:80]!r}" + ("" if nfc == k else " (equal to another after NFC)"))
        seen.add(nfc)
        out[k] = v
    return out


_SURROGATES = {c: 0xFFFD for c in range(0xD800, 0xE000)}


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (a code point UTF-8 cannot encode: not valid
    Unicode text, whether written raw or as a ``\\u`` escape)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def scrub_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, one code point for one, so offsets
    stay the same (what the linear pattern engine, which reads UTF-8, is given)."""
    return text.translate(_SURROGATES) if has_lone_surrogate(text) else text


def _strings(value: Any) -> Any:
    """Every string in ``value``, keys included, without recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            yield from node.keys()
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _constant(name: str) -> Any:
    raise JsonError(f"{name} is not JSON")


def _readers(max_digits: int, max_exponent: int, decimals: str) -> tuple[Any, Any]:
    def parse_int(text: str) -> int:
        digits = len(text) - text.startswith("-")
        if digits > max_digits:
            raise JsonError(f"an integer of {digits} digits (at most {max_digits})", limit=True)
        return int(text)

    def parse_float(text: str) -> Any:
        mantissa, _, exponent = untrusted.fold_case(text).partition("e")
        digits = sum(c.isdigit() for c in mantissa)
        if digits > max_digits:
            raise JsonError(f"a number of {digits} digits (at most {max_digits})", limit=True)
        if len(exponent.lstrip("+-")) > 6 or (exponent and abs(int(exponent)) > max_exponent):
            raise JsonError(f"the number {text[:40]} has an exponent past {max_exponent}", limit=True)
        if decimals == "float":
            value = float(text)
            if not math.isfinite(value):
                raise JsonError(f"the number {text[:40]} does not fit a float", limit=True)
            return value
        exact = Decimal(text)
        if abs(exact) > _FLOAT_MAX:
            # Past every float: a consumer that reads floats gets infinity.
            raise JsonError(f"the number {text[:40]} does not fit a float", limit=True)
        if exact and float(text) == 0.0:
            # Below every float: a consumer that reads floats gets 0, so it is 0 here too
            # (1e-400 fails exclusiveMinimum: 0, as it would in the program that reads it).
            return Decimal(0)
        return exact

    return parse_int, parse_float


def depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion."""
    best, stack = 0, [(value, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            best = max(best, d)
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            best = max(best, d)
            stack.extend((v, d + 1) for v in node)
    return best


def read_json(
    text: str | bytes,
    *,
    max_depth: int = MAX_DEPTH,
    max_digits: int = MAX_DIGITS,
    max_exponent: int = MAX_EXPONENT,
    decimals: Literal["exact", "float"] = "exact",
    surrogates: bool = False,
) -> Any:
    """The value ``text`` holds, read strictly (module docstring); ``JsonError`` otherwise.
    ``surrogates``: accept lone surrogates in strings (a request body carrying a model's text
    as it was; model text read as JSON never does)."""
    if not surrogates and isinstance(text, str) and has_lone_surrogate(text):
        raise JsonError("the text holds a lone surrogate (not valid Unicode)")
    parse_int, parse_float = _readers(max_digits, max_exponent, decimals)
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_constant, parse_int=parse_int, parse_float=parse_float
        )
    except JsonError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonError(f"{exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise JsonError(f"nested too deeply (at most {max_depth} levels)", limit=True) from None
    except (UnicodeDecodeError, ValueError, TypeError) as exc:
        raise JsonError(f"{type(exc).__name__}: {str(exc)[:120]}") from None
    if (d := depth(value)) > max_depth:
        raise JsonError(f"nested {d} levels deep (at most {max_depth})", limit=True)
    if not surrogates and any(has_lone_surrogate(x) for x in _strings(value)):
        raise JsonError("a string holds a lone surrogate (a \\u escape that is not valid Unicode)")
    return value


def load_json(text: str, max_depth: int | None = None) -> tuple[Any, str | None]:
    """``(value, None)``, or ``(None, problem)`` with the problem in words (``not valid JSON: ...``)."""
    try:
        return read_json(text, max_depth=MAX_DEPTH if max_depth is None else max_depth), None
    except JsonError as exc:
        return None, f"not valid JSON: {exc}"


def exact_number(x: Any) -> Fraction | None:
    """The exact value of a JSON number (``int``, ``Decimal``, or a float read as the shortest
    decimal that round-trips); None for anything else, ``bool`` and non-finite numbers included."""
    if isinstance(x, bool):
        return None
    if isinstance(x, int):
        return Fraction(x)
    try:
        if isinstance(x, float):
            return Fraction(Decimal(repr(x))) if math.isfinite(x) else None
        if isinstance(x, Decimal):
            return Fraction(x) if x.is_finite() else None
    except (InvalidOperation, ValueError, OverflowError):
        return None
    return None


def json_equal(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are equal: numbers by exact value, ``True`` never ``1``."""
    na, nb = exact_number(a), exact_number(b)
    if na is not None or nb is not None:
        return na is not None and na == nb
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return type(a) is type(b) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def json_key(x: Any) -> str:
    """A text that is equal for two values exactly when ``json_equal`` says they are (for
    sorting and sets)."""
    n = exact_number(x)
    if n is not None:
        return f"n{n.numerator}/{n.denominator}"
    if x is None or isinstance(x, bool):
        return f"c{x}"
    if isinstance(x, str):
        return "s" + json.dumps(x)
    if isinstance(x, list):
        return "[" + ",".join(json_key(v) for v in x) + "]"
    if isinstance(x, dict):
        return "{" + ",".join(json.dumps(str(k)) + ":" + json_key(x[k]) for k in sorted(x)) + "}"
    return f"?{type(x).__name__}"


def safe_dumps(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """``value`` as JSON text (a ``Decimal`` written as it reads), or None when it cannot be
    written: a non-finite number, an integer past ``MAX_DIGITS`` digits, nesting past
    ``max_depth``, a key that is not a string, a value that is not JSON."""
    out: list[str] = []

    def write(v: Any, d: int) -> None:
        if d > max_depth:
            raise ValueError("too deep")
        if v is None or isinstance(v, bool):
            out.append("null" if v is None else "true" if v else "false")
        elif isinstance(v, int):
            if v.bit_length() > MAX_DIGITS * 3.33:
                raise ValueError("too many digits")
            out.append(str(v))
        elif isinstance(v, float | Decimal):
            if not (math.isfinite(v) if isinstance(v, float) else v.is_finite()):
                raise ValueError("not finite")
            out.append(repr(v) if isinstance(v, float) else str(v))
        elif isinstance(v, str):
            out.append(json.dumps(v, ensure_ascii=False))
        elif isinstance(v, list | tuple):
            out.append("[")
            for i, item in enumerate(v):
                out.append("," if i else "")
                write(item, d + 1)
            out.append("]")
        elif isinstance(v, dict):
            out.append("{")
            for i, (k, item) in enumerate(v.items()):
                if not isinstance(k, str):
                    raise ValueError("a key that is not a string")
                out.append(("," if i else "") + json.dumps(k, ensure_ascii=False) + ":")
                write(item, d + 1)
            out.append("}")
        else:
            raise ValueError(type(v).__name__)

    try:
        write(value, 0)
    except (ValueError, RecursionError):
        return None
    return "".join(out)
