"""Custom stdout checkers of the stdin/stdout set: ``f(input, expected, output) -> bool``.

Each one judges the output against the *input* (several answers are valid), so it must never
raise on a malformed output: a checker that raises masks the sample as the task's fault
(``rlvr.sandbox.checkers``), which a program printing garbage must not get. Each parses
defensively and returns False instead.
"""

from __future__ import annotations


def _ints(text: str) -> list[int] | None:
    try:
        return [int(t) for t in text.split()]
    except ValueError:
        return None


def two_sum(stdin: str, expected: str, output: str) -> bool:
    """Any pair of 1-based indices i < j with a[i] + a[j] == t (the input guarantees one)."""
    head, values = stdin.split("\n", 1)
    n, t = map(int, head.split())
    a = [int(x) for x in values.split()][:n]
    got = _ints(output)
    if got is None or len(got) != 2:
        return False
    i, j = got
    return 1 <= i < j <= n and a[i - 1] + a[j - 1] == t


def any_proper_divisor(stdin: str, expected: str, output: str) -> bool:
    """A divisor d of n with 1 < d < n, or -1 exactly when there is none."""
    n = int(stdin.split()[0])
    got = _ints(output)
    if got is None or len(got) != 1:
        return False
    d = got[0]
    if expected.split() == ["-1"]:
        return d == -1
    return 1 < d < n and n % d == 0


def same_multiset(stdin: str, expected: str, output: str) -> bool:
    """The expected tokens in any order."""
    return sorted(output.split()) == sorted(expected.split())


def alternating(stdin: str, expected: str, output: str) -> bool:
    """A string of length n over {a, b} with no two equal neighbours."""
    n = int(stdin.split()[0])
    words = output.split()
    if len(words) != 1:
        return False
    s = words[0]
    return len(s) == n and set(s) <= {"a", "b"} and all(x != y for x, y in zip(s, s[1:], strict=False))


def derangement(stdin: str, expected: str, output: str) -> bool:
    """A permutation of 1..n with no fixed point."""
    n = int(stdin.split()[0])
    p = _ints(output)
    return p is not None and sorted(p) == list(range(1, n + 1)) and all(v != i + 1 for i, v in enumerate(p))


def topological_order(stdin: str, expected: str, output: str) -> bool:
    """An order of the vertices 1..n in which every edge u -> v has u before v."""
    lines = stdin.split("\n")
    n, m = map(int, lines[0].split())
    edges = [tuple(map(int, lines[1 + k].split())) for k in range(m)]
    order = _ints(output)
    if order is None or sorted(order) != list(range(1, n + 1)):
        return False
    where = {v: k for k, v in enumerate(order)}
    return all(where[u] < where[v] for u, v in edges)


def index_of_max(stdin: str, expected: str, output: str) -> bool:
    """Any 1-based index of a maximum element."""
    lines = stdin.split("\n")
    a = [int(x) for x in lines[1].split()]
    got = _ints(output)
    return got is not None and len(got) == 1 and 1 <= got[0] <= len(a) and a[got[0] - 1] == max(a)


def broken(stdin: str, expected: str, output: str) -> bool:
    """A checker with a bug (for the tests: its failure must mask the sample, never score it)."""
    return 1 / 0 > 0
