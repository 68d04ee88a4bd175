"""rlvr.probe: statistics against simulation with a fake sampler of known per-prompt success
probabilities, each route, bad verifiers, resume and filter, the real tiny-model path, the CLI."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rlvr.errors import ConfigError, RunError
from rlvr.probe import (
    ProbeReport,
    ProbeSample,
    ProbeSettings,
    PromptStat,
    choose_prompts,
    expected_group_std,
    format_report,
    read_samples,
    read_settings,
    run_probe,
    summarize,
    wilson,
    zero_variance_share,
)
from rlvr.rewards.base import Verdict
from rlvr.rollouts import Rollout
from rlvr.task import load_task
from support.fakes import FakeSampler


def answering(p: Callable[[str], float], fail_after_calls: int | None = None) -> FakeSampler:
    """Answers prompt ``"a+b="`` correctly (in answer tags) with probability ``p(prompt)``;
    otherwise a wrong answer. Seeded by each call's seed, so reruns and resumes are reproducible."""

    def text(prompt: str, rng: random.Random) -> str:
        a, b = prompt.rstrip("=").split("+")
        right = int(a) + int(b)
        return f"<answer>{right if rng.random() < p(prompt) else right + 1}</answer>"

    return FakeSampler(text, token_ids=lambda t, m: (*range(len(t)), 2), fail_after_calls=fail_after_calls)


def make_task(root: Path, n: int = 12, extra: str = "", rewards: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"question": f"{i}+{i + 1}", "answer": str(2 * i + 1)} for i in range(n)]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rewards = rewards or "  - {name: format, weight: 0.1}\n  - {name: correct, verifier: exact}\n"
    (root / "task.yaml").write_text(
        "name: tiny-add\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
        f"answer: {{column: answer, format: tags}}\nrewards:\n{rewards}"
        f"generation: {{temperature: 1.0, max_completion_length: 8}}\n{extra}"
    )
    return root / "task.yaml"


def index_of(prompt: str) -> int:
    return int(prompt.split("+")[0])


# -- statistics -------------------------------------------------------------------------------
def test_wilson_upper_bound_with_no_successes_matches_the_closed_form() -> None:
    low, high = wilson(0, 10)
    z2 = 1.959963984540054**2
    assert low == 0.0
    assert high == pytest.approx(z2 / (10 + z2))


def test_wilson_interval_covers_the_true_rate_in_at_least_95_percent_of_seeds() -> None:
    probs = [0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.05, 0.15]  # known per-prompt rates; true rate = mean
    prompts = [f"{i}+{i + 1}=" for i in range(len(probs))]
    sampler = answering(lambda p: probs[index_of(p)])
    truth = sum(probs) / len(probs)
    hits, seeds = 0, 600
    widths = []
    for seed in range(seeds):
        groups = sampler.sample(prompts, n=8, temperature=1.0, max_new_tokens=8, seed=seed)
        s = sum(c.text == f"<answer>{2 * i + 1}</answer>" for i, g in enumerate(groups) for c in g)
        low, high = wilson(s, 8 * len(prompts))
        hits += low <= truth <= high
        widths.append(high - low)
    assert hits / seeds >= 0.93
    assert sum(widths) / seeds < 0.25  # and it is not trivially wide


def test_zero_variance_prediction_matches_a_simulation_of_groups() -> None:
    probs = [0.0, 0.05, 0.2, 0.5, 0.8, 0.95, 1.0, 0.1]
    g, k = 8, 16
    prompts = [f"{i}+{i + 1}=" for i in range(len(probs))]
    sampler = answering(lambda p: probs[index_of(p)])
    predicted, simulated = [], []
    rng = random.Random(0)
    for seed in range(200):
        groups = sampler.sample(prompts, n=k, temperature=1.0, max_new_tokens=8, seed=seed)
        counts = [(sum(c.text == f"<answer>{2 * i + 1}</answer>" for c in grp), k) for i, grp in enumerate(groups)]
        predicted.append(zero_variance_share(counts, g))
        # What training would see: fresh groups of G per prompt, zero variance when all agree.
        for p in probs:
            hits = sum(rng.random() < p for _ in range(g))
            simulated.append(hits in (0, g))
    analytic = sum(p**g + (1 - p) ** g for p in probs) / len(probs)
    assert sum(predicted) / len(predicted) == pytest.approx(analytic, abs=0.02)
    assert sum(simulated) / len(simulated) == pytest.approx(analytic, abs=0.03)


