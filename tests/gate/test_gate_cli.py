"""``rlvr inspect``: help, bad arguments as one line, the terminal review, and the whole flow."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from rlvr import gate
from rlvr.cli.main import main
from rlvr.gate.review import Filter
from rlvr.gate.terminal import review
from support.gate_fixtures import SMALL, arithmetic_sampler, build_and_review, sign_small


def test_inspect_help_lists_every_action(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for action in ("build", "serve", "review", "status", "rescore", "sign"):
        assert action in out


@pytest.mark.parametrize("action", ["build", "serve", "review", "status", "rescore", "sign"])
def test_each_action_has_help(action: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", action, "--help"])
    assert info.value.code == 0
    assert "--gate" in capsys.readouterr().out


def test_bad_size_is_one_clear_line_and_a_non_zero_exit(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "build", str(task.path), "--size", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "rlvr inspect: error: --size: must be at least 1, got 0 (fix: the gate asks for 50-100)"


def test_unknown_action_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "publish", "x"])
    assert info.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_status_before_build_says_to_build(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "status", str(task.path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "no inspection set at" in err and "run rlvr inspect build first" in err
    assert len(err.splitlines()) == 1


def test_malformed_accept_exploit_is_refused(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    build_and_review(task)
    assert main(["inspect", "sign", str(task.path), "--accept-exploit", "format"]) == 2
    assert "'format' is not TERM=REASON" in capsys.readouterr().err


def test_review_with_an_unknown_term_is_refused(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    build_and_review(task)
    assert main(["inspect", "review", str(task.path), "--term", "nope"]) == 2
    assert "--term: names no reward term ('nope')" in capsys.readouterr().err


def test_status_json_and_rescore_through_the_cli(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    store = build_and_review(task)
    store.add_review(3, "lower", reviewer="alice", note="suspicious")
    assert main(["inspect", "status", str(task.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["samples"] == SMALL and data["open"] == [3] and data["passed"] is False
    assert main(["inspect", "rescore", str(task.path)]) == 0
    assert "no sample's reward changed" in capsys.readouterr().out
    assert main(["inspect", "status", str(task.path)]) == 0
    assert "open: sample 3: reviewer said 'lower'" in capsys.readouterr().out


def test_terminal_review_records_labels_and_same_line_notes(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    out = io.StringIO()
    n = review(store, reviewer="tty", stdin=io.StringIO("l hedges two answers\nr\nj\nh\nq\n"), stdout=out, color=False)
    assert n == 3
    assert [(r.sample_id, r.label, r.note) for r in store.reviews()] == [
        (1, "lower", "hedges two answers"),
        (2, "right", ""),
        (4, "higher", ""),
    ]
    assert "── sample 1" in out.getvalue()


def test_terminal_accept_needs_a_reason_and_an_open_disagreement(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    out = io.StringIO()
    review(store, reviewer="tty", stdin=io.StringIO("a why\nl\nk\na\na fine as is\nq\n"), stdout=out, color=False)
    text = out.getvalue()
    assert "nothing to accept" in text and "accepting needs a reason" in text
    assert [(r.sample_id, r.label, r.accepted) for r in store.reviews()] == [
        (1, "lower", None),
        (1, "lower", "fine as is"),
    ]


def test_terminal_marks_the_answer_span(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    passing = next(s for s in store.samples() if s.reward_class == "pass")
    out = io.StringIO()
    review(
        store, reviewer="tty", flt=Filter(show="all", min_total=1.0), stdin=io.StringIO("q\n"), stdout=out, color=False
    )
    assert f"── sample {passing.id} " in out.getvalue()
    assert f"<answer>⟦{passing.rollout.row['answer']}⟧</answer>" in out.getvalue()


def test_end_of_input_stops_the_terminal_review_and_keeps_verdicts(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    assert review(store, reviewer="tty", stdin=io.StringIO("r\n"), stdout=io.StringIO(), color=False) == 1
    assert len(store.reviews()) == 1


@pytest.mark.slow
def test_build_samples_the_real_tiny_model_through_the_cli(task: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "build", str(task.path), "--size", "50"]) == 0
    out = capsys.readouterr().out
    assert "inspection set: 50 samples" in out
    store = gate.open_store(task)
    assert len(store.samples()) == 50
    assert all(len(s.rollout.token_ids) <= 12 for s in store.samples())
    assert store.meta()["temperature"] == 1.0


def test_sign_through_the_cli_writes_a_record_that_enforce_accepts(
    task: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    build_and_review(task)
    assert main(["inspect", "sign", str(task.path), "--min-samples", str(SMALL)]) == 0
    assert f"gate signed: {gate.record_path(task)}" in capsys.readouterr().out
    assert gate.enforce(task)["reviewer"] == "alice"


def test_sign_through_the_cli_refuses_an_unread_set_in_one_message(
    task: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    assert main(["inspect", "sign", str(task.path), "--min-samples", str(SMALL)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rlvr inspect: error: cannot sign the gate:")
    assert f"{SMALL} samples have no verdict yet" in err
    assert not gate.record_path(task).exists()


def test_a_piped_review_is_refused_without_no_tty(
    task: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    monkeypatch.setattr("sys.stdin", io.StringIO("r\n" * 100))  # yes r | rlvr inspect review
    assert main(["inspect", "review", str(task.path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "stdin: is not a terminal" in err and "--no-tty" in err
    assert not gate.open_store(task, None).latest_reviews()


def test_no_tty_verdicts_are_marked_and_counted_in_the_signed_record(
    task: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    monkeypatch.setattr("sys.stdin", io.StringIO("r\n" * 100))
    assert main(["inspect", "review", str(task.path), "--no-tty", "--reviewer", "bot"]) == 0
    assert {r.reviewer for r in store.latest_reviews().values()} == {"bot (no-tty)"}
    sign_small(task)
    record = json.loads(gate.record_path(task, None).read_text())
    assert record["no_tty_verdicts"] == len(store.samples())


def test_identical_completions_of_a_prompt_are_shown_once_with_their_count(task: Any) -> None:
    from rlvr.gate.terminal import duplicates

    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(("right",)), size=SMALL)
    groups = set(duplicates(store.samples()).values())
    assert any(len(g) > 1 for g in groups), "every completion of a prompt is the same right answer"
    out = io.StringIO()
    n = review(store, reviewer="tty", stdin=io.StringIO("r\n" * 100), stdout=out, color=False)
    assert n == len(store.samples()) and out.getvalue().count("── sample ") == len(groups) < n
    assert "identical completions of this prompt" in out.getvalue()


@pytest.mark.parametrize("bad", ["zzz", "a", "a no disagreement here", "right"])
@pytest.mark.parametrize("at", [1, 2, 4])
def test_a_scripted_review_stops_at_a_line_it_cannot_obey(
    task: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, bad: str, at: int
) -> None:
    """Skipping the line would put every later verdict on the sample before the one it was meant for."""
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    lines = ["r"] * (at - 1) + [bad] + ["h"] * 10
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{x}\n" for x in lines)))
    assert main(["inspect", "review", str(task.path), "--no-tty", "--reviewer", "bot"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"stdin line {at}:" in err
    labels = [r.label for r in store.latest_reviews().values()]
    assert "higher" not in labels  # nothing after the refused line was recorded
    assert len(labels) >= at - 1  # what came before it was (identical copies share a verdict)
    exported = gate.db_path(task).with_suffix(".jsonl").read_text()
    assert exported.count('"right"') >= at - 1
