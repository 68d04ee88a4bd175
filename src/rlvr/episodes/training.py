"""``rlvr train`` on an episode task: what ``GRPOTrainer(environment_factory=...)`` needs.

TRL runs the episode loop itself (``_tool_call_loop``): it parses each turn's calls with the
tokenizer's response template, calls the environment's tool methods, appends the results and
samples again, at most ``max_tool_calling_iterations`` times; the tokens of tool results get 0 in
its ``tool_mask``, which multiplies the loss mask, so they are never trained on (checked by
``tests/episodes/test_episodes_training.py`` on the mask TRL builds in a real step).
"""

from __future__ import annotations

from typing import Any

from ..rewards.combine import RewardSet
from .environment import trl_environment
from .scoring import EpisodeRewards
from .spec import EnvironmentSpec, build_toolbox
from .template import prepare_tokenizer

__all__ = ["trainer_setup"]


def trainer_setup(
    spec: EnvironmentSpec, source: str, rewards: RewardSet, tokenizer: Any, args: Any
) -> tuple[EpisodeRewards, dict[str, Any]]:
    """The episode reward set and the extra ``GRPOTrainer`` keyword arguments; ``tokenizer`` is
    prepared for tool calls, ``args.max_tool_calling_iterations`` set from ``max_turns`` and the
    episode terms' weights appended to ``args.reward_weights``."""
    toolbox = build_toolbox(spec, source)
    prepare_tokenizer(tokenizer)
    args.max_tool_calling_iterations = spec.max_turns - 1
    episode_rewards = EpisodeRewards(rewards, spec)
    if getattr(args, "reward_weights", None) is not None:
        args.reward_weights = list(args.reward_weights) + [w for _, w in spec.terms]
    return episode_rewards, {"environment_factory": trl_environment(toolbox, spec)}