def test_zero_variance_estimate_is_unbiased_where_plugging_in_the_rate_is_not() -> None:
    p, g, k = 0.1, 8, 8
    truth = p**g + (1 - p) ** g
    rng = random.Random(1)
    ours, plug_in = [], []
    for _ in range(4000):
        s = sum(rng.random() < p for _ in range(k))
        ours.append(zero_variance_share([(s, k)], g))
        plug_in.append((s / k) ** g + (1 - s / k) ** g)
    assert sum(ours) / len(ours) == pytest.approx(truth, abs=0.02)
    assert sum(plug_in) / len(plug_in) - truth > 0.1


def test_expected_group_std_matches_a_simulation() -> None:
    import statistics

    probs, g = [0.1, 0.5, 0.9], 8
    rng = random.Random(2)
    stds = [statistics.stdev([float(rng.random() < p) for _ in range(g)]) for p in probs for _ in range(3000)]
    exact_counts = [(round(p * 1000), 1000) for p in probs]  # a large k: estimate ~ the true law
    assert expected_group_std(exact_counts, g) == pytest.approx(sum(stds) / len(stds), abs=0.01)
    assert expected_group_std([(0, 8), (8, 8)], g) == 0.0


def test_prompts_beyond_the_cap_are_a_seeded_subset_in_row_order() -> None:
    picked = choose_prompts(100, 10, seed=3)
    assert picked == sorted(picked) and len(set(picked)) == 10
    assert picked == choose_prompts(100, 10, seed=3)
    assert picked != list(range(10))
    assert choose_prompts(5, 10, seed=3) == [0, 1, 2, 3, 4]


def test_the_probed_prompts_do_not_depend_on_the_sampling_seed(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=30)
    a = run_probe(
        task, out_dir=tmp_path / "a", k=2, max_prompts=5, seed=1, sampler=answering(lambda p: 0.5), progress=False
    )
    b = run_probe(
        task, out_dir=tmp_path / "b", k=2, max_prompts=5, seed=2, sampler=answering(lambda p: 0.5), progress=False
    )
    assert [p.index for p in a.prompts] == [p.index for p in b.prompts] != list(range(5))


# -- routes -----------------------------------------------------------------------------------
def test_no_success_routes_to_sft_with_the_upper_bound(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t"), out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 0.0), progress=False
    )
    assert report.route == "sft"
    assert (report.successes, report.n_samples) == (0, 96)
    assert report.low == 0.0 and report.high == pytest.approx(wilson(0, 96)[1])
    assert f"{report.high:.1%}" in report.reason
    assert report.zero_variance_share == 1.0


def test_intermediate_rate_routes_to_grpo(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t"), out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 0.3), progress=False
    )
    assert report.route == "grpo"
    assert 0 < report.rate < 0.9
    assert report.low < 0.3 < report.high
    assert report.zero_variance_share < 0.5  # truth: 0.3^8 + 0.7^8 = 0.06
    assert "grpo" in format_report(report).lower()


def test_near_ceiling_routes_to_too_easy(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t"), out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 1.0), progress=False
    )
    assert report.route == "too-easy"


def test_too_easy_threshold_comes_from_the_task_file(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", extra="probe: {too_easy: 0.5}\n")
    report = run_probe(task, out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 0.7), progress=False)
    assert report.too_easy == 0.5
    assert report.route == "too-easy"


def test_group_size_comes_from_the_task_grpo_section(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", extra="grpo: {num_generations: 4}\n")
    report = run_probe(task, out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 0.3), progress=False)
    assert report.group_size == 4


def test_the_group_size_of_a_task_that_sets_none_is_the_recipes_as_training_resolves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.settings import recipe

    monkeypatch.setitem(recipe.RECIPE, "num_generations", 12)  # the recipe's value, wherever it is read from
    task = make_task(tmp_path / "t")
    report = run_probe(task, out_dir=tmp_path / "out", k=8, sampler=answering(lambda p: 0.3), progress=False)
    assert report.group_size == 12


