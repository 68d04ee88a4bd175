"""What counts as an invisible character: the one definition that the format term, exact match,
the repetition penalty and the audit use (and the math terms may import).

A character is invisible when a reader sees nothing for it:

- Unicode's *default-ignorable code points* (``Default_Ignorable_Code_Point`` in
  DerivedCoreProperties.txt, Unicode 15.1): zero-width space and joiners, bidi controls, the
  word joiner and invisible operators, the soft hyphen, the Hangul fillers, and the *blank
  combining marks* -- variation selectors (U+FE00..FE0F, U+E0100..E01EF), the Mongolian free
  variation selectors (U+180B..180D, U+180F), the Khmer inherent vowels (U+17B4, U+17B5) and the
  combining grapheme joiner. These last ones are category ``Mn``, which a category test alone
  misses: a span holding only them looked non-empty, and a loop salted with them escaped the
  repetition penalty;
- whitespace, and the categories that draw nothing: controls (``Cc``), format characters
  (``Cf``), unassigned (``Cn``), private use (``Co``), surrogates (``Cs``) and separators
  (``Zs``, ``Zl``, ``Zp``);
- the Braille blank (U+2800), which is a symbol that renders as an empty cell.

The table is written out (not read from the Python build's Unicode database) so it does not
change with the interpreter; ``tests/rewards/test_rewards_invisible.py`` checks it against the
categories the database gives.
"""

from __future__ import annotations

import unicodedata

__all__ = ["DEFAULT_IGNORABLE", "is_blank", "is_default_ignorable", "is_invisible", "strip_invisible"]

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
    if ch.isspace() or ch in _EXTRA_BLANKS:
        return True
    if ch.isascii():
        return unicodedata.category(ch) == "Cc"
    return is_default_ignorable(ch) or unicodedata.category(ch) in _BLANK_CATEGORIES


def is_blank(text: str) -> bool:
    """Whether ``text`` holds only invisible characters (or nothing)."""
    return all(is_invisible(ch) for ch in text)


def strip_invisible(text: str, keep_whitespace: bool = True) -> str:
    """``text`` without its invisible characters; whitespace stays unless ``keep_whitespace`` is
    false."""
    return "".join(ch for ch in text if (keep_whitespace and ch.isspace()) or not is_invisible(ch))
