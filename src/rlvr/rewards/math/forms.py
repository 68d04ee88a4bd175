"""Answer forms that need reading before any math: money, MATH's thousands, labels, inequalities,
``\\pm``, repeating decimals, units, numerals in a base.

Pure string work with linear-time regexes on text that ``math.text.clean`` has already capped at
``MAX_ANSWER_CHARS``; ``math.text`` and ``math.core`` call these. Each rule is written so that a
near miss stays a different answer:

- ``32,\\!349`` (MATH's thousands separator) is 32349, so ``32.349`` stays another number.
- A *label* is a name: a letter or Greek letter with a subscript (``a_{37}``), a function value
  (``f(2)``), a modulus (``|AB|``), points (``AB``, ``m\\angle ABC``), a ratio of those
  (``A:B``) or a tuple of those (``(p,q)``). ``2x = 5`` and ``x^2 = 4`` are equations, not
  labelled values: a coefficient or an operator on the left changes what the value means.
- An inequality in one label is an interval: ``2 \\le x \\le 5`` is ``[2, 5]``, ``x > 3`` is
  ``(3, \\infty)``; the strictness of each side decides its bracket.
- ``a \\pm b`` is the two values ``a + b`` and ``a - b``; every ``\\pm`` in one item takes the
  same sign and ``\\mp`` the other (the linked reading: ``(\\pm 1, \\pm 2)`` is two points,
  not four).
"""

from __future__ import annotations

import re
from fractions import Fraction

from ..rules import untrusted

# -- money and separators -------------------------------------------------------------------------
_MATH_THOUSANDS = re.compile(r"(\d),\\!\s*(?=\d{3}(?!\d))")
_LONE_DOLLAR_START = re.compile(r"^\$\s*(?=[-+]?[\d.])")
_LONE_DOLLAR_END = re.compile(r"(?<=[\d.])\s*\$$")
_DECIMAL_COMMA = re.compile(r"(?<![\d.])(\d+)(?:,|\{,\})(\d+)(?![\d,])")


def strip_money(s: str) -> str:
    """Drop ``\\$`` everywhere, ``$…$`` used as inline math delimiters (an even count), and a
    lone ``$`` next to a number (``$1,000.99``, ``1,000.99$``)."""
    s = s.replace("\\$", "")
    count = s.count("$")
    if count >= 2 and count % 2 == 0:
        return untrusted.strip(s.replace("$", " "))
    if count == 1:
        s = _LONE_DOLLAR_START.sub("", s)
        s = _LONE_DOLLAR_END.sub("", s)
    return untrusted.strip(s)


_EMPHASIS = re.compile(r"\\text\{\s*(?:only|exactly)\s*\}|(?<![A-Za-z\\])(?:only|exactly)(?![A-Za-z])", re.I)


def drop_emphasis(s: str) -> str:
    """``\\text{only } x = 0`` -> ``x = 0``: "only" and "exactly" stress a value, they do not change
    it (a closed list of two words; any other word stays and is read as text)."""
    return untrusted.strip(_EMPHASIS.sub(" ", s)) if ("nly" in s or "xactly" in s) else s


def join_math_thousands(s: str) -> str:
    """``32,\\! 349`` -> ``32349``: MATH marks a thousands comma with a negative thin space."""
    return _MATH_THOUSANDS.sub(r"\1", s)


def decimal_commas(s: str) -> str:
    """``1000,99`` and ``1{,}5`` -> ``1000.99`` and ``1.5`` (the opt-in ``decimal_comma``)."""
    return _DECIMAL_COMMA.sub(r"\1.\2", s)


# -- repeating decimals -------------------------------------------------------------------------
_REPEATING = re.compile(r"^([+-]?)(\d*)\.(\d*)\\overline\s*\{(\d{1,60})\}$")


def repeating_decimal(s: str) -> Fraction | None:
    """``0.1\\overline{6}`` -> 1/6, exactly; None when ``s`` is not one."""
    m = _REPEATING.match(s)
    if not m or len(m.group(2)) > 100 or len(m.group(3)) > 100:
        return None
    sign, whole, fixed, period = m.groups()
    value = Fraction(int(whole or "0"))
    value += Fraction(int(fixed or "0"), 10 ** len(fixed)) if fixed else 0
    value += Fraction(int(period), (10 ** len(period) - 1) * 10 ** len(fixed))
    return -value if sign == "-" else value


# -- numerals in a base ---------------------------------------------------------------------------
_BASED = re.compile(r"^([0-9A-Za-z]+)_\{?\s*(\d{1,2})\s*\}?$")


