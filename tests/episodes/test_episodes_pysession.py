"""The python tool's session (``environment.python_session: true``): within one episode a call
sees the names earlier successful calls defined, by replay in one sandboxed script per call;
episodes never share it, and nothing a cell does makes the model read replayed output."""

from __future__ import annotations

import contextlib
import io
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.episodes import EpisodeRunner, ToolSession, build_toolbox, prepare_tokenizer, read_environment
from rlvr.episodes import pytool as pytool_module
from rlvr.episodes.environment import session_of, trl_environment
from rlvr.episodes.pytool import CellOutcome, session_program
from rlvr.episodes.spec import EnvironmentSpec
from rlvr.episodes.tools import ToolBox
from support.fakes import FakeSampler
from support.grpo import tiny_grpo_args

# Reads the fd it writes to: /dev/null (a character device) only while the script replays it.
REPLAYING = "import os, stat\nreplaying = stat.S_ISCHR(os.fstat(1).st_mode)\n"


def make_spec(tmp: Path, **raw: Any) -> EnvironmentSpec:
    base: dict[str, Any] = {"tools": ["python"], "timeout": 1, "python_session": True, "max_tool_calls": 50}
    spec, problems = read_environment({**base, **raw}, tmp, "task.yaml")
    assert spec is not None, problems
    return spec


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> EnvironmentSpec:
    return make_spec(tmp_path_factory.mktemp("t"))


@pytest.fixture(scope="module")
def box(spec: EnvironmentSpec) -> ToolBox:
    return build_toolbox(spec)


@pytest.fixture
def session(box: ToolBox, spec: EnvironmentSpec) -> ToolSession:
    s = ToolSession(box, spec)
    s.reset()
    return s


def run(session: ToolSession, code: str) -> str:
    return str(session.call("python", {"code": code}).result)


def test_later_calls_see_the_names_earlier_calls_defined(session: ToolSession) -> None:
    assert run(session, "import math\nx = 41") == "(no output)"
    assert run(session, "def f(n):\n    return math.factorial(n) + x") == "(no output)"
    assert run(session, "print(f(3), x + 1)") == "47 42\n"


def test_cells_run_in_a_fresh_main_module_of_their_own(session: ToolSession) -> None:
    cell = "from dataclasses import dataclass\nimport pickle\n@dataclass\nclass P:\n    x: 'int'"
    assert run(session, cell) == "(no output)"
    assert run(session, "print(pickle.loads(pickle.dumps(P(1))), __name__)") == "P(x=1) __main__\n"
    assert (
        run(session, "print(sorted(k for k in globals() if not k.startswith('__')))")
        == "['P', 'dataclass', 'pickle']\n"
    )


def test_the_toolbox_tells_the_model_names_are_kept_and_a_toolbox_call_alone_is_a_fresh_session(box: ToolBox) -> None:
    assert "stay defined" in box.tools["python"].schema["function"]["description"]
    assert box.call("python", {"code": "y = 5"}).content == "(no output)"
    assert "NameError" in (box.call("python", {"code": "print(y)"}).error or "")


def test_episodes_never_share_a_session(box: ToolBox, spec: EnvironmentSpec) -> None:
    a, b = ToolSession(box, spec), ToolSession(box, spec)
    assert run(a, "secret = 'a-only'") == "(no output)"
    assert run(b, "print(secret)").startswith("error: RuntimeError: NameError")
    assert run(a, "print(secret)") == "a-only\n"


def test_reset_starts_an_empty_session(session: ToolSession) -> None:
    run(session, "kept = 1")
    session.reset()
    assert run(session, "print(kept)").startswith("error: RuntimeError: NameError")
    assert session.python is not None and session.python.cells == []


def test_a_trl_environment_keeps_the_session_until_reset_and_instances_are_apart(
    box: ToolBox, spec: EnvironmentSpec
) -> None:
    factory = trl_environment(box, spec)
    one, two = factory(), factory()
    one.reset(question="q1")
    two.reset(question="q2")
    assert one.python(code="n = 7") == "(no output)"
    assert one.python(code="print(n * 6)") == "42\n"
    assert two.python(code="print(n)").startswith("error: RuntimeError: NameError")
    one.reset(question="q3")  # TRL reuses pooled instances: the next episode starts empty
    assert one.python(code="print(n)").startswith("error: RuntimeError: NameError")
    s = session_of(one)
    assert s is not None and [c.kind for c in s.calls] == ["failed"]


