"""Episodes: tasks whose model calls tools over several turns before it answers.

A task's ``environment:`` section (``spec``) declares the tools -- built-ins (``calculator``,
``search`` over a JSONL collection, ``python`` in rlvr's sandbox) or functions in the task
folder, each with a JSON schema read from its signature and docstring (``tools``) -- and the
episode's limits.
``runner.EpisodeRunner`` plays episodes with any sampler, the way TRL's tool loop does (probe,
gate, audit, serve); ``training.trainer_setup`` hands the same tools to
``GRPOTrainer(environment_factory=...)``. The task's one ``RewardSet`` scores an episode: its
answer terms on the final answer, and the episode terms ``valid_calls``, ``required_tools`` and
``call_budget`` (``rlvr.rewards.calls``) on its calls.
"""

from __future__ import annotations

from .calculator import CalculatorError, calculate
from .environment import ToolSession, trl_environment
from .episode import Call, Episode, Turn, from_messages
from .parse import parse_turn
from .runner import EpisodeRunner
from .spec import EnvironmentSpec, build_toolbox, read_environment
from .template import prepare_tokenizer
from .tools import Tool, ToolBox, ToolResult, make_tool

__all__ = [
    "CalculatorError",
    "Call",
    "EnvironmentSpec",
    "Episode",
    "EpisodeRunner",
    "Tool",
    "ToolBox",
    "ToolResult",
    "ToolSession",
    "Turn",
    "build_toolbox",
    "calculate",
    "from_messages",
    "make_tool",
    "parse_turn",
    "prepare_tokenizer",
    "read_environment",
    "trl_environment",
]
