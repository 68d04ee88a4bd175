"""``rlvr task check``'s row-by-row checks of the data under the task's own terms: what would stop
``rlvr train`` later, or train on data that cannot work, named by file, row and field.

- sizes: rows over ``MAX_ROW_BYTES`` of JSON (a 10 MB row is a data accident, not a long prompt);
- column types: a column whose rows hold values Arrow cannot put in one column (text in some
  rows, lists or numbers in others) -- ``datasets`` refuses it when training starts. A
  ``unit_tests`` column mixing assert-style source with stdin/stdout cases is the exception: it is
  supported end to end (``arrow_rows`` writes the cases as the JSON text the verifier reads), and
  so is a checker column mixing checker names with mappings;
- tests: every row's tests of every ``unit_tests`` term are parsed (a syntax error, stdin/stdout
  cases with the wrong keys, an unusable checker column), each named by row and column;
- reference solutions: every one found (in the columns a ``unit_tests`` term declares,
  ``Reads.references``: the task's answer column when the tests are another, then the
  ``solution``-like ones) is scored under the task's own terms, and the rows where it fails are
  named;
- custom terms: each is called on the reference answer and on a wrong one; a term that cannot
  tell them apart (on every row tried) is reported when it decides success or never rewards the
  reference (a shaping term may score both alike on purpose).

The sandbox is reached only through the task's ``unit_tests`` verifier, as training reaches it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import Problem
from ..rewards import BUILTINS
from ..rewards.base import Outcome, Sample, Verdict, reads_of
from .spec import MAX_ROW_PROBLEMS, Task

if TYPE_CHECKING:
    from ..rewards.code import UnitTests

MAX_ROW_BYTES = 1_000_000  # a row's JSON above this is named (prompts and tests are kilobytes)
CUSTOM_ROWS = 8  # rows a custom term is tried on
Rows = Sequence[Mapping[str, Any]]


def local_splits(task: Task) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """(split, file, rows) of the local splits (a hub dataset is checked when it loads)."""
    out = []
    for split, ref in [("train", task.data.train), *([("eval", task.data.eval)] if task.data.eval else [])]:
        if not ref.startswith("hf:"):
            out.append((split, str(task.resolve(ref)), task.load_split(split)))
    return out


def unit_tests_terms(task: Task) -> list[tuple[str, UnitTests]]:
    """Each ``unit_tests`` term of the task (name, verifier), from its reward set: every verifier
    built once, as training builds it. The columns come from what each declares (``reads()``)."""
    from ..rewards.code import UnitTests

    return [(t.name, t.verifier) for t in task.reward_set().terms if isinstance(t.verifier, UnitTests)]


def _capped(problems: list[Problem], where: str, what: str, fix: str) -> list[Problem]:
    if len(problems) <= MAX_ROW_PROBLEMS:
        return problems
    return [*problems[:MAX_ROW_PROBLEMS], Problem(where, f"{len(problems)} {what} in all (the first listed)", fix)]


def rows_size_problems(rows: Rows, where: str, limit: int = MAX_ROW_BYTES) -> list[Problem]:
    """The one size rule: each row whose JSON is over ``limit`` bytes, named with its file, row,
    size and widest column. Checked before anything tokenizes (``load_task`` for local files,
    ``rlvr.lengths.check_lengths`` for every split), so a 50 MB row costs milliseconds and one
    problem, not a minute of tokenizing and a second, redundant problem about its tokens."""
    big = []
    for i, row in enumerate(rows, 1):
        size = len(json.dumps(row, ensure_ascii=False, default=str).encode("utf-8"))
        if size > limit:
            widest = max(row, key=lambda k: len(str(row[k])))
            big.append(
                Problem(
                    f"{where}:{i}",
                    f"row {i} is {size / 1e6:.1f} MB, over the {limit / 1e6:g} MB a row may hold (column "
                    f"{widest!r} holds most of it)",
                    "drop the row or cut the field: a row this size is a data accident, and no model reads it",
                )
            )
    return _capped(big, where, "rows over the size limit", "drop or cut them")


def _kind(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def type_problems(rows: Rows, where: str, skip: Iterable[str] = ()) -> list[Problem]:
    """Columns whose rows hold values of kinds Arrow cannot put in one column, each with the first
    row of each kind (``skip``: columns ``arrow_rows`` makes uniform)."""
    first: dict[str, dict[str, int]] = {}
    for i, row in enumerate(rows, 1):
        for col, value in row.items():
            kind = _kind(value)
            if kind is not None:
                first.setdefault(col, {}).setdefault(kind, i)
    out = []
    skipped = set(skip)
    for col, kinds in first.items():
        if len(kinds) > 1 and col not in skipped:
            listed = ", ".join(f"{k} (first at row {i})" for k, i in sorted(kinds.items(), key=lambda kv: kv[1]))
            out.append(
                Problem(
                    where,
                    f"column {col!r} holds {listed}: training stores a column as one type and would refuse it",
                    "write every row's value in one form (e.g. all text)",
                )
            )
    return out


def code_columns(task: Task) -> set[str]:
    """The tests and checker columns the task's terms declare (``Reads.tests``,
    ``Reads.checker_column``; a checker column may mix names and mappings: ``arrow_rows`` writes
    the mappings as the JSON text the verifier reads)."""
    reads = [r for t in task.reward_set().terms if (r := reads_of(t.verifier)) is not None]
    return {c for r in reads for c in (r.tests, r.checker_column) if c}


def arrow_rows(task: Task, rows: Rows) -> list[dict[str, Any]]:
    """``rows`` ready for one Arrow table: in a ``unit_tests`` column that mixes assert-style text
    with stdin/stdout cases, the cases become the JSON text the verifier reads the same way."""
    columns = [c for c in code_columns(task) if len({_kind(r.get(c)) for r in rows} - {None}) > 1]
    if not columns:
        return [dict(r) for r in rows]
    return [
        {k: (json.dumps(v) if k in columns and isinstance(v, (list, Mapping)) else v) for k, v in r.items()}
        for r in rows
    ]


def tests_problems(task: Task) -> list[Problem]:
    """Every row's tests of every ``unit_tests`` term parsed, and its checker column read."""
    from ..sandbox.plans import BadTestsError

    out: list[Problem] = []
    for name, verifier in unit_tests_terms(task):
        tests = verifier.reads().tests
        for _, where, rows in local_splits(task):
            bad = []
            for i, row in enumerate(rows, 1):
                try:
                    verifier.plan(row)
                    verifier.checker_for(row)
                except BadTestsError as exc:
                    bad.append(
                        Problem(
                            f"{where}:{i}",
                            f"row {i}: term {name!r}: column {tests!r}: {exc}",
                            "fix the tests (stdin/stdout cases are objects with string 'input' and 'output'), or "
                            "drop the row: a row whose tests do not parse masks every sample",
                        )
                    )
            out += _capped(bad, where, f"rows whose tests term {name!r} cannot read", "fix or drop them")
    return out


