"""Which of the candidate's objects it shares with the test, measured in the candidate child
(the inside package: standard library only, see its ``__init__``); ``child.Server`` uses it.

A mutable object of an answer is *shared* when something besides the answer holds it (its
reference count is above that of a fresh value seen through the same calls, ``_FRESH``; or it
has a weak reference) or it appears twice in the answer: it crosses under an identity number
(``child.Server.reply``). An argument is *kept* when the call left more references to it than
it found. A shared object held only by the registry again is *alone*: the program can never
reach it, so it is released. The counts depend on the depth of calls from ``Server.run`` to
``refcounts``, which ``_as_reply`` reproduces: keep the two in step.
"""

from __future__ import annotations

import collections
import sys
import weakref
from typing import Any

CONTAINERS = (list, tuple, dict, set, frozenset, bytearray, collections.deque)
MUTABLES = (list, dict, set, bytearray, collections.deque)


def is_a(x: Any, classes: type | tuple[type, ...]) -> bool:
    """``isinstance`` by the object's real type: a ``__class__`` property of the program's cannot
    make an object look like a list here (it would then be read as one, and raise)."""
    return issubclass(type(x), classes)


def inner_mutables(top: Any) -> list[Any]:
    """The mutable containers nested inside ``top`` (not ``top`` itself)."""
    out: list[Any] = []
    stack = children(top)
    while stack:
        x = stack.pop()
        if is_a(x, MUTABLES):
            out.append(x)
        stack.extend(children(x))
    return out


def children(x: Any) -> list[Any]:
    if is_a(x, dict):
        return [v for v in dict.values(x) if is_a(v, CONTAINERS)]
    if is_a(x, (list, tuple, set, frozenset, collections.deque)):
        return [v for v in x if is_a(v, CONTAINERS)]
    return []


def refcounts(value: Any, skip: dict[int, Any] | None = None) -> list[tuple[bool, int, Any]]:
    """(is the top, reference count, object) of each mutable container of ``value`` (not those
    in ``skip``, nor inside them), as seen from here: compared with the counts of a fresh value
    (``_FRESH``), an extra reference is one the program holds."""
    out: list[tuple[bool, int, Any]] = []
    stack = [(value, True)]
    while stack:
        c, top = stack.pop()
        if skip and id(c) in skip:
            continue
        if is_a(c, MUTABLES):
            out.append((top, sys.getrefcount(c), c))
        stack.extend((x, False) for x in children(c))
    return out


def counts(objs: list[Any]) -> list[int]:
    return [sys.getrefcount(x) for x in objs]


def nested_objects(given: dict[Any, Any]) -> list[Any]:
    """Every mutable argument and mutable container nested in one, once each."""
    seen: set[int] = set()
    out: list[Any] = []
    stack = list(given.values())
    while stack:
        x = stack.pop()
        if is_a(x, MUTABLES) and id(x) not in seen:
            seen.add(id(x))
            out.append(x)
        stack.extend(children(x))
    return out


def nested_paths(given: dict[Any, Any]) -> dict[int, list[Any]]:
    """id -> [position, *path] of every mutable argument and mutable container nested in one
    (through lists, tuples, deques and dict values); they stay alive in ``given``."""
    out: dict[int, list[Any]] = {}
    stack: list[tuple[Any, list[Any]]] = [(v, [p]) for p, v in given.items()]
    while stack:
        x, path = stack.pop()
        if is_a(x, MUTABLES) and id(x) not in out:
            out[id(x)] = path
        if is_a(x, dict):
            for k, v in dict.items(x):
                if is_a(v, CONTAINERS) and type(k) in (int, str, bool, float):
                    stack.append((v, [*path, k]))
        elif is_a(x, (list, tuple, collections.deque)):
            stack.extend((v, [*path, i]) for i, v in enumerate(x) if is_a(v, CONTAINERS))
    return out


def sharing(value: Any, skip: dict[int, Any] | None = None, raw: bool = False) -> list[Any]:
    """The mutable containers of the result (not those nested in an argument, ``skip``) that
    have a reference from outside the result or appear twice in it (counts compared with those
    of a fresh value seen through the same calls, ``_FRESH``). ``raw``: the counts themselves."""
    counts = refcounts(value, skip)
    if raw or _FRESH is None:
        return counts
    seen: set[int] = set()
    out: list[Any] = []
    for top, rc, c in counts:
        if id(c) in seen or rc > (_FRESH[0] if top else _FRESH[1]) or weakly(c):
            if id(c) not in {id(o) for o in out}:
                out.append(c)
        seen.add(id(c))
    return out


def _as_reply(value: Any) -> list[Any]:
    return sharing(value, None, True)  # the same depth of calls as Server.reply -> sharing


def _fresh_counts() -> tuple[int, int]:
    value = [[0], {1: [2]}]
    counts = _as_reply(value)  # as Server.run holds its ``value`` and calls reply(value)
    return counts[0][1], max(rc for top, rc, _ in counts if not top)


def weakly(x: Any) -> bool:
    """Does anything hold a weak reference to ``x`` (a set or a deque can have them)? Then the
    program may reach it again, whatever its reference count says."""
    return weakref.getweakrefcount(x) > 0


def _count_entry(entry: list[Any]) -> int:
    return sys.getrefcount(entry[0])


_ALONE = _count_entry([[], None])  # an object held by its registry entry alone


def alone(entry: list[Any]) -> bool:
    return _count_entry(entry) <= _ALONE and not weakly(entry[0])


_FRESH: tuple[int, int] | None = None
_FRESH = _fresh_counts()
