"""rlvr.lengths: the generation budget against the answers the format requires and the model's
positions, and what the probe, SFT and train do with it. Each observed failure of issue 14 is
reproduced on builtin:tiny: a budget that cuts off most probe samples (the probe advised SFT
without a word about truncation), a budget past the model's positions (training printed nothing
for minutes), SFT targets longer than the budget (trained without a warning)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from rlvr.errors import ConfigError
from rlvr.lengths import Spread, check_lengths, max_positions, reference_completion, require_fit, truncation_reason
from rlvr.probe import format_report, run_probe
from rlvr.task import load_task
from support.fakes import FakeSampler

LONG = "1234567890" * 3  # a 30-character answer: 33 tokens with its tags and EOS on builtin:tiny


def make_task(
    root: Path,
    *,
    budget: int,
    answers: Sequence[str] = ("3", "5", "7", "9"),
    fmt: str = "{column: answer, format: tags}",
    extra: str = "",
) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"question": f"{i}+{i + 1}", "answer": a} for i, a in enumerate(answers)]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "task.yaml").write_text(
        "name: lengths\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
        f"answer: {fmt}\nrewards:\n  - {{name: format, weight: 0.1}}\n  - {{name: correct, verifier: exact}}\n"
        f"generation: {{temperature: 1.0, max_completion_length: {budget}}}\n{extra}"
    )
    return root / "task.yaml"


def fixed_sampler(text: str, finish_reason: str) -> FakeSampler:
    """Every completion is ``text`` with ``finish_reason``, as long as the token budget."""
    return FakeSampler(text, finish_reason=finish_reason, token_ids=lambda t, max_new: tuple(range(max_new)))


# -- measuring ---------------------------------------------------------------------------------
def test_spread_uses_nearest_rank_percentiles() -> None:
    assert Spread.of(list(range(1, 101))) == Spread(50, 95, 100)
    assert Spread.of([7]) == Spread(7, 7, 7)
    assert Spread.of([]) == Spread(0, 0, 0)


def test_reference_answers_are_measured_in_the_required_format_with_eos(tmp_path: Path) -> None:
    # builtin:tiny: one token per character, one per tag; "<answer>3</answer>" is 3 tokens + EOS.
    task = load_task(make_task(tmp_path / "tags", budget=16))
    assert check_lengths(task).answer == Spread(4, 4, 4)
    boxed = load_task(make_task(tmp_path / "boxed", budget=16, fmt="{column: answer, format: boxed}"))
    assert reference_completion(boxed, {"answer": "3"}) == "\\boxed{3}"
    assert check_lengths(boxed).answer == Spread(10, 10, 10)
    think = load_task(make_task(tmp_path / "think", budget=16, fmt="{column: answer, format: tags, think: required}"))
    assert reference_completion(think, {"answer": "3"}) == "<think></think><answer>3</answer>"
    report = check_lengths(think)
    assert report.answer == Spread(6, 6, 6)
    assert any("think block" in w for w in report.warnings())


def test_a_non_string_answer_is_measured_as_compact_json(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "t", budget=16))
    assert (
        reference_completion(task, {"answer": {"name": "f", "arguments": {"x": 1}}})
        == '<answer>{"name": "f", "arguments": {"x": 1}}</answer>'
    )


def test_prompts_are_measured_as_trl_tokenizes_them(tmp_path: Path) -> None:
    report = check_lengths(load_task(make_task(tmp_path / "t", budget=16)))
    assert report.prompt == Spread(4, 4, 4)  # "0+1=": no BOS from the tiny tokenizer
    assert report.max_positions == 256 and report.n_rows == report.n_total == 4


def test_answers_longer_than_the_budget_are_counted_and_warned_about(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "t", budget=8, answers=("3", "5", LONG, LONG)))
    report = check_lengths(task)
    assert report.answers_over_budget == 2 and report.answer.max == 33
    [warning] = report.warnings()
    assert "2 of 4 reference answers" in warning and "at least 33" in warning
    assert report.problems() == []  # doubtful, not unusable


def test_a_large_split_is_measured_on_a_seeded_sample_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr import lengths

    monkeypatch.setattr(lengths, "MAX_ROWS", 3)
    task = load_task(make_task(tmp_path / "t", budget=16))
    report = check_lengths(task)
    assert (report.n_rows, report.n_total) == (3, 4)
    assert report.summary().endswith("(a sample of 3 of 4 rows)")
    assert check_lengths(task) == report  # seeded: the same rows every time


def test_chat_prompts_are_measured_with_the_chat_template(tmp_path: Path) -> None:
    from rlvr.generate import prompt_ids
    from rlvr.models import build_tokenizer

    path = make_task(tmp_path / "t", budget=16)
    path.write_text(
        path.read_text().replace("prompt: {template: '{question}='}", "prompt: {system: 'Add.', user: '{question}='}")
    )
    task = load_task(path)
    expected = len(prompt_ids(build_tokenizer(), task.render_prompt(task.load_split("train")[0])))
    assert expected > 4 and check_lengths(task).prompt.max == expected


def test_max_positions_is_read_from_a_local_config(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"text_config": {"max_position_embeddings": 4096}}))
    assert max_positions(str(tmp_path)) == 4096
    (tmp_path / "config.json").write_text(json.dumps({"n_positions": 1024}))
    assert max_positions(str(tmp_path)) == 1024
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))
    assert max_positions(str(tmp_path)) is None


# -- a budget past the model's positions is refused --------------------------------------------
def test_a_budget_beyond_the_models_positions_is_a_config_error_with_the_fix(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "t", budget=100000))
    with pytest.raises(ConfigError) as err:
        require_fit(task)
    text = str(err.value)
    assert "100000" in text and "256 positions" in text and "at most 252" in text


def test_probe_refuses_a_budget_beyond_the_models_positions_before_sampling(tmp_path: Path) -> None:
    sampler = fixed_sampler("<answer>1</answer>", "stop")
    with pytest.raises(ConfigError, match="256 positions"):
        run_probe(
            make_task(tmp_path / "t", budget=100000), out_dir=tmp_path / "out", k=2, sampler=sampler, progress=False
        )
    assert not (tmp_path / "out" / "samples.jsonl").exists()


def test_train_refuses_a_budget_beyond_the_models_positions_before_weights_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr import models
    from rlvr.train import TrainOptions, train

    def no_weights(*a: Any, **kw: Any) -> Any:
        raise AssertionError("weights were loaded before the budget was checked")

    monkeypatch.setattr(models, "load_model", no_weights)
    task = load_task(
        make_task(
            tmp_path / "t",
            budget=100000,
            extra="grpo: {per_device_train_batch_size: 8, gradient_accumulation_steps: 1, num_generations: 8}\n",
        )
    )
    with pytest.raises(ConfigError, match="256 positions"):
        train(
            task,
            TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="length check test", progress=False),
        )
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def test_train_checks_a_budget_set_on_the_command_line(tmp_path: Path) -> None:
    from rlvr.train import TrainOptions, train

    task = load_task(
        make_task(
            tmp_path / "t",
            budget=8,
            extra="grpo: {per_device_train_batch_size: 8, gradient_accumulation_steps: 1, num_generations: 8}\n",
        )
    )
    with pytest.raises(ConfigError, match="100000 new tokens"):
        train(
            task,
            TrainOptions(
                run_dir=tmp_path / "run",
                max_steps=1,
                overrides={"max_completion_length": 100000},
                no_gate_reason="length check test",
                progress=False,
            ),
        )


# -- the probe says when truncation explains the rate ------------------------------------------
def test_probe_on_the_tiny_model_reports_the_cut_off_share_and_blames_the_budget(tmp_path: Path) -> None:
    # Observed: at a budget shorter than the answers, nearly every sample was cut off and the
    # probe advised SFT without a word about truncation.
    from rlvr.generate import make_sampler

    task = make_task(tmp_path / "t", budget=8, answers=(LONG,) * 4)
    sampler = make_sampler("builtin:tiny", backend="transformers", device="cpu")
    report = run_probe(task, out_dir=tmp_path / "out", k=4, sampler=sampler, progress=False)
    n = report.n_truncated
    assert n > 8  # a random model rarely ends within 8 tokens
    assert report.route == "sft"  # the route is still the rate's ...
    assert report.reason.startswith(
        f"{n} of 16 samples ({n / 16:.0%}) were cut off at max_completion_length 8"
    )  # ... the reason leads with the cut
    assert "truncation, not capability, explains" in report.reason and "at least 33" in report.reason
    text = format_report(report)
    assert f"cut off at 8 tokens (no EOS): {n}/16 = {n / 16:.0%}" in text
    assert "answers in the format 33/33/33" in text and "model positions 256" in text
    assert any("4 of 4 reference answers" in w for w in report.warnings)
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["n_truncated"] == n and saved["lengths"]["answer"]["max"] == 33


def test_cut_off_samples_with_answers_that_fit_say_truncation_may_explain_the_rate(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t", budget=8),
        out_dir=tmp_path / "out",
        k=2,
        sampler=fixed_sampler("12345678", "length"),
        progress=False,
    )
    assert report.route == "sft" and report.n_truncated == 8
    assert "may explain" in report.reason and "the reference answers fit" in report.reason
    assert "No sample succeeded" in report.reason  # the rate's own reason follows


def test_samples_that_end_leave_the_reason_unchanged(tmp_path: Path) -> None:
    report = run_probe(
        make_task(tmp_path / "t", budget=8),
        out_dir=tmp_path / "out",
        k=2,
        sampler=fixed_sampler("<answer>0</answer>", "stop"),
        progress=False,
    )
    assert report.n_truncated == 0 and report.reason.startswith("No sample succeeded")
    assert "cut off at 8 tokens (no EOS): 0/8 = 0%" in format_report(report)


def test_truncation_below_half_of_the_samples_does_not_change_the_reason() -> None:
    assert truncation_reason(3, 8, 16, None) is None
    assert truncation_reason(4, 8, 16, None) is not None


# -- SFT warns about the targets it would cut --------------------------------------------------
def test_sft_warns_with_the_count_of_targets_longer_than_the_budget(tmp_path: Path) -> None:
    # Observed: SFT trained on targets the generation budget cuts off, without a warning.
    from rlvr.train.sft import SftOptions, run_sft

    task = load_task(make_task(tmp_path / "t", budget=8, answers=("3", "5", LONG, LONG, LONG, "7")))
    said: list[str] = []
    res = run_sft(
        task,
        SftOptions(
            out_dir=tmp_path / "sft",
            overrides={"max_steps": 1, "per_device_train_batch_size": 2},
            progress=False,
            warn=said.append,
        ),
    )
    assert said == list(res.warnings) and len(said) == 1
    assert (
        said[0].startswith("3 of 6 SFT targets are longer than generation.max_completion_length 8")
        and "at least 33" in said[0]
    )
    assert json.loads((tmp_path / "sft" / "rlvr_sft.json").read_text())["warnings"] == said


def test_sft_warns_on_stderr_by_default_and_counts_targets_its_max_length_truncates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.models import build_tokenizer
    from rlvr.train.sft import target_warnings

    task = load_task(make_task(tmp_path / "t", budget=64, answers=("3", LONG)))
    rows = task.load_split("train")
    [warning] = target_warnings(task, rows, build_tokenizer(), max_length=20, positions=256)
    assert warning.startswith("1 of 2 SFT examples (prompt + target) are longer than 20 tokens (SFT max_length)")
    assert target_warnings(task, rows, build_tokenizer(), max_length=1024, positions=256) == []
    [by_positions] = target_warnings(task, rows, build_tokenizer(), max_length=1024, positions=20)
    assert by_positions.endswith(
        "longer than 20 tokens (the model's maximum positions): their targets are truncated during SFT"
    )
    from rlvr.train.sft import _stderr_warning

    _stderr_warning("x")
    assert capsys.readouterr().err == "rlvr sft: warning: x\n"


# -- rlvr task check ---------------------------------------------------------------------------
def test_task_check_prints_the_lengths_and_warns_about_answers_over_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    assert main(["task", "check", str(make_task(tmp_path / "t", budget=8, answers=("3", LONG)))]) == 0
    out = capsys.readouterr().out
    assert (
        "lengths     budget 8 tokens; answers p50 4 / p95 33 / max 33; prompts p50 4 / p95 4 / max 4; "
        "model positions 256" in out
    )
    assert "warning     1 of 2 reference answers (50%) need more than max_completion_length 8" in out


def test_task_check_refuses_a_budget_beyond_the_models_positions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    assert main(["task", "check", str(make_task(tmp_path / "t", budget=100000))]) == 2
    err = capsys.readouterr().err
    assert "generation.max_completion_length" in err and "256 positions" in err


def test_a_small_share_of_answers_over_the_budget_is_not_printed_as_zero_percent() -> None:
    from rlvr.lengths import LengthReport, Spread

    report = LengthReport("m", 8, 256, 5000, 5000, Spread(4, 5, 6), Spread(4, 5, 9), answers_over_budget=1)
    assert "1 of 5000 reference answers (0.02%) need more than" in report.warnings()[0]


# -- sizes before tokens ---------------------------------------------------------------------
class CountingTokenizer:
    """A tokenizer that fails the test if anything tokenizes with it."""

    calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        CountingTokenizer.calls += 1
        raise AssertionError("tokenized a row the size rule refuses")


@pytest.mark.parametrize("command", ["task check", "probe", "sft"])
def test_a_fifty_megabyte_row_is_one_problem_before_anything_tokenizes(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], command: str
) -> None:
    from rlvr.cli.main import main

    path = make_task(tmp_path / "t", budget=16)
    with (tmp_path / "t" / "train.jsonl").open("a") as fh:
        fh.write(json.dumps({"question": "x" * 50_000_000, "answer": "1"}) + "\n")
    out = ["--out", str(tmp_path / "o")] if command != "task check" else []
    assert main([*command.split(), str(path), *out]) != 0
    err = capfd.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one problem: no second one about its tokens, no transformers warning
    assert "train.jsonl:5: row 5 is 50.0 MB, over the 1 MB a row may hold (column 'question'" in err[0]
    assert "Token indices" not in err[0] and "positions" not in err[0]


def test_lengths_refuse_an_oversized_row_of_any_split_without_tokenizing_it(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path / "t", budget=16))
    rows = [{"question": "1+2", "answer": "3"}, {"question": "y" * 1_200_000, "answer": "4"}]
    with pytest.raises(ConfigError) as info:
        check_lengths(task, tokenizer=CountingTokenizer(), positions=256, rows=rows)
    [problem] = info.value.problems
    assert problem.where.endswith("train.jsonl:2") and "1.2 MB" in problem.what
    assert CountingTokenizer.calls == 0


def test_measuring_a_prompt_longer_than_the_model_prints_no_transformers_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    task = load_task(make_task(tmp_path / "t", budget=16))
    caplog.set_level("WARNING")
    # builtin:smollm2's tokenizer states its 8192 positions (builtin:tiny's states none): transformers warns on it.
    report = check_lengths(task, "builtin:smollm2", rows=[{"question": "9 " * 20_000, "answer": "3"}])
    assert report.overflow and report.problems()
    assert "Token indices sequence length" not in capfd.readouterr().err + caplog.text