BROKEN = """
from rlvr.rewards.base import Verdict

def always_fail(sample):
    raise RuntimeError("cannot reach the grader")

def flaky(sample):
    if int(sample.row["answer"]) % 4 == 1:
        raise RuntimeError("timeout")
    return 1.0 if sample.completion == "<answer>" + sample.row["answer"] + "</answer>" else 0.0
"""


def test_reward_terms_that_all_error_are_reported_as_a_verifier_problem_not_a_zero_rate(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "broken_rewards.py").write_text(BROKEN)
    rewards = (
        "  - {name: fmt, verifier: broken_rewards.always_fail, weight: 0.1}\n"
        "  - {name: correct, verifier: broken_rewards.always_fail}\n"
    )
    # Two custom terms: either could decide success, so the task names it (issue 19).
    report = run_probe(
        make_task(root, rewards=rewards, extra="success: correct\n"),
        out_dir=tmp_path / "out",
        k=4,
        sampler=answering(lambda p: 0.5),
        progress=False,
    )
    assert report.route == "fix-verifier"
    assert report.route != "sft"
    assert report.n_samples == 0 and report.n_undecided == 48
    assert "verifier problem, not a 0 % base rate" in report.reason
    assert report.term_outcomes["correct"]["error"] == 48


def test_undecided_samples_are_left_out_of_the_rate_and_warned_about(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "broken_rewards.py").write_text(BROKEN)
    rewards = "  - {name: format, weight: 0.1}\n  - {name: correct, verifier: broken_rewards.flaky}\n"
    report = run_probe(
        make_task(root, rewards=rewards),
        out_dir=tmp_path / "out",
        k=4,
        sampler=answering(lambda p: 1.0),
        progress=False,
    )
    # answers 1, 5, 9, ... (i = 0, 2, 4, ...) error: half of the 12 prompts
    assert report.n_undecided == 24 and report.n_samples == 24
    assert report.rate == 1.0
    assert any("undecided" in w for w in report.warnings)


# -- files, resume, filter --------------------------------------------------------------------
def test_samples_file_carries_what_the_inspection_gate_needs(tmp_path: Path) -> None:
    run_probe(
        make_task(tmp_path / "t", n=3), out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 1.0), progress=False
    )
    lines = [json.loads(x) for x in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 6
    first = lines[0]
    assert first["prompt_index"] == 0 and first["sample_index"] == 0
    assert first["prompt"] == "0+1="
    assert first["row"] == {"question": "0+1", "answer": "1"}
    assert first["completion"] == "<answer>1</answer>"
    assert first["n_tokens"] == len(first["completion_ids"])
    verdict = Verdict.from_json(first["scores"]["correct"])
    assert verdict.outcome.value == "correct" and verdict.answer == "1"
    assert verdict.span is not None and first["completion"][slice(*verdict.span)] == "1"
    assert set(first["scores"]) == {"format", "correct"}
    assert first["success"] is True
    assert (first["temperature"], first["max_new_tokens"]) == (1.0, 8)
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["route"] == "too-easy" and report["n_samples"] == 6


def test_an_existing_probe_is_not_overwritten_without_resume(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=3)
    run_probe(task, out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 0.5), progress=False)
    before = (tmp_path / "out" / "samples.jsonl").read_text()
    with pytest.raises(RunError, match="--resume"):
        run_probe(task, out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 0.5), progress=False)
    assert (tmp_path / "out" / "samples.jsonl").read_text() == before


def test_resume_after_an_interruption_samples_only_what_is_missing(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=20)  # k=16: 4 prompts a chunk, 5 chunks
    full = run_probe(task, out_dir=tmp_path / "full", k=16, sampler=answering(lambda p: 0.4), progress=False)
    with pytest.raises(KeyboardInterrupt):
        run_probe(
            task, out_dir=tmp_path / "cut", k=16, sampler=answering(lambda p: 0.4, fail_after_calls=2), progress=False
        )
    cut = tmp_path / "cut" / "samples.jsonl"
    assert len(cut.read_text().splitlines()) == 2 * 4 * 16
    with cut.open("a") as fh:  # a line half-written when the process died
        fh.write('{"prompt_index": 8, "sampl')
    again = answering(lambda p: 0.4)
    resumed = run_probe(task, out_dir=tmp_path / "cut", k=16, resume=True, sampler=again, progress=False)
    assert [index_of(p) for call in again.calls for p in call.prompts] == list(range(8, 20))
    assert cut.read_text() == (tmp_path / "full" / "samples.jsonl").read_text()
    assert resumed.to_json() | {"out_dir": ""} == full.to_json() | {"out_dir": ""}


