"""The doctor on episode runs: calls per episode climbing while accuracy does not, failing tools."""

from __future__ import annotations

import random

from rlvr.doctor import diagnose
from rlvr.doctor.episode_checks import check_tool_call_inflation, check_tool_failures
from rlvr.doctor.table import Run


def run(calls: list[float], accuracy: list[float], errors: float = 0.05, seed: int = 0) -> Run:
    rng = random.Random(seed)
    train = tuple(
        {
            "step": i + 1,
            "episodes/calls": c + rng.uniform(-0.05, 0.05),
            "episodes/tool_error_rate": errors,
            "episodes/cut_off_rate": 0.02,
            "rewards/correct/mean": 0.3,
            "reward": 0.5,
        }
        for i, c in enumerate(calls)
    )
    evals = tuple({"step": 10 * (i + 1), "eval/accuracy": a, "eval/n": 200} for i, a in enumerate(accuracy))
    return Run("synthetic", "run", train, evals, rlvr={"success_term": "correct"})


CLIMB = [1 + 2 * i / 29 for i in range(30)]
FLAT = [1.0] * 30


def test_calls_climbing_while_accuracy_is_flat_is_a_finding() -> None:
    (finding,) = check_tool_call_inflation(run(CLIMB, [0.3, 0.31, 0.3]))
    assert finding.check == "tool_call_inflation" and "held-out accuracy went from 0.3 to 0.3" in finding.evidence
    assert any(f.check == "tool_call_inflation" for f in diagnose(run(CLIMB, [0.3, 0.31, 0.3])).findings)


def test_calls_climbing_with_accuracy_is_not_a_finding() -> None:
    assert check_tool_call_inflation(run(CLIMB, [0.3, 0.45, 0.6])) == []


def test_flat_calls_are_not_a_finding() -> None:
    assert check_tool_call_inflation(run(FLAT, [0.3, 0.3, 0.3])) == []


def test_without_evals_the_success_terms_training_reward_stands_in() -> None:
    (finding,) = check_tool_call_inflation(run(CLIMB, []))
    assert "the correct reward went from 0.3 to 0.3" in finding.evidence


def test_mostly_failing_calls_are_a_finding_and_a_few_are_not() -> None:
    (finding,) = check_tool_failures(run(FLAT, [], errors=0.8))
    assert finding.metric == "episodes/tool_error_rate" and "80%" in finding.evidence
    assert check_tool_failures(run(FLAT, [], errors=0.1)) == []


def test_the_report_plots_an_episode_runs_turns_calls_and_failures() -> None:
    from rlvr.report import plot_lines

    plots = plot_lines(run(CLIMB, [0.3, 0.3, 0.3]))
    assert [line.label for line in plots["episodes"][2]] == ["turns", "tool calls"]
    assert len(plots["episode_errors"][2]) == 3
    assert "episodes" not in plot_lines(Run("plain", "run", ({"step": 1, "reward": 0.1},), ()))
