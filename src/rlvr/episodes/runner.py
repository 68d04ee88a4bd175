"""The episode runner, without TRL: sample a turn, read its tool calls, run them, append the
results, sample again, until a turn makes no call or a limit is reached.

It follows TRL's ``GRPOTrainer`` tool loop step by step, so what the probe, the gate, the audit
and ``rlvr serve`` see is what training does:

- the first turn samples ``n`` completions per prompt; each later turn samples one continuation
  per live episode, of the whole text so far (prompt, the model's turns with their EOS, tool
  results rendered by the chat template: ``template.tool_suffix``);
- the token budget (``max_completion_length``) covers every turn and every tool result: a turn
  gets what is left, and tool results that would overflow it end the episode (``cut_off``,
  reason ``tokens``), as TRL rolls them back;
- at most ``max_turns`` turns (TRL's ``max_tool_calling_iterations`` is ``max_turns - 1``); a
  last turn that still calls tools is cut off (reason ``turns``);
- a malformed call (``parse.parse_turn``) ends the episode with that turn as its answer.

One difference, stated: TRL appends token ids (prompt ids + completion ids + suffix ids) while the
runner appends text and the sampler tokenizes it again. For the built-in character tokenizer the
two are the same ids; for a BPE tokenizer a merge across a turn boundary can differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .environment import ToolSession
from .episode import Call, Episode, Turn
from .parse import parse_turn
from .spec import EnvironmentSpec
from .template import render, tool_suffix
from .tools import ToolBox

__all__ = ["EpisodeRunner"]


@dataclass
class _Live:
    context: str
    session: ToolSession
    turns: list[Turn] = field(default_factory=list)
    used: int = 0
    tool_tokens: int = 0
    done: bool = False
    cut: str | None = None


class EpisodeRunner:
    """Runs episodes for a sampler (``rlvr.generate.Sampler``) whose tokenizer was prepared with
    ``template.prepare_tokenizer``."""

    def __init__(self, sampler: Any, tokenizer: Any, spec: EnvironmentSpec, toolbox: ToolBox) -> None:
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.spec = spec
        self.toolbox = toolbox

    def _n_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def run(
        self,
        prompts: Sequence[Sequence[Mapping[str, Any]]],
        rows: Sequence[Mapping[str, Any]],
        n: int,
        temperature: float,
        max_completion_length: int,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[list[Episode]]:
        """``n`` episodes per prompt (chat messages), in prompt order."""
        schemas = self.toolbox.schemas()
        lives: list[_Live] = []
        for prompt, row in zip(prompts, rows, strict=True):
            start = render(self.tokenizer, prompt, schemas)
            for _ in range(n):
                session = ToolSession(self.toolbox, self.spec)
                session.reset(**row)
                lives.append(_Live(start, session))
        for turn in range(self.spec.max_turns):
            live = [x for x in lives if not x.done]
            if not live:
                break
            budget = {id(x): max_completion_length - x.used for x in live}
            # One sampler call per distinct remaining budget keeps TRL's rule (a turn gets what is left).
            for left in sorted(set(budget.values())):
                group = [x for x in live if budget[id(x)] == left]
                step_seed = None if seed is None else seed + 7919 * turn
                if turn == 0:
                    uniq = [group[i].context for i in range(0, len(group), n)]
                    outs = [c for g in self.sampler.sample(uniq, n, temperature, left, top_p, step_seed) for c in g]
                else:
                    outs = [
                        g[0]
                        for g in self.sampler.sample([x.context for x in group], 1, temperature, left, top_p, step_seed)
                    ]
                for x, out in zip(group, outs, strict=True):
                    self._step(x, out, turn, max_completion_length)
        return [[self._episode(x) for x in lives[i : i + n]] for i in range(0, len(lives), n)]

    def _step(self, x: _Live, out: Any, turn: int, budget: int) -> None:
        raw = self.tokenizer.decode(list(out.token_ids), skip_special_tokens=False)
        x.context += raw
        x.used += len(out.token_ids)
        parsed = parse_turn(out.text)
        if parsed.malformed or not parsed.calls:
            calls = tuple(
                Call(c.name, c.arguments, "", c.error or "in a turn with a malformed call (not run)", "malformed")
                for c in parsed.calls
            )
            x.turns.append(Turn(parsed.text, calls, len(out.token_ids)))
            x.done = True
            if out.finish_reason == "length" and not calls:
                x.cut = "tokens"
            return
        calls = tuple(x.session.call(c.name, c.arguments) for c in parsed.calls)
        x.turns.append(Turn(parsed.text, calls, len(out.token_ids)))
        if out.finish_reason == "length":  # TRL: a truncated turn's calls are not parsed back (no EOS)
            x.done, x.cut = True, "tokens"
            return
        if turn + 1 >= self.spec.max_turns:
            x.done, x.cut = True, "turns"
            return
        suffix = tool_suffix(self.tokenizer, [{"role": "tool", "name": c.name, "content": c.result} for c in calls])
        cost = self._n_tokens(suffix)
        if x.used + cost > budget:
            x.done, x.cut = True, "tokens"
            return
        x.context += suffix
        x.used += cost
        x.tool_tokens += cost

    def _episode(self, x: _Live) -> Episode:
        return Episode(
            tuple(x.turns),
            cut_off=x.cut is not None,
            cut_reason=x.cut,
            n_tokens=x.used - x.tool_tokens,
            tool_tokens=x.tool_tokens,
        )