def test_resuming_a_finished_probe_samples_nothing(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=10)  # k=16: chunks of 4, 4 and a short last one of 2
    first = run_probe(task, out_dir=tmp_path / "out", k=16, sampler=answering(lambda p: 0.4), progress=False)
    before = (tmp_path / "out" / "samples.jsonl").read_text()
    idle = answering(lambda p: 0.4, fail_after_calls=0)  # raises if asked for anything
    again = run_probe(task, out_dir=tmp_path / "out", k=16, resume=True, sampler=idle, progress=False)
    assert (tmp_path / "out" / "samples.jsonl").read_text() == before
    assert again.successes == first.successes and again.n_samples == 160


def test_resume_with_other_settings_is_refused(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=3)
    run_probe(task, out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 0.5), progress=False)
    with pytest.raises(RunError, match="k"):
        run_probe(task, out_dir=tmp_path / "out", k=4, resume=True, sampler=answering(lambda p: 0.5), progress=False)


def test_filter_keeps_exactly_the_prompts_with_a_pass_rate_strictly_between_0_and_1(tmp_path: Path) -> None:
    probs = {0: 0.0, 1: 1.0, 2: 0.5, 3: 0.5, 4: 0.0, 5: 0.5}
    report = run_probe(
        make_task(tmp_path / "t", n=6),
        out_dir=tmp_path / "out",
        k=16,
        filter=True,
        sampler=answering(lambda p: probs[index_of(p)]),
        progress=False,
    )
    rows = [json.loads(x) for x in Path(report.filtered_path or "").read_text().splitlines()]
    assert [r["question"] for r in rows] == ["2+3", "3+4", "5+6"]
    assert report.n_filtered == 3
    # the filtered file is a valid training split for the same task
    task_text = (
        (tmp_path / "t" / "task.yaml").read_text().replace("train: train.jsonl", f"train: {report.filtered_path}")
    )
    (tmp_path / "t" / "task.yaml").write_text(task_text)
    assert len(load_task(tmp_path / "t" / "task.yaml").load_split("train")) == 3


def test_bad_probe_settings_list_every_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        run_probe(
            make_task(tmp_path / "t"),
            out_dir=tmp_path / "out",
            k=0,
            max_prompts=0,
            sampler=answering(lambda p: 0.5),
            progress=False,
        )
    assert len(err.value.problems) == 2


def test_summarize_needs_no_model_or_files() -> None:
    stats = [PromptStat(0, 0, 8), PromptStat(1, 4, 8), PromptStat(2, 8, 8)]
    report = summarize(
        stats,
        k=8,
        group_size=8,
        too_easy=0.9,
        task="t",
        model="m",
        success_term="c",
        temperature=1.0,
        max_new_tokens=8,
        backend="fake",
        seed=0,
    )
    assert report.rate == 0.5 and report.route == "grpo"
    assert dict(report.histogram) == {
        "0": 1,
        "(0, 0.25)": 0,
        "[0.25, 0.5)": 0,
        "[0.5, 0.75)": 1,
        "[0.75, 1)": 0,
        "1": 1,
    }
    # k == G: each prompt's only group of 8 is its 8 samples; 4 of 8 is never zero-variance
    assert report.zero_variance_share == pytest.approx(2 / 3)
    json.dumps(report.to_json())


def test_a_probe_sample_survives_a_json_round_trip() -> None:
    verdicts = {"format": Verdict.correct(0.5), "correct": Verdict.error("timeout", kind="timeout")}
    sample = ProbeSample(
        rollout=Rollout(
            3,
            "Add.\n3+4=",
            {"question": "3+4", "answer": "7"},
            "<answer>7</answer>",
            (5, 6, 7),
            "length",
            None,
            verdicts,
            None,
        ),
        sample_index=1,
        success=None,
        temperature=0.7,
        max_new_tokens=64,
        messages=({"role": "system", "content": "Add."}, {"role": "user", "content": "3+4="}),
    )
    assert ProbeSample.from_json(json.loads(sample.line())) == sample


