"""Untrusted text: the one module that strips, splits, case-folds and width-folds what a policy (or
anyone outside) wrote. Every verifier, the rollouts and episodes readers and ``rlvr serve`` go
through it; ``tests/rewards/test_rewards_untrusted.py`` forbids ``str.strip()``,
``str.split()``, ``str.splitlines()``, ``str.lower()`` and ``str.casefold()`` on such text
anywhere else. The rules are Unicode properties, written out so they do not change with the
interpreter, never Python's ``str`` defaults:

- **Whitespace** is Unicode's ``White_Space`` property (PropList.txt, 15.1): tab, line feed,
  vertical tab, form feed, carriage return, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
  U+2028, U+2029, U+202F, U+205F, U+3000. Python's ``str.isspace`` also counts the information
  separators U+001C..U+001F, which are controls: ``strip("Lima\\x1f")`` keeps the ``\\x1f`` (an
  exact match of ``Lima`` fails).
- **Lines**: ``text_lines`` splits where Unicode says a line must end (UAX #14 classes BK, CR,
  LF, NL: LF, VT, FF, CR, CR LF as one break, U+0085, U+2028, U+2029) -- for text a reader
  reads as lines. ``jsonl_lines`` splits at ``\\n`` only, for JSONL: a U+2028 inside a JSON
  string is a character of that string, never a line break.
- **Case**: ``fold_case`` is Unicode full case folding, except that a non-ASCII character never
  folds onto ASCII letters: the Kelvin sign, the long s, ``ß`` and dotted ``İ`` stay themselves
  (``K`` is not ``k`` under case folding alone). ``fold_width`` is the folding that does map
  them: NFKC.
- **Width / compatibility**: ``fold_width`` is NFKC (full-width digits, ligatures, ``½`` ->
  ``1/2``, the Kelvin sign -> ``K``) with the invisible characters dropped; superscripts and
  subscripts are *not* folded (``4²`` is not ``42``).
- **Invisible**: a character a reader sees nothing for: Unicode's default-ignorable code points
  (``Default_Ignorable_Code_Point``, Unicode 15.1, written out below) -- zero-width space and
  joiners, bidi controls, the soft hyphen, the Hangul fillers and the blank combining marks
  (variation selectors, the Mongolian free variation selectors, the Khmer inherent vowels, the
  combining grapheme joiner: category ``Mn``, which a category test alone misses) --, every
  ``White_Space`` character, the categories that draw nothing (``Cc``, ``Cf``, ``Cn``, ``Co``,
  ``Cs``, ``Zs``, ``Zl``, ``Zp``) and the Braille blank U+2800.
- ``skeleton`` is for *counting* only (the repetition penalty), never for deciding that two
  answers are equal: width folding, case folding, combining marks dropped, and Latin look-alike
  Cyrillic and Greek letters mapped onto the Latin letter, so a loop salted with homoglyphs is
  still the same loop.
"""

from __future__ import annotations

import unicodedata

__all__ = [
    "DEFAULT_IGNORABLE",
    "LINE_BREAKS",
    "WHITE_SPACE",
    "collapse",
    "fold_case",
    "fold_width",
    "is_blank",
    "is_default_ignorable",
    "is_invisible",
    "is_space",
    "jsonl_lines",
    "lstrip",
    "rstrip",
    "skeleton",
    "strip",
    "strip_invisible",
    "text_lines",
    "words",
]

WHITE_SPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
LINE_BREAKS = frozenset("\n\x0b\x0c\r\x85\u2028\u2029")
_WS = "".join(sorted(WHITE_SPACE))


# Default_Ignorable_Code_Point, Unicode 15.1 (inclusive ranges).
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_EXTRA_BLANKS = frozenset("\u2800")
_BLANK_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zs", "Zl", "Zp"})


def is_default_ignorable(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in DEFAULT_IGNORABLE)


def is_invisible(ch: str) -> bool:
    """Whether one character shows nothing (see the module docstring)."""
    if ch in WHITE_SPACE or ch in _EXTRA_BLANKS:
        return True
    if ch.isascii():
        return unicodedata.category(ch) == "Cc"
    return is_default_ignorable(ch) or unicodedata.category(ch) in _BLANK_CATEGORIES


def is_blank(text: str) -> bool:
    """Whether ``text`` holds only invisible characters (or nothing)."""
    return all(is_invisible(ch) for ch in text)


def strip_invisible(text: str, keep_whitespace: bool = True) -> str:
    """``text`` without its invisible characters; ``White_Space`` stays unless ``keep_whitespace`` is
    false."""
    return "".join(ch for ch in text if (keep_whitespace and ch in WHITE_SPACE) or not is_invisible(ch))


