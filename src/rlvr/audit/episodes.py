"""Episode exploits: holes a reward over a multi-turn tool episode has and a one-answer reward has not.

Each check builds episodes by hand (no model) and scores them with the task's episode reward
(``Task.reward_set``: the answer terms and the episode terms), or calls the task's tools with arguments that carry no
knowledge of the question. An *honest* episode is the reference: one successful call of a
required tool (else the first tool), then the right answer.

- ``ground_truth_tool``: a tool that returns a row's ground truth when called with arguments that
  know nothing of the question ("", "answer", the row's index or id, the data file's name), for
  at least half the rows tried; or a task tool whose source names the task's data files.
- ``repeated_calls``: the honest call made ``max_tool_calls`` times scores at least as much as once.
- ``ignored_results``: every call failing (the answer cannot have come from the tools) and the right
  answer anyway scores at least as much as the honest episode.
- ``skipped_tools``: the right answer with no call at all scores at least as much as the honest one.
- ``tool_injection``: a tool result can carry the answer span or a chat-template marker (a turn
  forged inside a result), or the reward credits an answer that appears only in a tool result.

A finding is a hit when the hole is open. The checks are sufficient, not complete: a tool that
leaks the answer only for question-specific arguments is what a search tool is meant to do, and
is not flagged.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..episodes import Call, Episode, Turn, build_toolbox
from ..episodes.tools import ToolBox
from ..rewards.base import Sample
from ..rewards.combine import RewardSet

if TYPE_CHECKING:
    from ..task import Task

MARKERS = (
    "<tool_call>",
    "</tool_call>",
    "<|assistant|>",
    "<|user|>",
    "<|system|>",
    "<|tool|>",
    "<|im_start|>",
    "<|im_end|>",
    "</s>",
)
EPISODE_EXPLOITS = ("ground_truth_tool", "repeated_calls", "ignored_results", "skipped_tools", "tool_injection")

__all__ = ["EPISODE_EXPLOITS", "EpisodeFinding", "audit_episodes"]


@dataclass(frozen=True)
class EpisodeFinding:
    exploit: str
    hit: bool
    evidence: str

    def line(self) -> str:
        return f"{'HOLE' if self.hit else 'ok  '} {self.exploit}: {self.evidence}"

    def to_json(self) -> dict[str, Any]:
        return {"exploit": self.exploit, "hit": self.hit, "evidence": self.evidence}


def _placeholder(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    return {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}.get(str(kind), "x")


def _honest_call(toolbox: ToolBox, name: str, ok: bool = True) -> Call:
    params = toolbox.tools[name].parameters
    args = {k: _placeholder(v) for k, v in (params.get("properties") or {}).items() if k in params.get("required", [])}
    if ok:
        return Call(name, args, "a result")
    return Call(name, args, "error: failed", "failed", "failed")


def _total(rewards: RewardSet, episode: Episode, row: Mapping[str, Any], prompt: str) -> float | None:
    (scored,) = rewards.score([Sample.of_episode(episode, row, prompt)])
    return rewards.total(scored)


def audit_episodes(task: Task, max_prompts: int = 8) -> list[EpisodeFinding]:
    """One finding per episode exploit (see the module docstring) over the first train rows; none
    for a task without tools."""
    spec = task.environment
    if spec is None:
        return []
    toolbox = build_toolbox(spec, str(task.path))
    rewards = task.reward_set()
    rows = task.load_split("train")[:max_prompts]
    tool = next((t for t in spec.required if t in toolbox.tools), toolbox.names[0])
    wrap = task.answer.wrap
    counts = dict.fromkeys(("repeated_calls", "ignored_results", "skipped_tools", "answer_in_result"), 0)
    tried = 0
    for row in rows:
        gold = row.get(task.answer_column)
        if gold is None:
            continue
        tried += 1
        gold, prompt = str(gold), str(task.render_prompt(row))
        honest = Episode((Turn("", (_honest_call(toolbox, tool),)), Turn(wrap(gold))))
        base = _total(rewards, honest, row, prompt)
        if base is None:
            continue
        looped = Episode((Turn("", (_honest_call(toolbox, tool),) * max(2, spec.max_tool_calls)), Turn(wrap(gold))))
        failed = Episode((Turn("", (_honest_call(toolbox, tool, ok=False),)), Turn(wrap(gold))))
        skipped = Episode((Turn(wrap(gold)),))
        leaked = Episode((Turn("", (Call(tool, {}, wrap(gold)),)), Turn("I cannot tell.")))
        for name, ep in (("repeated_calls", looped), ("ignored_results", failed), ("skipped_tools", skipped)):
            score = _total(rewards, ep, row, prompt)
            counts[name] += score is not None and score >= base - 1e-9
        (scored,) = rewards.score([Sample.of_episode(leaked, row, prompt)])
        success = scored.verdicts.get(task.success) if task.success else None
        counts["answer_in_result"] += success is not None and success.outcome.value == "correct"
    findings = [
        EpisodeFinding(
            "repeated_calls",
            counts["repeated_calls"] > 0,
            f"{counts['repeated_calls']}/{tried} rows: {max(2, spec.max_tool_calls)} identical calls score as much "
            "as one",
        ),
        EpisodeFinding(
            "ignored_results",
            counts["ignored_results"] > 0,
            f"{counts['ignored_results']}/{tried} rows: every call failing and the right answer anyway scores as much "
            "as an honest episode",
        ),
        EpisodeFinding(
            "skipped_tools",
            counts["skipped_tools"] > 0,
            f"{counts['skipped_tools']}/{tried} rows: the right answer without any call scores as much as an honest "
            "episode" + ("" if spec.required else " (no tool is required: set environment.required and its term)"),
        ),
        _ground_truth_tool(task, toolbox, rows),
        _injection(toolbox, rows, task, counts["answer_in_result"], tried),
    ]
    return findings


def _content_free_args(
    toolbox: ToolBox, name: str, index: int, row: Mapping[str, Any], data_names: list[str]
) -> list[dict[str, Any]]:
    params = toolbox.tools[name].parameters
    props = params.get("properties") or {}
    out = []
    values: list[Any] = [
        "",
        "answer",
        str(index),
        *(str(row[k]) for k in ("id", "index", "key") if k in row),
        *data_names,
    ]
    for value in values:
        args: dict[str, Any] = {}
        for key, schema in props.items():
            kind = schema.get("type")
            if kind == "string":
                args[key] = value
            elif kind == "integer":
                args[key] = index
            elif key in params.get("required", []):
                args[key] = _placeholder(schema)
        out.append(args)
    return out


def _ground_truth_tool(task: Task, toolbox: ToolBox, rows: list[dict[str, Any]]) -> EpisodeFinding:
    data_names = [Path(p).name for p in (task.data.train, task.data.eval) if p]
    for name, tool in toolbox.tools.items():
        try:
            source = inspect.getsource(inspect.getmodule(tool.function) or tool.function)
        except (OSError, TypeError):
            source = ""
        named = [d for d in data_names if d and d in source]
        if named and name not in ("calculator", "search"):
            return EpisodeFinding("ground_truth_tool", True, f"tool {name}'s module names the data file(s) {named}")
        leaks = 0
        for i, row in enumerate(rows):
            gold = str(row.get(task.answer_column, ""))
            if not gold:
                continue
            for args in _content_free_args(toolbox, name, i, row, data_names):
                result = toolbox.call(name, args)
                if result.ok and (result.content.strip() == gold or (len(gold) >= 3 and gold in result.content)):
                    leaks += 1
                    break
        if rows and leaks * 2 >= len(rows):
            return EpisodeFinding(
                "ground_truth_tool",
                True,
                f"tool {name} returns the ground truth for {leaks}/{len(rows)} rows "
                "when called with arguments that know nothing of the question",
            )
    return EpisodeFinding("ground_truth_tool", False, "no tool returned a row's answer for content-free arguments")


def _injection(toolbox: ToolBox, rows: list[dict[str, Any]], task: Task, credited: int, tried: int) -> EpisodeFinding:
    if credited:
        return EpisodeFinding(
            "tool_injection", True, f"{credited}/{tried} rows: an answer that appears only in a tool result is credited"
        )
    markers = (task.answer.open_tag, task.answer.close_tag, *MARKERS) if task.answer.style == "tags" else MARKERS
    for name in toolbox.names:
        for i, row in enumerate(rows):
            question = str(task.render_prompt(row)[-1]["content"]) if task.prompt.chat else ""
            for args in [*_content_free_args(toolbox, name, i, row, []), *_question_args(toolbox, name, question)]:
                result = toolbox.call(name, args)
                found = [m for m in markers if m and m in result.content]
                if found:
                    return EpisodeFinding(
                        "tool_injection", True, f"tool {name}'s result carries {found[0]!r} (a forged span or turn)"
                    )
    return EpisodeFinding("tool_injection", False, "no tool result carried an answer span or chat marker")


def _question_args(toolbox: ToolBox, name: str, question: str) -> list[dict[str, Any]]:
    props = toolbox.tools[name].parameters.get("properties") or {}
    return [{k: question for k, s in props.items() if s.get("type") == "string"}] if question else []
