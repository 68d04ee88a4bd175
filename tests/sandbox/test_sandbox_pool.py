"""The worker pool: fresh workers, layers reported, deadlines, recovery, strict mode."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

import rlvr
from rlvr.errors import SandboxError
from rlvr.sandbox.checks import judge_stdio, read_script, records, script_job, split_cases, stdio_job
from rlvr.sandbox.checks import tests_job as make_tests_job
from rlvr.sandbox.interpreter import choose_python
from rlvr.sandbox.plans import plan_stdio, plan_tests
from rlvr.sandbox.pool import LAYERS, Limits, SandboxPool
from rlvr.sandbox.worker import Reply, SessionEnd


class Script:
    """A program run as a script; with ``expr`` it also prints ``expr`` as JSON (``value``)."""

    def __init__(self, code: str, expr: str | None = None, timeout: float = 2.0) -> None:
        tail = "" if expr is None else f"\nimport json as _json\nprint(_json.dumps({expr}))\n"
        self.job = script_job(code + tail, "", timeout)
        self.reply: Reply | None = None


def runs(pool: SandboxPool, scripts: list[Script]) -> list[SessionEnd]:
    """Run the scripts' jobs; each keeps its reply. How each session ended, in order."""
    replies = pool.run([sc.job for sc in scripts])
    for sc, reply in zip(scripts, replies, strict=True):
        sc.reply = reply
    return [r.end for r in replies]


def call(name: str, *args: object) -> str:
    return f"{name}(*{list(args)!r})"


def value(script: Script):
    assert script.reply is not None
    return json.loads(read_script(script.reply).stdout)


def test_every_layer_is_reported_active_or_with_a_reason(pool):
    status = pool.layers.status
    for name in LAYERS:
        assert status[name].startswith(("active", "unavailable: ")), (name, status[name])


def test_the_test_childs_records_come_back_in_order_then_its_end(pool):
    job = make_tests_job(
        plan_tests("assert f(1) == [1, '1']\nassert f(2) == 0\n"), "def f(x):\n    return [x, str(x)]\n", 2.0
    )
    (reply,) = pool.run([job])
    recs = records(reply)
    assert reply.end.why == "ended" and [r.get("ok") for r in recs[:2]] == [True, False]
    assert recs[1]["got"] == "[2, '2']" and recs[-1]["end"] == "raised"


def test_stdio_runs_the_program_once_per_input_and_returns_the_whole_stdout(pool):
    plan = plan_stdio([{"input": "3\n", "output": "6\nend\n"}, {"input": "5\n", "output": "10\nend\n"}])
    (reply,) = pool.run([stdio_job("print(int(input()) * 2)\nprint('end')\n", plan.inputs, 2.0)])
    assert [out for out, _, _ in split_cases(reply)] == [b"6\nend\n", b"10\nend\n"]
    assert judge_stdio(plan, reply).status == "passed"


def test_wall_clock_deadline_kills_a_sleeping_sample(pool):
    t0 = time.monotonic()
    (end,) = runs(pool, [Script("import time\ntime.sleep(30)\n", timeout=1.0)])
    assert end.why == "timeout" and time.monotonic() - t0 < 10


def test_results_come_back_in_job_order(pool):
    scripts = [
        Script(f"import time\ntime.sleep({0.2 if i % 2 else 0})\ndef f():\n    return {i}\n", call("f"))
        for i in range(6)
    ]
    runs(pool, scripts)
    assert [value(sc) for sc in scripts] == list(range(6))


def test_pool_replaces_a_worker_that_died(pool):
    victim = pool._workers[0]
    os.kill(victim.proc.pid, 9)
    victim.proc.wait()
    scripts = [Script("def f():\n    return 1\n", call("f")) for _ in range(2)]
    ends = runs(pool, scripts)
    assert [e.why for e in ends] == ["ended", "ended"] and [value(sc) for sc in scripts] == [1, 1]


def test_worker_environment_holds_no_trainer_secrets():
    os.environ["RLVR_TEST_SECRET"] = "hunter2"
    try:
        p = SandboxPool(1, enable=())
        p.start()
        env = open(f"/proc/{p._workers[0].proc.pid}/environ", "rb").read()
        p.close()
    finally:
        del os.environ["RLVR_TEST_SECRET"]
    assert b"hunter2" not in env


def test_worker_is_a_fresh_interpreter_not_a_fork_of_the_trainer(pool):
    pid = pool._workers[0].proc.pid
    exe = os.path.realpath(f"/proc/{pid}/exe")
    cmdline = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    assert b"-I" in cmdline and exe == os.path.realpath(pool._python)


def test_strict_pool_refuses_to_start_without_every_layer():
    with pytest.raises(SandboxError, match="strict sandbox: .*missing.*seccomp"):
        SandboxPool(1, strict=True, enable=("rlimits",)).start()


def test_unknown_layer_name_is_a_sandbox_error():
    with pytest.raises(SandboxError, match="unknown sandbox layer"):
        SandboxPool(1, enable=("rlimits", "chroot"))


def test_missing_layers_are_announced_once_on_stderr(capsys, monkeypatch):
    import rlvr.sandbox.pool as pool_mod

    monkeypatch.setattr(pool_mod, "_warned", False)
    for _ in range(2):
        p = SandboxPool(1, enable=("rlimits",))
        p.start()
        p.close()
    assert capsys.readouterr().err.count("WITHOUT these isolation layers") == 1


