"""The inspection gate on an episode task: each sample shows its whole episode.

An episode task's samples are episodes (``rlvr.probe.episodes.EpisodeSampler``): the sample's
completion is the final answer, which the task's terms judge, and the episode travels in the
sample's row under ``EPISODE_KEY`` (the store keeps rows as they are), so the review page and the
terminal can show each turn, each call with its arguments and each result or error. A result
longer than ``FOLD`` characters is folded: the terminal prints its head and how much is left, the
page puts the rest behind a ``<details>`` toggle. Everything is text to the page's autoescaping
templates, so a tool result cannot inject markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..episodes import Episode

EPISODE_KEY = "_episode"
FOLD = 240

__all__ = ["EPISODE_KEY", "FOLD", "episode_of", "episode_view", "rollout_episodes", "terminal_lines", "with_episodes"]


def with_episodes(drawn: Sequence[Any], episodes: Sequence[Episode]) -> list[Any]:
    """``drawn`` (``gate.build.Drawn``) with each one's episode in its row and its final answer as
    the completion (what the task's terms judge), in order; unchanged when the counts differ."""
    if len(drawn) != len(episodes):
        return list(drawn)
    return [
        replace(d, completion=e.final, row={**d.row, EPISODE_KEY: e.to_json()})
        for d, e in zip(drawn, episodes, strict=True)
    ]


def rollout_episodes(run_dir: Path, step: int) -> list[Episode]:
    """The episodes ``rlvr train`` kept at ``step`` (each rollout's completion is the episode's
    message list), in the order ``gate.build.read_rollout_samples`` reads them."""
    from .. import rollouts
    from ..episodes import from_messages

    out = []
    for rec in rollouts.at_step(run_dir, step):
        msgs = rec.get("completion")
        out.append(from_messages(msgs if isinstance(msgs, list) else [{"role": "assistant", "content": str(msgs)}]))
    return out


def episode_of(row: Mapping[str, Any]) -> Episode | None:
    data = row.get(EPISODE_KEY)
    return Episode.from_json(data) if isinstance(data, Mapping) else None


def _fold(text: str) -> tuple[str, str]:
    return (text, "") if len(text) <= FOLD else (text[:FOLD], text[FOLD:])


def episode_view(row: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The episode as the review page's template reads it (None for a sample without one)."""
    episode = episode_of(row)
    if episode is None:
        return None
    turns = []
    for i, turn in enumerate(episode.turns, 1):
        calls = []
        for c in turn.calls:
            head, rest = _fold(c.result)
            args = json.dumps(c.arguments, ensure_ascii=False, default=str)
            calls.append(
                {"name": c.name, "arguments": args, "head": head, "rest": rest, "error": c.error, "kind": c.kind}
            )
        turns.append({"n": i, "text": turn.text, "calls": calls, "final": i == len(episode.turns)})
    return [{"turns": turns, "cut_off": episode.cut_off, "cut_reason": episode.cut_reason}]


def terminal_lines(row: Mapping[str, Any]) -> list[str]:
    """The episode as the terminal review prints it (nothing for a sample without one)."""
    view = episode_view(row)
    if not view:
        return []
    lines = ["episode:"]
    for t in view[0]["turns"]:
        lines.append(f"  turn {t['n']}{' (final answer)' if t['final'] else ''}: {t['text'] or '(no text)'}")
        for c in t["calls"]:
            lines.append(
                f"    → {c['name']}({c['arguments']})" + (f"  [{c['kind']}: {c['error']}]" if c["error"] else "")
            )
            more = f" … ({len(c['rest'])} more characters)" if c["rest"] else ""
            lines.append("    ← " + (c["head"] + more).replace("\n", "\n      "))
    if view[0]["cut_off"]:
        lines.append(f"  cut off ({view[0]['cut_reason']})")
    return lines
