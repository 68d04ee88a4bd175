"""`rlvr score` and its library function."""

from __future__ import annotations

import json

import pytest

from rlvr.cli.main import main
from rlvr.errors import DataError
from rlvr.rewards import AnswerFormat
from rlvr.rewards.scoring import read_completions, reward_set_from_names, score_file

ROWS = [
    {"prompt": "What is 1/2+1/4?", "completion": "<answer>3/4</answer>", "answer": "0.75"},
    {"prompt": "q", "completion": "<answer>7</answer>", "answer": "8"},
    {"prompt": "q", "completion": "no answer here", "answer": "1"},
    {"prompt": "q", "completion": "<answer>3</answer>", "answer": "\\frac{"},
]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_score_file_writes_every_row_with_per_term_outcomes(tmp_path):
    src = write(tmp_path / "c.jsonl", ROWS)
    rs = reward_set_from_names(["format", "math"], answer_format=AnswerFormat())
    summary = score_file(src, rs, workers=2)
    out = [json.loads(line) for line in (tmp_path / "c.scored.jsonl").read_text().splitlines()]
    assert [r["completion"] for r in out] == [r["completion"] for r in ROWS]
    assert [r["scores"]["math"]["outcome"] for r in out] == ["correct", "wrong", "unparseable", "error"]
    assert summary.counts["math"] == {"correct": 1, "wrong": 1, "unparseable": 1, "error": 1}
    assert summary.error_kinds["math"] == {"ground_truth": 1}


def test_masked_row_has_no_reward_and_is_counted(tmp_path):
    src = write(tmp_path / "c.jsonl", ROWS)
    summary = score_file(src, reward_set_from_names(["format", "math"]))
    out = [json.loads(line) for line in (tmp_path / "c.scored.jsonl").read_text().splitlines()]
    assert out[3]["masked"] is True and out[3]["reward"] is None
    assert summary.masked == 1


def test_bad_json_line_names_the_file_and_line(tmp_path):
    src = tmp_path / "c.jsonl"
    src.write_text(json.dumps(ROWS[0]) + "\n{oops\n")
    with pytest.raises(DataError, match=r"c\.jsonl:2: not valid JSON"):
        read_completions(src)


def test_missing_completion_names_the_field_and_line(tmp_path):
    src = write(tmp_path / "c.jsonl", [ROWS[0], {"prompt": "p", "answer": "1"}])
    with pytest.raises(DataError, match=r"c\.jsonl:2: field 'completion' is missing"):
        read_completions(src)


def test_a_bad_input_leaves_an_existing_output_untouched(tmp_path):
    src = write(tmp_path / "c.jsonl", [ROWS[0], {"nope": 1}])
    out = tmp_path / "c.scored.jsonl"
    out.write_text("precious\n")
    with pytest.raises(DataError):
        score_file(src, reward_set_from_names(["exact"]))
    assert out.read_text() == "precious\n"


def test_input_file_is_never_overwritten(tmp_path):
    src = write(tmp_path / "c.jsonl", ROWS)
    with pytest.raises(DataError, match="refusing to overwrite"):
        score_file(src, reward_set_from_names(["exact"]), out=src)


def test_cli_score_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", "--help"])
    assert exc.value.code == 0
    assert "--reward" in capsys.readouterr().out


def test_cli_score_writes_and_summarises(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", ROWS)
    assert (
        main(
            ["score", str(src), "--reward", "format", "--reward", "math", "--out", str(tmp_path / "o.jsonl"), "--json"]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == 4 and summary["counts"]["format"]["correct"] == 3
    assert (tmp_path / "o.jsonl").exists()


def test_cli_score_option_reaches_the_verifier(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", [{"completion": "<answer>3, 2, 1</answer>", "answer": "1, 2, 3"}])
    main(["score", str(src), "--reward", "math", "--option", "math.ordered_lists=false", "--json"])
    assert json.loads(capsys.readouterr().out)["counts"]["math"] == {"correct": 1}


def test_cli_score_without_reward_or_task_is_one_line_error(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", ROWS)
    assert main(["score", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--task" in err and len(err.splitlines()) == 1


def test_cli_score_unknown_reward_is_one_line_error(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", ROWS)
    assert main(["score", str(src), "--reward", "nope"]) == 2
    assert "nope" in capsys.readouterr().err


def test_cli_score_bad_option_syntax_is_an_error(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", ROWS)
    assert main(["score", str(src), "--reward", "math", "--option", "timeout=3"]) == 2
    assert "NAME.KEY=VALUE" in capsys.readouterr().err


def test_cli_score_with_a_task_uses_its_terms(tmp_path, capsys):
    from pathlib import Path

    task = Path(__file__).resolve().parents[2] / "examples" / "arithmetic" / "task.yaml"
    if not task.exists():
        pytest.skip("the example task is not in this checkout")
    rows = [
        {"prompt": "2+2=", "completion": "<answer>4</answer>", "answer": "4"},
        {"prompt": "2+3=", "completion": "5", "answer": "5"},
    ]
    src = write(tmp_path / "c.jsonl", rows)
    assert main(["score", str(src), "--task", str(task), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)["counts"]
    assert counts["format"] == {"correct": 1, "wrong": 1}
    assert counts["correct"] == {"correct": 1, "unparseable": 1}


def test_cli_score_rejects_options_with_a_task(tmp_path, capsys):
    src = write(tmp_path / "c.jsonl", ROWS)
    assert main(["score", str(src), "--task", "t.yaml", "--option", "math.x=1"]) == 2
    assert "--option" in capsys.readouterr().err