def test_the_runner_gives_each_episode_its_own_session(tmp_path: Path) -> None:
    from rlvr.models import load_tokenizer

    tok = prepare_tokenizer(load_tokenizer("builtin:tiny"))
    code = "try:\n    n\nexcept NameError:\n    n = 0\nn += 1\nprint(n)"
    call = "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"

    def rule(prompt: str, rng: Any) -> str:
        return call if prompt.count("<|tool|>") < 3 else "<answer>done</answer>"

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + "</s>", add_special_tokens=False)["input_ids"])

    spec = make_spec(tmp_path, max_turns=4)
    r = EpisodeRunner(FakeSampler(rule, token_ids=ids), tok, spec, build_toolbox(spec))
    prompt = [{"role": "user", "content": "count"}]
    groups = r.run([prompt, prompt], [{}, {}], n=2, temperature=0.7, max_completion_length=2000, seed=0)
    for ep in [e for g in groups for e in g]:
        assert ep.results == ("1\n", "2\n", "3\n"), ep.results


def test_a_cell_that_raised_is_not_replayed(session: ToolSession) -> None:
    assert run(session, "a = 1") == "(no output)"
    assert run(session, "b = 2\nraise ValueError('no')") == "error: RuntimeError: ValueError: no"
    assert run(session, "print(a)") == "1\n"
    assert run(session, "print(b)").startswith("error: RuntimeError: NameError")  # a live kernel would have b
    assert session.python is not None and session.python.cells == ["a = 1", "print(a)"]


def test_replayed_output_never_reaches_the_model(session: ToolSession) -> None:
    assert (
        run(session, "import os, sys\nprint('EARLIER-1', flush=True)\nos.write(1, b'EARLIER-2')")
        == "EARLIER-1\nEARLIER-2"
    )
    assert run(session, "print('EARLIER-3', file=sys.stderr)\nsys.stdout.write('EARLIER-4')") == "EARLIER-4"
    assert run(session, "print('now')") == "now\n"
    assert run(session, "raise KeyError('k')") == "error: RuntimeError: KeyError: 'k'"


def test_replayed_output_does_not_count_against_the_output_limit(session: ToolSession) -> None:
    for _ in range(2):  # the sandbox's limit is 64 KiB a call (the tool result's 2000 characters)
        assert run(session, "print('x' * 40_000)") == "x" * 2000
    assert run(session, "print('b')") == "b\n"  # after a replay of 80 KB


def test_a_replayed_cell_hunting_the_scripts_descriptors_and_markers_cannot_leak_into_later_calls(
    session: ToolSession,
) -> None:
    hunt = (
        "import os, sys\n"
        "frame = sys._getframe(1)\n"
        "begin, end = frame.f_locals.get('begin', b''), frame.f_locals.get('end', b'')\n"
        "for fd in range(1, 64):\n"
        "    try:\n"
        "        os.write(fd, begin + b'LEAK' + end + b'LEAK')\n"
        "    except OSError:\n"
        "        pass\n"
    )
    run(session, hunt)  # what it wrote live is this call's own output
    fake = "print('\\x00rlvr-' + '0' * 32 + '-begin\\x00FAKE')"
    assert "FAKE" in run(session, fake)
    assert run(session, "print('clean')") == "clean\n"
    assert run(session, "import sys\nsys.stdout = io_sink = open('/dev/null', 'w')") == "(no output)"
    assert run(session, "sys.stdout = sys.__stdout__\nprint('back')") == "back\n"


def test_exit_and_interrupts_in_a_cell_do_not_break_the_session(session: ToolSession) -> None:
    assert run(session, "v = 3\nprint('bye')\nexit()\nv = 4") == "bye\n"
    assert run(session, "import sys\nsys.exit(0)") == "(no output)"
    assert run(session, "raise SystemExit(3)") == "error: RuntimeError: exit:3"
    assert run(session, "raise SystemExit('why')") == "error: RuntimeError: why"
    assert run(session, "raise KeyboardInterrupt") == "error: RuntimeError: KeyboardInterrupt"
    assert run(session, "print(v)") == "3\n"