def test_probe_settings_survive_a_json_round_trip(tmp_path: Path) -> None:
    run_probe(
        make_task(tmp_path / "t", n=3), out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 0.5), progress=False
    )
    settings = read_settings(tmp_path / "out")
    assert ProbeSettings.from_json(json.loads(json.dumps(settings.to_json()))) == settings
    assert settings.k == 2 and settings.prompt_indices == (0, 1, 2)


def test_a_probe_report_survives_a_json_round_trip(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t", n=6),
        out_dir=tmp_path / "out",
        k=4,
        filter=True,
        sampler=answering(lambda p: 0.5),
        progress=False,
    )
    assert report.prompts and report.lengths is not None
    assert ProbeReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    assert ProbeReport.from_json(json.loads((tmp_path / "out" / "report.json").read_text())) == report


def test_every_line_of_samples_jsonl_reads_back_as_a_probe_sample(tmp_path: Path) -> None:
    run_probe(
        make_task(tmp_path / "t", n=3), out_dir=tmp_path / "out", k=2, sampler=answering(lambda p: 1.0), progress=False
    )
    samples = [s for _, s in read_samples(tmp_path / "out" / "samples.jsonl")]
    assert [(s.rollout.prompt_index, s.sample_index) for s in samples] == [(i, j) for i in range(3) for j in range(2)]
    assert all(s.success is True and s.rollout.verdicts["correct"].answer == s.rollout.row["answer"] for s in samples)


# -- the real tiny model ----------------------------------------------------------------------
class Interrupting:
    """Wraps a real sampler and interrupts after some calls, like Ctrl-C mid-probe."""

    def __init__(self, inner: Any, after: int) -> None:
        self.inner, self.after, self.calls = inner, after, 0
        self.backend = inner.backend

    def sample(self, *args: Any, **kw: Any) -> Any:
        if self.calls >= self.after:
            raise KeyboardInterrupt
        self.calls += 1
        return self.inner.sample(*args, **kw)


def test_tiny_model_end_to_end_with_resume_and_filter(tmp_path: Path) -> None:
    from rlvr.generate import make_sampler

    task = make_task(tmp_path / "t", n=8)
    sampler = make_sampler("builtin:tiny", backend="transformers", device="cpu")
    full = run_probe(task, out_dir=tmp_path / "full", k=16, filter=True, sampler=sampler, progress=False)
    assert full.route == "sft"  # random weights: nothing succeeds
    assert full.n_samples == 8 * 16 and full.successes == 0
    with pytest.raises(KeyboardInterrupt):
        run_probe(task, out_dir=tmp_path / "cut", k=16, sampler=Interrupting(sampler, after=1), progress=False)
    # without a sampler: loads builtin:tiny itself, and samples only the second chunk
    resumed = run_probe(
        task, out_dir=tmp_path / "cut", k=16, resume=True, filter=True, progress=False, backend="transformers"
    )
    assert (tmp_path / "cut" / "samples.jsonl").read_text() == (tmp_path / "full" / "samples.jsonl").read_text()
    assert resumed.route == "sft" and resumed.n_filtered == 0
    assert Path(resumed.filtered_path or "").read_text() == ""


