"""Write ``problems.jsonl``: a contest-style stdin/stdout set where the checker matters.

    python tests/data/stdio/make.py

Written for rlvr's tests (not taken from any contest). Each problem has a reference
``solution``, ``accepted`` programs that print a different but valid answer (more or fewer
digits, another valid answer, another case, other whitespace) and ``rejected`` programs (an
off-by-one, a flipped comparison, too little precision, an invalid answer). The expected output
of every test is what the reference solution prints under plain CPython, computed here, so the
file and the solutions cannot drift apart. ``checker`` is the row's checker (the ``checker``
column ``rlvr.rewards.code.UnitTests`` reads; absent: ``exact``). Custom checkers live in
``stdio_checkers.py`` beside this file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

FLOAT = "float"
CASE = "case_insensitive"
TOKENS = "tokens"


def custom(name: str) -> dict[str, str]:
    return {"function": f"stdio_checkers.{name}"}


P: list[dict[str, Any]] = [
    # -- float tolerance (abs or rel 1e-6) ---------------------------------------------------
    {
        "id": "circle_area",
        "statement": "Read r; print the area of a circle of radius r (error up to 1e-6 accepted).",
        "checker": FLOAT,
        "inputs": ["1\n", "2.5\n", "1000\n", "0.001\n"],
        "solution": "import math\nr = float(input())\nprint(f'{math.pi * r * r:.10f}')\n",
        "accepted": [
            "import math\nr = float(input())\nprint(math.pi * r * r)\n",
            "import math\nr = float(input())\nprint('%.7f' % (math.pi * r * r))\n",
        ],
        "rejected": [
            "r = float(input())\nprint(f'{3.14 * r * r:.10f}')\n",
            "import math\nr = float(input())\nprint(round(math.pi * r * r, 2))\n",
        ],
    },
    {
        "id": "mean",
        "statement": "Read n, then n integers; print their mean (error up to 1e-6 accepted).",
        "checker": FLOAT,
        "inputs": ["3\n1 2 4\n", "1\n-7\n", "4\n1 1 1 2\n", "2\n1000000000 1000000001\n"],
        "solution": "n = int(input())\na = list(map(int, input().split()))\nprint(f'{sum(a) / n:.9f}')\n",
        "accepted": ["n = int(input())\na = list(map(int, input().split()))\nprint(sum(a) / n)\n"],
        "rejected": [
            "n = int(input())\na = list(map(int, input().split()))\nprint(sum(a) // n)\n",
            "n = int(input())\na = list(map(int, input().split()))\nprint(f'{sum(a) / (n + 1):.9f}')\n",
        ],
    },
    {
        "id": "distance",
        "statement": "Read x1 y1 x2 y2; print the Euclidean distance.",
        "checker": FLOAT,
        "inputs": ["0 0 3 4\n", "1 1 2 2\n", "-5 2 7 -3\n"],
        "solution": "x1, y1, x2, y2 = map(float, input().split())\nprint(f'{((x1-x2)**2 + (y1-y2)**2) ** 0.5:.8f}')\n",
        "accepted": [
            "import math\nx1, y1, x2, y2 = map(float, input().split())\nprint(math.hypot(x1 - x2, y1 - y2))\n"
        ],
        "rejected": ["x1, y1, x2, y2 = map(float, input().split())\nprint(abs(x1 - x2) + abs(y1 - y2))\n"],
    },
    {
        "id": "quadratic_roots",
        "statement": "Read a b c (two distinct real roots); print the roots in increasing order, one line.",
        "checker": FLOAT,
        "inputs": ["1 -3 2\n", "2 0 -8\n", "1 1 -1\n", "-1 0 4\n"],
        "solution": (
            "a, b, c = map(float, input().split())\nd = (b*b - 4*a*c) ** 0.5\n"
            "r = sorted([(-b - d) / (2*a), (-b + d) / (2*a)])\nprint(f'{r[0]:.10f} {r[1]:.10f}')\n"
        ),
        "accepted": [
            "import math\na, b, c = map(float, input().split())\nd = math.sqrt(b*b - 4*a*c)\n"
            "x, y = (-b - d) / (2*a), (-b + d) / (2*a)\nprint(min(x, y))\nprint(max(x, y))\n"
        ],
        "rejected": [
            "a, b, c = map(float, input().split())\nd = (b*b - 4*a*c) ** 0.5\n"
            "print((-b + d) / (2*a), (-b - d) / (2*a))\n"
        ],
    },
    {
        "id": "at_least_one_six",
        "statement": "Read n; print the probability of at least one six in n fair die rolls.",
        "checker": FLOAT,
        "inputs": ["1\n", "4\n", "30\n"],
        "solution": "n = int(input())\nprint(f'{1 - (5/6) ** n:.12f}')\n",
        "accepted": ["n = int(input())\nprint(1 - pow(5, n) / pow(6, n))\n"],
        "rejected": ["n = int(input())\nprint(f'{min(1, n / 6):.12f}')\n"],
    },
    {
        "id": "big_sqrt",
        "statement": "Read n (up to 1e18); print sqrt(n) (relative error up to 1e-6 accepted).",
        "checker": FLOAT,
        "inputs": ["2\n", "1000000000000\n", "999999999999999999\n"],
        "solution": "import math\nprint(f'{math.sqrt(int(input())):.6f}')\n",
        "accepted": [
            "import math\nprint(f'{math.sqrt(int(input())):.6e}')\n",
            "import math, sys\nprint(math.sqrt(float(sys.stdin.read())))\n",
        ],
        "rejected": ["import math\nprint(math.isqrt(int(input())))\n"],
    },
    {
        "id": "harmonic",
        "statement": "Read n; print H(n) = 1 + 1/2 + ... + 1/n.",
        "checker": FLOAT,
        "inputs": ["1\n", "10\n", "100000\n"],
        "solution": "n = int(input())\nprint(repr(sum(1 / k for k in range(1, n + 1))))\n",
        "accepted": ["n = int(input())\ns = 0.0\nfor k in range(n, 0, -1):\n    s += 1 / k\nprint(s)\n"],
        "rejected": ["n = int(input())\nprint(sum(1 / k for k in range(1, n)))\n"],
    },
    {
        "id": "heron_cases",
        "statement": "Read t, then t lines a b c; print 'Case #i: area' for each triangle.",
        "checker": FLOAT,
        "inputs": ["2\n3 4 5\n2 2 2\n", "1\n10 10 10\n"],
        "solution": (
            "t = int(input())\nfor i in range(1, t + 1):\n    a, b, c = map(float, input().split())\n"
            "    s = (a + b + c) / 2\n    print(f'Case #{i}: {(s*(s-a)*(s-b)*(s-c)) ** 0.5:.9f}')\n"
        ),
        "accepted": [
            "import math\nt = int(input())\nfor i in range(1, t + 1):\n    a, b, c = map(float, input().split())\n"
            "    s = (a + b + c) / 2\n    print('Case #%d:' % i, math.sqrt(s*(s-a)*(s-b)*(s-c)))\n"
        ],
        "rejected": [
            "t = int(input())\nfor i in range(1, t + 1):\n    a, b, c = map(float, input().split())\n"
            "    s = (a + b + c) / 2\n    print(f'case #{i}: {(s*(s-a)*(s-b)*(s-c)) ** 0.5:.9f}')\n"
        ],
    },
    {
        "id": "fahrenheit",
        "statement": "Read Celsius values, one a line, until the end; print each in Fahrenheit.",
        "checker": {"name": "float", "abs_tol": 1e-3, "rel_tol": 0},
        "inputs": ["0\n100\n-40\n", "36.6\n"],
        "solution": "import sys\nfor line in sys.stdin:\n    print(f'{float(line) * 9 / 5 + 32:.4f}')\n",
        "accepted": ["import sys\nfor line in sys.stdin:\n    print(round(float(line) * 1.8 + 32, 3))\n"],
        "rejected": ["import sys\nfor line in sys.stdin:\n    print(f'{float(line) * 9 / 5 + 32:.1f}')\n"],
    },
    {
        "id": "clock_angle",
        "statement": "Read h m; print the smaller angle between the clock's hands in degrees.",
        "checker": FLOAT,
        "inputs": ["3 0\n", "12 30\n", "9 45\n", "1 59\n"],
        "solution": (
            "h, m = map(int, input().split())\nd = abs(30 * (h % 12) + 0.5 * m - 6 * m)\n"
            "print(f'{min(d, 360 - d):.6f}')\n"
        ),
        "accepted": [
            "h, m = map(int, input().split())\nd = abs(30 * (h % 12) + m / 2 - 6 * m)\nprint(min(d, 360 - d))\n"
        ],
        "rejected": [
            "h, m = map(int, input().split())\nd = abs(30 * (h % 12) - 6 * m)\nprint(f'{min(d, 360 - d):.6f}')\n"
        ],
    },
    # -- several valid answers: custom checkers ------------------------------------------------
    {
        "id": "two_sum",
        "statement": "Read n t and n integers; print 1-based indices i < j with a[i] + a[j] = t (any pair).",
        "checker": custom("two_sum"),
        "inputs": ["4 5\n1 4 2 3\n", "5 0\n-1 1 2 -2 0\n", "3 4\n2 2 2\n"],
        "solution": (
            "n, t = map(int, input().split())\na = list(map(int, input().split()))\n"
            "print(*next((i + 1, j + 1) for i in range(n) for j in range(i + 1, n) if a[i] + a[j] == t))\n"
        ),
        "accepted": [
            "n, t = map(int, input().split())\na = list(map(int, input().split()))\n"
            "print(*[(i + 1, j + 1) for i in range(n) for j in range(i + 1, n) if a[i] + a[j] == t][-1])\n"
        ],
        "rejected": [
            "n, t = map(int, input().split())\na = list(map(int, input().split()))\n"
            "print(*next((i + 1, j + 1) for i in range(n) for j in range(n) if a[i] + a[j] == t))\n",
            "print('garbage ¤ output')\n",
        ],
    },
    {
        "id": "proper_divisor",
        "statement": "Read n >= 2; print any divisor d with 1 < d < n, or -1 if n is prime.",
        "checker": custom("any_proper_divisor"),
        "inputs": ["12\n", "13\n", "49\n", "1000000007\n", "999999999999\n"],
        "solution": (
            "n = int(input())\nd = 2\nwhile d * d <= n and n % d:\n    d += 1\nprint(d if d * d <= n else -1)\n"
        ),
        "accepted": [
            "n = int(input())\nd = 2\nwhile d * d <= n and n % d:\n    d += 1\nprint(n // d if d * d <= n else -1)\n"
        ],
        "rejected": [
            "n = int(input())\nd = 2\nwhile d * d < n and n % d:\n    d += 1\nprint(d if d * d < n else -1)\n",
            "print(int(input()))\n",
        ],
    },
    {
        "id": "distinct_values",
        "statement": "Read a line of integers; print its distinct values, in any order, one line.",
        "checker": custom("same_multiset"),
        "inputs": ["3 1 3 2 1\n", "5\n", "-1 -1 -1 0\n"],
        "solution": "print(*sorted(set(map(int, input().split()))))\n",
        "accepted": ["print(*sorted(set(map(int, input().split())), reverse=True))\n"],
        "rejected": ["print(*sorted(set(map(int, input().split())))[1:])\n", "print(input())\n"],
    },
    {
        "id": "alternating",
        "statement": "Read n; print a string of n letters a/b with no two equal neighbours.",
        "checker": custom("alternating"),
        "inputs": ["1\n", "4\n", "7\n"],
        "solution": "n = int(input())\nprint(('ab' * n)[:n])\n",
        "accepted": ["n = int(input())\nprint(('ba' * n)[:n])\n"],
        "rejected": ["n = int(input())\nprint('a' * n)\n", "n = int(input())\nprint(('ab' * n)[:n - 1])\n"],
    },
    {
        "id": "derangement",
        "statement": "Read n >= 2; print a permutation of 1..n with p[i] != i for every i.",
        "checker": custom("derangement"),
        "inputs": ["2\n", "3\n", "6\n"],
        "solution": "n = int(input())\nprint(*range(2, n + 1), 1)\n",
        "accepted": ["n = int(input())\nprint(n, *range(1, n))\n"],
        "rejected": ["n = int(input())\nprint(*range(1, n + 1))\n", "n = int(input())\nprint(*range(2, n + 1), 2)\n"],
    },
    {
        "id": "topological_order",
        "statement": "Read n m and m edges u v of a DAG; print an order of 1..n with every u before its v.",
        "checker": custom("topological_order"),
        "inputs": ["3 2\n1 2\n1 3\n", "4 3\n4 3\n3 2\n2 1\n", "5 0\n"],
        "solution": (
            "import heapq\nn, m = map(int, input().split())\ng = [[] for _ in range(n + 1)]\nd = [0] * (n + 1)\n"
            "for _ in range(m):\n    u, v = map(int, input().split())\n    g[u].append(v)\n    d[v] += 1\n"
            "q = [v for v in range(1, n + 1) if not d[v]]\nheapq.heapify(q)\nout = []\n"
            "while q:\n    u = heapq.heappop(q)\n    out.append(u)\n    for v in g[u]:\n        d[v] -= 1\n"
            "        if not d[v]:\n            heapq.heappush(q, v)\nprint(*out)\n"
        ),
        "accepted": [
            "n, m = map(int, input().split())\ng = [[] for _ in range(n + 1)]\nd = [0] * (n + 1)\n"
            "for _ in range(m):\n    u, v = map(int, input().split())\n    g[u].append(v)\n    d[v] += 1\n"
            "st = [v for v in range(1, n + 1) if not d[v]]\nout = []\n"
            "while st:\n    u = st.pop()\n    out.append(u)\n    for v in g[u]:\n        d[v] -= 1\n"
            "        if not d[v]:\n            st.append(v)\nprint(*out)\n"
        ],
        "rejected": ["n, m = map(int, input().split())\nprint(*range(1, n + 1))\n"],
    },
    {
        "id": "argmax",
        "statement": "Read n and n integers; print any 1-based index of a maximum.",
        "checker": custom("index_of_max"),
        "inputs": ["5\n1 5 2 5 3\n", "1\n-4\n", "3\n7 7 7\n"],
        "solution": "n = int(input())\na = list(map(int, input().split()))\nprint(a.index(max(a)) + 1)\n",
        "accepted": ["n = int(input())\na = list(map(int, input().split()))\nprint(n - a[::-1].index(max(a)))\n"],
        "rejected": ["n = int(input())\na = list(map(int, input().split()))\nprint(a.index(min(a)) + 1)\n"],
    },
    # -- YES/NO in any case --------------------------------------------------------------------
    {
        "id": "is_prime",
        "statement": "Read t, then t integers; for each print YES if it is prime, else NO (any case).",
        "checker": CASE,
        "inputs": ["4\n1\n2\n9\n97\n", "2\n1000003\n1000001\n"],
        "solution": (
            "def p(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
            "for _ in range(int(input())):\n    print('YES' if p(int(input())) else 'NO')\n"
        ),
        "accepted": [
            "def p(n):\n    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
            "for _ in range(int(input())):\n    print('yes' if p(int(input())) else 'No')\n"
        ],
        "rejected": [
            "def p(n):\n    return all(n % d for d in range(2, int(n ** 0.5) + 1))\n"
            "for _ in range(int(input())):\n    print('YES' if p(int(input())) else 'NO')\n"
        ],
    },
    {
        "id": "palindrome",
        "statement": "Read a word; print YES if it reads the same backwards, else NO (any case).",
        "checker": CASE,
        "inputs": ["level\n", "ab\n", "x\n"],
        "solution": "s = input().strip()\nprint('YES' if s == s[::-1] else 'NO')\n",
        "accepted": ["s = input().strip()\nprint(str(s == s[::-1]).replace('True', 'yEs').replace('False', 'nO'))\n"],
        "rejected": ["s = input().strip()\nprint('YES')\n"],
    },
    {
        "id": "triangle",
        "statement": "Read a b c; print YES if they are the sides of a non-degenerate triangle, else NO.",
        "checker": CASE,
        "inputs": ["3 4 5\n", "1 2 3\n", "1 1 5\n"],
        "solution": "a, b, c = sorted(map(int, input().split()))\nprint('YES' if a + b > c else 'NO')\n",
        "accepted": ["a, b, c = sorted(map(int, input().split()))\nprint('Yes' if a + b > c else 'no')\n"],
        "rejected": ["a, b, c = sorted(map(int, input().split()))\nprint('YES' if a + b >= c else 'NO')\n"],
    },
    {
        "id": "leap_year",
        "statement": "Read a year; print YES if it is a leap year, else NO (any case).",
        "checker": CASE,
        "inputs": ["2000\n", "1900\n", "2024\n", "2023\n"],
        "solution": "y = int(input())\nprint('YES' if y % 4 == 0 and (y % 100 != 0 or y % 400 == 0) else 'NO')\n",
        "accepted": ["import calendar\nprint('yes' if calendar.isleap(int(input())) else 'no')\n"],
        "rejected": ["y = int(input())\nprint('YES' if y % 4 == 0 else 'NO')\n"],
    },
    # -- whitespace-insensitive ----------------------------------------------------------------
    {
        "id": "fibonacci",
        "statement": "Read n; print the first n Fibonacci numbers (1 1 2 ...), separated by whitespace.",
        "checker": TOKENS,
        "inputs": ["1\n", "5\n", "90\n"],
        "solution": (
            "n = int(input())\na, b, out = 1, 1, []\nfor _ in range(n):\n    out.append(a)\n"
            "    a, b = b, a + b\nprint(*out)\n"
        ),
        "accepted": ["n = int(input())\na, b = 1, 1\nfor _ in range(n):\n    print(a)\n    a, b = b, a + b\n"],
        "rejected": [
            "n = int(input())\na, b, out = 1, 1, []\nfor _ in range(n - 1):\n    out.append(a)\n"
            "    a, b = b, a + b\nprint(*out)\n"
        ],
    },
    {
        "id": "reverse",
        "statement": "Read n and n integers; print them in reverse order.",
        "checker": TOKENS,
        "inputs": ["3\n1 2 3\n", "1\n9\n", "4\n5 -1 5 0\n"],
        "solution": "input()\nprint(*input().split()[::-1])\n",
        "accepted": ["input()\nfor x in input().split()[::-1]:\n    print(x, end='   \\n\\n')\n"],
        "rejected": ["input()\nprint(*sorted(input().split()))\n"],
    },
    {
        "id": "transpose",
        "statement": "Read r c and an r x c matrix; print its transpose.",
        "checker": TOKENS,
        "inputs": ["2 3\n1 2 3\n4 5 6\n", "1 1\n7\n"],
        "solution": (
            "r, c = map(int, input().split())\nm = [input().split() for _ in range(r)]\n"
            "for row in zip(*m):\n    print(*row)\n"
        ),
        "accepted": [
            "r, c = map(int, input().split())\nm = [input().split() for _ in range(r)]\n"
            "print('\\n'.join('\\t'.join(x.rjust(4) for x in row) for row in zip(*m)))\n"
        ],
        "rejected": ["r, c = map(int, input().split())\nfor _ in range(r):\n    print(input())\n"],
    },
    # -- exact (the default), with the usual ways of reading input -----------------------------
    {
        "id": "pair_sums_fast_io",
        "statement": "Read t and t pairs; print each pair's sum on its own line.",
        "inputs": ["3\n1 2\n3 4\n-5 5\n", "1\n1000000000000 1\n"],
        "solution": (
            "import sys\ndata = sys.stdin.buffer.read().split()\nt = int(data[0])\n"
            "sys.stdout.write('\\n'.join(str(int(data[1 + 2*i]) + int(data[2 + 2*i])) for i in range(t)) + '\\n')\n"
        ),
        "accepted": [
            "import os\ndata = os.read(0, 1 << 20).split()\nt = int(data[0])\n"
            "for i in range(t):\n    print(int(data[1 + 2*i]) + int(data[2 + 2*i]))\n"
        ],
        "rejected": [
            "import sys\ndata = sys.stdin.read().split()\nt = int(data[0])\n"
            "for i in range(t):\n    print(int(data[1 + 2*i]) - int(data[2 + 2*i]))\n"
        ],
    },
    {
        "id": "word_count_open0",
        "statement": "Read a text; print the number of words on the first line and of lines on the second.",
        "inputs": ["hello world\nfoo\n", "one\n", "a b c d\n"],
        "solution": "text = open(0).read()\nprint(len(text.split()))\nprint(len(text.splitlines()))\n",
        "accepted": [
            "import sys\nlines = sys.stdin.readlines()\nprint(sum(len(l.split()) for l in lines))\nprint(len(lines))\n"
        ],
        "rejected": ["text = open(0).read()\nprint(len(text.split()))\nprint(text.count(' ') + 1)\n"],
    },
    {
        "id": "exit_early",
        "statement": "Read n; print 'zero' and stop if n is 0, else print n squared.",
        "inputs": ["0\n", "12\n"],
        "solution": "n = int(input())\nif n == 0:\n    print('zero')\n    exit()\nprint(n * n)\n",
        "accepted": [
            "import sys\nn = int(input())\nif n == 0:\n    print('zero')\n    sys.exit(0)\nprint(n * n)\n",
            "n = int(input())\nif n == 0:\n    print('zero')\n    quit()\nprint(n ** 2)\n",
        ],
        "rejected": ["n = int(input())\nif n == 0:\n    print('zero')\nprint(n * n)\n"],
    },
    {
        "id": "until_eof",
        "statement": "Read lines until the end; print each line's length.",
        "inputs": ["abc\nde\n\nf\n", "x\n"],
        "solution": (
            "while True:\n    try:\n        s = input()\n    except EOFError:\n        break\n    print(len(s))\n"
        ),
        "accepted": ["import sys\nfor line in sys.stdin.read().split('\\n')[:-1]:\n    print(len(line))\n"],
        "rejected": [
            "while True:\n    try:\n        s = input()\n    except EOFError:\n        break\n    print(len(s) + 1)\n"
        ],
    },
]


def run(code: str, stdin: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], input=stdin, capture_output=True, text=True, timeout=30, check=True
    )
    return proc.stdout


def build() -> list[dict[str, Any]]:
    rows = []
    for p in P:
        tests = [{"input": i, "output": run(p["solution"], i)} for i in p["inputs"]]
        row = {k: v for k, v in p.items() if k != "inputs"}
        row["tests"] = tests
        if "checker" not in row:
            row["checker"] = "exact"
        rows.append(row)
    return rows


if __name__ == "__main__":
    out = Path(__file__).with_name("problems.jsonl")
    rows = build()
    out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} problems, {sum(len(r['tests']) for r in rows)} tests -> {out}")
