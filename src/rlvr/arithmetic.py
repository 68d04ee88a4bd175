"""The built-in arithmetic task's data: deterministic from a seed, generated, never downloaded.

Prompts look like ``"37+58="`` and the answer goes in ``<answer>`` tags. Operations are
addition, subtraction and multiplication of multi-digit operands; ``reference_answer`` computes
the answer independently of the dataset, which is what the demo's stand-in reviewer uses.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
_EXPR = re.compile(r"^\s*(\d+)\s*([-+*])\s*(\d+)\s*=\s*$")


def generate(n: int, seed: int, ops: str = "+", digits: int = 2, mul_digits: int = 1, exclude: set[str] | None = None) -> list[dict[str, str]]:
    """``n`` distinct problems. Multiplication uses a ``mul_digits``-digit second operand (a
    2x2-digit product is too hard for the tiny model); subtraction never goes negative."""
    rng = random.Random(seed)
    seen = set(exclude or ())
    rows = []
    lo, hi = 10 ** (digits - 1), 10**digits - 1
    attempts = 0
    while len(rows) < n:
        attempts += 1
        if attempts > 100 * n:
            raise ValueError(f"cannot draw {n} distinct problems with ops={ops!r}, digits={digits}")
        op = rng.choice(ops)
        a = rng.randint(lo, hi)
        b = rng.randint(1 if op == "*" else lo, 10**mul_digits - 1 if op == "*" else hi)
        if op == "-" and b > a:
            a, b = b, a
        question = f"{a}{op}{b}"
        if question in seen:
            continue
        seen.add(question)
        rows.append({"question": question, "answer": str(OPS[op](a, b)), "op": op})
    return rows


def reference_answer(prompt: str) -> str | None:
    """Compute the answer of an arithmetic prompt (``"37+58="``) from the prompt alone."""
    m = _EXPR.match(prompt)
    if not m:
        return None
    return str(OPS[m.group(2)](int(m.group(1)), int(m.group(3))))


def write_splits(folder: str | Path, *, train: int = 2000, eval: int = 200, seed: int = 0, ops: str = "+", digits: int = 2) -> tuple[Path, Path]:
    """Write ``train.jsonl`` and ``eval.jsonl`` with no question in both."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    held = generate(eval, seed + 1, ops, digits)
    tr = generate(train, seed, ops, digits, exclude={r["question"] for r in held})
    paths = folder / "train.jsonl", folder / "eval.jsonl"
    for path, rows in zip(paths, (tr, held), strict=True):
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return paths
