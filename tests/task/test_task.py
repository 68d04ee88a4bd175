"""The task file: every error kind reported with where/what/fix, all problems at once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlvr.errors import ConfigError
from rlvr.task import load_task
from support.tasks import make_task


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_task(path)
    return [str(p) for p in info.value.problems]


def test_valid_task_loads_with_resolved_terms(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path))
    assert task.model == "builtin:tiny"
    assert [t.name for t in task.rewards] == ["format", "correct"]
    assert task.correctness_term == "correct"
    assert task.render_prompt({"question": "1+2"}) == "1+2="
    assert len(task.load_split("train")) == 16


def test_missing_column_is_reported_with_file_and_column(tmp_path: Path) -> None:
    path = make_task(tmp_path, train_rows=[{"q": "1+1", "answer": "2"}])
    [msg] = [p for p in problems_of(path) if "question" in p]
    assert "data.train: prompt.template" in msg and "{question} names no column" in msg and "train.jsonl" in msg
    assert "write {{question}} for literal braces" in msg


def test_empty_dataset_is_reported(tmp_path: Path) -> None:
    path = make_task(tmp_path, train_rows=[])
    assert any("is empty" in p and "data.train" in p for p in problems_of(path))


def test_null_answer_names_the_row(tmp_path: Path) -> None:
    rows = [{"question": "1+1", "answer": "2"}, {"question": "2+2", "answer": None}]
    path = make_task(tmp_path, train_rows=rows)
    [msg] = problems_of(path)
    assert "train.jsonl:2" in msg and "row 2" in msg and "'answer'" in msg


def test_unknown_reward_name_suggests_the_closest_builtin(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"rewards": [{"name": "format"}, {"name": "correct", "verifier": "exakt"}]})
    [msg] = problems_of(path)
    assert "rewards[1].verifier" in msg and "unknown reward 'exakt'" in msg and "'exact'" in msg


def test_weights_that_do_not_match_the_terms_are_reported(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"grpo": {"reward_weights": [1.0, 2.0, 3.0]}})
    [msg] = problems_of(path)
    assert "grpo.reward_weights" in msg and "3 weights for 2 reward terms" in msg


def test_reward_weights_list_overrides_term_weights(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, extra={"grpo": {"reward_weights": [0.5, 2.0]}}))
    assert [t.weight for t in task.rewards] == [0.5, 2.0]


def test_bad_type_names_the_key_and_the_expected_type(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"generation": {"temperature": "hot"}})
    [msg] = problems_of(path)
    assert "generation.temperature" in msg and "must be a number" in msg and "'hot'" in msg


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"generation": {"temprature": 0.7}})
    [msg] = problems_of(path)
    assert "generation.temprature" in msg and "did you mean 'temperature'" in msg


def test_bad_verifier_options_are_reported(tmp_path: Path) -> None:
    path = make_task(
        tmp_path,
        extra={
            "rewards": [
                {"name": "format"},
                {"name": "correct", "verifier": "exact", "options": {"normalize": ["sideways"]}},
            ]
        },
    )
    [msg] = problems_of(path)
    assert "rewards[1]" in msg and "sideways" in msg


def test_broken_jsonl_names_file_and_line(tmp_path: Path) -> None:
    path = make_task(tmp_path)
    with (tmp_path / "train.jsonl").open("a") as fh:
        fh.write("{not json\n")
    [msg] = problems_of(path)
    assert "train.jsonl:17" in msg and "not valid JSON" in msg


def test_missing_file_and_missing_model_are_reported(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"model": None, "data": {"train": "nope.jsonl"}})
    msgs = problems_of(path)
    assert any(m.startswith(f"{path}: model: missing") for m in msgs)
    assert any("file not found" in m and "nope.jsonl" in m for m in msgs)


def test_several_problems_are_all_reported_together(tmp_path: Path) -> None:
    rows = [{"question": "1+1", "answer": None}]
    path = make_task(
        tmp_path,
        train_rows=rows,
        extra={
            "rewards": [{"name": "format"}, {"name": "correct", "verifier": "exakt"}],
            "generation": {"temperature": "hot"},
            "grpo": {"reward_weights": [1.0]},
            "colour": "blue",
        },
    )
    msgs = problems_of(path)
    assert len(msgs) == 5, msgs
    joined = "\n".join(msgs)
    for needle in ("row 1", "exakt", "generation.temperature", "reward_weights", "colour"):
        assert needle in joined


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "task.yaml"
    path.write_text("name: x\nrewards: [format\n")
    [msg] = problems_of(path)
    assert "not valid YAML" in msg and "line" in msg


def test_chat_prompt_renders_messages(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, extra={"prompt": {"system": "Be exact.", "user": "Compute {question}"}}))
    assert task.render_prompt({"question": "1+2"}) == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Compute 1+2"},
    ]


def test_template_and_chat_together_is_an_error(tmp_path: Path) -> None:
    path = make_task(tmp_path, extra={"prompt": {"template": "{question}=", "user": "{question}"}})
    assert any("both template and chat" in m for m in problems_of(path))


def test_parquet_data_is_read(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = make_task(tmp_path)
    pq.write_table(pa.Table.from_pylist([{"question": "1+1", "answer": "2"}]), tmp_path / "train.parquet")
    spec = yaml.safe_load(path.read_text())
    spec["data"]["train"] = "train.parquet"
    path.write_text(yaml.safe_dump(spec))
    assert load_task(path).load_split("train") == [{"question": "1+1", "answer": "2"}]


def test_data_rows_with_reserved_names_are_refused_before_training(tmp_path: Path) -> None:
    from rlvr.train import build_dataset

    task = load_task(make_task(tmp_path))
    with pytest.raises(ConfigError, match="clash"):
        build_dataset(task, [{"question": "1+1", "answer": "2", "completion": "x"}])


def test_exponent_floats_without_a_dot_are_numbers(tmp_path: Path) -> None:
    # YAML 1.1 (PyYAML) reads 1e-4 as a string, which TRL would hand to the optimiser.
    path = make_task(tmp_path)
    path.write_text(path.read_text().replace("learning_rate: 0.001", "learning_rate: 1e-4"))
    assert load_task(path).grpo["learning_rate"] == 1e-4


def test_set_values_parse_exponent_floats() -> None:
    from rlvr.cli._common import parse_sets

    assert parse_sets(["learning_rate=2e-3", "beta=0", "loss_type=dapo"]) == {
        "learning_rate": 2e-3,
        "beta": 0,
        "loss_type": "dapo",
    }


# -- the success term --------------------------------------------------------------------------
FORMAT = {"name": "format", "weight": 0.1}
CORRECT = {"name": "correct", "verifier": "exact"}


def test_the_dapo_advised_overlong_term_appended_does_not_become_success(tmp_path: Path) -> None:
    from rlvr.settings.recipe import term_patch

    [overlong] = term_patch("dapo", {"max_completion_length": 8}, {"format", "exact"})
    task = load_task(make_task(tmp_path, extra={"rewards": [FORMAT, CORRECT, overlong]}))
    assert [t.name for t in task.rewards][-1] == "overlong"
    assert task.success_term == "correct"


@pytest.mark.parametrize(
    "shaping",
    [
        {"name": "brevity", "verifier": "length_penalty", "options": {"budget": 8}},
        {"name": "rep", "verifier": "repetition"},
        {
            "name": "soft",
            "verifier": "overlong",
            "options": {"max_completion_length": 8, "base": {"verifier": "exact"}},
        },
    ],
)
def test_a_shaping_term_after_the_correctness_term_is_never_success(tmp_path: Path, shaping: dict) -> None:
    task = load_task(make_task(tmp_path, extra={"rewards": [FORMAT, CORRECT, shaping]}))
    assert task.success_term == "correct"


def test_two_correctness_terms_without_a_declared_success_leave_no_success_term(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, extra={"rewards": [FORMAT, CORRECT, {"name": "loose", "verifier": "math"}]}))
    with pytest.raises(ConfigError) as info:
        task.success_term  # noqa: B018 - the property raises
    msg = str(info.value)
    assert (
        "success: not declared, and 2 terms could decide success (correct, loose)" in msg and "add success: NAME" in msg
    )


def test_a_declared_success_term_decides_among_several(tmp_path: Path) -> None:
    task = load_task(
        make_task(
            tmp_path, extra={"rewards": [FORMAT, CORRECT, {"name": "loose", "verifier": "math"}], "success": "loose"}
        )
    )
    assert task.success_term == "loose"


def test_a_declared_shaping_success_term_is_refused(tmp_path: Path) -> None:
    [msg] = problems_of(make_task(tmp_path, extra={"success": "format"}))
    assert "success: 'format' is a shaping term" in msg and "correct" in msg


def test_a_declared_success_that_names_no_term_suggests_the_closest(tmp_path: Path) -> None:
    [msg] = problems_of(make_task(tmp_path, extra={"success": "corect"}))
    assert "names no reward term ('corect')" in msg and "did you mean 'correct'" in msg


def test_a_format_only_reward_has_no_success_term(tmp_path: Path) -> None:
    task = load_task(make_task(tmp_path, extra={"rewards": [FORMAT]}))
    with pytest.raises(ConfigError, match="no term checks the answer.*format-only"):
        task.success_term  # noqa: B018 - the property raises


@pytest.mark.parametrize("section,key", [("probe", "success_term"), ("eval", "term")])
def test_the_old_success_keys_point_at_the_top_level_key(tmp_path: Path, section: str, key: str) -> None:
    [msg] = problems_of(make_task(tmp_path, extra={section: {key: "correct"}}))
    assert f"{section}.{key}: has moved" in msg and "write success: correct at the top level" in msg


# -- what task check must also catch (issue 14) ------------------------------------------------
def test_temperature_zero_is_a_problem(tmp_path: Path) -> None:
    [msg] = problems_of(make_task(tmp_path, extra={"generation": {"temperature": 0}}))
    assert "generation.temperature: is 0" in msg and "zero variance" in msg


def test_an_eval_split_that_is_the_train_file_is_a_problem(tmp_path: Path) -> None:
    [msg] = problems_of(make_task(tmp_path, extra={"data": {"train": "train.jsonl", "eval": "train.jsonl"}}))
    assert "data.eval: is the same file as data.train" in msg


def test_eval_rows_that_repeat_train_prompts_are_named(tmp_path: Path) -> None:
    path = make_task(tmp_path)
    with (tmp_path / "eval.jsonl").open("a") as fh:
        fh.write('{"question": "10+10", "answer": "20"}\n')  # row 9: train row 1's prompt
    [msg] = problems_of(path)
    assert "data.eval: 1 of 9 held-out prompts also appear in data.train" in msg and "rows 9" in msg


@pytest.mark.parametrize("ref", ["./models/sft", "models/sft", "/nonexistent/rlvr/model", "runs/mini/sft/final"])
def test_a_local_model_path_that_does_not_exist_is_a_problem(tmp_path: Path, ref: str) -> None:
    (tmp_path / "models").mkdir()  # so models/sft reads as a local path, not a hub id
    (tmp_path / "runs").mkdir()
    [msg] = problems_of(make_task(tmp_path, extra={"model": ref}))
    assert "model: local model path not found" in msg


def test_a_hub_id_is_not_checked_as_a_path(tmp_path: Path) -> None:
    assert (
        load_task(make_task(tmp_path, extra={"model": "Qwen/Qwen2.5-0.5B-Instruct"})).model
        == "Qwen/Qwen2.5-0.5B-Instruct"
    )


def test_non_utf8_data_names_file_line_and_byte_offset(tmp_path: Path) -> None:
    path = make_task(tmp_path)
    with (tmp_path / "train.jsonl").open("ab") as fh:
        fh.write(b'{"question": "caf\xe9", "answer": "1"}\n')
    size = (tmp_path / "train.jsonl").stat().st_size
    [msg] = problems_of(path)
    line_start = size - len(b'{"question": "caf\xe9", "answer": "1"}\n')
    assert (
        "train.jsonl:17: not UTF-8: byte 0xe9 at byte 17 of line 17" in msg
        and f"byte offset {line_start + 17} in the file" in msg
    )


def test_non_utf8_task_file_names_line_and_byte_offset(tmp_path: Path) -> None:
    path = make_task(tmp_path)
    path.write_bytes(b"# caf\xe9\n" + path.read_bytes())
    [msg] = problems_of(path)
    assert (
        msg.startswith(f"{path}: 1: not UTF-8: byte 0xe9 at byte 5 of line 1 (byte offset 5")
        and "save the file as UTF-8" in msg
    )


def test_a_json_error_says_column_once(tmp_path: Path) -> None:
    path = make_task(tmp_path)
    with (tmp_path / "train.jsonl").open("a") as fh:
        fh.write('{"question": 1,}\n')
    [msg] = problems_of(path)
    assert "column 16" in msg and "at at" not in msg
