"""The stdout checker through the task file and the verifier: ``unit_tests``'s ``checker:``
option (validated at load time, one line naming file and field), a row's ``checker`` column
overriding it, a custom checker from the task folder, and a broken one masking the sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.errors import ConfigError, VerifierError
from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests
from rlvr.sandbox.checkers import CheckerSpec
from rlvr.task import load_task
from support.tasks import make_task

ROUND = "x = float(input())\nprint(x / 3)\n"  # prints 0.3333333333333333 for 1
FIXED = "x = float(input())\nprint(f'{x / 3:.3f}')\n"  # 0.333: wrong at 1e-6
YES = "print('yes')\n"
CASES = [{"input": "1\n", "output": "0.333333\n"}, {"input": "2\n", "output": "0.666667\n"}]


def sample(code: str, tests: Any, **row: Any) -> Sample:
    return Sample(prompt="", completion=f"```python\n{code}```", row={"tests": tests, **row})


def outcomes(verifier: UnitTests, samples: list[Sample]) -> list[Outcome]:
    return [v.outcome for v in verifier.verify_batch(samples)]


@pytest.fixture(scope="module")
def checking(pool):  # one pool (conftest) for every verifier here
    def make(**kw: Any) -> UnitTests:
        return UnitTests(timeout=2.0, memory_mb=512, pool=pool, **kw)

    return make


def test_task_checker_and_row_override(checking) -> None:
    exact, float_ = checking(), checking(checker="float")
    assert outcomes(exact, [sample(ROUND, CASES)]) == [Outcome.WRONG]  # the default is exact
    assert outcomes(float_, [sample(ROUND, CASES), sample(FIXED, CASES)]) == [Outcome.CORRECT, Outcome.WRONG]
    loose = checking(checker={"name": "float", "abs_tol": 1e-3, "rel_tol": 0})
    assert outcomes(loose, [sample(FIXED, CASES)]) == [Outcome.CORRECT]
    # A row's column overrides the task's: a name, a mapping, or the JSON text of one (CSV data).
    rows = [
        sample(ROUND, CASES, checker="float"),
        sample(FIXED, CASES, checker={"name": "float", "abs_tol": 1e-3}),
        sample(FIXED, CASES, checker=json.dumps({"name": "float", "abs_tol": 1e-3})),
        sample(FIXED, CASES, checker=""),  # empty: the task's (exact)
    ]
    assert outcomes(exact, rows) == [Outcome.CORRECT, Outcome.CORRECT, Outcome.CORRECT, Outcome.WRONG]
    yes = [{"input": "", "output": "YES\n"}]
    assert outcomes(exact, [sample(YES, yes), sample(YES, yes, checker="case_insensitive")]) == [
        Outcome.WRONG,
        Outcome.CORRECT,
    ]


def test_a_bad_row_checker_is_the_rows_fault(checking) -> None:
    [v] = checking().verify_batch([sample(ROUND, CASES, checker="fuzzy")])
    assert v.outcome is Outcome.ERROR and v.error_kind == "ground_truth"
    assert "column 'checker'" in v.detail and "unknown checker 'fuzzy'" in v.detail


def test_custom_checker_and_a_broken_one(checking) -> None:
    def any_order(stdin: str, expected: str, output: str) -> bool:
        return sorted(output.split()) == sorted(expected.split())

    def broken(stdin: str, expected: str, output: str) -> bool:
        raise KeyError("gold bug")

    tests = [{"input": "", "output": "1 2 3\n"}]
    custom = checking(checker=CheckerSpec("custom", function=any_order))
    assert outcomes(custom, [sample("print(3, 1, 2)\n", tests), sample("print(3, 1, 1)\n", tests)]) == [
        Outcome.CORRECT,
        Outcome.WRONG,
    ]
    [v] = checking(checker=CheckerSpec("custom", function=broken)).verify_batch([sample("print(1)\n", tests)])
    assert v.outcome is Outcome.ERROR and v.error_kind == "ground_truth" and "KeyError" in v.detail


def test_verifier_rejects_a_bad_checker_option() -> None:
    with pytest.raises(VerifierError, match=r"unit_tests\.checker.*unknown checker 'fuzzy'"):
        UnitTests(checker="fuzzy")


def _task(
    tmp_path: Path, checker: Any, module: str | None = None, rows: list[dict[str, Any]] | None = None, name: str = ""
) -> Path:
    if module:
        (tmp_path / f"{name}.py").write_text(module)
    rows = rows or [{"question": "q", "answer": json.dumps(CASES)}]
    options = {"checker": checker} if checker is not None else {}
    term = {"name": "tests", "verifier": "unit_tests", "options": options}
    path = make_task(tmp_path, train_rows=rows, extra={"rewards": [{"name": "format", "weight": 0.1}, term]})
    (tmp_path / "eval.jsonl").write_text(json.dumps({**rows[0], "question": "held out"}) + "\n")
    return path


def test_task_file_checker_is_validated_at_load_time(tmp_path: Path) -> None:
    for bad, message in [
        ("fuzzy", "unknown checker 'fuzzy'"),
        ({"name": "float", "abs_tol": -1}, "abs_tol must be"),
        ({"function": "mychecks_none.fn"}, "cannot import 'mychecks_none'"),
    ]:
        with pytest.raises(ConfigError) as info:
            load_task(_task(tmp_path, bad))
        line = next(ln for ln in str(info.value).splitlines() if "options.checker" in ln)
        assert "task.yaml: rewards[1].options.checker" in line and message in line


def test_task_file_custom_checker_from_the_task_folder(tmp_path: Path, pool) -> None:
    module = "def close(i, e, o):\n    return abs(float(o) - float(e)) < 0.01\n"
    task = load_task(_task(tmp_path, {"function": "mychecks_task.close"}, module, name="mychecks_task"))
    verifier = task.term_verifier(task.rewards[1])
    assert isinstance(verifier, UnitTests) and callable(verifier.checker.function)
    verifier.pool = pool
    rows = [Sample(f"<answer>{code}</answer>", {"answer": json.dumps(CASES)}) for code in (FIXED, "print(0)\n")]
    assert outcomes(verifier, rows) == [Outcome.CORRECT, Outcome.WRONG]  # the task's answer column holds the tests
    raw = yaml.safe_load((tmp_path / "task.yaml").read_text())
    assert raw["rewards"][1]["options"]["checker"] == {"function": "mychecks_task.close"}


def test_a_rows_checker_is_validated_at_load_time(tmp_path: Path) -> None:
    rows = [
        {"question": f"q{i}", "answer": json.dumps(CASES), "checker": c}
        for i, c in enumerate(["float", "fuzzy", {"name": "float", "abs_tol": -1}, '{"function": "nosuch_mod_q.f"}'])
    ]
    with pytest.raises(ConfigError) as info:
        load_task(_task(tmp_path, None, rows=rows))
    lines = [ln for ln in str(info.value).splitlines() if "column 'checker'" in ln]
    assert len(lines) == 3
    assert "train.jsonl:2" in lines[0] and "unknown checker 'fuzzy'" in lines[0]
    assert "train.jsonl:3" in lines[1] and "abs_tol must be" in lines[1]
    assert "train.jsonl:4" in lines[2] and "cannot import 'nosuch_mod_q'" in lines[2]


def test_a_rows_custom_checker_comes_from_the_task_folder(tmp_path: Path, pool) -> None:
    module = "def close(i, e, o):\n    return abs(float(o) - float(e)) < 0.01\n"
    rows = [{"question": "q", "answer": json.dumps(CASES), "checker": {"function": "rowchecks_task.close"}}]
    task = load_task(_task(tmp_path, None, module, rows=rows, name="rowchecks_task"))
    verifier = task.term_verifier(task.rewards[1])
    assert isinstance(verifier, UnitTests)
    verifier.pool = pool
    train = task.load_split("train")
    samples = [Sample(f"<answer>{code}</answer>", train[0]) for code in (FIXED, "print(0)\n")]
    assert outcomes(verifier, samples) == [Outcome.CORRECT, Outcome.WRONG]


def test_a_checker_column_mixing_names_and_mappings_trains(tmp_path: Path, pool) -> None:
    """Arrow stores one kind per column: the mappings become the JSON text the verifier reads."""
    from rlvr.task.rowchecks import arrow_rows, code_columns, type_problems

    rows = [
        {"question": "q0", "answer": json.dumps(CASES), "checker": "float"},
        {"question": "q1", "answer": json.dumps(CASES), "checker": {"name": "float", "abs_tol": 1e-3}},
    ]
    task = load_task(_task(tmp_path, None, rows=rows))
    assert "checker" in code_columns(task)
    assert type_problems(rows, "train.jsonl") != []  # as stored, Arrow would refuse the column
    uniform = arrow_rows(task, rows)
    assert type_problems(uniform, "train.jsonl") == [] and isinstance(uniform[1]["checker"], str)
    verifier = task.term_verifier(task.rewards[1])
    assert isinstance(verifier, UnitTests)
    verifier.pool = pool
    samples = [Sample(f"<answer>{FIXED}</answer>", row) for row in uniform]
    assert outcomes(verifier, samples) == [Outcome.WRONG, Outcome.CORRECT]  # 0.333 is within 1e-3 only


def test_the_gate_binds_a_custom_checkers_module_from_the_task_or_a_row(tmp_path: Path) -> None:
    """A checker decides stdin/stdout verdicts: editing it after signing must break the gate."""
    from rlvr.gate.hashes import reward_code, reward_modules

    module = "def close(i, e, o):\n    return abs(float(o) - float(e)) < 0.01\n"
    task = load_task(_task(tmp_path, {"function": "gatechecks_task.close"}, module, name="gatechecks_task"))
    assert reward_modules(task)["gatechecks_task"] == (tmp_path / "gatechecks_task.py").resolve()
    before = reward_code(task)
    (tmp_path / "gatechecks_task.py").write_text(module.replace("0.01", "10"))
    assert reward_code(task) != before

    row_dir = tmp_path / "rows"
    row_dir.mkdir()
    rows = [{"question": "q", "answer": json.dumps(CASES), "checker": {"function": "gaterows_task.close"}}]
    row_task = load_task(_task(row_dir, None, module, rows=rows, name="gaterows_task"))
    assert "gaterows_task" in reward_modules(row_task)
    plain = load_task(_task(tmp_path / "plain" if (tmp_path / "plain").mkdir() is None else tmp_path, "tokens"))
    assert not any(name.endswith("_task") for name in reward_modules(plain))
