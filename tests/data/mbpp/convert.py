"""Convert MBPP's ``sanitized-mbpp.json`` into ``sanitized.jsonl`` (one row per problem).

    python tests/data/mbpp/convert.py /path/to/sanitized-mbpp.json

Each row: ``task_id``, ``prompt`` (the problem text), ``code`` (the reference solution),
``tests`` (the row's test file: ``test_imports`` then ``test_list``, one statement a line, as
MBPP's own harness runs them) and ``source_file``. Nothing is edited, dropped or reordered.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def convert(source: Path, target: Path) -> int:
    rows = json.loads(source.read_text(encoding="utf-8"))
    with target.open("w", encoding="utf-8") as out:
        for r in rows:
            tests = "\n".join([*r["test_imports"], *r["test_list"]]) + "\n"
            row = {
                "task_id": r["task_id"],
                "prompt": r["prompt"],
                "code": r["code"],
                "tests": tests,
                "source_file": r["source_file"],
            }
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return len(rows)


if __name__ == "__main__":
    n = convert(Path(sys.argv[1]), Path(__file__).with_name("sanitized.jsonl"))
    print(f"{n} rows")