def test_interpreter_the_sandbox_uid_cannot_import_is_not_chosen():
    if os.geteuid() != 0:
        pytest.skip("dropping to the sandbox uid needs root")
    base = os.path.realpath(sys.base_prefix)
    blocked = any(not (os.stat(d).st_mode & 0o001) for d in _parents(base))
    if not blocked:
        pytest.skip(f"{base} is readable by everyone here, nothing to avoid")
    python, uid, _note = choose_python(sys.executable)
    assert python != sys.executable or uid is None


def _parents(path: str) -> list[str]:
    out = []
    while path not in ("/", ""):
        out.append(path)
        path = os.path.dirname(path)
    return out


def test_memory_budget_refuses_a_huge_allocation(full_pool):
    sc = Script("x = bytearray(8 * 2**30)\n")
    runs(full_pool, [sc])
    assert sc.reply is not None and "MemoryError" in read_script(sc.reply).stderr


def test_cpu_bound_loop_is_a_timeout_not_a_crash():
    p = SandboxPool(1, Limits(timeout=1.0))
    try:
        (end,) = runs(p, [Script("while True:\n    pass\n", timeout=1.0)])
    finally:
        p.close()
    assert end.why == "timeout"


def test_a_worker_that_cannot_start_is_a_sandbox_error_with_its_reason(tmp_path, monkeypatch):
    from rlvr.sandbox import worker as worker_mod

    broken = tmp_path / "__init__.py"  # the inside package, as the worker's interpreter loads it first
    broken.write_text("raise SystemExit('harness exploded on purpose')\n")
    monkeypatch.setattr(worker_mod, "INSIDE", broken)
    with pytest.raises(SandboxError, match="exploded on purpose"):
        SandboxPool(1).start()


def test_the_worker_loads_the_inside_package_alone_and_puts_no_folder_of_ours_on_sys_path(pool):
    # rlvr/sandbox/inside/__init__.py: loaded as ``inside`` in the worker's interpreter, without
    # rlvr/__init__ or the trainer side; the forgery tests reach ``inside.child`` by this name.
    code = (
        "import sys\ndef f():\n    ours = sorted(m for m in sys.modules if m.split('.')[0] in ('inside', 'rlvr'))\n"
        "    return [ours, sys.path, hasattr(sys.modules['inside.child'], 'Server')]\n"
    )
    sc = Script(code, call("f"))
    runs(pool, [sc])
    ours, path, server = value(sc)
    assert server and {"inside", "inside.harness", "inside.child", "inside.testchild"} <= set(ours)
    assert [m for m in ours if not m.startswith("inside")] == []
    src = str(Path(rlvr.__file__).resolve().parents[1])
    assert [p for p in path if p.startswith(src)] == []


def test_threads_still_work_under_the_fork_ban(full_pool):
    code = (
        "from concurrent.futures import ThreadPoolExecutor\ndef f():\n    with ThreadPoolExecutor(4) as ex:\n"
        "        return sum(ex.map(abs, [-1, -2, 3]))\n"
    )
    sc = Script(code, call("f"))
    runs(full_pool, [sc])
    assert value(sc) == 6


def test_a_sample_can_use_files_in_its_own_workdir(full_pool):
    code = (
        "import os\ndef f():\n    open('scratch.txt', 'w').write('abc')\n"
        "    return open(os.path.join(os.getcwd(), 'scratch.txt')).read()\n"
    )
    sc = Script(code, call("f"))
    runs(full_pool, [sc])
    assert value(sc) == "abc"


def test_files_left_by_one_sample_are_gone_for_the_next(full_pool):
    plant = Script("import os\ndef f():\n    open('planted', 'w').write('x')\n    return os.getcwd()\n", call("f"))
    runs(full_pool, [plant])
    where = value(plant) + "/planted"
    looks = [Script(f"import os\ndef f():\n    return os.path.exists({where!r})\n", call("f")) for _ in range(2)]
    runs(full_pool, looks)
    assert [value(sc) for sc in looks] == [False, False]


def test_a_sample_inherits_no_module_with_a_fork_hook_yet_can_import_one(pool):
    # threading and random register fork hooks that would run in every child of the worker
    # (harness.FORK_HOOKED); a sample that needs them imports its own, and threads still work.
    from rlvr.sandbox.inside.harness import FORK_HOOKED

    code = (
        f"import sys\nbefore = [m for m in {FORK_HOOKED!r} if m in sys.modules]\nimport random, threading\n"
        "out = []\nt = threading.Thread(target=lambda: out.append(random.random() < 1))\nt.start()\nt.join()\n"
        "def f():\n    return [before, out]\n"
    )
    sc = Script(code, call("f"))
    runs(pool, [sc])
    assert value(sc) == [[], [True]]


def test_a_sample_sees_exactly_home_path_and_lang_in_its_environment(pool):
    code = "import os\ndef f():\n    return sorted(os.environ.items())\n"
    sc = Script(code, call("f"))
    runs(pool, [sc])
    env = dict(value(sc))
    assert sorted(env) == ["HOME", "LANG", "PATH"]
    assert env["PATH"] == "/nonexistent" and env["LANG"] == "C.UTF-8" and env["HOME"] not in ("", "/")
