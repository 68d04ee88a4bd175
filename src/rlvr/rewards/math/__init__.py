"""The ``math`` term, one module a step, read top to bottom:

==========  =====================================================================================
verifier    ``MathVerifier``: the answer span, the in-process shortcut, the worker pool and verdicts
policy      ``MathPolicy``: how two answers are compared (every field is a task-file option)
text        answer text before any math: clean-up, top-level structure, plain rationals
forms       forms that need reading first: money, thousands, labels, inequalities, ``\\pm``, units
fast        a strict parser for the common LaTeX subset, straight to sympy
core        parsing and comparing a (gold, prediction) pair: what the worker processes run
sym         whether two sympy values are equal
==========  =====================================================================================
"""

from __future__ import annotations

from .core import compare_texts, fast_compare, gold_problem
from .policy import MathPolicy
from .verifier import PRELOAD, MathVerifier

__all__ = ["PRELOAD", "MathPolicy", "MathVerifier", "compare_texts", "fast_compare", "gold_problem"]
