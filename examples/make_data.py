"""Writes the data of the example tasks (math-boxed, json-schema, tool-call, unit-tests, judge).

The data is small, seeded and committed; this script is how it was made, and a test checks that
it still reproduces the committed files byte for byte::

    python examples/make_data.py            # rewrite the data files in examples/
    python examples/make_data.py OUT_DIR    # write them under OUT_DIR/<example>/ instead

Every example has a train split and a held-out eval split with no prompt in both.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TRAIN, EVAL = 64, 16


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows), encoding="utf-8")


def distinct(make: Callable[[random.Random], dict[str, Any]], key: str, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` rows from ``make`` with distinct ``key`` values (so the splits cannot overlap)."""
    rng, seen, rows = random.Random(seed), set(), []
    while len(rows) < n:
        row = make(rng)
        if row[key] not in seen:
            seen.add(row[key])
            rows.append(row)
    return rows


# -- math with \boxed --------------------------------------------------------------------------
def math_row(rng: random.Random) -> dict[str, Any]:
    op = rng.choice("*/-")
    if op == "*":
        a, b = rng.randint(2, 30), rng.randint(2, 12)
        value = Fraction(a * b)
    elif op == "-":
        a, b = rng.randint(2, 12), rng.randint(2, 30)  # often negative
        value = Fraction(a - b)
    else:  # a fraction to reduce: the answer is in lowest terms
        g, p, q = rng.randint(2, 6), rng.randint(1, 9), rng.randint(2, 9)
        a, b = g * p, g * q
        value = Fraction(a, b)
    answer = str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    return {"question": f"{a}{op}{b}", "answer": answer}


# -- JSON that fits a schema -------------------------------------------------------------------
NAMES = [
    "Ada",
    "Alan",
    "Grace",
    "Edsger",
    "Barbara",
    "Donald",
    "Frances",
    "John",
    "Radia",
    "Ken",
    "Dennis",
    "Margaret",
    "Tim",
    "Linus",
    "Guido",
    "Katherine",
]
CITIES = ["Paris", "Oslo", "Lima", "Cairo", "Quito", "Hanoi", "Rome", "Accra"]


def person_row(rng: random.Random) -> dict[str, Any]:
    name, age, city = rng.choice(NAMES), rng.randint(18, 90), rng.choice(CITIES)
    answer = {"name": name, "age": age, "city": city}
    # The row's own schema pins the values: valid for it means the right record, nothing extra.
    schema = {
        "type": "object",
        "properties": {"name": {"const": name}, "age": {"const": age}, "city": {"const": city}},
        "required": ["name", "age", "city"],
    }
    return {"text": f"{name} is {age} and lives in {city}.", "answer": answer, "schema": schema}


# -- tool calls --------------------------------------------------------------------------------
def tool_row(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        city, unit = rng.choice(CITIES), rng.choice(["celsius", "fahrenheit"])
        call = {"name": "get_weather", "arguments": {"city": city, "unit": unit}}
        request = f"weather in {city} in {unit}"
    else:
        amount, src, dst = rng.randint(1, 500), *rng.sample(["EUR", "USD", "JPY", "GBP"], 2)
        call = {"name": "convert", "arguments": {"amount": amount, "source": src, "target": dst}}
        request = f"{amount} {src} to {dst}"
    return {"request": request, "tool_call": call}


# -- code with unit tests ----------------------------------------------------------------------
KINDS = [
    ("add_{k}", "returns x plus {k}", "return x + {k}", lambda x, k: x + k),
    ("times_{k}", "returns x times {k}", "return x * {k}", lambda x, k: x * k),
    ("mod_{k}", "returns x modulo {k}", "return x % {k}", lambda x, k: x % k),
    ("clip_{k}", "returns the smaller of x and {k}", "return min(x, {k})", lambda x, k: min(x, k)),
]


def code_row(rng: random.Random) -> dict[str, Any]:
    name, says, body, fn = rng.choice(KINDS)
    k = rng.randint(2, 40)
    entry = name.format(k=k)
    xs = [rng.randint(-50, 50) for _ in range(3)]
    tests = "\n".join(f"assert {entry}({x}) == {fn(x, k)}" for x in xs)
    return {
        "problem": f"def {entry}(x): {says.format(k=k)}",
        "entry_point": entry,
        "tests": tests,
        "solution": f"def {entry}(x):\n    {body.format(k=k)}",
    }


# -- free-text answers for a judge --------------------------------------------------------------
ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    if n < 20:
        return ONES[n]
    tens, ones = divmod(n, 10)
    return TENS[tens] + ("" if ones == 0 else "-" + ONES[ones])


def judge_row(rng: random.Random) -> dict[str, Any]:
    n = rng.randint(0, 99)
    return {"question": f"{n} in words", "answer": words(n)}


def judge_labels(rows: list[dict[str, Any]], seed: int) -> Iterator[dict[str, Any]]:
    """One right and one wrong completion per train question, labelled accordingly (constructed
    for the example; a real task labels samples of its own model by hand)."""
    rng = random.Random(seed)
    for r in rows[:30]:
        n = int(r["question"].split()[0])
        wrong = words((n + rng.randint(1, 9)) % 100)
        prompt = f"Write the number {r['question']}: "
        yield {"prompt": prompt, "completion": f"<answer>{r['answer']}</answer>", "answer": r["answer"], "label": True}
        yield {"prompt": prompt, "completion": f"<answer>{wrong}</answer>", "answer": r["answer"], "label": False}


def split(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return rows[:TRAIN], rows[TRAIN : TRAIN + EVAL]


def main(out: Path = HERE) -> None:
    makers = {
        "math-boxed": (math_row, "question"),
        "json-schema": (person_row, "text"),
        "tool-call": (tool_row, "request"),
        "unit-tests": (code_row, "problem"),
        "judge": (judge_row, "question"),
    }
    for seed, (folder, (make, key)) in enumerate(makers.items()):
        train, held_out = split(distinct(make, key, TRAIN + EVAL, seed))
        write_jsonl(out / folder / "train.jsonl", train)
        write_jsonl(out / folder / "eval.jsonl", held_out)
        if folder == "judge":
            write_jsonl(out / folder / "labels.jsonl", list(judge_labels(train, seed)))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
