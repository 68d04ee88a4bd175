"""The probe measures a trained model on the rows it did not train on (trained_rows.json), or says
it could not and reports the seen rows' rate apart."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.data import TrainedRows, row_key, trained_rows_of
from rlvr.errors import DataError
from rlvr.probe import format_report, run_probe
from rlvr.probe.run import choose_unseen
from rlvr.probe.stats import percent
from rlvr.task import load_task
from support.fakes import FakeSampler


def make_task(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = [{"question": f"{i}+{i + 1}", "answer": str(2 * i + 1)} for i in range(n)]
    (root / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "task.yaml").write_text(
        "name: tiny-add\nmodel: builtin:tiny\ndata: {train: train.jsonl}\nprompt: {template: '{question}='}\n"
        "answer: {column: answer, format: tags}\nrewards:\n  - {name: format, weight: 0.1}\n"
        "  - {name: correct, verifier: exact}\ngeneration: {temperature: 1.0, max_completion_length: 8}\n"
    )
    return root / "task.yaml"


def memoriser(seen: set[str]) -> FakeSampler:
    """Right on every prompt in ``seen``, wrong on every other: a model that memorised its SFT rows."""

    def text(prompt: str, rng: random.Random) -> str:
        a, b = prompt.rstrip("=").split("+")
        right = int(a) + int(b)
        return f"<answer>{right if prompt in seen else right + 1}</answer>"

    return FakeSampler(text)


def sft_model(tmp: Path, task_path: Path, trained: list[int]) -> Path:
    """A model folder recording that it trained on the rows at ``trained``."""
    rows = load_task(task_path).load_split("train")
    folder = tmp / "sft"
    TrainedRows(frozenset(row_key(rows[i]) for i in trained), ("sft",)).write(folder, task=str(task_path))
    return folder


def test_probe_after_sft_samples_only_rows_sft_never_saw(tmp_path: Path) -> None:
    task_path = make_task(tmp_path / "t", n=20)
    model = sft_model(tmp_path, task_path, list(range(12)))
    seen_prompts = {f"{i}+{i + 1}=" for i in range(12)}
    sampler = memoriser(seen_prompts)
    report = run_probe(task_path, model=str(model), out_dir=tmp_path / "p", k=4, max_prompts=8, sampler=sampler)
    probed = {p for call in sampler.calls for p in call.prompts}
    assert probed == {f"{i}+{i + 1}=" for i in range(12, 20)}
    assert report.successes == 0 and report.route == "sft"
    assert report.n_seen_rows == 12 and report.seen_prompts == 0
    assert "12 train rows were trained on (sft" in format_report(report)


def test_probe_fills_with_seen_rows_and_reports_both_rates_deciding_on_the_unseen(tmp_path: Path) -> None:
    task_path = make_task(tmp_path / "t", n=20)
    model = sft_model(tmp_path, task_path, list(range(16)))
    report = run_probe(
        task_path,
        model=str(model),
        out_dir=tmp_path / "p",
        k=4,
        max_prompts=10,
        sampler=memoriser({f"{i}+{i + 1}=" for i in range(16)}),
        filter=True,
    )
    assert report.n_prompts == 4 and report.successes == 0 and report.route == "sft"
    assert report.seen_prompts == 6 and report.seen_successes == report.seen_samples == 24
    assert "100.0 points above the unseen rate" in report.reason
    text = format_report(report)
    assert "24/24 = 100%, not in the rate above" in text
    assert report.n_filtered == 0  # the filter keeps unseen rows only: memorised ones say nothing of difficulty


def test_probe_on_a_model_that_saw_every_row_says_it_measures_memorisation(tmp_path: Path) -> None:
    task_path = make_task(tmp_path / "t", n=10)
    model = sft_model(tmp_path, task_path, list(range(10)))
    report = run_probe(
        task_path,
        model=str(model),
        out_dir=tmp_path / "p",
        k=4,
        sampler=memoriser({f"{i}+{i + 1}=" for i in range(10)}),
    )
    assert report.route == "too-easy" and report.rate == 1.0
    assert report.reason.startswith("Could not probe unseen prompts")
    assert "memorisation" in report.reason
    assert any("every probed prompt is one the model trained on" in w for w in report.warnings)


def test_a_model_without_a_record_is_probed_as_before(tmp_path: Path) -> None:
    task_path = make_task(tmp_path / "t", n=10)
    report = run_probe(task_path, out_dir=tmp_path / "p", k=2, sampler=memoriser(set()))
    assert report.trained_rows is None and report.n_prompts == 10 and report.seen_prompts == 0


def test_trained_rows_of_a_checkpoint_folder_is_its_runs_record(tmp_path: Path) -> None:
    record = TrainedRows(frozenset({"a" * 16}), ("grpo",))
    record.write(tmp_path / "run", task="t.yaml")
    (tmp_path / "run" / "checkpoints" / "checkpoint-4").mkdir(parents=True)
    found = trained_rows_of(tmp_path / "run" / "checkpoints" / "checkpoint-4")
    assert found is not None and found.keys == record.keys and found.sources == ("grpo",)
    assert trained_rows_of("builtin:tiny") is None and trained_rows_of(tmp_path / "nothing") is None


def test_an_unreadable_trained_rows_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "trained_rows.json").write_text("{not json")
    with pytest.raises(DataError, match="trained_rows.json: not a trained-rows file"):
        trained_rows_of(tmp_path)


def test_row_key_ignores_key_order_and_position() -> None:
    assert row_key({"a": 1, "b": "x"}) == row_key({"b": "x", "a": 1})
    assert row_key({"a": 1}) != row_key({"a": 2})


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), cap=st.none() | st.integers(1, 50), seen=st.sets(st.integers(0, 39)))
def test_chosen_prompts_are_unseen_whenever_enough_unseen_rows_exist(n: int, cap: int | None, seen: set[int]) -> None:
    rows = [{"i": i} for i in range(n)]
    trained = TrainedRows(frozenset(row_key(rows[i]) for i in seen if i < n), ("sft",))
    picked, seen_picked = choose_unseen(rows, trained, cap, 3407)
    unseen = [i for i in range(n) if i not in seen]
    assert len(set(picked)) == len(picked) == min(n, cap if cap is not None else n)
    assert seen_picked == {i for i in picked if i in seen}
    assert len([i for i in picked if i not in seen]) == min(len(unseen), cap if cap is not None else n)


@pytest.mark.parametrize(
    ("k", "n", "text"), [(2, 512, "0.4%"), (0, 200, "0%"), (200, 200, "100%"), (511, 512, "99.8%"), (1, 3, "33%")]
)
def test_percent_is_never_rounded_to_none_or_all(k: int, n: int, text: str) -> None:
    assert percent(k, n) == text


def test_report_json_round_trips_the_seen_counts(tmp_path: Path) -> None:
    from rlvr.probe import ProbeReport

    task_path = make_task(tmp_path / "t", n=20)
    model = sft_model(tmp_path, task_path, list(range(16)))
    run_probe(task_path, model=str(model), out_dir=tmp_path / "p", k=2, max_prompts=10, sampler=memoriser(set()))
    back = ProbeReport.from_json(json.loads((tmp_path / "p" / "report.json").read_text()))
    assert (back.seen_prompts, back.n_seen_rows, back.trained_by) == (6, 16, "sft")


def test_the_upper_bound_of_a_large_probe_with_no_success_is_not_printed_as_zero() -> None:
    from rlvr.probe import decide

    _, reason = decide(0, 16000, 0, too_easy=0.9)
    assert "below 0.024% with 95 % confidence" in reason


def test_a_probe_on_trained_prompts_only_claims_no_capability(tmp_path: Path) -> None:
    task_path = make_task(tmp_path / "t", n=10)
    model = sft_model(tmp_path, task_path, list(range(10)))
    half = {f"{i}+{i + 1}=" for i in range(5)}
    report = run_probe(task_path, model=str(model), out_dir=tmp_path / "p", k=4, sampler=memoriser(half))
    assert report.route == "grpo" and "memorisation, not capability" in report.reason
    assert "has the capability" not in report.reason and "held-out" in report.reason