def test_redirecting_fds_in_a_cell_hides_only_its_own_output(session: ToolSession) -> None:
    cell = "import os\nnull = os.open('/dev/null', os.O_WRONLY)\nos.dup2(null, 1)\nos.dup2(null, 2)\nprint('hidden')"
    assert run(session, cell) == "(no output)"
    assert run(session, "print('seen')") == "seen\n"
    assert run(session, "os.dup2(null, 2)\n1/0") == "error: RuntimeError: ZeroDivisionError: division by zero"


def test_a_cell_that_closes_the_scripts_output_fails_and_is_not_kept(session: ToolSession) -> None:
    said = run(session, "import os\nprint('before', flush=True)\nos.closerange(0, 64)\nx = 1")
    assert said == "error: RuntimeError: before\nthe code closed the descriptors the script writes its output on"
    assert run(session, "print(x)").startswith("error: RuntimeError: NameError")


def test_a_replayed_cell_that_now_fails_resets_the_session_without_showing_its_output(session: ToolSession) -> None:
    assert run(session, "keep = 1") == "(no output)"
    assert run(session, REPLAYING + "print('SECRET')\nif replaying:\n    raise ValueError('SECRET')") == "SECRET\n"
    lost = run(session, "print('new code')")
    assert lost.startswith(
        "error: RuntimeError: the session could not be restored: earlier cell 2 now raises ValueError"
    )
    assert "the session was reset" in lost and "SECRET" not in lost and "new code" not in lost
    assert run(session, "print(keep)").startswith("error: RuntimeError: NameError")  # reset: empty
    assert run(session, "print('fresh')") == "fresh\n"


@pytest.mark.parametrize(
    "then, said",
    [
        ("raise SystemExit(5)", "earlier cell 1 now exits with status 5"),
        ("os._exit(0)", "the replay ended with exit:0"),
        ("os.closerange(3, 64)", "the replay ended with exit:86"),
        ("[os.dup2(os.open('/dev/null', os.O_WRONLY), fd) for fd in range(3, 20)]", "the replay ended with exit:86"),
    ],
)
def test_a_replayed_cell_that_exits_or_closes_the_scripts_output_resets_the_session(
    session: ToolSession, then: str, said: str
) -> None:
    assert run(session, REPLAYING + f"if replaying:\n    {then}") == "(no output)"
    lost = run(session, "print('x')")
    assert lost.startswith("error: RuntimeError: the session could not be restored: ") and said in lost
    assert run(session, "print('fresh')") == "fresh\n"


def test_a_cell_that_ends_the_process_resets_the_session(session: ToolSession) -> None:
    assert run(session, "a = 1") == "(no output)"
    said = run(session, "import os\nos._exit(0)")
    assert said == "error: RuntimeError: the code ended the Python process (exit:0); the session was reset: " + (
        "names from earlier calls are gone"
    )
    assert run(session, "print(a)").startswith("error: RuntimeError: NameError")


def test_model_text_stays_a_string_literal_of_the_script() -> None:
    nasty = "'''\n\"\"\")\\\nprint('INJECTED')#\x00\ud800\\x00 é"
    program = session_program([nasty], nasty, 1.0, 7, "ab")
    compile(program, "<s>", "exec")  # the script itself always parses
    assert program.count("INJECTED") == 2 and "\x00" not in program.split("raise SystemExit")[0]


def test_quotes_backslashes_nuls_and_surrogates_in_cells(session: ToolSession) -> None:
    cell = 's = \'it\\\'s "q" \\\\ \\x00\' + "\ud800é"\nprint(repr(s))'
    first = run(session, cell)
    assert (
        first == repr('it\'s "q" \\ \x00' + "\ufffd" * 3 + "é") + "\n"
    )  # a surrogate reads as a per-call program would
    assert run(session, "print(repr(s))") == first
    assert run(session, "'''\n\"\"\")\nprint('INJECTED')#").startswith("error: RuntimeError: SyntaxError")
    assert run(session, "x = 'a\x00b'").startswith("error: RuntimeError: ValueError: source code string cannot")
    assert run(session, "import sys\nsys.stdout.buffer.write(b'\\xff')\nprint()") == "\ufffd\n"


def test_a_huge_cell_runs_and_is_replayed(session: ToolSession) -> None:
    big = "blob = '" + "\\\\\"x\\'" * 40_000 + "'\nprint(len(blob))"  # each repeat: \\"x\' in the source
    assert run(session, big) == "160000\n"
    assert run(session, "print(blob[:4])") == "\\\"x'\n"