def _reference_columns(verifier: UnitTests, rows: Rows) -> list[str]:
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    return [c for c in verifier.reads().references if c in present]


def reference_problems(task: Task) -> list[Problem]:
    """Every reference solution found, scored by its ``unit_tests`` term; the rows where it fails."""
    out: list[Problem] = []
    for name, verifier in unit_tests_terms(task):
        for _, where, rows in local_splits(task):
            for col in _reference_columns(verifier, rows):
                found = [(i, r) for i, r in enumerate(rows, 1) if isinstance(r.get(col), str) and r[col].strip()]
                if not found:
                    continue
                samples = [Sample(verifier.completion(r[col]), row=r, prompt=_prompt(task, r)) for _, r in found]
                verdicts = verifier.verify_batch(samples)
                if all(v.error_kind == "sandbox" for v in verdicts):
                    out.append(
                        Problem(
                            where,
                            f"term {name!r}: the sandbox could not run the reference solutions in column {col!r}: "
                            f"{verdicts[0].detail}",
                            "rlvr sandbox check says which isolation layer is missing",
                        )
                    )
                    continue
                bad = [
                    Problem(
                        f"{where}:{i}",
                        f"row {i}: term {name!r}: the reference solution in column {col!r} {_failure(v)}",
                        "fix the solution or the tests: a row whose own reference fails teaches the wrong thing",
                    )
                    for (i, _), v in zip(found, verdicts, strict=True)
                    # tests that do not parse are named once, by tests_problems
                    if v.outcome is not Outcome.CORRECT and v.error_kind != "ground_truth"
                ]
                out += _capped(bad, where, f"reference solutions failing term {name!r}", "fix or drop them")
    return out


def _failure(v: Verdict) -> str:
    if v.detail.startswith("unsupported: "):  # rlvr.rewards.code.UNSUPPORTED: scored 0 in training
        return f"hits a construct the sandbox cannot keep exact, so every sample of the row scores 0 ({v.detail})"
    if v.outcome is Outcome.ERROR:
        return f"could not be decided ({v.error_kind or 'error'}): {v.detail}"
    return f"fails its own tests ({v.outcome.value}): {v.detail}"


def _prompt(task: Task, row: Mapping[str, Any]) -> str:
    try:
        return str(task.render_prompt(row))
    except (KeyError, ValueError, IndexError, TypeError, AttributeError):
        return ""


WRONG_TEXT = "rlvr-wrong-answer"


