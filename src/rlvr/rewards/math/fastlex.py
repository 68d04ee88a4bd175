"""The tokens, names and limits of ``rlvr.rewards.math.fast``, the hand-written parser of math
answers: one pass of a linear-time pattern over at most ``MAX_CHARS`` characters."""

from __future__ import annotations

import re
from typing import Any

from ..rules import untrusted

MAX_CHARS = 300
MAX_DEPTH = 30
_TOKEN = re.compile(
    r"\s*(?:(\d+(?:\.\d+)?|\.\d+)"
    r"|(\\(?:begin|end)\{[pbvB]?matrix\}|\\angle\s*(?:\{[A-Z]{1,4}\}|[A-Z]{1,4})|\\[a-zA-Z]+)"
    r"|([a-zA-Z])|(\\\\|<=|>=|\\\{|\\\}|.))"
)
FUNCTIONS = {
    "\\sin": "sin",
    "\\cos": "cos",
    "\\tan": "tan",
    "\\cot": "cot",
    "\\sec": "sec",
    "\\csc": "csc",
    "\\arcsin": "asin",
    "\\arccos": "acos",
    "\\arctan": "atan",
    "\\ln": "log",
    "\\log": "log",
    "\\exp": "exp",
}
GREEK = {
    "\\" + g
    for g in (
        "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi rho "
        "sigma tau upsilon phi varphi chi psi omega"
    ).split()
}
# Uppercase Greek letters and \\hbar are symbols named in lowercase, as the grammar names them
# (\\Delta is delta); \\Gamma (Euler's constant to the grammar) and \\Pi (pi) are not among them.
UPPER_GREEK = {"\\" + g for g in "Delta Theta Lambda Xi Sigma Upsilon Phi Psi Omega".split()}
NAMES = GREEK | UPPER_GREEK | {"\\hbar"}
RELATIONS = {
    "=": "Eq",
    "\\approx": "Eq",  # read by relation(): the exact statement before it, or the value after it
    "<": "Lt",
    ">": "Gt",
    "<=": "Le",
    ">=": "Ge",
    "\\le": "Le",
    "\\leq": "Le",
    "\\ge": "Ge",
    "\\geq": "Ge",
}
_MATRIX = re.compile(r"\\begin\{([pbvB]?matrix)\}")
_OPS = {"\\\\", "<=", ">=", "\\{", "\\}", *"+-*/^(){}[]=!_|<>&:"}
_COMMANDS = (
    {"\\frac", "\\sqrt", "\\pi", "\\times", "\\cdot", "\\binom", "\\dbinom", "\\tbinom"}
    | set(FUNCTIONS)
    | NAMES
    | {r for r in RELATIONS if r.startswith("\\")}
    | {"\\emptyset", "\\varnothing", "\\prime", "\\sum", "\\Gamma", "\\int"}
)
BINOMS = ("\\binom", "\\dbinom", "\\tbinom")
# Values built here stay under 4,000 digits (Python refuses to print an int over 4,300): n! for
# n <= 1000 (2,568 digits), a rational power whose estimated size is under 4,000 digits; larger
# ones go to the grammar, which keeps them unevaluated.
MAX_FACTORIAL = 1000
MAX_DIGITS = 4000
MAX_BINOM = 5000  # \binom{5000}{2500} has 1,504 digits


class Unsupported(Exception):
    pass


class Undefined(Exception):
    """The answer is read, and its value is undefined (``\\frac{1}{0}``, ``\\ln 0``)."""


class TooBig(Exception):
    """A power, factorial or binomial too large to evaluate: the answer is read again with sympy's
    evaluation off, so that nothing is ever computed while parsing."""


def lex(s: str, imaginary: bool = False) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    glued: dict[str, set[str]] = {}
    pos = 0
    s = untrusted.rstrip(s)
    while pos < len(s):
        m = _TOKEN.match(s, pos)
        if not m or m.end() == pos:
            raise Unsupported()
        pos = m.end()
        num, cmd, letter, other = m.groups()
        if num is not None:
            if len(num) > 200:
                raise Unsupported()
            if out and out[-1][0] == "var" and num.isdigit() and not m.group(0)[0].isspace():
                glued.setdefault(out[-1][1], set()).add(num)
                out.append(("op", "glued"))  # x2: a letter and a number written together, a product
            out.append(("num", num))
        elif cmd is not None:
            if cmd.startswith("\\angle") and cmd != "\\angle":  # \angle CAB, \angle{APD}: one name
                out.append(("angle", re.sub(r"[^A-Z]", "", cmd)))
                continue
            if cmd not in _COMMANDS and not re.fullmatch(r"\\(?:begin|end)\{[pbvB]?matrix\}", cmd):
                raise Unsupported()
            out.append(("cmd", cmd))
        elif letter is not None:
            if letter == "I" or (letter == "i" and not imaginary):
                raise Unsupported()  # I (the unit?), an index i: undecided
            out.append(("var", letter))
        else:
            if other not in _OPS:
                raise Unsupported()
            out.append(("op", other))
    for (k1, _), (k2, v2), (k3, _) in zip(out, out[1:], out[2:], strict=False):
        if k1 == k2 == k3 == "var" and not (v2 == "d" and ("cmd", "\\int") in out):
            raise Unsupported()  # "min", "abc": a name or a word, never a product of letters
    for j, ((k1, v1), (k2, v2)) in enumerate(zip(out, out[1:], strict=False)):
        if k1 == "num" and k2 == "num" and out[j - 2 : j] != [("cmd", "\\log"), ("op", "_")]:
            raise Unsupported()  # "2 3"; \log_2 8 is log base 2 of 8
        if v1 in UPPER_GREEK and (k2, v2) == ("op", "("):
            raise Unsupported()  # \Phi(x): a function to the grammar, not a product
    if any(len(nums) > 1 for nums in glued.values()):
        raise Unsupported()  # z1 + z2: indices, not the products z*1 and z*2 the grammar reads
    return out


def is_name(value: Any) -> bool:
    """Whether ``value`` is a name: a symbol or a product of symbols (x, \\Delta p)."""
    return bool(value.is_Symbol or (value.is_Mul and all(a.is_Symbol for a in value.args)))


def keep_case(tokens: list[tuple[str, str]]) -> bool:
    """Whether a letter appears in both cases (r and R, \\phi and \\Phi): then each case is its
    own symbol. Otherwise names are lowercase, as the grammar names them (N is n)."""
    named = {v for k, v in tokens if k == "var" or v in NAMES}
    return len({untrusted.fold_case(v.lstrip("\\")) for v in named}) != len(named)
