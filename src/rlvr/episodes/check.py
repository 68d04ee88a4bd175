"""``rlvr task check`` on an episode task: does a *reference episode* fit the token budget?

A reference episode is what a policy that solves the task writes at the least: one call of the
first required tool (else the first tool) with the question as its string arguments, the tool's
real answer, then the right answer. It is rendered with the chat template the run trains with
(tools listed in the prompt) and measured in tokens: every turn and every tool result count
against ``max_completion_length``, and the prompt plus all of it against the model's positions.
The check is a floor, not a bound: an episode of more calls or longer results needs more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import Problem
from .spec import EnvironmentSpec
from .template import prepare_tokenizer, render, tool_suffix
from .tools import ToolBox

__all__ = ["reference_episode_problems", "reference_episode_tokens"]


def reference_episode_tokens(
    spec: EnvironmentSpec, toolbox: ToolBox, tokenizer: Any, prompt: Sequence[Mapping[str, Any]], answer: str
) -> tuple[int, int]:
    """(prompt tokens, episode tokens) of the reference episode for one row."""
    prepare_tokenizer(tokenizer)
    name = next((t for t in spec.required if t in toolbox.tools), toolbox.names[0])
    question = str(prompt[-1].get("content", ""))
    props = toolbox.tools[name].parameters.get("properties") or {}
    args = {k: question for k, s in props.items() if s.get("type") == "string"}
    result = toolbox.call(name, args)
    content = result.content if result.ok else f"error: {result.error}"
    eos = tokenizer.eos_token or ""
    start = render(tokenizer, prompt, toolbox.schemas())
    call = "<tool_call>" + _json({"name": name, "arguments": args}) + "</tool_call>"
    turns = call + eos + tool_suffix(tokenizer, [{"role": "tool", "name": name, "content": content}]) + answer + eos

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count(start), count(turns)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def reference_episode_problems(
    spec: EnvironmentSpec,
    toolbox: ToolBox,
    tokenizer: Any,
    prompts: Sequence[Sequence[Mapping[str, Any]]],
    answers: Sequence[str],
    budget: int,
    positions: int | None,
    source: str,
) -> list[Problem]:
    """One problem for the longest reference episode over the rows when it does not fit."""
    worst_episode, worst_total = 0, 0
    for prompt, answer in zip(prompts, answers, strict=True):
        p, e = reference_episode_tokens(spec, toolbox, tokenizer, prompt, answer)
        worst_episode, worst_total = max(worst_episode, e), max(worst_total, p + e)
    problems = []
    if worst_episode > budget:
        problems.append(
            Problem(
                f"{source}: generation.max_completion_length",
                f"a reference episode (one call, its result, the answer) needs {worst_episode} tokens, "
                f"the budget is {budget}",
                f"raise max_completion_length to at least {worst_episode}: every turn and tool result counts",
            )
        )
    if positions is not None and worst_total > positions:
        problems.append(
            Problem(
                f"{source}: environment",
                f"the prompt with its tools and a reference episode need {worst_total} tokens, "
                f"the model has {positions} positions",
                "shorten the prompt, the tool descriptions or the tool results, or use a longer-context model",
            )
        )
    return problems
