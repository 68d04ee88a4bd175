"""Answer text before any math: clean-up, top-level structure, plain rationals, LaTeX rewrites.

Pure string work with linear-time regexes and bracket counters, cheap enough to run in the
trainer's process (``rlvr.rewards.math`` decides plain rationals here without a worker). The
steps and policies are described in ``rlvr.rewards.math.core``, which builds on this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from ..rules import untrusted
from ..rules.untrusted import strip_invisible
from . import forms, glyphs, readings
from .forms import split_top

MAX_ANSWER_CHARS = 1000
MAX_DEPTH = 40


class ParseFailure(Exception):
    """An answer is not math we can read."""


@dataclass(frozen=True)
class Cleaned:
    text: str
    degrees: bool = False
    percent: bool = False
    hedged: bool = False
    unit: tuple[str, ...] = ()


# -- 1. clean ----------------------------------------------------------------------------------
_DROP = re.compile(
    r"\\left(?![a-zA-Z])|\\right(?![a-zA-Z])|\\displaystyle|(?<!\\)\\(?:!|,|;|:| )|\\q?quad(?![a-zA-Z])|~"
)
_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°|\\degree(?![a-zA-Z])|\^\{\\text\{o\}\}")
_PERCENT = re.compile(r"(?:\\?%|\s*\\text\{\s*(?:percent|percentage|pct)\s*\}|\s+(?:percent|percentage|pct))\s*$")
_UNIT_TEXT = r"\\(?:text|textbf|mbox|mathrm|textnormal)\{[^{}]*\}\s*(?:\^\{?\d\}?)?\s*"
# one unit or several joined by "/" (\mathrm{~m} / \mathrm{s}) at the end of the answer
_TEXT_UNIT_END = re.compile(rf"{_UNIT_TEXT}(?:/\s*{_UNIT_TEXT})*$")
_TEXT = re.compile(r"\\(?:text|textbf|mbox|mathrm|textnormal|mathbf)\{([^{}]*)\}")
_THOUSANDS = re.compile(r"^[-+]?\d{1,3}(?:(?:,|\{,\}|\\,| |\u2009|\u202f)\d{3})+(?:\.\d+)?$")
_HEDGE = re.compile(r"(?:^|[\s}])or(?:[\s{\\]|$)|(?<=[)\]])or(?=[(\[])")
OR_WORD = re.compile(r"\\text\{\s*or\s*\}|\s+or\s+|(?<=[)\]])or(?=[(\[])")
_IN = re.compile(r"^(.{1,40}?)\s*\\in(?![a-zA-Z])\s*")
_AND = re.compile(r"\s*,?\s*\\text\{\s*and\s*\}\s*|\s*,?\s+and\s+")
_LT_GT = re.compile(r"\\[lg]t(?![a-zA-Z])")
_EMPTY = re.compile(r"\\varnothing|∅|\\\{\s*\\\}|\\O(?![a-zA-Z])")
_REALS = re.compile(r"^(?:\\mathbb\s*\{?\s*R\s*\}?|ℝ|\\R|(?:all|any) reals?(?: numbers?)?|every real number)$", re.I)
# A clock time (12:30, 1:05:09): compared as a time, never as a ratio (math.core).
CLOCK_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


@lru_cache(maxsize=8192)
def clean(text: str, decimal_comma: bool = False) -> Cleaned:
    """The answer text before any math (see ``math.core``, step 1). Cached: a comparison cleans
    the same texts many times."""
    s = untrusted.strip(text)
    if not s.isascii():
        # what a reader sees: a zero-width space inside "1​0" is not there; ∞, ≤, ②, x² are
        # \infty, \le, 2, x^{2} (math.glyphs: one table)
        s = glyphs.to_ascii_math(strip_invisible(s))
    if len(s) > MAX_ANSWER_CHARS:
        raise ParseFailure(f"answer is {len(s)} characters (over {MAX_ANSWER_CHARS}): not a math answer")
    for pre, post in (("$$", "$$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(s) >= len(pre) + len(post) and s.startswith(pre) and s.endswith(post):
            s = untrusted.strip(s[len(pre) : len(s) - len(post)])
            break
    s = forms.strip_money(s)  # $...$ delimiters, \$ and a lone currency $
    s = forms.drop_emphasis(s)  # "\text{only } x = 0" is x = 0
    if s.startswith("\\boxed{") and s.endswith("}") and _closing(s, len("\\boxed")) == len(s) - 1:
        s = untrusted.strip(s[len("\\boxed{") : -1])
    s = readings.undouble(s)
    s = forms.join_math_thousands(s)
    if decimal_comma:
        s = forms.decimal_commas(s)
    elif _THOUSANDS.match(s):  # before spacing commands go: "1\\,000" and "1 000" are one number
        s = re.sub(r"\{,\}|,|\\,| |\u2009|\u202f", "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("\\cfrac", "\\frac").replace("−", "-")
    s = untrusted.strip(_DROP.sub(" ", s))
    hedged = bool(_HEDGE.search(s.replace("\\text{", " ").replace("}", " ")))
    s = readings.trig_degrees(s)  # \sin 30^\circ is 1/2 whatever the angles policy
    degrees = bool(_DEGREE.search(s))
    s = untrusted.strip(_DEGREE.sub("", s))
    percent = bool(_PERCENT.search(s))
    s = untrusted.strip(_PERCENT.sub("", s))
    while s.endswith(".") and not s.endswith(".."):
        s = untrusted.rstrip(s[:-1])
    # A trailing \text{...} after something else is a unit ("5 \text{ cm}"); a lone \text{A} is
    # the answer itself.
    unit: tuple[str, ...] = ()
    # Units come from a closed list (forms.UNITS): "5 \text{ cm}" has one; "42 \text{ thousand}"
    # is not a number with a unit, and not math either.
    m = _TEXT_UNIT_END.search(s)
    if m and untrusted.strip(s[: m.start()]):
        key = forms.unit_key(m.group(0))
        if forms.known_unit(key):
            unit = key
            s = untrusted.strip(s[: m.start()])
        elif not m.group(0).startswith("\\mathrm"):  # \mathrm{i} is a symbol, for the parser
            raise ParseFailure(f"{m.group(0)!r} after the value is not a unit")
    s = untrusted.strip(_TEXT.sub(lambda mm: mm.group(1), s))
    m2 = readings.plain_unit(s)
    if m2 and not hedged and forms.known_unit(forms.unit_key(m2[1])):
        unit = forms.unit_key(m2[1])
        s = m2[0]
    if _THOUSANDS.match(s) and not decimal_comma:
        s = s.replace("{,}", "").replace(",", "")
    s = _AND.sub(", ", s)
    s = _EMPTY.sub(r"\\emptyset", s)
    s = _LT_GT.sub(lambda mm: "<" if mm.group(0) == "\\lt" else ">", s)
    s = s.replace("\\langle", "(").replace("\\rangle", ")")  # a vector <1, 2, 3> is a tuple
    m3 = _IN.match(s)
    if m3 and forms.is_label(m3.group(1)):
        s = s[m3.end() :]
    return Cleaned(s, degrees, percent, hedged, unit)


def _closing(s: str, i: int) -> int:
    """Index of the bracket closing the one at ``i`` (any of ([{ closes with any of )]}), or -1."""
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return j
            if depth < 0:
                return -1
    return -1


def _depth(s: str) -> int:
    depth = best = 0
    for c in s:
        if c in "([{":
            depth += 1
            best = max(best, depth)
        elif c in ")]}":
            depth -= 1
    return best


# -- 2. structure ------------------------------------------------------------------------------
_MATRIX = re.compile(r"^\\begin\{([pbBvV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}$", re.S)


@dataclass(frozen=True)
class Node:
    """``kind`` is scalar, matrix, set, seq, list or union; ``items`` hold child nodes (rows of
    a matrix are seq nodes) and ``value`` a scalar's text (a matrix's too, for arithmetic on
    it). ``label`` is the name an answer gave the value (``a_3`` in ``a_3 = 2``); ``pm`` marks
    the two readings of an item with ``\\pm``, spliced into the list or set around them; a set
    holding such readings has ``brackets="±"`` (it was never written in an order)."""

    kind: str
    items: tuple[Node, ...] = ()
    value: str = ""
    brackets: str = ""
    label: str = ""
    pm: bool = False


def _items(parts: list[str], labels: bool) -> tuple[tuple[Node, ...], bool]:
    """Structure each part, splicing the two readings of a ``\\pm`` item in its place; also
    says whether any was spliced (then the collection has no order)."""
    out: list[Node] = []
    spliced = False
    for p in parts:
        node = structure(p, labels)
        if node.pm:
            out.extend(replace(c, label=c.label or node.label) for c in node.items)
            spliced = True
        else:
            out.append(node)
    return tuple(out), spliced


def _split_items(s: str) -> list[str]:
    """Top-level items: ``;`` separates when present (``p=5,q=2;p=7,q=2``), else ``,``."""
    items = split_top(s, ";")
    if len(items) > 1:
        return [p for p in items if p]
    return split_top(s, ",")


def structure(s: str, labels: bool = True) -> Node:
    """The shape of an answer. With ``labels``, ``name = value`` parts carry their name."""
    s = untrusted.strip(s)
    if not s:
        raise ParseFailure("empty answer")
    if _depth(s) > MAX_DEPTH:
        raise ParseFailure(f"brackets nested more than {MAX_DEPTH} deep")
    lab = forms.split_label(s) if labels else None
    if lab:
        node = structure(lab[1], labels)
        names = forms.tuple_labels(lab[0])
        if names and node.kind == "seq" and len(names) == len(node.items):
            return replace(node, items=tuple(replace(c, label=n) for c, n in zip(node.items, names, strict=True)))
        return replace(node, label=forms.norm_label(lab[0]))
    iso = readings.iso_interval(s)  # ]1, 2] is (1, 2]
    if iso is not None:
        s = iso
    if _REALS.match(s):  # the real line
        return Node("seq", (Node("scalar", value="-\\infty"), Node("scalar", value="\\infty")), brackets="()")
    m = _MATRIX.match(s)
    if m and "\\begin" not in m.group(2):  # one matrix, not a product of two
        rows = [r for r in re.split(r"\\\\", m.group(2)) if untrusted.strip(r)]
        return Node(
            "matrix",
            tuple(Node("seq", tuple(structure(c, labels) for c in r.split("&")), brackets="[]") for r in rows),
            value=s,
        )
    if s.startswith("\\{") and s.endswith("\\}"):
        cond = readings.set_builder(s)  # \{x \mid -2 \le x < 1\} is the interval [-2, 1)
        if cond is not None:
            return structure(cond, labels)
        nodes, spliced = _items(_split_items(s[2:-2]), labels)
        return Node("set", nodes, brackets="±" if spliced else "")
    parts = split_top(s, "\\cup")
    if len(parts) > 1:
        return Node("union", tuple(structure(p, labels) for p in parts))
    single = len(split_top(s, ",")) == 1 and len(split_top(s, ";")) == 1
    if single and forms.has_pm(s):
        # a \pm b is the set {a + b, a - b}: both readings, as whole texts (so precedence is
        # the parser's: \frac{-1 \pm \sqrt{13}}{4} is two fractions).
        plus, minus = forms.expand_pm(s)
        return Node("set", (structure(plus, labels), structure(minus, labels)), brackets="±", pm=True)
    if s[0] in "([" and s[-1] in ")]" and _closing(s, 0) == len(s) - 1:
        items = _split_items(s[1:-1])
        if len(items) == 1:
            return structure(items[0], labels) if s[0] == "(" or s[-1] == "]" else Node("scalar", value=s)
        return Node("seq", tuple(structure(p, labels) for p in items), brackets=s[0] + s[-1])
    if s[0] == "{" and _closing(s, 0) == len(s) - 1:
        items = split_top(s[1:-1], ",")
        if len(items) > 1:
            return Node("set", _items(items, labels)[0])
        return structure(s[1:-1], labels)  # plain braces around one item group it: {f(x) = 1/x}
    items = _split_items(s)
    if len(items) > 1:
        if any(not p for p in items):
            raise ParseFailure("empty item in a list")
        nodes, spliced = _items(items, labels)
        return Node("set", nodes, brackets="±") if spliced else Node("list", nodes)
    iv = forms.interval_text(s) if labels else None
    if iv:
        label, brackets, low, high = iv
        # value keeps the inequality, so "-x > -1" can still be compared with it as a relation
        return Node(
            "seq",
            (structure(low, labels), structure(high, labels)),
            value=s,
            brackets=brackets,
            label=forms.norm_label(label),
        )
    return Node("scalar", value=s)


# -- 3. scalars --------------------------------------------------------------------------------
_DECIMAL = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d{1,3})?$")
_SLASH = re.compile(r"^([+-]?\d+)\s*/\s*(\d+)$")
_FRAC = re.compile(r"^([+-]?)\\frac\s*(?:\{\s*(\d+)\s*\}|(\d))\s*(?:\{\s*(\d+)\s*\}|(\d))$")


def fast_rational(s: str) -> Fraction | None:
    """A plain rational literal as an exact ``Fraction``, or None (then sympy parses it).
    Repeating decimals (``0.1\\overline{6}``) are rationals too."""
    s = untrusted.strip(s)
    if len(s) > 200:
        return None
    if "\\overline" in s:
        return forms.repeating_decimal(s)
    mixed = readings.mixed_number(s)  # 1 1/2
    if mixed is not None:
        return mixed
    if _DECIMAL.match(s):
        return Fraction(s)
    m = _SLASH.match(s)
    if m and int(m.group(2)) != 0:
        return Fraction(int(m.group(1)), int(m.group(2)))
    m = _FRAC.match(s)
    if m:
        num, den = int(m.group(2) or m.group(3)), int(m.group(4) or m.group(5))
        if den:
            return Fraction(-num if m.group(1) == "-" else num, den)
    return None


_SQRT_INT = re.compile(r"\\sqrt\s*\{\s*(\d{1,12})\s*\}")


def unsimplified(s: str) -> str | None:
    """Why ``s`` is not in simplest form (a fraction not in lowest terms, a fraction over 1, a
    radical with a square factor), or None. Used by the ``structural`` form policy, where sympy's
    automatic evaluation would otherwise hide it (it turns 2/4 into 1/2 and \\sqrt{8} into
    2\\sqrt{2} while parsing)."""
    import math

    s = untrusted.strip(s)
    m = _SLASH.match(s)
    num_den = (m.group(1), m.group(2)) if m else None
    m = _FRAC.match(s)
    if m:
        num_den = (m.group(2) or m.group(3), m.group(4) or m.group(5))
    if num_den:
        num, den = abs(int(num_den[0])), int(num_den[1])
        if den == 1:
            return "a fraction over 1"
        if den and math.gcd(num, den) > 1:
            return "a fraction not in lowest terms"
    for m in _SQRT_INT.finditer(s):
        n = int(m.group(1))
        k = 2
        while k * k <= n and k <= 10**6:
            if n % (k * k) == 0:
                return "a radical with a square factor"
            k += 1
    return None


_SQRT_PAREN = re.compile(r"\\?sqrt\s*\(([^()]*)\)")
_SQRT_BARE = re.compile(r"\\sqrt\s*(\d|[a-zA-Z](?![a-zA-Z]))")
_FRAC_BARE = re.compile(r"\\frac\s*(\d)\s*(\d)")
_FRAC_DIGIT_FIRST = re.compile(r"\\frac\s*(\d)\s*(?=\{)")  # \frac1{\cos x}
_FRAC_DIGIT_SECOND = re.compile(r"\\frac\s*(\{[^{}]*\})\s*(\d)")  # \frac{\pi}2
_PI = re.compile(r"(?<![\\a-zA-Z])pi(?![a-zA-Z])")
_INF = re.compile(r"(?<![\\a-zA-Z])(?:inf|infty|infinity)(?![a-zA-Z])")
_SCI = re.compile(r"^([+-]?\d+(?:\.\d+)?)[eE]([+-]?\d+)$")
_NATURAL_LOG = re.compile(r"\\log(?![a-zA-Z])(?!\s*_)")
_FUNCS = re.compile(r"(?<![\\a-zA-Z])(sin|cos|tan|cot|sec|csc|log|ln|exp|arcsin|arccos|arctan)(?![a-zA-Z])")


def paren_exponents(s: str) -> str:
    """``10^(-10)`` -> ``10^{-10}``: parentheses right after ``^`` group the exponent (plain-text
    math writes them so; LaTeX needs braces). Unbalanced parentheses are left as written."""
    i = s.find("^(")
    while i >= 0:
        j = _closing(s, i + 1)
        if j < 0 or s[j] != ")":
            break
        s = s[: i + 1] + "{" + s[i + 2 : j] + "}" + s[j + 1 :]
        i = s.find("^(", i + 1)
    return s


def to_latex(s: str) -> str:
    """Plain-text math to the LaTeX the parser reads."""
    s = paren_exponents(s)
    s = s.replace("**", "^").replace("×", "\\times ").replace("·", "\\cdot ").replace("√", "\\sqrt")
    s = s.replace("≤", "\\leq ").replace("≥", "\\geq ").replace("≠", "\\neq ").replace("π", "\\pi ")
    m = _SCI.match(s)
    if m:
        return f"{m.group(1)}\\times 10^{{{m.group(2)}}}"
    s = _SQRT_PAREN.sub(lambda mm: "\\sqrt{" + mm.group(1) + "}", s)
    s = _SQRT_BARE.sub(lambda mm: "\\sqrt{" + mm.group(1) + "}", s)
    s = _FRAC_BARE.sub(lambda mm: "\\frac{" + mm.group(1) + "}{" + mm.group(2) + "}", s)
    s = _FRAC_DIGIT_FIRST.sub(lambda mm: "\\frac{" + mm.group(1) + "}", s)
    s = _FRAC_DIGIT_SECOND.sub(lambda mm: "\\frac" + mm.group(1) + "{" + mm.group(2) + "}", s)
    s = _PI.sub(r"\\pi ", s)
    s = _INF.sub(r"\\infty ", s)
    s = _FUNCS.sub(lambda mm: "\\" + mm.group(1) + " ", s)
    return _NATURAL_LOG.sub(r"\\ln ", s)  # \log without a base is the natural logarithm


_SEPARATING_NOTHING = re.compile(r"(?<![A-Za-z])\s+|\s+(?![A-Za-z])")


def as_written(text: str, decimal_comma: bool = False) -> str | None:
    """``text`` cleaned (``clean``) with the spaces that separate nothing removed (a space between
    two letters is kept: ``\\sin x`` is not ``\\sinx``), or None if it does not clean. Two answers
    written alike are the same answer even where neither parses."""
    try:
        return _SEPARATING_NOTHING.sub("", clean(text, decimal_comma).text)
    except ParseFailure:
        return None
