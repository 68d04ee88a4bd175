"""Answers written in words, compared as normalised text (issue 45: text answers are never left
undecided for want of a parse).

An answer the math parser refuses because it holds a word (``n \\text{ is even}``, ``\\text{no
real roots}``, ``12 \\text{ apples}``) is compared with the other side as text: both
normalised the same way, then equal only when identical. The normal form: ``\\text{}``-style
wrappers unwrapped, ``$`` and braces dropped, LaTeX spacing commands as a space, case folded
(``rules.untrusted.fold_case``), runs of white space as one space, a final period dropped. Nothing
is guessed: a word more or a word less is another answer (``12 apples`` is not ``12``), so a
text gold is decided, equal or not, with its reason, and never masks a wrong answer.

An ellipsis (``\\cdots``, ``\\ldots``, ``\\dots``, ``...``) stands for a pattern the reader
infers, not a value: ``1 \\cdot 2 \\cdots n`` is not the product ``2n`` a parser would build,
and reading it so made ``\\cdots`` products with an extra factor equal (issue 45's false
positive). An answer with one is compared as written (the normal form above, the ellipses and
``\\times``/``\\cdot`` each one spelling), never evaluated.
"""

from __future__ import annotations

from ..rules import untrusted
from ..rules.patterns import compile_linear
from .scalar import word_in
from .text import MAX_ANSWER_CHARS, to_latex

_WRAP = compile_linear(
    r"\\(?:text|textbf|textit|textrm|textnormal|mathrm|mathbf|mathit|mbox|operatorname)\s*\{([^{}]*)\}"
)
_SPACING = compile_linear(r"\\(?:,|;|:|!| |quad|qquad)|~")
_BRACES = compile_linear(r"[{}$]")
_END = compile_linear(r"[.;,!]+$")
_ELLIPSIS = compile_linear(r"\\(?:[cl]dots|dots[bci]?|ddots|vdots)(?:[^a-zA-Z]|$)|\.\.\.|…")
_DOTS = compile_linear(r"\\(?:[cl]dots|dots[bci]?)|\.\.\.|…")
_TIMES = compile_linear(r"\\(?:times|cdot)([^a-zA-Z]|$)")


def normal(s: str) -> str:
    """The normal form of an answer's text (see the module docstring); a text over
    ``MAX_ANSWER_CHARS`` is no answer and has none (it equals nothing)."""
    t = untrusted.strip(s)
    if len(t) > MAX_ANSWER_CHARS:
        return "\x00" + str(id(s))
    for _ in range(4):  # nested wrappers (\textbf{\text{x}}), a bounded number of passes
        u = _WRAP.sub(lambda m: " " + m.group(1) + " ", t)
        if u == t:
            break
        t = u
    t = _BRACES.sub(" ", _SPACING.sub(" ", t))
    return _END.sub("", untrusted.collapse(untrusted.fold_case(t)))


def wordy(s: str) -> bool:
    """Whether ``s`` holds a word (three or more letters that are not a math name), so that the
    parser refuses it as math."""
    if len(s) > MAX_ANSWER_CHARS:  # not an answer: no pattern reads it
        return False
    return word_in(to_latex(normal(s))) is not None


def as_text(gold: str, pred: str) -> tuple[str, str]:
    """The verdict of comparing two answers as text, with its reason."""
    g, p = normal(gold), normal(pred)
    if g == p:
        return "equal", ""
    return "unequal", f"compared as text: {p[:60]!r} is not {g[:60]!r}"


def ellipsis(s: str) -> bool:
    """Whether ``s`` holds an ellipsis (a pattern, not a value)."""
    return len(s) <= MAX_ANSWER_CHARS and _ELLIPSIS.search(s) is not None


def as_written(gold: str, pred: str) -> tuple[str, str]:
    """Two answers with an ellipsis compared as written: equal only when their normal forms are
    the same, every ellipsis spelled ``…`` and every product sign ``*``."""

    def form(s: str) -> str:
        t = _DOTS.sub(lambda _: " … ", _TIMES.sub(lambda m: " * " + m.group(1), s))
        return normal(t).replace(" ", "")

    if form(gold) == form(pred):
        return "equal", ""
    return "unequal", "an ellipsis is a pattern, not a value: compared as written"
