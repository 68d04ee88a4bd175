"""Training through TRL's ``environment_factory``: the tokens of tool results are never trained on.

A real ``GRPOTrainer`` step on ``builtin:tiny`` whose generation is scripted (the model's turns are
fixed token ids: a calculator call, then an answer that is right for half the group), so the tool
loop, the mask and the loss are TRL's own. Two checks: the ``tool_mask`` TRL builds is 0 exactly on
the tool result's tokens, and the loss's gradient reaches the logits of the model's tokens and is
exactly 0 on the tool result's tokens. TRL computes log-probabilities with a fused head (no logits
tensor), so the gradient is read at the last hidden state: after the final norm a position feeds
nothing but the prediction of the next token, so its gradient is that token's share of the loss.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rlvr.episodes import read_environment
from rlvr.episodes.training import trainer_setup
from rlvr.rewards import AnswerFormat, build_verifier
from rlvr.rewards.combine import RewardSet, Term
from support.grpo import episode_reward_set, tiny_grpo_args

CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "17*23"}}</tool_call>'
SUFFIX = "\n<|tool|>391\n<|assistant|>"


def _trainer(tmp_path: Path) -> tuple[Any, Any, RewardSet]:
    from datasets import Dataset
    from trl import GRPOTrainer

    from rlvr.models import load_model, load_tokenizer

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    spec, problems = read_environment(
        {"tools": ["calculator"], "max_turns": 3, "required": ["calculator"], "terms": {"required_tools": 0.5}},
        tmp_path,
        "task.yaml",
    )
    assert spec is not None, problems
    rewards = episode_reward_set(spec, Term("correct", build_verifier("exact", {}, AnswerFormat(), search=tmp_path)))
    tok = load_tokenizer("builtin:tiny")
    args = tiny_grpo_args(tmp_path, 160)
    extra = trainer_setup(spec, "task.yaml", tok, args)
    answers = iter(["391", "390", "391", "12"] * 4)

    class Scripted(GRPOTrainer):  # type: ignore[misc]
        captured: list[dict[str, Any]] = []

        def _generate_single_turn(self, prompt_ids: Any, *a: Any, **k: Any) -> tuple[list[list[int]], None]:
            out = []
            for ids in prompt_ids:
                text = CALL if "<|tool|>" not in tok.decode(ids) else f"<answer>{next(answers)}</answer>"
                out.append(tok(text + "</s>", add_special_tokens=False)["input_ids"])
            return out, None

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            result = super()._generate_and_score_completions(inputs)
            self.captured.append(result)
            return result

    data = Dataset.from_list([{"prompt": [{"role": "user", "content": "17*23?"}], "answer": "391"}] * 4)
    trainer = Scripted(
        model=load_model("builtin:tiny"),
        reward_funcs=rewards.trl_functions(),
        args=args,
        train_dataset=data,
        processing_class=tok,
        **extra,
    )
    return trainer, tok, rewards


@pytest.fixture(scope="module")
def step(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any, RewardSet]:
    trainer, tok, rewards = _trainer(tmp_path_factory.mktemp("train"))
    trainer.train()
    return trainer, tok, rewards


def test_tool_mask_is_zero_exactly_on_the_tool_results_tokens(step: tuple[Any, Any, RewardSet]) -> None:
    trainer, tok, _ = step
    batch = type(trainer).captured[0]
    ids, mask, cmask = batch["completion_ids"], batch["tool_mask"], batch["completion_mask"]
    assert ids.shape[0] == 4
    for row in range(4):
        keep = cmask[row].bool()
        tokens, m = ids[row][keep].tolist(), mask[row][keep].tolist()
        masked = tok.decode([t for t, x in zip(tokens, m, strict=True) if x == 0], skip_special_tokens=False)
        trained = tok.decode([t for t, x in zip(tokens, m, strict=True) if x == 1], skip_special_tokens=False)
        assert masked == SUFFIX
        assert trained.startswith(CALL + "</s><answer>") and "<|tool|>" not in trained


def _token_grads(trainer: Any, batch: dict[str, Any]) -> Any:
    """|d loss / d hidden| at the positions that predict each completion token: [batch, tokens]."""
    model = trainer.model
    seen: dict[str, Any] = {}

    def keep_hidden(_module: Any, _inputs: Any, output: Any) -> None:
        output.retain_grad()
        seen["hidden"] = output

    handle = model.model.norm.register_forward_hook(keep_hidden)
    try:
        model.zero_grad()
        trainer.compute_loss(model, batch).backward()
    finally:
        handle.remove()
    grad = seen["hidden"].grad.abs().sum(-1)  # [batch, positions]
    n_completion = batch["completion_ids"].shape[1]
    # Position p predicts token p+1: the completion's tokens are predicted by the n_completion
    # positions ending one before the last.
    return grad[:, -n_completion - 1 : -1]


def test_the_loss_gradient_never_reaches_a_tool_result_token(step: tuple[Any, Any, RewardSet]) -> None:
    trainer, _, _ = step
    batch = type(trainer).captured[0]
    assert batch["advantages"].abs().sum() > 0  # half the group answered right: there is a signal
    per_token = _token_grads(trainer, batch)
    mask = batch["tool_mask"] * batch["completion_mask"]
    tool = (batch["tool_mask"] == 0) & (batch["completion_mask"] == 1)
    assert tool.sum() == 4 * 26  # the suffix's 26 characters in each of the 4 episodes
    assert per_token[tool].sum() == 0
    assert per_token[mask == 1].gt(0).any()


def test_without_the_tool_mask_the_tool_tokens_would_get_gradient(step: tuple[Any, Any, RewardSet]) -> None:
    """The check above can fail: the same step with TRL's mask removed trains on the tool result."""
    trainer, _, _ = step
    batch = dict(type(trainer).captured[0])
    tool = (batch["tool_mask"] == 0) & (batch["completion_mask"] == 1)
    batch.pop("tool_mask")
    assert _token_grads(trainer, batch)[tool].gt(0).any()


