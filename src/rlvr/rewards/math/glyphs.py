"""Unicode math characters as the LaTeX the parsers read: one table, applied once in ``clean``.

A model writes ``(2, ∞)``, ``x ∈ ℝ``, ``3 × 10⁻⁵``, ``②`` or ``½``; graders read them as
``(2, \\infty)``, ``x \\in \\mathbb{R}``, ``3 \\times 10^{-5}``, ``2`` and ``1/2``. The rule:

- the operators, relations and constants below, and the Greek small letters, map to their LaTeX
  command (each one meaning only);
- superscript digits and signs are an exponent (``x²`` is ``x^{2}``, never ``x2``);
- every other character goes through NFKC compatibility folding (``rules.untrusted.fold_width``):
  circled and full-width digits are digits, ``½`` is ``1/2``. Characters NFKC keeps (a Greek
  letter, an arrow) are left for the parser, which refuses what it cannot read.

Linear in the text: one pass over its characters.
"""

from __future__ import annotations

import unicodedata

from ..rules import untrusted

_LATEX = {
    "∞": "\\infty ",
    "∪": "\\cup ",
    "∩": "\\cap ",
    "∈": "\\in ",
    "≤": "\\le ",
    "⩽": "\\le ",
    "≥": "\\ge ",
    "⩾": "\\ge ",
    "≠": "\\neq ",
    "×": "\\times ",
    "·": "\\cdot ",
    "⋅": "\\cdot ",
    "∙": "\\cdot ",
    "÷": "/",
    "√": "\\sqrt",
    "π": "\\pi ",
    "ℝ": "\\mathbb{R}",
    "−": "-",
    "∅": "\\emptyset ",
    "±": "\\pm ",
    "∓": "\\mp ",
    "°": "^\\circ ",
}
# Greek small letters (U+03B1..U+03C9) as their LaTeX command; Unicode spells lambda "LAMDA".
for _code in range(0x3B1, 0x3CA):
    _name = untrusted.fold_case(unicodedata.name(chr(_code)).rsplit(" ", 1)[-1]).replace("lamda", "lambda")
    if _name not in ("omicron", "pi"):
        _LATEX[chr(_code)] = "\\" + _name + " "
_LATEX["ϕ"] = "\\phi "
_LATEX["ϑ"] = "\\vartheta "
_SUPER = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-", strict=True))


def to_ascii_math(s: str) -> str:
    """``s`` with the math characters above as LaTeX; ASCII text is returned unchanged."""
    if s.isascii():
        return s
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch in _SUPER:
            j = i
            while j < len(s) and s[j] in _SUPER:
                j += 1
            out.append("^{" + "".join(_SUPER[c] for c in s[i:j]) + "}")
            i = j
            continue
        out.append(_LATEX.get(ch) or untrusted.fold_width(ch))
        i += 1
    return "".join(out)
