"""Writes this example's data: made-up countries, whose capitals are only in docs.jsonl.

    python examples/tool-search/make_data.py

The names are generated (seeded), so no model can know a capital without looking it up: the
task cannot be solved without the search tool. Each document also names a river, so a search
for the country's name returns the capital among other facts.

Three sets of questions, on distinct countries: ``train.jsonl`` (600, what GRPO trains on: more
rows than a measured run visits, so its reward is never a capital it learnt by heart on an earlier
visit), ``eval.jsonl`` (100, held out) and ``sft.jsonl`` (200, only for ``measure.py``'s SFT warm
start, so that GRPO's reward is never a capital SFT made the model learn by heart either).
Every question row has a ``reference_calls`` column: the search that answers it, as JSON (what
``rlvr sft`` builds its reference episodes from).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z"]
VOWELS = ["a", "e", "i", "o", "u"]


def name(rng: random.Random, syllables: int) -> str:
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables)).capitalize()


def main(out: Path = HERE, n: int = 900, seed: int = 0) -> None:
    rng = random.Random(seed)
    seen: set[str] = set()
    facts = []
    while len(facts) < n:
        country, capital, river = name(rng, 3), name(rng, 2), name(rng, 2)
        if len({country, capital, river} | seen) != len(seen) + 3:
            continue
        seen |= {country, capital, river}
        facts.append((country, capital, river))
    docs = [{"title": c, "text": f"capital {cap}, river {r}."} for c, cap, r in facts]
    # reference_calls: the call that solves the row (a search for the country's name), which
    # ``rlvr sft`` plays through the real tool to build its reference episodes.
    rows = [
        {
            "question": f"Capital of {c}?",
            "answer": cap,
            "reference_calls": json.dumps([{"name": "search", "arguments": {"query": c}}]),
        }
        for c, cap, _ in facts
    ]
    out.mkdir(parents=True, exist_ok=True)
    splits = (
        ("docs.jsonl", docs),
        ("train.jsonl", rows[:600]),
        ("eval.jsonl", rows[600:700]),
        ("sft.jsonl", rows[700:]),
    )
    for file, lines in splits:
        (out / file).write_text("".join(json.dumps(x) + "\n" for x in lines))


if __name__ == "__main__":
    main()
