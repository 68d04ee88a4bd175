"""Write train.jsonl and eval.jsonl for the smollm2-word-problems example (deterministic, no
question in both splits):  python examples/smollm2-word-problems/make_data.py"""

from __future__ import annotations

import json
import random
from pathlib import Path

NAMES = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jade"]
THINGS = ["apples", "stamps", "marbles", "books", "shells", "coins", "pencils", "stickers"]
# (template, answer) pairs: a + b and a - b stories; two-digit numbers, never a negative answer.
STORIES = [
    ("{n} has {a} {t}. {m} gives {n} {b} more. How many {t} does {n} have now?", lambda a, b: a + b),
    ("{n} had {a} {t} and gave {b} of them to {m}. How many {t} does {n} have left?", lambda a, b: a - b),
    ("A box holds {a} {t}. {n} adds {b} {t}. How many {t} are in the box?", lambda a, b: a + b),
    ("{n} collected {a} {t} on Monday and {b} on Tuesday. How many {t} in all?", lambda a, b: a + b),
]


def rows(n: int, seed: int, exclude: set[str]) -> list[dict[str, str]]:
    rng = random.Random(seed)
    out: list[dict[str, str]] = []
    while len(out) < n:
        template, answer = rng.choice(STORIES)
        a, b = rng.randint(10, 99), rng.randint(10, 99)
        if answer(a, b) < 0:
            a, b = b, a
        name, other = rng.sample(NAMES, 2)
        question = template.format(n=name, m=other, a=a, b=b, t=rng.choice(THINGS))
        if question in exclude:
            continue
        exclude.add(question)
        out.append({"question": question, "answer": str(answer(a, b))})
    return out


HERE = Path(__file__).resolve().parent


def main(folder: Path = HERE) -> None:
    seen: set[str] = set()
    held = rows(100, seed=1, exclude=seen)
    train = rows(1000, seed=0, exclude=seen)
    for name, data in (("train.jsonl", train), ("eval.jsonl", held)):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in data))


if __name__ == "__main__":
    main()
