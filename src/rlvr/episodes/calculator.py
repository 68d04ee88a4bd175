"""The built-in ``calculator`` tool: arithmetic read by a hand-written parser, never ``eval``.

Grammar (precedence climbing, one pass over the text, so linear in its length)::

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "/" | "//" | "%") unary)*
    unary  := ("+" | "-") unary | power
    power  := atom ("**" unary)?          # right-associative, binds tighter than unary minus on its left
    atom   := number | "(" expr ")"

Numbers are exact: integers stay integers and decimals become ``Fraction``s, so ``0.1+0.2`` is
``0.3``; a result is written as an integer when it is one, else as a decimal rounded to 12
significant digits. Bounds keep one call cheap whatever the model writes: at most 200 characters,
64 levels of parentheses, exponents of at most 64 (and not on a number of more than 64 bits), and
results of at most 200 digits. Anything else is a ``CalculatorError`` with a one-line reason, which
the episode returns to the model as the tool's error.
"""

from __future__ import annotations

from fractions import Fraction

MAX_CHARS = 200
MAX_DEPTH = 64
MAX_EXPONENT = 64
MAX_DIGITS = 200

__all__ = ["CalculatorError", "calculate", "calculator", "show"]


class CalculatorError(ValueError):
    """The expression is not arithmetic this calculator reads, or its result is out of bounds."""


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0

    def peek(self, op: str) -> bool:
        self._skip()
        return self.text.startswith(op, self.pos)

    def take(self, op: str) -> bool:
        if self.peek(op):
            self.pos += len(op)
            return True
        return False

    def _skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def expr(self) -> Fraction:
        value = self.term()
        while True:
            if self.take("+"):
                value = _bounded(value + self.term())
            elif self.take("-"):
                value = _bounded(value - self.term())
            else:
                return value

    def term(self) -> Fraction:
        value = self.unary()
        while True:
            if self.peek("**"):
                return value
            if self.take("//"):
                value = _floor_div(value, self.unary())
            elif self.take("*"):
                value = _bounded(value * self.unary())
            elif self.take("/"):
                divisor = self.unary()
                if divisor == 0:
                    raise CalculatorError("division by zero")
                value = _bounded(value / divisor)
            elif self.take("%"):
                divisor = self.unary()
                if divisor == 0:
                    raise CalculatorError("modulo by zero")
                value = _bounded(value - divisor * (value // divisor))
            else:
                return value

    def unary(self) -> Fraction:
        self._enter()
        try:
            if self.take("-"):
                return -self.unary()
            if self.take("+"):
                return self.unary()
            return self.power()
        finally:
            self.depth -= 1

    def power(self) -> Fraction:
        base = self.atom()
        if self.take("**"):
            return _power(base, self.unary())
        return base

    def atom(self) -> Fraction:
        self._skip()
        if self.take("("):
            self._enter()
            value = self.expr()
            self.depth -= 1
            if not self.take(")"):
                raise CalculatorError(f"expected ')' at position {self.pos}")
            return value
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isdigit() or self.text[self.pos] in "._"):
            self.pos += 1
        token = self.text[start : self.pos].replace("_", "")
        if not token or token == "." or token.count(".") > 1 or not token.replace(".", "").isascii():
            where = self.text[start : start + 10] or "the end"
            raise CalculatorError(f"expected a number at position {start} ({where!r})")
        if len(token) > MAX_DIGITS:
            raise CalculatorError(f"a number of more than {MAX_DIGITS} digits")
        return Fraction(token)

    def _enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalculatorError(f"nested more than {MAX_DEPTH} levels deep")


def _bounded(value: Fraction) -> Fraction:
    if max(abs(value.numerator), value.denominator).bit_length() > MAX_DIGITS * 3.33:
        raise CalculatorError(f"a result of more than {MAX_DIGITS} digits")
    return value


def _floor_div(a: Fraction, b: Fraction) -> Fraction:
    if b == 0:
        raise CalculatorError("division by zero")
    return Fraction(a // b)


def _power(base: Fraction, exponent: Fraction) -> Fraction:
    if exponent.denominator != 1:
        raise CalculatorError("only whole-number exponents")
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"an exponent above {MAX_EXPONENT}")
    if max(abs(base.numerator), base.denominator).bit_length() > 64:
        raise CalculatorError("a power of a number above 2**64")
    if base == 0 and exponent < 0:
        raise CalculatorError("division by zero")
    return _bounded(base ** int(exponent))


def calculate(expression: str) -> Fraction:
    """The exact value of ``expression`` (see the module docstring); ``CalculatorError`` otherwise."""
    if not isinstance(expression, str):
        raise CalculatorError(f"the expression must be a string, got {type(expression).__name__}")
    if len(expression) > MAX_CHARS:
        raise CalculatorError(f"an expression of more than {MAX_CHARS} characters")
    parser = _Parser(expression)
    value = parser.expr()
    parser._skip()
    if parser.pos != len(expression):
        raise CalculatorError(f"unexpected {expression[parser.pos : parser.pos + 10]!r} at position {parser.pos}")
    return value


def show(value: Fraction) -> str:
    """An integer as itself, anything else as a decimal of at most 12 significant digits."""
    if value.denominator == 1:
        return str(value.numerator)
    text = f"{float(value):.12g}"
    return text


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly: numbers, + - * / // % ** and parentheses.

    Args:
        expression: The arithmetic expression, for example "(17 + 5) * 3".
    """
    return show(calculate(expression))