def test_the_per_call_timeout_stops_the_new_cell_and_the_session_stays(session: ToolSession) -> None:
    assert run(session, "kept = 1") == "(no output)"
    assert run(session, "while True:\n    pass") == "error: TimeoutError: the program ran past 1 s and was stopped"
    assert run(session, "print(kept + 1)") == "2\n"  # a timed-out cell is not kept; the session is


def test_each_replayed_cell_gets_its_own_timeout(session: ToolSession) -> None:
    assert run(session, "import time\ntime.sleep(0.6)\nslow = 1") == "(no output)"
    # The script replays 0.6 s and then sleeps 0.6 s more: over 1 s in all, under 1 s a cell.
    assert run(session, "time.sleep(0.6)\nprint(slow)") == "1\n"


def test_code_that_disables_the_timer_is_still_stopped_by_the_sandbox(session: ToolSession) -> None:
    cell = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass"
    assert run(session, cell) == "error: TimeoutError: the program ran past 1 s and was stopped"


def test_threads_are_joined_after_their_cell_and_atexit_handlers_never_run(session: ToolSession) -> None:
    cell = "import threading, time, atexit\natexit.register(print, 'bye')\n"
    cell += "threading.Thread(target=lambda: (time.sleep(0.05), print('late'))).start()"
    assert run(session, cell) == "late\n"
    assert run(session, "print('next')") == "next\n"


def test_a_replayed_cell_past_its_time_resets_the_session(session: ToolSession) -> None:
    assert run(session, REPLAYING + "while replaying:\n    pass") == "(no output)"
    lost = run(session, "print('x')")
    assert "could not be restored: earlier cell 1 ran past 1 s" in lost