def based_numeral(s: str) -> tuple[str, int] | None:
    """``1011_2`` -> ("1011", 2): digits and base compare exactly (``1011_3`` is another
    numeral, which the LaTeX grammar would read as 1011 with a subscript dropped)."""
    m = _BASED.match(s.replace(" ", ""))
    if not m:
        return None
    return m.group(1).upper(), int(m.group(2))


# -- units --------------------------------------------------------------------------------------
# The closed list of units (issue 34, rule 3): SI and common units, currency, degrees and the
# words that join them. A word after a number that is not here is not a unit: the text goes to
# the parser, where a word is not math (``42 squared``, ``7 factorial`` do not parse) and a
# letter is a symbol (``5 i`` is 5i). Each spelling maps to one key, so ``inches`` is ``in``.
_UNIT_GROUPS: dict[str, tuple[str, ...]] = {
    # length
    "in": ("inch", "inches", "in"),
    "ft": ("foot", "feet", "ft"),
    "yd": ("yard", "yards", "yd"),
    "mi": ("mile", "miles", "mi"),
    "m": ("meter", "meters", "metre", "metres", "m"),
    "cm": ("centimeter", "centimeters", "centimetre", "centimetres", "cm"),
    "mm": ("millimeter", "millimeters", "millimetre", "millimetres", "mm"),
    "km": ("kilometer", "kilometers", "kilometre", "kilometres", "km"),
    "nm": ("nanometer", "nanometers", "nanometre", "nanometres", "nm"),
    # area and volume
    "sq": ("square", "sq"),
    "cu": ("cubic", "cu"),
    "acre": ("acre", "acres"),
    "ha": ("hectare", "hectares", "ha"),
    "l": ("liter", "liters", "litre", "litres", "l"),
    "ml": ("milliliter", "milliliters", "millilitre", "millilitres", "ml"),
    "gal": ("gallon", "gallons", "gal"),
    # mass
    "g": ("gram", "grams", "g"),
    "kg": ("kilogram", "kilograms", "kg"),
    "mg": ("milligram", "milligrams", "mg"),
    "lb": ("pound", "pounds", "lb", "lbs"),
    "oz": ("ounce", "ounces", "oz"),
    "ton": ("ton", "tons", "tonne", "tonnes"),
    # time
    "s": ("second", "seconds", "sec", "secs", "s"),
    "ms": ("millisecond", "milliseconds", "ms"),
    "min": ("minute", "minutes", "min", "mins"),
    "h": ("hour", "hours", "hr", "hrs", "h"),
    "day": ("day", "days"),
    "week": ("week", "weeks"),
    "month": ("month", "months"),
    "year": ("year", "years", "yr", "yrs"),
    "am": ("am",),
    "pm": ("pm",),
    # speed, physics
    "mph": ("mph",),
    "kph": ("kph", "kmh"),
    "per": ("per",),
    "newton": ("newton", "newtons"),
    "joule": ("joule", "joules", "kj"),
    "watt": ("watt", "watts", "kw"),
    "volt": ("volt", "volts"),
    "hz": ("hz", "khz", "mhz", "hertz"),
    "pa": ("pa", "kpa", "pascal", "pascals"),
    "mol": ("mol", "mole", "moles"),
    # currency
    "usd": ("dollar", "dollars", "usd"),
    "cent": ("cent", "cents"),
    "eur": ("euro", "euros", "eur"),
    "yen": ("yen",),
    "yuan": ("yuan",),
    "rupee": ("rupee", "rupees"),
    # angles, and MATH's "square units"
    "deg": ("degree", "degrees", "deg"),
    "rad": ("radian", "radians", "rad"),
    "unit": ("unit", "units"),
}
_UNIT_ALIASES = {word: key for key, words in _UNIT_GROUPS.items() for word in words}
UNITS = frozenset(_UNIT_GROUPS)


def known_unit(key: tuple[str, ...]) -> bool:
    """Whether a unit key (``unit_key``) is made of units from the closed list (and the powers 2
    and 3 of ``cm^2``)."""
    return any(w in UNITS for w in key) and all(w in UNITS or w in ("2", "3") for w in key)


_WORD = re.compile(r"[a-z]+|\d")


