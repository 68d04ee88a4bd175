"""Issue 19: one success term, used by the probe, the held-out eval, the gate and the doctor.

The regression: success was the last non-format term, so appending the overlong term that
`rlvr plan --variant dapo` and `rlvr doctor --patch` advise made it the success term, and the
probe then counted every (wrong, short) completion as a success. Each consumer test runs twice:
on a task with that term appended, and on one with a second answer-checking term and a declared
``success: correct``. In both, the other term calls the model's (always wrong) answers correct,
and the consumer must still count ``correct``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rlvr.rewards import Sample  # noqa: E402
from rlvr.settings.recipe import term_patch  # noqa: E402
from rlvr.task import Task, load_task  # noqa: E402
from support.fakes import FakeSampler
from support.tasks import make_task


def wrong(prompt: str) -> str:
    a, b = str(prompt).rstrip("=").split("+")
    return f"<answer>{int(a) + int(b) + 1}</answer>"


LENIENT = """
def anything(sample):
    \"\"\"Correct for any answer in tags: a second answer-checking term that disagrees with exact.\"\"\"
    return 1.0 if "<answer>" in sample.completion else 0.0
"""


def dapo_task(tmp_path: Path) -> Task:
    [overlong] = term_patch("dapo", {"max_completion_length": 8}, {"format", "exact"})
    return load_task(
        make_task(
            tmp_path,
            extra={"rewards": [{"name": "format", "weight": 0.1}, {"name": "correct", "verifier": "exact"}, overlong]},
        )
    )


def declared_task(tmp_path: Path) -> Task:
    """Two terms that check the answer; success: names the strict one."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "lenient.py").write_text(LENIENT)
    rewards = [
        {"name": "format", "weight": 0.1},
        {"name": "correct", "verifier": "exact"},
        {"name": "lenient", "verifier": "lenient.anything", "weight": 0.5},
    ]
    return load_task(make_task(tmp_path, extra={"rewards": rewards, "success": "correct"}))


@pytest.fixture(params=["dapo", "declared"])
def task_of(request: pytest.FixtureRequest):  # noqa: ANN201
    """A task whose success term is ``correct`` while another term calls a wrong answer correct."""
    return dapo_task if request.param == "dapo" else declared_task


def wrong_sampler() -> FakeSampler:
    """Always a well-formed, short (3 tokens), wrong answer: the overlong term scores it 0
    (outcome correct)."""
    return FakeSampler(lambda prompt, rng: wrong(prompt), token_ids=lambda t, m: (1, 2, 3))


def test_the_other_term_alone_would_call_a_wrong_answer_correct(tmp_path: Path, task_of) -> None:  # noqa: ANN001
    # Why it matters: what the old rule (the last non-format term) would have counted.
    task = task_of(tmp_path)
    verdicts = task.reward_set().score([Sample(wrong("10+10="), row={"answer": "20"})])[0].verdicts
    assert verdicts[task.rewards[-1].name].outcome.value == "correct" and verdicts["correct"].outcome.value == "wrong"
    assert task.success_term == "correct"


def test_probe_counts_the_success_term_not_the_appended_overlong_term(tmp_path: Path, task_of) -> None:  # noqa: ANN001
    from rlvr.probe import run_probe

    task = task_of(tmp_path / "task")
    report = run_probe(task, out_dir=tmp_path / "probe", k=2, max_prompts=4, sampler=wrong_sampler(), progress=False)
    assert report.success_term == "correct" and report.successes == 0


def test_held_out_eval_counts_the_success_term(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task_of) -> None:  # noqa: ANN001
    import rlvr.evaluate as ev

    task = task_of(tmp_path)
    monkeypatch.setattr(ev, "eval_sampler", lambda model, tok, task: wrong_sampler())
    res = ev.evaluate(None, None, task, task.load_split("eval"))
    assert res.correct == 0 and res.n == 8


def test_gate_classes_count_the_success_term(tmp_path: Path, task_of) -> None:  # noqa: ANN001
    from rlvr.gate.build import score

    task = task_of(tmp_path)
    rows = task.load_split("train")[:3]
    scored = score(
        task,
        task.reward_set(),
        [Sample(wrong(task.render_prompt(r)), row=r, prompt=task.render_prompt(r)) for r in rows],
    )
    assert [cls for _, _, cls in scored] == ["fail"] * 3


def test_doctor_reads_the_success_term_the_run_recorded(tmp_path: Path) -> None:
    from rlvr.doctor.readings import correctness_term
    from rlvr.doctor.table import load_run

    run = tmp_path / "run"
    run.mkdir()
    # Term names the doctor's name-based guess cannot resolve: only the record says which is success.
    lines = [{"step": s, "reward": 0.5, "rewards/points/mean": 0.5, "rewards/brevity/mean": 0.0} for s in range(1, 4)]
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run / "config.yaml").write_text(
        yaml.safe_dump({"grpo": {"learning_rate": 1e-6}, "rlvr": {"reward_terms": ["points", "brevity"]}})
    )
    assert correctness_term(load_run(run)) is None
    (run / "config.yaml").write_text(
        yaml.safe_dump(
            {"grpo": {"learning_rate": 1e-6}, "rlvr": {"reward_terms": ["points", "brevity"], "success_term": "points"}}
        )
    )
    assert correctness_term(load_run(run)) == "points"


def test_a_command_that_counts_successes_refuses_an_ambiguous_task(tmp_path: Path) -> None:
    from rlvr.errors import ConfigError
    from rlvr.probe import run_probe

    path = make_task(
        tmp_path / "task",
        extra={
            "rewards": [
                {"name": "format", "weight": 0.1},
                {"name": "correct", "verifier": "exact"},
                {"name": "loose", "verifier": "math"},
            ]
        },
    )
    with pytest.raises(ConfigError, match="could decide success"):
        run_probe(path, out_dir=tmp_path / "probe", k=2, max_prompts=2, sampler=wrong_sampler(), progress=False)
