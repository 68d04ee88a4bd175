"""A scalar's value: a plain rational as an exact ``Fraction``, the common LaTeX subset through
``math.fast``, anything else through ``latex2sympy2_extended`` (its ANTLR grammar; nothing is ever
``eval``-ed). Runs in the worker processes of ``rlvr.rewards.math``; sympy is imported lazily."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .. import untrusted
from .sym import too_big
from .text import ParseFailure, fast_rational, to_latex

_IMAGINARY = re.compile(r"(?<![\\a-zA-Z])i(?![a-zA-Z])")
_BOUND_I = re.compile(r"_\{?\s*i\b|(?<![a-zA-Z])i\s*(?:=|\\in)|\\sum|\\prod")


def imaginary(s: str) -> bool:
    """Whether a standalone ``i`` in ``s`` is the imaginary unit: it is, unless something binds
    it as an index (``\\sum_{i=1}``, ``a_i``, ``i = 1``)."""
    return bool(_IMAGINARY.search(s)) and not _BOUND_I.search(s)


_INFINITY = re.compile(r"^\s*([+-]?)\s*\\infty\s*$")


@lru_cache(maxsize=8192)
def parse_scalar(s: str) -> Any:
    """A scalar's value: a ``Fraction`` or a sympy object. Cached: ground truths repeat."""
    q = fast_rational(s)
    if q is not None:
        return q
    from . import fast as mathfast

    latex = to_latex(s)
    inf = _INFINITY.match(latex)
    if inf:  # an interval's open end: as the grammar reads it, without the grammar
        import sympy

        return -sympy.oo if inf.group(1) == "-" else sympy.oo
    imag = imaginary(latex)
    value = mathfast.parse(latex, imaginary=imag)  # the common subset, 50x faster than the grammar
    if value is not None:
        return value
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.math_normalization import NormalizationConfig

    config = NormalizationConfig(
        basic_latex=True, units=False, malformed_operators=False, nits=False, boxed="none", equations=False
    )
    try:
        value = latex2sympy(latex, normalization_config=config)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - the grammar raises plain Exception
        raise ParseFailure(f"cannot parse {s[:80]!r}: {untrusted.text_lines(str(exc))[0][:120]}") from None
    if value is None:
        raise ParseFailure(f"cannot parse {s[:80]!r}")
    try:
        if imag and hasattr(value, "subs"):
            import sympy

            value = value.subs(sympy.Symbol("i"), sympy.I)
        if hasattr(value, "doit") and type(value).__name__ in ("MatMul", "MatAdd", "MatPow") and not too_big(value):
            value = value.doit()  # 2\\begin{pmatrix}1\\\\2\\end{pmatrix} is a matrix
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001 - sympy refusing the text's meaning (i < 0): not math we read
        raise ParseFailure(f"cannot read {s[:80]!r}: {type(exc).__name__}: {str(exc)[:120]}") from None
    return value
