"""The three inputs that were quadratic under Python's ``re`` (issue 25), side by side: the old
backtracking pattern and what rlvr runs now (RE2 through ``rlvr.rewards.rules.patterns``, or a hand
scan), at growing sizes, with the ratio old / new.

- a code fence followed by N spaces (``jsontext._FENCE``: the JSON terms' fenced-block reader);
- N unclosed ``<tool_call>`` tags (``jsontext._TOOL_TAG``);
- a response ending in N characters of whitespace before ``<|im_end|>`` and a stray character
  (``serve.scoring``: the trailing special-token strip, which ran on the server's event loop),
  and one ending in many ``<|im_end|>`` tokens (where the strip removes everything it scans).

CPU time of one call each (``time.process_time``), best of ``--repeat``; other work on the machine
moves wall time but much less CPU time. The old cases are run only up to ``--max-old`` characters,
because they grow quadratically.

    OMP_NUM_THREADS=1 .venv/bin/python bench/linear_patterns.py [--sizes 5000 10000 20000 40000]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from rlvr.rewards.format import AnswerFormat
from rlvr.rewards.jsontext import find_json
from rlvr.serve.scoring import strip_trailing_special

OLD_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)
OLD_TOOL_TAG = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
OLD_TRAILING = re.compile(r"(?:\s*(?:<\|[A-Za-z0-9_]+\|>|</s>|<eos>|<end_of_turn>))+\s*$")

CASES: list[tuple[str, Callable[[int], str], Callable[[str], object], Callable[[str], object]]] = [
    (
        "fence + spaces",
        lambda n: "```" + " " * n,
        lambda t: list(OLD_FENCE.finditer(t)),
        lambda t: find_json(t, AnswerFormat(), 10**8),
    ),
    (
        "unclosed <tool_call>",
        lambda n: "<tool_call>{" * (n // 12),
        lambda t: list(OLD_TOOL_TAG.finditer(t)),
        lambda t: find_json(t, AnswerFormat(), 10**8, True),
    ),
    (
        "whitespace, <|im_end|>, a char",
        lambda n: "answer" + " " * n + "<|im_end|>x",
        lambda t: OLD_TRAILING.sub("", t),
        strip_trailing_special,
    ),
    (
        "<|im_end|> after whitespace x N",
        lambda n: "answer" + " <|im_end|>" * (n // 11),
        lambda t: OLD_TRAILING.sub("", t),
        strip_trailing_special,
    ),
]


def cpu(fn: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5_000, 10_000, 20_000, 40_000])
    ap.add_argument("--max-old", type=int, default=40_000, help="largest input the old pattern is run on")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'case':<30} {'chars':>8} {'old s':>10} {'new s':>10} {'old/new':>10}")
    for name, make, old, new in CASES:
        for n in args.sizes:
            text = make(n)
            t_new = cpu(new, text, args.repeat)
            t_old = cpu(old, text, 1) if n <= args.max_old else None
            ratio = "-" if t_old is None else f"{t_old / max(t_new, 1e-7):.3g}x"
            old_s = "-" if t_old is None else f"{t_old:.4f}"
            print(f"{name:<30} {len(text):>8} {old_s:>10} {t_new:>10.5f} {ratio:>10}")


if __name__ == "__main__":
    main()
