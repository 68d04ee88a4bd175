"""``rlvr sft`` on an episode task trains on reference episodes (``rlvr.episodes.reference``): the
row's reference calls played through the real tools, their results (masked from the loss), the
answer. Without the column it refuses; a bad column names the file, the row and the field."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rlvr.errors import ConfigError
from rlvr.task import Task, load_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
COL = "reference_calls"
EXAMPLE_SPEC = load_task(EXAMPLE).environment


def measure_module() -> Any:
    spec = importlib.util.spec_from_file_location("tool_search_measure", EXAMPLE / "measure.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_example(tmp_path: Path, rows: int = 16, edit: Any = None, yaml: tuple[str, str] | None = None) -> Path:
    """The tool-search example with its first ``rows`` train rows, each passed through ``edit``."""
    folder = tmp_path / "tool-search"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    lines = [json.loads(line) for line in (EXAMPLE / "train.jsonl").read_text().splitlines()[:rows]]
    if edit is not None:
        lines = [edit(i, r) for i, r in enumerate(lines, 1)]
    (folder / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    if yaml is not None:
        task_file = folder / "task.yaml"
        assert yaml[0] in task_file.read_text()
        task_file.write_text(task_file.read_text().replace(*yaml))
    return folder


def tiny_tokenizer() -> Any:
    from rlvr.models import load_tokenizer

    return load_tokenizer("builtin:tiny")


def episodes_of(task: Task, rows: list[dict[str, Any]] | None = None) -> list[Any]:
    from rlvr.train.sft import reference_episodes

    rows = task.load_split("train") if rows is None else rows
    return reference_episodes(task, tiny_tokenizer(), rows, rows)


def test_every_split_of_the_example_has_a_search_for_the_country_as_its_reference_call() -> None:
    for split in ("train.jsonl", "eval.jsonl", "sft.jsonl"):
        for line in (EXAMPLE / split).read_text().splitlines():
            row = json.loads(line)
            country = row["question"].removeprefix("Capital of ").removesuffix("?")
            assert json.loads(row[COL]) == [{"name": "search", "arguments": {"query": country}}]


def test_the_sft_pairs_for_tool_search_equal_measure_pys_reference_text() -> None:
    from rlvr.episodes import build_toolbox, prepare_tokenizer

    task = load_task(EXAMPLE)
    rows = task.load_split("train")[:40]
    episodes = episodes_of(task, rows)
    measure = measure_module()
    tok = prepare_tokenizer(tiny_tokenizer())
    toolbox = build_toolbox(task.environment)
    for row, episode in zip(rows, episodes, strict=True):
        assert (episode.prompt, episode.completion) == measure.reference_text(task, tok, row, toolbox)
    # the tool's real result is in the text: the reference episode read the document
    assert "[Zovobi] capital Pomi, river Nire." in episodes[0].completion


def test_the_trained_tokens_are_the_models_turns_and_never_the_tool_results() -> None:
    from rlvr.episodes import prepare_tokenizer

    task = load_task(EXAMPLE)
    episode = episodes_of(task)[0]
    tok = prepare_tokenizer(tiny_tokenizer())
    ids, mask = episode.tokens(tok)
    assert ids == tok(episode.prompt + episode.completion)["input_ids"]  # segments tokenize as the whole text
    trained = tok.decode([i for i, m in zip(ids, mask, strict=True) if m])
    untrained = tok.decode([i for i, m in zip(ids, mask, strict=True) if not m])
    call = '<tool_call>{"name": "search", "arguments": {"query": "Zovobi"}}</tool_call></s>'
    assert trained == call + "<answer>Pomi</answer></s>"
    assert untrained == episode.prompt + "\n<|tool|>[Zovobi] capital Pomi, river Nire.\n<|assistant|>"


def strip_column(_i: int, row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k != COL}


def test_sft_on_an_episode_task_without_reference_calls_refuses_before_the_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import rlvr.models
    from rlvr.train.sft import SftOptions, run_sft

    def no_model(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("the model loaded before the refusal")

    monkeypatch.setattr(rlvr.models, "load_model", no_model)
    task = load_task(copy_example(tmp_path, edit=strip_column))
    with pytest.raises(ConfigError) as err:
        run_sft(task, SftOptions(out_dir=tmp_path / "out", progress=False, say=lambda _m: None))
    message = str(err.value)
    assert "\n" not in message
    assert "answer-only SFT would teach answering without the tools" in message
    assert f"add a column {COL!r}" in message and "environment.reference_calls" in message
    assert not (tmp_path / "out").exists()


def test_rlvr_sft_without_the_column_exits_non_zero_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    folder = copy_example(tmp_path, edit=strip_column)
    assert main(["sft", str(folder), "--out", str(tmp_path / "out"), "--max-steps", "1"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "answer-only SFT" in err, err


def bad_cell(value: Any, bad_row: int = 3) -> Any:
    def edit(i: int, row: dict[str, Any]) -> dict[str, Any]:
        if i != bad_row:
            return row
        if value is None:
            return strip_column(i, row)
        return {**row, COL: value}

    return edit


STATIC_CASES = {
    "malformed JSON": ('[{"name": "search", "arguments": {"query": "a"}', "not valid JSON"),
    "duplicate key": ('[{"name": "search", "name": "search", "arguments": {"query": "a"}}]', "duplicate key"),
    "not a list": ('{"name": "search", "arguments": {"query": "a"}}', "must be a JSON list of calls, got dict"),
    "not a call": ('["search"]', "call 1 must be an object"),
    "unknown tool": ('[{"name": "lookup", "arguments": {"query": "a"}}]', "call 1: unknown tool 'lookup'"),
    "extra argument": ('[{"name": "search", "arguments": {"q": "a"}}]', "arguments off the schema of search"),
    "wrong type": ('[{"name": "search", "arguments": {"query": 3}}]', "arguments off the schema of search"),
    "no required tool": ("[]", "does not call the required tool(s) search"),
    "over max_tool_calls": (json.dumps([{"name": "search", "arguments": {"query": "a"}}] * 4), "max_tool_calls"),
    "missing in a row": (None, "missing"),
    "over max_turns": (json.dumps([{"name": "search", "arguments": {"query": "a"}}] * 3), "max_turns is 3"),
}


@pytest.mark.parametrize("case", sorted(STATIC_CASES))
def test_a_bad_reference_column_is_a_problem_naming_file_row_and_field(tmp_path: Path, case: str) -> None:
    from rlvr.taskcheck import reference_call_problems

    value, why = STATIC_CASES[case]
    task = load_task(copy_example(tmp_path, edit=bad_cell(value)))
    train = str(tmp_path / "tool-search" / "train.jsonl")
    problems = reference_call_problems(task)
    assert [p.where for p in problems] == [f"{train}:3"], problems
    assert problems[0].what.startswith(f"row 3: {COL}: ") and why in problems[0].what, problems[0].what
    # rlvr sft refuses with the same problem
    with pytest.raises(ConfigError, match=f"row 3: {COL}: "):
        episodes_of(task)


def test_the_example_has_no_reference_call_problem() -> None:
    from rlvr.taskcheck import reference_call_problems

    assert reference_call_problems(load_task(EXAMPLE)) == []


def test_a_column_the_task_file_names_must_be_in_the_train_split(tmp_path: Path) -> None:
    from rlvr.taskcheck import reference_call_problems

    folder = copy_example(tmp_path, yaml=("  max_turns: 3", "  reference_calls: solution\n  max_turns: 3"))
    problems = reference_call_problems(load_task(folder))
    assert len(problems) == 1 and problems[0].where.endswith("train.jsonl: solution"), problems


def test_a_reference_call_that_fails_in_the_real_tool_is_named(tmp_path: Path) -> None:
    # k=9 fits the schema (an integer) and the search tool refuses it when it runs
    failing = json.dumps([{"name": "search", "arguments": {"query": "Pekeva", "k": 9}}])
    task = load_task(copy_example(tmp_path, edit=bad_cell(failing, bad_row=2)))
    with pytest.raises(ConfigError) as err:
        episodes_of(task)
    (problem,) = err.value.problems
    assert problem.where.endswith("train.jsonl:2")
    assert (
        "row 2: reference_calls: call 1 (search) failed: ValueError: k must be an integer from 1 to 5" in problem.what
    )


def test_a_reference_episode_over_the_generation_budget_is_named(tmp_path: Path) -> None:
    folder = copy_example(tmp_path, rows=2, yaml=("max_completion_length: 176", "max_completion_length: 70"))
    with pytest.raises(ConfigError) as err:
        episodes_of(load_task(folder))
    assert [p.where.rsplit(":", 1)[1] for p in err.value.problems] == ["1", "2"]
    assert "the reference episode needs" in err.value.problems[0].what
    assert "generation.max_completion_length is 70" in err.value.problems[0].what


def test_the_probe_advice_on_an_episode_task_says_what_rlvr_sft_needs() -> None:
    from rlvr.episodes.reference import sft_advice

    spec = load_task(EXAMPLE).environment
    assert spec is not None
    assert "reference episodes" in sft_advice(spec, True)
    missing = sft_advice(spec, False)
    assert "rlvr sft refuses" in missing and f"no {COL!r} column" in missing


def test_the_probe_routes_a_base_model_that_never_calls_to_sft_with_reference_episodes(tmp_path: Path) -> None:
    import random

    from rlvr.probe import run_probe
    from support.fakes import FakeSampler

    def never_calls(_prompt: str, _rng: random.Random) -> str:
        return "<answer>Paris</answer>"

    for folder, says in (
        (copy_example(tmp_path / "with"), "rlvr sft trains on reference episodes"),
        (copy_example(tmp_path / "without", edit=strip_column), "rlvr sft refuses without it"),
    ):
        report = run_probe(
            load_task(folder), out_dir=folder / "probe", sampler=FakeSampler(never_calls), k=2, progress=False
        )
        assert report.route == "sft" and says in report.reason, report.reason


def sft_run(tmp_path: Path, steps: int, monkeypatch: pytest.MonkeyPatch, rows: int = 16) -> tuple[Any, list[Any]]:
    """A real ``run_sft`` on the example's first train rows; the trainer's datasets are recorded."""
    import trl

    from rlvr.train.sft import SftOptions, run_sft

    seen: list[Any] = []
    real_train = trl.SFTTrainer.train

    def recording_train(self: Any, *a: Any, **k: Any) -> Any:
        seen.append(self.train_dataset)
        return real_train(self, *a, **k)

    monkeypatch.setattr(trl.SFTTrainer, "train", recording_train)
    task = load_task(copy_example(tmp_path, rows=rows))
    overrides = {"max_steps": steps, "per_device_train_batch_size": 16, "warmup_steps": 5, "logging_steps": 1000}
    result = run_sft(
        task, SftOptions(out_dir=tmp_path / "sft", overrides=overrides, progress=False, say=lambda _m: None)
    )
    return result, seen


def test_a_short_rlvr_sft_run_trains_on_the_calls_and_answers_with_tool_results_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.episodes import prepare_tokenizer

    result, seen = sft_run(tmp_path, 2, monkeypatch)
    assert result.steps == 2 and (tmp_path / "sft" / "config.json").exists()
    task = load_task(tmp_path / "tool-search")
    tok = prepare_tokenizer(tiny_tokenizer())
    (dataset,) = seen
    assert len(dataset) == 16
    for row, episode in zip(dataset, episodes_of(task), strict=True):
        ids, mask = episode.tokens(tok)
        assert row["input_ids"] == ids
        # TRL's labels: the token where the mask is 1, -100 on the prompt and on every tool result
        assert row["labels"] == [i if m else -100 for i, m in zip(ids, mask, strict=True)]
    first = dataset[0]
    assert "capital Pomi" not in tok.decode([t for t in first["labels"] if t != -100])
    # the saved tokenizer is the tool template's: the checkpoint lists tools as training does
    from rlvr.episodes.template import TINY_TOOL_TEMPLATE
    from rlvr.models import load_tokenizer

    assert load_tokenizer(str(tmp_path / "sft")).chat_template == TINY_TOOL_TEMPLATE


@pytest.mark.slow
def test_after_a_short_rlvr_sft_the_greedy_first_turn_on_a_train_prompt_is_a_search_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rlvr.episodes import build_toolbox, parse_turn, prepare_tokenizer
    from rlvr.episodes.template import render
    from rlvr.models import load_model, load_tokenizer

    sft_run(tmp_path, 150, monkeypatch, rows=64)
    task = load_task(tmp_path / "tool-search")
    tok = prepare_tokenizer(load_tokenizer(str(tmp_path / "sft")))
    model = load_model(str(tmp_path / "sft"))
    toolbox = build_toolbox(task.environment)
    for row in task.load_split("train")[:4]:
        ids = tok(render(tok, task.render_prompt(row), toolbox.schemas()), return_tensors="pt")
        out = model.generate(**ids, max_new_tokens=80, do_sample=False)
        turn = tok.decode(out[0][ids["input_ids"].shape[1] :]).split("</s>")[0]
        (call,) = parse_turn(turn).calls
        assert call.error is None and call.name == "search", turn


def test_rlvr_task_check_reports_a_bad_reference_call(tmp_path: Path) -> None:
    from rlvr.taskcheck import check_task

    bad = '[{"name": "lookup", "arguments": {"query": "a"}}]'
    problems = [str(p) for p in check_task(load_task(copy_example(tmp_path, edit=bad_cell(bad))))]
    assert any("train.jsonl:3: row 3: reference_calls: call 1: unknown tool 'lookup'" in p for p in problems), problems


KEYS = st.sampled_from(["name", "arguments", "query", "k", "x"])
CELLS = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.sampled_from(["search", "lookup", "Zovobi", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(cell=CELLS, as_text=st.booleans())
@example(cell=[{"name": "search", "arguments": {"query": "Zovobi", "k": 2}}], as_text=True)
@example(cell=[{"name": "search", "arguments": {"query": "a"}}] * 2, as_text=False)
def test_a_cell_reads_as_checked_calls_or_as_a_reason_never_anything_else(cell: Any, as_text: bool) -> None:
    from rlvr.episodes import build_toolbox
    from rlvr.episodes.reference import ReferenceError, read_calls

    spec = EXAMPLE_SPEC
    toolbox = build_toolbox(spec)
    try:
        calls = read_calls(json.dumps(cell) if as_text else cell, toolbox, spec)
    except ReferenceError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    # accepted: a list of known calls on the schema, within the limits, the required tool among them
    assert isinstance(cell, list) and len(calls) == len(cell) <= spec.max_tool_calls
    assert "search" in {c.name for c in calls}
    assert all(toolbox.tools[c.name].check_arguments(c.arguments) is None for c in calls)


def test_reference_calls_are_checked_when_the_model_is_not_downloaded_yet(monkeypatch: pytest.MonkeyPatch) -> None:
    # It called itself when the model was not cached (a RecursionError on every such task check).
    from rlvr.task import rowchecks
    from rlvr.taskcheck import episode_problems, reference_call_problems

    monkeypatch.setattr(rowchecks, "model_download_note", lambda task: "not cached")
    task = load_task(EXAMPLE)
    assert reference_call_problems(task) == [] and episode_problems(task) == []
