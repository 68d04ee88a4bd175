"""The checks of a task's data files: they exist and parse, hold the columns the prompt and the
answer need, have no null answers or prompt cells, name only usable stdout checkers (a ``unit_tests``
term's ``checker`` column), and the held-out split repeats no training prompt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..data import read_rows
from ..errors import DataError
from .checker import Checker
from .rowchecks import rows_size_problems
from .sections import prompt_problems
from .spec import MAX_ROW_PROBLEMS, Task
from .terms import CHECKER_FIX


def check_data(c: Checker, task: Task) -> None:
    needed = task.prompt.columns()
    prompts: dict[str, tuple[str, list[str | None]]] = {}  # split -> (file, rendered prompt per row)
    for split in ("train", "eval"):
        ref = task.data.train if split == "train" else task.data.eval
        if not ref:
            continue
        if ref.startswith("hf:"):
            continue  # checked when loaded: needs the network
        resolved = task.resolve(ref)
        where = f"data.{split}"
        if not Path(resolved).exists():
            c.add(where, f"file not found: {resolved}", "check the path (relative to the task file)")
            continue
        try:
            rows = read_rows(resolved)
        except DataError as exc:
            c.add(where, str(exc), "fix the file")
            continue
        if not rows:
            c.add(where, f"dataset {resolved} is empty", "add rows, or point at another file")
            continue
        if oversized := rows_size_problems(rows, resolved):
            c.problems.extend(replace(p, where=f"{c.source}: {p.where}") for p in oversized)
            continue  # the row's size is the problem: nothing else of this split is read
        cols = set().union(*(r.keys() for r in rows))
        listed = ", ".join(sorted(cols))
        for key, col in dict.fromkeys(task.prompt.placeholders()):
            if col not in cols:
                c.add(
                    f"{where}: {key}",
                    f"the placeholder {{{col}}} names no column of {resolved}: no row has it (columns: {listed})",
                    f"add the column {col!r}, or write {{{{{col}}}}} for literal braces",
                )
        if task.answer_column not in cols:
            c.add(
                where,
                f"column {task.answer_column!r} missing from {resolved} (columns: {listed})",
                "add the column or change answer.column",
            )
        bad = [
            i
            for i, r in enumerate(rows, 1)
            if task.answer_column in cols
            and (r.get(task.answer_column) is None or str(r.get(task.answer_column)).strip() == "")
        ]
        for i in bad[:MAX_ROW_PROBLEMS]:
            c.add(
                f"{resolved}:{i}",
                f"row {i} has a null or empty {task.answer_column!r}",
                "fill in the answer or drop the row",
            )
        if len(bad) > MAX_ROW_PROBLEMS:
            c.add(
                f"{resolved}",
                f"{len(bad) - MAX_ROW_PROBLEMS} more rows with a null {task.answer_column!r}",
                "fill in the answers or drop the rows",
            )
        missing_prompt = [i for i, r in enumerate(rows, 1) if any(col in cols and r.get(col) is None for col in needed)]
        for i in missing_prompt[:MAX_ROW_PROBLEMS]:
            c.add(
                f"{resolved}:{i}",
                f"row {i} has a null prompt column "
                f"({', '.join(col for col in needed if rows[i - 1].get(col) is None)})",
                "fill it in or drop the row",
            )
        if all(col in cols for col in needed) and not prompt_problems(task.prompt):
            check_rendering(c, task, rows, resolved)
        check_row_checkers(c, task, rows, resolved)
        prompts[split] = (str(Path(resolved).resolve()), [prompt_key(task, r) for r in rows])
    if "train" in prompts and "eval" in prompts:
        check_overlap(c, *prompts["train"], *prompts["eval"])


def check_row_checkers(c: Checker, task: Task, rows: list[dict[str, Any]], resolved: str) -> None:
    """A ``unit_tests`` term's per-row ``checker`` column (a name, a mapping or its JSON text) must
    be a checker the term can use: each bad one is reported with its file, row and column."""
    columns = sorted(
        {str(t.options.get("checker_column", "checker")) for t in task.rewards if t.verifier == "unit_tests"}
    )
    if not columns:
        return
    from ..sandbox.checkers import CheckerSpecError, parse_checker

    seen: dict[str, str] = {}  # the JSON of a value -> why it is bad ("" when it is good)
    bad: list[tuple[int, str, str]] = []
    for i, r in enumerate(rows, 1):
        for col in columns:
            raw = r.get(col)
            if raw is None or (isinstance(raw, str) and not raw.strip()):
                continue
            key = json.dumps(raw, sort_keys=True, default=str)
            if key not in seen:
                try:
                    value = json.loads(raw) if isinstance(raw, str) and raw.lstrip().startswith("{") else raw
                    parse_checker(value, search=task.root)
                    seen[key] = ""
                except (CheckerSpecError, ValueError) as exc:
                    seen[key] = str(exc)
            if seen[key]:
                bad.append((i, col, seen[key]))
    for i, col, why in bad[:MAX_ROW_PROBLEMS]:
        c.add(f"{resolved}:{i}", f"row {i}, column {col!r}: {why}", CHECKER_FIX)
    if len(bad) > MAX_ROW_PROBLEMS:
        c.add(resolved, f"{len(bad) - MAX_ROW_PROBLEMS} more rows with an unusable checker", CHECKER_FIX)


def check_rendering(c: Checker, task: Task, rows: list[dict[str, Any]], resolved: str) -> None:
    """Every row's prompt renders: a format spec the row's value does not take (``{question:d}`` on
    text) is reported with its file and row here, once, not as a traceback in the stage that reads it."""
    bad: list[tuple[int, str]] = []
    for i, r in enumerate(rows, 1):
        try:
            task.render_prompt(r)
        except (KeyError, ValueError, IndexError, TypeError, AttributeError) as exc:
            bad.append((i, f"{type(exc).__name__}: {exc}"))
    fix = "change the prompt's {column:spec} format spec, or the rows' values"
    for i, why in bad[:MAX_ROW_PROBLEMS]:
        c.add(f"{resolved}:{i}", f"row {i}: the prompt does not render ({why})", fix)
    if len(bad) > MAX_ROW_PROBLEMS:
        c.add(resolved, f"{len(bad) - MAX_ROW_PROBLEMS} more rows whose prompt does not render", fix)


def prompt_key(task: Task, row: Mapping[str, Any]) -> str | None:
    try:
        rendered = task.render_prompt(row)
    except (KeyError, ValueError, IndexError, TypeError, AttributeError):
        return None
    return rendered if isinstance(rendered, str) else repr(rendered)


def check_overlap(
    c: Checker, train_file: str, train: list[str | None], eval_file: str, evals: list[str | None]
) -> None:
    """A held-out split that repeats training prompts measures memory, not the policy."""
    if train_file == eval_file:
        c.add(
            "data.eval",
            f"is the same file as data.train ({eval_file}): the held-out eval would score prompts the policy trained "
            "on",
            "hold out rows the training split does not contain (e.g. split the file 90/10)",
        )
        return
    seen = {p for p in train if p is not None}
    shared = [i for i, p in enumerate(evals, 1) if p is not None and p in seen]
    if shared:
        rows = ", ".join(map(str, shared[:MAX_ROW_PROBLEMS])) + (" ..." if len(shared) > MAX_ROW_PROBLEMS else "")
        what = "every" if len(shared) == len(evals) else f"{len(shared)} of {len(evals)}"
        c.add(
            "data.eval",
            f"{what} held-out prompts also appear in data.train ({eval_file} rows {rows}): they measure memory, not "
            "the policy",
            "drop those rows from one of the splits",
        )
