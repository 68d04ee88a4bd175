"""Bounded decoding of the child's answers: tagged JSON to plain builtins (``decode``), the value
that stands for an object of the candidate's own class (``Opaque``), and ``JudgeLimit``.

Decoding is bounded, because the answers come from the attacker: one answer is at most
``worker.MAX_FRAME`` bytes (the worker caps a sample's answers at 4 MiB in all), at most
``MAX_ITEMS`` values, ``MAX_DEPTH`` deep, integers at most ``MAX_INT_HEX`` hex digits, and at most
``MAX_SAME_HASH`` hashable values sharing one hash (a set of integers built to collide would cost
the trainer quadratic time). Over any limit the sample is ``wrong``, with the reason.
"""

from __future__ import annotations

from typing import Any

MAX_ITEMS = 200_000
MAX_DEPTH = 100
MAX_INT_HEX = 100_000
MAX_SAME_HASH = 32


class JudgeLimit(Exception):
    """Over a size, time or count limit while decoding or judging: the sample is wrong."""


class Opaque:
    """A value the child could not express as plain data (an object of its own class): equal to
    nothing, not even itself, so its ``__eq__`` never decides anything."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return False

    def __ne__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"<{self.name} object>"


_HASHED = (int, float, complex, tuple, frozenset)


def decode(t: Any) -> Any:
    """Tagged JSON -> plain builtins, within the limits above. Raises ``JudgeLimit`` over a limit
    and ``ValueError`` on anything malformed."""
    budget = [MAX_ITEMS]
    hashes: dict[int, list[Any]] = {}
    return _decode(t, 0, budget, hashes)


def _decode(t: Any, depth: int, budget: list[int], hashes: dict[int, list[Any]]) -> Any:  # noqa: C901
    budget[0] -= 1
    if budget[0] < 0:
        raise JudgeLimit(f"the answer holds more than {MAX_ITEMS} values")
    if depth > MAX_DEPTH:
        raise JudgeLimit(f"the answer is nested more than {MAX_DEPTH} deep")
    if type(t) is not list or not t or type(t[0]) is not str:
        raise ValueError("malformed value")
    tag = t[0]
    v = t[1] if len(t) > 1 else None
    if tag == "n":
        return None
    if tag == "b" and type(v) is bool:
        return v
    if tag == "s" and type(v) is str:
        return v
    if tag == "i" and type(v) is int:
        out: Any = v
    elif tag == "I" and type(v) is str:
        if len(v) > MAX_INT_HEX:
            raise JudgeLimit("an integer of more than 400,000 bits")
        out = int(v, 16)
    elif tag == "f" and type(v) is str and len(v) < 40:
        out = float(v)
    elif tag == "c" and len(t) == 3 and type(t[1]) is str and type(t[2]) is str and len(t[1]) < 40 and len(t[2]) < 40:
        out = complex(float(t[1]), float(t[2]))
    elif tag == "y" and type(v) is str:
        return bytes.fromhex(v)
    elif tag in ("l", "t", "S", "F") and type(v) is list:
        items = [_decode(x, depth + 1, budget, hashes) for x in v]
        if tag == "l":
            return items
        if tag in ("S", "F"):
            for x in items:
                if not isinstance(x, (int, float, complex, str, bytes, tuple, frozenset, type(None), bool)):
                    raise ValueError("unhashable value in a set")
        out = {"t": tuple, "S": set, "F": frozenset}[tag](items)
        if tag == "S":
            return out
    elif tag == "d" and type(v) is list:
        pairs = []
        for pair in v:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            k = _decode(pair[0], depth + 1, budget, hashes)
            if not isinstance(k, (int, float, complex, str, bytes, tuple, frozenset, type(None), bool)):
                raise ValueError("unhashable dict key")
            pairs.append((k, _decode(pair[1], depth + 1, budget, hashes)))
        return dict(pairs)
    elif tag == "?":
        return Opaque("candidate")
    else:
        raise ValueError(f"malformed value tag {tag!r}")
    # Numbers and tuples hash the same in every process: count collisions before any set or
    # dict (here or in the test) is built from them.
    if isinstance(out, _HASHED):
        try:
            h = hash(out)
        except TypeError:
            return out
        seen = hashes.setdefault(h, [])
        if not any(type(x) is type(out) and x == out for x in seen):
            seen.append(out)
            if len(seen) > MAX_SAME_HASH:
                raise JudgeLimit(
                    f"more than {MAX_SAME_HASH} distinct values in the answer share one hash (built to collide)"
                )
    return out