def unit_key(text: str) -> tuple[str, ...]:
    """A unit's words, normalised (``inches`` and ``in`` are one unit, ``p.m.`` is ``pm``; ``cm^2``
    keeps its 2)."""
    words = _WORD.findall(
        re.sub(r"\\(?:textnormal|textbf|text|mbox|mathrm)", " ", untrusted.fold_case(text)).replace(".", "")
    )
    out: list[str] = []
    for w in words:
        if w in _UNIT_ALIASES:
            out.extend(_COMPOUND.get(_UNIT_ALIASES[w], (_UNIT_ALIASES[w],)))
        else:
            out.append(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return _spelled_powers(tuple(w for w in out if w != "per"))


# One spelling per compound unit: "kph" is km/h, "per" is the slash the key drops anyway.
_COMPOUND = {"kph": ("km", "h"), "mph": ("mi", "h")}


def _spelled_powers(key: tuple[str, ...]) -> tuple[str, ...]:
    """``square cm`` and ``sq cm`` are ``cm^2``, ``cubic m`` is ``m^3``: the power after its unit."""
    out: list[str] = []
    i = 0
    while i < len(key):
        if key[i] in ("sq", "cu") and i + 1 < len(key) and key[i + 1] not in ("sq", "cu", "2", "3"):
            out += [key[i + 1], "2" if key[i] == "sq" else "3"]
            i += 2
            continue
        out.append(key[i])
        i += 1
    return tuple(out)


def split_top(s: str, sep: str) -> list[str]:
    """Split at ``sep`` outside brackets."""
    parts, depth, start, i, n = [], 0, 0, 0, len(sep)
    while i < len(s):
        c = s[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + n
            i += n
            continue
        i += 1
    parts.append(s[start:])
    return [untrusted.strip(p) for p in parts]


# -- labels -------------------------------------------------------------------------------------
_GREEK = (
    r"\\(?:alpha|beta|gamma|delta|epsilon|varepsilon|theta|vartheta|lambda|mu|nu|xi|rho|sigma|tau|phi|varphi"
    r"|chi|psi|omega)(?![a-zA-Z])"
)
_NAME = rf"(?:[a-zA-Z]|{_GREEK})(?:_(?:[a-zA-Z0-9]|\{{[a-zA-Z0-9,]{{1,8}}\}}|\{{\\(?:max|min)\}}))?'*"
_POINTS = (
    r"(?:m?\\angle\s*)?[A-Z]{2,4}|m?\\angle\s*\{[A-Z]{1,4}\}|\\overline\{[A-Z]{2,4}\}|m?\\angle\s*[A-Z]"
    r"|\\frac\{[A-Z]{1,4}\}\{[A-Z]{1,4}\}"  # a ratio of lengths: \frac{NO}{BO}
)
# a label in words (``clean`` has unwrapped ``\text{}``): Maximum, \max, the minimum value
_WORDS_LABEL = r"[A-Za-z]{3,30}(?:\s+[A-Za-z]{1,20}){0,3}|\\(?:max|min)(?![a-zA-Z])"
_ATOM = rf"(?:{_WORDS_LABEL}|{_POINTS}|{_NAME}\([^()=<>]{{1,20}}\)|\|(?:{_NAME}|[A-Z]{{2,4}})\||{_NAME})"
LABEL = re.compile(rf"^\s*(?:{_ATOM}(?:\s*:\s*{_ATOM})*|\(\s*{_ATOM}(?:\s*,\s*{_ATOM})+\s*\))\s*$")
_TUPLE_LABEL = re.compile(rf"^\s*\(\s*({_ATOM}(?:\s*,\s*{_ATOM})+)\s*\)\s*$")


# Names the parser reads as functions or constants (``sin x = 1/2`` is an equation, not a label).
MATH_NAMES = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan arccot arcsec arccsc sinh cosh tanh coth sech csch "
    "log ln lg exp sqrt pi inf infty infinity mod gcd lcm max min det".split()
)
_LABEL_WORD = re.compile(r"[A-Za-z]{3,}")


def is_label(s: str) -> bool:
    if len(s) > 60 or not LABEL.match(s):
        return False
    return all(untrusted.fold_case(w) not in MATH_NAMES or w in ("max", "min") for w in _LABEL_WORD.findall(s))


_WORD_LABEL = re.compile(r"^(?=[^a-z]*[a-z])([A-Za-z]{3,30}(?:\s+[A-Za-z]{1,30}){0,3})$|^\\(max|min)$")
# Words that name the same part of an answer: "maximum", "max", "the largest value" are one label.
_LABEL_SYNONYMS = {
    "maximum": "max",
    "largest": "max",
    "greatest": "max",
    "minimum": "min",
    "smallest": "min",
    "least": "min",
}
_LABEL_FILLER = frozenset({"the", "value", "of"})


def norm_label(s: str) -> str:
    """Spaces and braces around a subscript do not change a label: ``a_{37}`` is ``a_37``; a
    label in words is its case-folded words, synonyms of maximum and minimum one word
    (``\\text{Maximum value}`` and ``\\max`` are ``max``)."""
    m = _WORD_LABEL.match(untrusted.strip(s))
    if m:
        words = untrusted.words(untrusted.fold_case(m.group(1) or m.group(2)))
        kept = [_LABEL_SYNONYMS.get(w, w) for w in words if w not in _LABEL_FILLER]
        return " ".join(kept)
    return re.sub(r"_\{(\w+)\}", r"_\1", re.sub(r"\s+", "", s))


def tuple_labels(label: str) -> list[str] | None:
    """``(p, q)`` -> ["p", "q"]; None for a label that is not a tuple."""
    m = _TUPLE_LABEL.match(label)
    if not m:
        return None
    return [norm_label(x) for x in split_top(m.group(1), ",")]


def top_equals(s: str) -> list[int]:
    """Offsets of ``=`` outside brackets (``\\le``-style relations are not ``=``)."""
    out, depth = [], 0
    for i, c in enumerate(s):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0 and (i == 0 or s[i - 1] not in "<>!\\") and (i + 1 == len(s) or s[i + 1] != "="):
            out.append(i)
    return out


def split_label(s: str) -> tuple[str, str] | None:
    """``LABEL = value`` -> (label, value) for exactly one top-level ``=`` with a label on its
    left; None otherwise (``2x = 5`` is an equation, ``a = b = 3`` a chain)."""
    eq = top_equals(s)
    if len(eq) != 1:
        return None
    lhs, rhs = s[: eq[0]], s[eq[0] + 1 :]
    if not untrusted.strip(rhs) or not is_label(lhs):
        return None
    return untrusted.strip(lhs), untrusted.strip(rhs)


# -- inequalities as intervals --------------------------------------------------------------------
_REL = re.compile(
    r"\\leqslant|\\geqslant|\\leq(?![a-zA-Z])|\\geq(?![a-zA-Z])|\\le(?![a-zA-Z])|\\ge(?![a-zA-Z])|<=|>=|<|>|≤|≥"
)
_LESS = {"<": False, "\\le": True, "\\leq": True, "\\leqslant": True, "<=": True, "≤": True}
_MORE = {">": False, "\\ge": True, "\\geq": True, "\\geqslant": True, ">=": True, "≥": True}


def _split_relations(s: str) -> tuple[list[str], list[str]] | None:
    parts, ops, depth, start, i = [], [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            m = _REL.match(s, i)
            if m:
                parts.append(untrusted.strip(s[start:i]))
                ops.append(m.group(0))
                i = start = m.end()
                continue
        i += 1
    parts.append(untrusted.strip(s[start:]))
    if not ops or any(not p for p in parts):
        return None
    return parts, ops


def interval_text(s: str) -> tuple[str, str, str, str] | None:
    """An inequality in one label as ``(label, brackets, low, high)``: ``2 \\le x < 5`` ->
    ("x", "[)", "2", "5"); ``x > 3`` -> ("x", "()", "3", "\\infty"). None when ``s`` is not one
    (two labels, mixed directions, more than two relations)."""
    split = _split_relations(s)
    if split is None:
        return None
    parts, ops = split
    if len(ops) == 2:
        a, label, b = parts
        if not is_label(label) or is_label(a) and not _plain(a) or is_label(b) and not _plain(b):
            return None
        if all(o in _LESS for o in ops):
            return label, ("[" if _LESS[ops[0]] else "(") + ("]" if _LESS[ops[1]] else ")"), a, b
        if all(o in _MORE for o in ops):
            return label, ("[" if _MORE[ops[1]] else "(") + ("]" if _MORE[ops[0]] else ")"), b, a
        return None
    if len(ops) != 1:
        return None
    lhs, rhs = parts
    op = ops[0]
    if is_label(lhs) and not is_label(rhs):
        label, bound, upper = lhs, rhs, op in _LESS  # x < 3: 3 bounds x from above
    elif is_label(rhs) and not is_label(lhs):
        label, bound, upper = rhs, lhs, op in _MORE  # 3 > x: the same
    else:
        return None
    closed = _LESS.get(op, _MORE.get(op, False))
    if upper:
        return label, "(" + ("]" if closed else ")"), "-\\infty", bound
    return label, ("[" if closed else "(") + ")", bound, "\\infty"


def _plain(s: str) -> bool:
    """A single-letter bound such as ``a`` in ``a \\le x \\le b`` (still a bound, not the label)."""
    return bool(re.fullmatch(r"[a-zA-Z]", untrusted.strip(s)))


# -- plus-minus --------------------------------------------------------------------------------
_PM = re.compile(r"\\pm(?![a-zA-Z])\s*")
_MP = re.compile(r"\\mp(?![a-zA-Z])\s*")


def has_pm(s: str) -> bool:
    return bool(_PM.search(s) or _MP.search(s))


def expand_pm(s: str) -> tuple[str, str]:
    """The two readings of an item with ``\\pm``: every ``\\pm`` ``+`` (``\\mp`` ``-``), then the
    other way round."""
    plus = _MP.sub("-", _PM.sub("+", s))
    minus = _MP.sub("+", _PM.sub("-", s))
    return plus, minus