def test_chat_prompts_are_rendered_by_the_chat_template_and_stored_with_their_messages(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", n=2)
    text = (
        (tmp_path / "t" / "task.yaml")
        .read_text()
        .replace("prompt: {template: '{question}='}", "prompt: {system: 'Add.', user: '{question}='}")
    )
    (tmp_path / "t" / "task.yaml").write_text(text)
    report = run_probe(task, out_dir=tmp_path / "out", k=2, progress=False)
    assert report.n_samples == 4
    first = json.loads((tmp_path / "out" / "samples.jsonl").read_text().splitlines()[0])
    assert first["messages"] == [{"role": "system", "content": "Add."}, {"role": "user", "content": "0+1="}]
    assert "0+1=" in first["prompt"]


def test_the_default_model_is_the_tasks_built_in_model(tmp_path: Path) -> None:
    report = run_probe(make_task(tmp_path / "t", n=2), out_dir=tmp_path / "out", k=2, progress=False)
    assert report.model == "builtin:tiny" and report.backend == "transformers"
    assert report.n_samples == 4


# -- the CLI ----------------------------------------------------------------------------------
def cli(argv: list[str]) -> int:
    from rlvr.cli.main import main

    return main(argv)


def test_cli_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli(["probe", "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--resume" in out and "--filter" in out


def test_cli_bad_argument_is_one_line_and_nonzero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["probe", str(make_task(tmp_path / "t")), "-k", "0", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "-k" in err
    with pytest.raises(SystemExit) as exit_:
        cli(["probe", str(make_task(tmp_path / "t")), "-k", "many"])
    assert exit_.value.code == 2


def test_cli_missing_task_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["probe", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "nope.yaml" in err and err.count("\n") == 0


def test_cli_probes_the_tiny_task_and_prints_the_route(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = make_task(tmp_path / "t", n=4)
    assert cli(["probe", str(task), "-k", "4", "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "route: SFT" in out and "0/16" in out
    assert (
        cli(["probe", str(task), "-k", "4", "--out", str(tmp_path / "o"), "--resume", "--json", "--no-progress"]) == 0
    )
    assert json.loads(capsys.readouterr().out)["route"] == "sft"


def test_cli_exits_nonzero_when_the_verifier_decides_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    (root / "broken_rewards.py").write_text(BROKEN)
    rewards = (
        "  - {name: fmt, verifier: broken_rewards.always_fail}\n"
        "  - {name: correct, verifier: broken_rewards.always_fail}\n"
    )
    task = make_task(root, n=2, rewards=rewards, extra="success: correct\n")
    assert cli(["probe", str(task), "-k", "2", "--out", str(tmp_path / "o"), "--no-progress"]) == 1


# -- the GPU benchmark script, on a machine without a GPU -------------------------------------
def test_gpu_probe_script_runs_its_cpu_fallback_and_says_what_it_did_not_measure(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: run bench/gpu_probe.sh itself")
    root = Path(__file__).resolve().parents[2]
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "OUT": str(tmp_path),
        "PROBE_PROMPTS": "4",
        "PROBE_K": "2",
        "OMP_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        ["bash", str(root / "bench" / "gpu_probe.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "RESULT backend=transformers device=cpu" in proc.stdout
    assert "not measured: GPU throughput" in proc.stdout
    assert "not measured: 0.5B-shaped model" in proc.stdout
    saved = json.loads((tmp_path / "gpu_probe.json").read_text())
    assert saved["results"][0]["completions"] == 8 and saved["results"][0]["completions_per_s"] > 0


def test_a_trained_model_is_not_called_the_base_model_in_the_route_reason() -> None:
    stats = [PromptStat(0, 1, 8), PromptStat(1, 4, 8), PromptStat(2, 2, 8)]
    meta = {"task": "t", "model": "m", "success_term": "c", "temperature": 1.0, "max_new_tokens": 8}
    base = summarize(stats, k=8, group_size=8, too_easy=0.9, backend="f", seed=0, **meta)
    assert base.route == "grpo" and "the base model has the capability" in base.reason
    after = summarize(stats, k=8, group_size=8, too_easy=0.9, backend="f", seed=0, trained_by="sft then grpo", **meta)
    assert after.route == "grpo" and "base model" not in after.reason
    assert "this model (trained: sft then grpo) has the capability" in after.reason


def test_the_filter_advice_says_how_to_train_on_the_filtered_rows() -> None:
    from dataclasses import replace

    from rlvr.probe.report import format_report

    stats = [PromptStat(0, 0, 8), PromptStat(1, 4, 8), PromptStat(2, 8, 8)]
    meta = {"task": "t", "model": "m", "success_term": "c", "temperature": 1.0, "max_new_tokens": 8}
    report = summarize(stats, k=8, group_size=8, too_easy=0.9, backend="f", seed=0, n_train_rows=40, **meta)
    (advice,) = [w for w in report.warnings if "--filter" in w]
    assert "--filter --max-prompts 40" in advice and "point data.train at the filtered.jsonl" in advice
    filtered = replace(report, filtered_path="/p/filtered.jsonl", n_filtered=1)
    assert "only the 3 probed of 40 train rows were filtered" in format_report(filtered)