def is_space(ch: str) -> bool:
    """Whether one character has Unicode's ``White_Space`` property."""
    return ch in WHITE_SPACE


def strip(text: str) -> str:
    """``text`` without leading and trailing ``White_Space``."""
    return text.strip(_WS)


def lstrip(text: str) -> str:
    return text.lstrip(_WS)


def rstrip(text: str) -> str:
    return text.rstrip(_WS)


def words(text: str) -> list[str]:
    """The runs of non-``White_Space`` characters."""
    out: list[str] = []
    start = -1
    for i, ch in enumerate(text):
        if ch in WHITE_SPACE:
            if start >= 0:
                out.append(text[start:i])
                start = -1
        elif start < 0:
            start = i
    if start >= 0:
        out.append(text[start:])
    return out


def collapse(text: str) -> str:
    """Every run of ``White_Space`` as one space, none at either end."""
    return " ".join(words(text))


def text_lines(text: str) -> list[str]:
    """Lines at Unicode's mandatory breaks (LF, VT, FF, CR, CR LF, U+0085, U+2028, U+2029); a
    final break ends the last line rather than starting an empty one (as ``str.splitlines``,
    without its extra breaks at U+001C..U+001E)."""
    out: list[str] = []
    start = i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch in LINE_BREAKS:
            out.append(text[start:i])
            i += 2 if ch == "\r" and i + 1 < n and text[i + 1] == "\n" else 1
            start = i
            continue
        i += 1
    if start < n:
        out.append(text[start:])
    return out


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSONL file: split at ``\\n`` only (a final ``\\n`` ends the last line; a
    ``\\r`` before it stays, which JSON reads as whitespace)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _fold_char(ch: str) -> str:
    folded = ch.casefold()
    if any(c.isascii() for c in folded):
        lower = ch.lower()
        return ch if any(c.isascii() for c in lower) else lower
    return folded


def fold_case(text: str) -> str:
    """Full case folding where it stays within its script: a non-ASCII character whose folding
    would produce ASCII (the Kelvin sign, the long s, ``ß``, ``İ``, the ``ﬁ`` ligature) is kept
    as written (see the module docstring)."""
    if text.isascii():
        return text.lower()
    return "".join(ch.lower() if ch.isascii() else _fold_char(ch) for ch in text)


def _width_char(ch: str) -> str:
    if unicodedata.decomposition(ch).startswith(("<super>", "<sub>")):
        return ch
    return unicodedata.normalize("NFKC", ch)


def fold_width(text: str) -> str:
    """NFKC except superscripts and subscripts, ``⁄`` read as ``/``, invisible characters
    dropped (whitespace stays)."""
    if text.isascii():
        return strip_invisible(text)
    text = "".join(_width_char(ch) for ch in unicodedata.normalize("NFC", text))
    return strip_invisible(unicodedata.normalize("NFC", text).replace("\u2044", "/"))


# Lower-case Cyrillic and Greek letters drawn like a Latin letter (after case folding), from
# Unicode's confusables.txt: the ones a salted loop uses.
_LOOKALIKE = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "ё": "e",
        "һ": "h",
        "н": "h",
        "і": "i",
        "ї": "i",
        "ј": "j",
        "к": "k",
        "ӏ": "l",
        "м": "m",
        "о": "o",
        "р": "p",
        "с": "c",
        "ԁ": "d",
        "ԍ": "g",
        "ԛ": "q",
        "г": "r",
        "ѕ": "s",
        "т": "t",
        "ц": "u",
        "ѵ": "v",
        "ԝ": "w",
        "х": "x",
        "у": "y",
        "ү": "y",
        "α": "a",
        "β": "b",
        "ε": "e",
        "η": "n",
        "ι": "i",
        "κ": "k",
        "μ": "u",
        "ν": "v",
        "ο": "o",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ζ": "z",
        "ω": "w",
        "ϲ": "c",
        "ϳ": "j",
        "ɑ": "a",
        "ɡ": "g",
        "ı": "i",
        "ȷ": "j",
    }
)


def skeleton(text: str) -> str:
    """``text`` as a reader tells it apart, for counting repeats only (see the module
    docstring): width folding, full case folding, combining marks dropped, look-alike letters
    mapped onto Latin, whitespace collapsed."""
    if not text.isascii():
        text = unicodedata.normalize("NFKD", fold_width(text))
        text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold().translate(_LOOKALIKE)
    return collapse(text.lower())
