"""The structured forms of ``rlvr.rewards.math.fast``: matrices, definite integrals and sums, read
by the same recursive descent (a mixin of its parser; nothing here is evaluated while parsing)."""

from __future__ import annotations

from typing import Any

from .fastlex import Unsupported


class Structures:
    """Matrices, ``\\int_a^b ... dx`` and ``\\sum_{k=a}^{b}``, for ``fast._Parser``."""

    sp: Any
    t: list[tuple[str, str]]
    i: int
    integrand: list[str]

    def expr(self) -> Any:
        raise NotImplementedError

    def take(self, value: str | None = None) -> tuple[str, str]:
        raise NotImplementedError

    def peek(self) -> tuple[str, str] | None:
        raise NotImplementedError

    def group(self) -> Any:
        raise NotImplementedError

    def power(self) -> Any:
        raise NotImplementedError

    def case(self, name: str) -> str:
        raise NotImplementedError

    def _starts_primary(self) -> bool:
        raise NotImplementedError

    def matrix(self, begin: str) -> Any:
        """``\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}`` (also ``bmatrix``, ``vmatrix``...,
        ``matrix``): rows of equal length, each entry an expression."""
        end = "\\end" + begin[len("\\begin") :]
        rows: list[list[Any]] = [[]]
        while True:
            rows[-1].append(self.expr())
            kind, v = self.take()
            if v == "&":
                continue
            if v == "\\\\":
                if self.peek() == ("cmd", end):
                    self.take()
                    break
                rows.append([])
                continue
            if v == end:
                break
            raise Unsupported()
        if len({len(r) for r in rows}) != 1 or begin == "\\begin{vmatrix}":
            raise Unsupported()  # ragged rows; a vmatrix is a determinant
        return self.sp.Matrix(rows)

    def integral(self) -> Any:
        """``\\int_a^b f(x) dx``: a definite integral kept unevaluated (sympy evaluates it when the
        values are compared, under the verifier's timeout); the variable is the letter after the
        last ``d``; an indefinite integral is not read."""
        self.take("_")
        lo = self.group()
        self.take("^")
        hi = self.group()
        ds = [j for j in range(self.i, len(self.t) - 1) if self.t[j] == ("var", "d") and self.t[j + 1][0] == "var"]
        if not ds:
            raise Unsupported()
        var = self.t[ds[-1] + 1][1]
        self.integrand.append(var)
        body = self.expr()
        self.integrand.pop()
        self.take("d")
        self.take(var)
        return self.sp.Integral(body, (self.sp.Symbol(self.case(var)), lo, hi))

    def summation(self) -> Any:
        """``\\sum_{k=0}^{n-1} F_k F_{n-k-1}``: a sum kept unevaluated; its body is the product of
        the factors after the bounds (as a bare function argument is), the index one letter."""
        self.take("_")
        self.take("{")
        kind, k = self.take()
        if kind != "var":
            raise Unsupported()
        self.take("=")
        lo = self.expr()
        self.take("}")
        self.take("^")
        hi = self.group()
        body = self.power()
        while self._starts_primary():
            body = body * self.power()
        return self.sp.Sum(body, (self.sp.Symbol(self.case(k)), lo, hi))