def test_episode_terms_and_metrics_are_logged_by_the_step(step: tuple[Any, Any, RewardSet]) -> None:
    trainer, _, rewards = step
    logged = trainer.state.log_history[0]
    assert logged["rewards/required_tools/mean"] == 1.0
    assert logged["episodes/calls"] == 1.0 and logged["episodes/turns"] == 2.0
    assert rewards.names == ["correct", "required_tools"]


def test_rlvr_train_runs_an_episode_task_and_keeps_whole_episodes(tmp_path: Path) -> None:
    """``rlvr train`` on a task with an environment: TRL's environment_factory, the episode terms
    logged, the held-out eval played as episodes, kept rollouts with the tool messages."""
    import json

    from rlvr import keptrollouts as rollouts
    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train
    from support.tasks import make_task

    path = make_task(
        tmp_path / "task",
        extra={
            "prompt": {"user": "{question}"},
            "environment": {"tools": ["calculator"], "max_turns": 2, "terms": {"valid_calls": 0.1}},
            "generation": {"temperature": 1.0, "max_completion_length": 24},
        },
    )
    task = load_task(path)
    result = train(
        task, TrainOptions(run_dir=tmp_path / "run", max_steps=1, no_gate_reason="episode unit test", progress=False)
    )
    assert result.steps == 1
    assert "max_tool_calling_iterations: 1\n" in (tmp_path / "run" / "config.yaml").read_text()  # max_turns - 1
    logs = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    trained = [x for x in logs if "rewards/valid_calls/mean" in x]
    assert trained and "episodes/calls" in trained[0] and "episodes/cut_off_rate" in trained[0]
    assert any("eval/accuracy" in x for x in logs)
    kept = list(rollouts.read(tmp_path / "run"))
    assert kept and all(isinstance(r["completion"], list) for r in kept)
    assert all(m["role"] in ("assistant", "tool") for r in kept for m in r["completion"])
    assert set(kept[0]["scores"]) == {"format", "correct", "valid_calls"}
    # re-inspecting mid-run: the set built from the kept rollouts shows their episodes
    from rlvr.gate.build import build_set

    store = build_set(task, tmp_path / "set.db", rollouts=(tmp_path / "run", 1), size=4)
    for sample in (s.rollout for s in store.samples()):
        episode = sample.episode
        assert episode is not None and sample.completion == episode.final


def test_an_episode_task_on_vllms_cpu_build_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from rlvr.errors import ConfigError
    from rlvr.task import load_task
    from rlvr.train.launch import TrainOptions, run_grpo

    task = load_task(Path(__file__).resolve().parents[2] / "examples" / "tool-search")
    settings: Any = SimpleNamespace(grpo={"use_vllm": True}, dynamic=None, hardware={"vllm_cpu": True})
    opts = TrainOptions(run_dir=tmp_path, no_gate_reason="unit test")
    with pytest.raises(ConfigError, match="multi-turn episode tasks have not been run with vLLM's CPU build"):
        run_grpo(task, opts, settings, {}, None, {}, (None, {}), True)  # type: ignore[arg-type]
