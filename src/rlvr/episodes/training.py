"""``rlvr train`` on an episode task: what ``GRPOTrainer(environment_factory=...)`` needs.

TRL runs the episode loop itself (``_tool_call_loop``): it parses each turn's calls with the
tokenizer's response template, calls the environment's tool methods, appends the results and
samples again, at most ``max_tool_calling_iterations`` times; the tokens of tool results get 0 in
its ``tool_mask``, which multiplies the loss mask, so they are never trained on (checked by
``tests/episodes/test_episodes_training.py`` on the mask TRL builds in a real step). The rewards
are the task's one ``RewardSet``: its episode terms are already in it, weights included.
"""

from __future__ import annotations

from typing import Any

from .environment import trl_environment
from .spec import EnvironmentSpec, build_toolbox
from .template import prepare_tokenizer

__all__ = ["trainer_setup"]


def trainer_setup(spec: EnvironmentSpec, source: str, tokenizer: Any, args: Any) -> dict[str, Any]:
    """The extra ``GRPOTrainer`` keyword arguments; ``tokenizer`` is prepared for tool calls and
    ``args.max_tool_calling_iterations`` set from ``max_turns``."""
    toolbox = build_toolbox(spec, source)
    prepare_tokenizer(tokenizer)
    args.max_tool_calling_iterations = spec.max_turns - 1
    return {"environment_factory": trl_environment(toolbox, spec)}