def test_a_cell_the_toolbox_gave_up_on_is_not_kept_when_it_finishes_late(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow_run(cells: Any, code: str, timeout: float, seed: int) -> CellOutcome:
        entered.set()
        release.wait(5)
        return CellOutcome("ok", "late")

    monkeypatch.setattr(pytool_module, "run_cell", slow_run)
    monkeypatch.setattr(pytool_module, "GRACE", 0.0)
    monkeypatch.setattr(pytool_module, "SLACK", 0.0)
    spec = make_spec(tmp_path, timeout=0.05)
    session = ToolSession(build_toolbox(spec), spec)
    assert session.python is not None
    session.python.cells.append("a = 1")
    call = session.call("python", {"code": "b = 2"})
    assert call.kind == "timeout" and entered.is_set()  # the toolbox stopped waiting; the call still runs
    release.set()
    for t in threading.enumerate():
        if t.name == "rlvr-tool-python":  # ToolBox.call's thread: the late call has finished once it ends
            t.join(5)
    assert session.python.cells == ["a = 1"]
    assert session.call("python", {"code": "c = 3"}).result == "late"
    assert session.python.cells == ["a = 1", "c = 3"]  # later calls are kept again


def test_random_draws_repeat_on_replay_within_a_session(session: ToolSession) -> None:
    first = run(session, "import random\nr = random.random()\nprint(r)")
    assert run(session, "print(r)") == first
    session.reset()
    assert run(session, "import random\nprint(random.random())") != first  # a new session, a new seed


def test_nothing_a_cell_does_crashes_the_caller_and_the_next_episode_is_clean(session: ToolSession) -> None:
    cells = [
        "import os\nos.closerange(0, 64)",
        "import os, signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nprint('ignored')",
        "import sys\nsys.stdout.close()",
        "import sys\nsys.stderr = None\n1/0",
        "import threading\nthreading.Thread(target=lambda: print('daemon'), daemon=True).start()",
        "print('x' * 200_000)",
        "import gc\nfor o in gc.get_objects():\n    pass",
        "import builtins, os\nbuiltins.exec = builtins.compile = os.dup2 = os.write = None\nSystemExit = None",
    ]
    for cell in cells:
        assert isinstance(session.call("python", {"code": cell}).result, str)
    assert run(session, "y = 2") == "(no output)"  # the script's own names were bound before any cell ran
    session.reset()
    assert run(session, "print('clean')") == "clean\n"


def test_the_option_is_checked_with_one_line_errors(tmp_path: Path) -> None:
    spec, problems = read_environment({"tools": ["python"], "python_session": "yes"}, tmp_path, "task.yaml")
    assert spec is None and [str(p.where) for p in problems] == ["task.yaml: environment.python_session"]
    spec, problems = read_environment({"tools": ["calculator"], "python_session": True}, tmp_path, "task.yaml")
    assert spec is None and "needs the python tool" in problems[0].what
    spec, _ = read_environment({"tools": ["python"]}, tmp_path, "task.yaml")
    assert spec is not None and not spec.python_session


_NAMES = ["v0", "v1", "v2"]
_cell = st.one_of(
    st.builds(lambda v, n: f"{v} = {n}", st.sampled_from(_NAMES), st.integers(-99, 99)),
    st.builds(lambda v, w, n: f"{v} = {w} + {n}", st.sampled_from(_NAMES), st.sampled_from(_NAMES), st.integers(0, 9)),
    st.builds(lambda v: f"print({v})", st.sampled_from(_NAMES)),
    st.builds(lambda v, w: f"print({v}, {w} * 2)", st.sampled_from(_NAMES), st.sampled_from(_NAMES)),
)


def _plain(cells: list[str]) -> list[str]:
    """What each cell gives in one plain CPython namespace, in the tool's words."""
    ns: dict[str, Any] = {}
    said = []
    for cell in cells:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(cell, ns)  # noqa: S102 - the test's own generated single statements
        except Exception as exc:  # noqa: BLE001
            said.append(f"error: RuntimeError: {type(exc).__name__}: {exc}")
            continue
        said.append(out.getvalue() or "(no output)")
    return said


@settings(max_examples=15, deadline=None)
@given(st.lists(_cell, min_size=1, max_size=6))
def test_a_session_answers_as_one_plain_namespace_would(box: ToolBox, spec: EnvironmentSpec, cells: list[str]) -> None:
    session = ToolSession(box, spec)
    assert [run(session, c) for c in cells] == _plain(cells)


@pytest.mark.slow
def test_trls_tool_loop_keeps_each_rollouts_session_and_resets_pooled_instances(tmp_path: Path) -> None:
    """Two real GRPOTrainer steps on builtin:tiny whose turns are scripted: every rollout calls a
    counter cell twice; each reads 1 then 2 in both steps (TRL reuses its pooled instances)."""
    import os

    from datasets import Dataset
    from trl import GRPOTrainer

    from rlvr.episodes.training import trainer_setup
    from rlvr.models import load_model, load_tokenizer
    from rlvr.rewards import AnswerFormat, build_verifier
    from rlvr.rewards.combine import Term
    from support.grpo import episode_reward_set

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    spec = make_spec(tmp_path, max_turns=4, timeout=2)
    rewards = episode_reward_set(spec, Term("correct", build_verifier("exact", {}, AnswerFormat(), search=tmp_path)))
    tok = load_tokenizer("builtin:tiny")
    args = tiny_grpo_args(tmp_path, 400, max_steps=2)
    extra = trainer_setup(spec, "task.yaml", tok, args)
    code = "try:\n    n\nexcept NameError:\n    n = 0\nn += 1\nprint(n)"
    call = "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + "</tool_call>"
    seen: list[list[list[str]]] = []

    class Scripted(GRPOTrainer):  # type: ignore[misc]
        def _generate_single_turn(self, prompt_ids: Any, *a: Any, **k: Any) -> tuple[list[list[int]], None]:
            texts = [call if tok.decode(ids).count("<|tool|>") < 2 else "<answer>2</answer>" for ids in prompt_ids]
            return [tok(t + "</s>", add_special_tokens=False)["input_ids"] for t in texts], None

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            result = super()._generate_and_score_completions(inputs)
            sessions = [session_of(e) for e in self.environments]
            seen.append([[str(c.result) for c in s.calls] if s is not None else [] for s in sessions])
            return result

    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "count"}], "answer": "2"}] * 8)
    trainer = Scripted(
        model=load_model("builtin:tiny"),
        reward_funcs=rewards.trl_functions(),
        args=args,
        train_dataset=data,
        processing_class=tok,
        **extra,
    )
    trainer.train()
    assert seen == [[["1\n", "2\n"]] * 4] * 2
