"""The example tasks in examples/: one per built-in verifier kind. Each passes `rlvr task check`
and a smoke train (two GRPO steps on builtin:tiny, gate skipped with a reason); the judge example
runs against a fake OpenAI-compatible judge on 127.0.0.1 after calibrating it."""

from __future__ import annotations

import importlib.util
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rlvr.cli.main import main
from support.judges import reference_of, response_of

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
KINDS = {
    "math-boxed": "math",
    "json-schema": "json_schema",
    "tool-call": "tool_call",
    "unit-tests": "unit_tests",
    "judge": "judge",
}
FAST = ("math-boxed", "json-schema", "tool-call", "unit-tests")  # judge needs the fake server


class FakeJudge:
    """An OpenAI-compatible /chat/completions endpoint: CORRECT when the response's answer span
    equals the reference answer (case and hyphens ignored), INCORRECT otherwise."""

    def __init__(self) -> None:
        self.requests = 0
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.requests += 1
                text = body["messages"][0]["content"]
                ref, resp = reference_of(text), response_of(text)
                said = resp.split("<answer>")[-1].split("</answer>")[0] if "</answer>" in resp else ""
                norm = lambda s: " ".join(s.lower().replace("-", " ").split())  # noqa: E731
                word = "CORRECT" if norm(said) == norm(ref) else "INCORRECT"
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": word}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge()
    yield judge
    judge.server.shutdown()


def calibrated_judge_example(tmp_path: Path, judge: FakeJudge, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/judge pointed at the fake judge, calibrated, with the working
    directory in it (the calibration path is relative to it, as the README runs it)."""
    folder = tmp_path / "judge"
    shutil.copytree(EXAMPLES / "judge", folder)
    task = folder / "task.yaml"
    task.write_text(task.read_text().replace("http://127.0.0.1:8000/v1", judge.url))
    monkeypatch.chdir(folder)
    assert (
        main(["judge", "calibrate", "--task", "task.yaml", "--labels", "labels.jsonl", "--out", "calibration.json"])
        == 0
    )
    return task


def example(name: str, tmp_path: Path, judge: FakeJudge | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    if name == "judge":
        assert judge is not None
        return calibrated_judge_example(tmp_path, judge, monkeypatch)
    return EXAMPLES / name / "task.yaml"


# -- what every example has --------------------------------------------------------------------
def test_there_is_one_example_per_built_in_verifier_kind() -> None:
    from rlvr.task import load_task

    for name, kind in KINDS.items():
        raw = (EXAMPLES / name / "task.yaml").read_text()
        assert f"verifier: {kind}" in raw, name
        for file in ("README.md", "train.jsonl", "eval.jsonl"):
            assert (EXAMPLES / name / file).exists(), f"{name}/{file}"
        if name != "judge":
            assert any(t.verifier == kind for t in load_task(EXAMPLES / name).rewards)


def test_example_data_is_what_make_data_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_data", EXAMPLES / "make_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*.jsonl"))
    assert len(written) == 2 * len(KINDS) + 1  # train + eval each, and the judge's labels
    for rel in written:
        assert (tmp_path / rel).read_bytes() == (EXAMPLES / rel).read_bytes(), rel


@pytest.mark.parametrize("name", FAST)
def test_example_passes_task_check_with_answers_inside_the_budget(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.lengths import check_lengths
    from rlvr.task import load_task

    assert main(["task", "check", str(EXAMPLES / name)]) == 0, capsys.readouterr().err
    assert ": ok" in capsys.readouterr().out
    assert check_lengths(load_task(EXAMPLES / name)).answers_over_budget == 0


def test_the_judge_example_is_refused_until_its_judge_is_calibrated(
    tmp_path: Path, fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["task", "check", str(EXAMPLES / "judge")]) == 2
    assert "no calibration record at calibration.json" in capsys.readouterr().err
    task = calibrated_judge_example(tmp_path, fake_judge, monkeypatch)
    record = json.loads((task.parent / "calibration.json").read_text())
    assert record["passed"] and record["n"] == 60 and record["kappa"] == 1.0
    assert main(["task", "check", str(task)]) == 0


def test_the_examples_ground_truths_score_correct_under_their_own_verifier(
    tmp_path: Path, fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference completion (what SFT trains on) is correct for every term: the data, the
    task file and the verifier agree with each other."""
    from rlvr.lengths import reference_completion
    from rlvr.rewards.base import Outcome, Sample
    from rlvr.rewards.combine import prompt_text
    from rlvr.task import load_task

    for name in KINDS:
        task = load_task(example(name, tmp_path, fake_judge, monkeypatch))
        rows = task.load_split("train")[:8]
        samples = [Sample(reference_completion(task, r), r, prompt=prompt_text(task.render_prompt(r))) for r in rows]
        for scored in task.reward_set().score(samples):
            outcomes = {t: v.outcome for t, v in scored.verdicts.items()}
            assert all(o is Outcome.CORRECT for o in outcomes.values()), (name, outcomes)


def test_the_math_example_accepts_equivalent_forms_of_an_answer() -> None:
    from rlvr.rewards.base import Outcome, Sample
    from rlvr.task import load_task

    task = load_task(EXAMPLES / "math-boxed")
    row = {"question": "30/25", "answer": "6/5"}
    forms = ["\\boxed{6/5}", "\\boxed{1.2}", "\\boxed{\\frac{6}{5}}", "\\boxed{5/6}"]
    scored = task.reward_set().score([Sample(f, row, prompt="") for f in forms])
    assert [s.verdicts["correct"].outcome for s in scored] == [Outcome.CORRECT] * 3 + [Outcome.WRONG]


# -- smoke trains --------------------------------------------------------------------------------
def smoke_train(task_path: Path, run_dir: Path) -> None:
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    task = load_task(task_path)
    small = {
        "per_device_train_batch_size": 16,
        "gradient_accumulation_steps": 1,
        "num_generations": 8,
        "logging_steps": 1,
    }
    res = train(
        task,
        TrainOptions(
            run_dir=run_dir,
            max_steps=2,
            overrides=small,
            eval_every=2,
            eval_prompts=4,
            no_gate_reason="example smoke test",
            progress=False,
        ),
    )
    assert res.steps == 2 and (res.final_dir / "config.json").exists()
    logs = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [x for x in logs if "reward" in x]
    assert [x["step"] for x in steps] == [1, 2]
    for term in task.reward_set().names:
        assert f"rewards/{term}/mean" in steps[0], term
    assert any("eval/accuracy" in x for x in logs)


# Two steps of 2 prompts x 8 on builtin:tiny take 2-6 s each here: every example runs by default.
@pytest.mark.parametrize("name", list(KINDS))
def test_example_smoke_trains_two_steps_with_every_term_logged(
    name: str, tmp_path: Path, fake_judge: FakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fake_judge.requests
    smoke_train(example(name, tmp_path, fake_judge, monkeypatch), tmp_path / "run")
    if name == "judge":
        assert fake_judge.requests > before + 60  # calibration's 60, then the training samples