def _wrong(gold: str) -> str:
    """An answer far from ``gold``: a number of another sign and size (a tolerance of any sensible
    width refuses it), or a fixed text that does not contain the gold."""
    try:
        value = float(gold.strip())
    except ValueError:
        return WRONG_TEXT if gold.strip() not in WRONG_TEXT else "0"
    far = -(abs(value) * 7 + 1000003)
    return str(int(far)) if float(far).is_integer() and "." not in gold else repr(far)


def custom_term_problems(task: Task) -> list[Problem]:
    """Custom terms that give the reference answer no more than a wrong one on every row tried."""
    out: list[Problem] = []
    splits = local_splits(task)
    rows = splits[0][2][:CUSTOM_ROWS] if splits else []
    if not rows:
        return out
    code = next((v for _, v in unit_tests_terms(task)), None)
    for t, term in zip(task.rewards, task.reward_set().terms, strict=True):
        if t.verifier in BUILTINS:
            continue
        pairs = _reference_and_wrong(task, rows, code)
        if not pairs:
            continue
        verifier = term.verifier
        right = verifier.verify_batch([p[0] for p in pairs])
        wrong = verifier.verify_batch([p[1] for p in pairs])
        apart = any(
            r.score is not None and (w.score is None or r.score > w.score) for r, w in zip(right, wrong, strict=True)
        )
        never = all(r.score is None or r.score <= 0 for r in right)
        if apart or not (t.name == task.success_term or never):
            continue
        scores = ", ".join(_score(r) + "/" + _score(w) for r, w in list(zip(right, wrong, strict=True))[:4])
        why = (
            f" (first error: {next(r.detail for r in right if r.score is None)})"
            if any(r.score is None for r in right)
            else ""
        )
        out.append(
            Problem(
                f"{task.path}: rewards",
                f"term {t.name!r} ({t.verifier}) cannot tell the reference answer from a wrong one on {len(pairs)} "
                f"rows (reference/wrong scores {scores}){why}: it teaches nothing about correctness",
                "test the function on a right and a wrong answer (rlvr score), and fix it",
            )
        )
    return out


def _score(v: Verdict) -> str:
    return "error" if v.score is None else f"{v.score:g}"


def _reference_and_wrong(task: Task, rows: Rows, code: UnitTests | None) -> list[tuple[Sample, Sample]]:
    out = []
    for r in rows:
        prompt = _prompt(task, r)
        if code is not None:
            gold = code.gold_completion(r)  # the row's reference, as training's fail-closed rule reads it
            if gold is None:
                continue
            right, wrong = gold, code.completion("pass")
        else:
            gold = r.get(task.answer_column)
            if gold is None:
                continue
            text = gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)
            right, wrong = task.answer.wrap(text), task.answer.wrap(_wrong(text))
        out.append((Sample(right, row=r, prompt=prompt), Sample(wrong, row=r, prompt=prompt)))
    return out


def hub_model_cached(task: Task) -> bool | None:
    """Whether the task's hub model is in the local Hugging Face cache (None: not a hub id). Reads
    the cache only: never the network, so it answers at once."""
    from .sections import is_hub_id

    if not is_hub_id(task.model, task.root):
        return None
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(task.model, "config.json"), str)


def model_download_note(task: Task) -> str | None:
    """What ``rlvr task check`` says of a hub model that is not cached while the hub is online: it
    will be downloaded by the first command that loads it (checks that need it are skipped, so the
    check never waits on the network)."""
    from huggingface_hub import constants

    if hub_model_cached(task) is not False or constants.HF_HUB_OFFLINE:
        return None
    return (
        f"{task.model!r} is not in the local cache ({constants.HF_HUB_CACHE}): the first command that loads it "
        "(probe, sft, train) downloads it; lengths are measured once it is there"
    )


def offline_model_problems(task: Task) -> list[Problem]:
    """A hub model that is not in the local Hugging Face cache while the hub is offline."""
    from huggingface_hub import constants

    if hub_model_cached(task) is not False or not constants.HF_HUB_OFFLINE:
        return []
    model = task.model
    return [
        Problem(
            f"{task.path}: model",
            f"{model!r} is a hub model and the hub is offline (HF_HUB_OFFLINE), but it is not in the local cache "
            f"({constants.HF_HUB_CACHE})",
            f"download it where the network is reachable (huggingface-cli download {model}), or point model: at a "
            "local folder",
        )
    ]


def row_problems(task: Task) -> list[Problem]:
    """Every check of this module, in the order a reader fixes them (sizes are ``load_task``'s)."""
    out: list[Problem] = []
    skip = code_columns(task)
    for _, where, rows in local_splits(task):
        out += type_problems(rows, where, skip)
    return [
        *out,
        *tests_problems(task),
        *reference_problems(task),
        *custom_term_problems(task),
        *offline_model_problems(task),
    ]
