"""The TRL adapter: a task's reward terms as ``GRPOTrainer`` reward functions.

Each term becomes one TRL reward function named after the term, so TRL logs
``rewards/<term>/mean`` and ``/std`` separately and weighs them with ``reward_weights``.
All terms of a batch are scored together once (TRL calls the functions one after another with
the same batch; the first call scores every term and the others read the cache), because
masking needs every term's verdict for a row:

- When any term could not decide a row (outcome ``error``), *every* term returns ``None`` for it.
  TRL then leaves the row out of its group's baseline and forces its advantage to 0. Masking only
  the failing term would not do: TRL sums weighted rewards with ``nansum``, so a missing
  correctness term would count as 0 -- the silent zero the rules forbid.
- Every verdict of every term passes through ``checked_verdicts``, the one place a score is
  checked: a score that is not a finite number within float32's range (NaN, inf, ``1e39``, a
  string) and anything that is not a ``Verdict`` become an ``error`` naming the term and the row,
  and a ``verify_batch`` that raises (or returns the wrong number of verdicts) is retried one row
  at a time, so one bad row masks one row, never its batch, and nothing propagates out of a
  reward function into the training step. (An inf reward that reached TRL would zero the whole
  group's advantages; a NaN would be summed away by ``nansum`` as a silent 0.)
- Every failure to decide is settled by ``rlvr.rewards.fault`` (the one place that says whose
  fault it is): charged to the answer (``wrong``, 0, its cause kept in ``error_kind``) unless
  the row's gold, scored through the same verifier, fails the same way; only then is it an
  ``error`` and the row masked.
- Per-term rates are logged through TRL's ``log_metric``: ``rewards/<term>/error_rate``,
  ``/timeout_rate``, ``/unparseable_rate``, ``/charged_rate`` and ``/charged/<kind>`` (failures
  charged to the answer, by cause), and ``rewards/masked_rate`` for the whole batch.
  A composed term (a length wrapper around a base verifier) also logs the mean of each of its
  parts, ``rewards/<term>/base/mean`` and ``rewards/<term>/penalty/mean``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import Outcome, Sample, Verdict, Verifier
from .episode import Episode, episode_metrics
from .fault import GOLDS, gold_key, gold_sample, is_charged, settle
from .format import AnswerFormat
from .rules.strictjson import safe_dumps


@dataclass(frozen=True)
class Term:
    """One reward term of a task: a name (the metric key), its verifier and its weight."""

    name: str
    verifier: Verifier
    weight: float = 1.0


FLOAT32_MAX = 3.4028234663852886e38


def _message_text(message: Mapping[str, Any]) -> str:
    """A message's text, with its structured tool calls (TRL and OpenAI put them in
    ``tool_calls``, often with ``content: None``) written out as ``<tool_call>`` blocks, the form
    the ``tool_call`` verifier reads.

    Arguments given as a string (OpenAI's form) are carried as that string, never parsed here:
    the verifier reads them with the one strict reader (``rlvr.rewards.rules.strictjson``), which
    refuses duplicate keys and over-long numbers that a plain ``json.loads`` would collapse or
    raise on outside every guard. Arguments given as an object are written with
    ``safe_dumps``; one that cannot be written (a 5,000-digit integer, nesting past the limit) is
    carried as a text the verifier reports as not valid JSON: a wrong answer, never a crash.
    """
    text = str(message.get("content") or "")
    for call in message.get("tool_calls") or ():
        if not isinstance(call, Mapping):
            continue
        fn = call.get("function", call)
        if not isinstance(fn, Mapping):
            continue
        args = fn.get("arguments", {})
        if not isinstance(args, str):
            args = safe_dumps(args) or "<arguments that are not JSON>"
        name = safe_dumps(fn.get("name")) or "null"
        body = '{"name": ' + name + ', "arguments": ' + (safe_dumps(args) or '""') + "}"
        text += f"<tool_call>\n{body}\n</tool_call>"
    return text


def completion_text(completion: Any) -> str:
    """TRL passes plain strings, or for conversational data a list of messages: use the text of
    the assistant's messages, structured tool calls included."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        return _message_text(completion)
    if isinstance(completion, Sequence):
        return "".join(
            _message_text(m) for m in completion if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        )
    return str(completion)


def check_verdict(value: Any, term: str, row: int) -> Verdict:
    """``value`` if it is a verdict whose score (and parts) are finite numbers within float32's
    range, else an ``error`` verdict naming the term and the row."""
    where = f"term {term!r}, row {row}"
    if not isinstance(value, Verdict):
        return Verdict.error(f"{where}: the verifier returned {type(value).__name__}, not a Verdict", kind="crash")
    numbers = ([value.score] if value.score is not None else []) + [v for _, v in value.parts]
    for x in numbers:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            return Verdict.error(f"{where}: score {x!r} is not a number", kind="crash")
        if not math.isfinite(x) or abs(x) > FLOAT32_MAX:
            return Verdict.error(f"{where}: score {x!r} is not a finite number within float32's range", kind="crash")
    return value


def checked_verdicts(
    term: str,
    verifier: Verifier,
    samples: Sequence[Sample],
    offset: int = 0,
    *,
    fmt: AnswerFormat | None = None,
    column: str | None = None,
) -> list[Verdict]:
    """The term's verdicts for ``samples``, never raising, every failure to decide settled by
    ``rlvr.rewards.fault`` (charged to the answer unless the gold alone fails the same way):
    see the module docstring. ``offset`` is the first sample's row number (for the error
    messages); ``fmt`` and ``column``: the task's answer format and column, which write the gold
    of a term that declares neither."""
    out = _checked(term, verifier, samples, offset)
    return settle(verifier, samples, out, lambda golds: _checked(term, verifier, golds, offset), fmt=fmt, column=column)


def _checked(term: str, verifier: Verifier, samples: Sequence[Sample], offset: int = 0) -> list[Verdict]:
    try:
        out = list(verifier.verify_batch(samples))
        if len(out) != len(samples):
            raise ValueError(f"verify_batch returned {len(out)} verdicts for {len(samples)} samples")
    except Exception as exc:  # noqa: BLE001 - one bad row must not mask (or crash) the batch
        if len(samples) <= 1:
            return [
                Verdict.error(f"term {term!r}, row {offset}: {type(exc).__name__}: {exc}", kind="crash")
                for _ in samples
            ]
        out = []
        for i, s in enumerate(samples):
            out.extend(_checked(term, verifier, [s], offset + i))
        return out
    return [check_verdict(v, term, offset + i) for i, v in enumerate(out)]


# Keys TRL passes to reward functions that are not dataset columns.
TRL_KEYS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric", "environments"}
)


def trl_columns(kwargs: Mapping[str, Any], n: int) -> dict[str, list[Any]]:
    """The dataset columns in the keyword arguments TRL gives a reward function for ``n``
    completions: every list of ``n`` values under a key that is not one of TRL's own."""
    return {k: v for k, v in kwargs.items() if k not in TRL_KEYS and isinstance(v, list) and len(v) == n}


def prompt_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, Sequence):
        return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in prompt if isinstance(m, Mapping))
    return str(prompt)


@dataclass(frozen=True)
class Scored:
    """All terms' verdicts for one sample, and whether the sample is masked."""

    verdicts: dict[str, Verdict]

    @property
    def masked(self) -> bool:
        return any(v.outcome is Outcome.ERROR for v in self.verdicts.values())

    def rewards(self) -> dict[str, float | None]:
        if self.masked:
            return dict.fromkeys(self.verdicts)
        return {k: v.score for k, v in self.verdicts.items()}


# Reads a TRL batch's episodes from its completions (message lists) and ``environments`` (the
# tool sessions): ``rlvr.episodes.environment.trl_episodes``, given by an episode task.
EpisodeReader = Callable[[Sequence[Any], Sequence[Any]], list[Episode]]


class RewardSet:
    """A task's terms, scored together: the answer terms and, for an episode task, the episode
    terms (``rlvr.rewards.calls``) -- one set for a single-turn sample and an episode alike.
    ``score`` for files, probes, the gate and the audit; ``trl_functions`` for ``GRPOTrainer``,
    which on an episode task passes each completion as a message list that ``read_episodes``
    turns back into the episode."""

    def __init__(
        self,
        terms: Sequence[Term],
        *,
        answer_format: AnswerFormat | None = None,
        answer_column: str | None = None,
        read_episodes: EpisodeReader | None = None,
    ) -> None:
        names = [t.name for t in terms]
        # What writes the gold of a term that declares neither (a custom term): the task's.
        self.answer_format = answer_format
        self.answer_column = answer_column
        if len(set(names)) != len(names):
            raise ValueError(f"reward term names must be unique: {names}")
        self.terms = list(terms)
        self.read_episodes = read_episodes
        self._cache_key: tuple[Any, ...] | None = None
        self._cache: tuple[list[Sample], list[Scored]] = ([], [])

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.terms]

    @property
    def weights(self) -> list[float]:
        return [t.weight for t in self.terms]

    def sample(
        self,
        completion: Any,
        row: Mapping[str, Any],
        prompt: Any = "",
        completion_ids: Sequence[int] | None = None,
        environment: Any = None,
    ) -> Sample:
        """The one way a completion as a client or TRL gives it (text, or a message list) becomes
        a sample of this set: on an episode task an episode (``read_episodes``; ``environment``:
        the tool session TRL ran it in, whose records say how each call went), else its text
        (``completion_text``: a message's tool calls written out as ``<tool_call>`` blocks)."""
        if self.read_episodes is None:
            return Sample(completion_text(completion), row, prompt_text(prompt), completion_ids)
        (episode,) = self.read_episodes([completion], [environment])
        return Sample.of_episode(episode, row, prompt_text(prompt), completion_ids=completion_ids)

    def score(self, samples: Sequence[Sample], offset: int = 0) -> list[Scored]:
        """Every term's verdicts for every sample (``offset``: the first sample's row number)."""
        per_term = {
            t.name: checked_verdicts(
                t.name, t.verifier, samples, offset, fmt=self.answer_format, column=self.answer_column
            )
            for t in self.terms
        }
        return [Scored({name: per_term[name][i] for name in per_term}) for i in range(len(samples))]

    def gold_verdicts(self, sample: Sample) -> dict[str, Verdict | None]:
        """What each term makes of ``sample``'s gold (``rlvr.rewards.fault.gold_sample``), scored
        through the same path and cached per row; None for a term with no gold. The reward
        server settles rows past its deadline with these."""
        out: dict[str, Verdict | None] = {}
        for t in self.terms:
            gold = gold_sample(t.verifier, sample, self.answer_format, self.answer_column)
            if gold is None:
                out[t.name] = None
                continue
            key = gold_key(gold)
            hit = GOLDS.get(t.verifier, key)
            if hit is None:
                (hit,) = _checked(t.name, t.verifier, [gold])
                GOLDS.put(t.verifier, key, hit)
            out[t.name] = hit
        return out

    def total(self, scored: Scored) -> float | None:
        """The weighted reward TRL would compute for this sample (None when masked)."""
        if scored.masked:
            return None
        return sum(t.weight * (scored.verdicts[t.name].score or 0.0) for t in self.terms)

    # -- TRL ---------------------------------------------------------------------------------
    def _score_trl_batch(self, kwargs: Mapping[str, Any]) -> tuple[list[Sample], list[Scored]]:
        prompts = kwargs.get("prompts") or []
        completions = kwargs["completions"]
        # The step is part of the key: two steps that happen to sample identical text are still
        # two batches, each scored and logged once. The whole completion (an episode's tool
        # results included) is: two episodes with one final answer are two samples.
        state = kwargs.get("trainer_state")
        key = (
            json.dumps(completions, default=str),
            tuple(prompt_text(p) for p in prompts),
            id(state),
            getattr(state, "global_step", None),
        )
        if key == self._cache_key:
            return self._cache
        n = len(completions)
        ids = kwargs.get("completion_ids") or [None] * n
        envs = kwargs.get("environments") or [None] * n
        columns = trl_columns(kwargs, n)
        samples = [
            self.sample(
                completions[i],
                {k: v[i] for k, v in columns.items()},
                prompts[i] if i < len(prompts) else "",
                ids[i],
                envs[i],
            )
            for i in range(n)
        ]
        scored = self.score(samples)
        log_metric: Callable[[str, float], None] | None = kwargs.get("log_metric")
        if log_metric is not None and scored:
            n = len(scored)
            if self.read_episodes is not None:
                for name, value in episode_metrics([s.episode for s in samples if s.episode is not None]).items():
                    log_metric(name, value)
            for name in self.names:
                vs = [s.verdicts[name] for s in scored]
                log_metric(f"rewards/{name}/error_rate", sum(v.outcome is Outcome.ERROR for v in vs) / n)
                log_metric(f"rewards/{name}/timeout_rate", sum(v.error_kind == "timeout" for v in vs) / n)
                log_metric(f"rewards/{name}/unparseable_rate", sum(v.outcome is Outcome.UNPARSEABLE for v in vs) / n)
                charged = [v.error_kind or "crash" for v in vs if is_charged(v)]
                log_metric(f"rewards/{name}/charged_rate", len(charged) / n)
                for kind in sorted(set(charged)):
                    log_metric(f"rewards/{name}/charged/{kind}", charged.count(kind) / n)
                parts: dict[str, list[float]] = {}
                for v in vs:
                    for part, value in v.parts:
                        parts.setdefault(part, []).append(value)
                for part, values in parts.items():
                    log_metric(f"rewards/{name}/{part}/mean", sum(values) / len(values))
            log_metric("rewards/masked_rate", sum(s.masked for s in scored) / n)
        self._cache_key, self._cache = key, (samples, scored)
        return samples, scored

    def scored_trl_batch(self, **kwargs: Any) -> list[Scored]:
        """The verdicts behind one TRL call's rewards (scored once per batch, then cached): what
        ``rlvr train`` keeps as rollouts."""
        return self._score_trl_batch(kwargs)[1]

    def trl_batch(self, **kwargs: Any) -> tuple[list[Sample], list[Scored]]:
        """The samples one TRL call's completions were read as, and their verdicts (the same
        cached batch as ``scored_trl_batch``): what the tripwire re-scores."""
        return self._score_trl_batch(kwargs)

    def trl_functions(self) -> list[Callable[..., list[float | None]]]:
        """One TRL reward function per term, in order, each named after its term."""
        return reward_functions(self.names, self.scored_trl_batch)


def reward_functions(
    names: Sequence[str], score: Callable[..., list[Scored]]
) -> list[Callable[..., list[float | None]]]:
    """One TRL reward function per name, each named after it (TRL logs ``rewards/<name>``) and
    reading its term from ``score``, which scores a TRL call's batch once for all the terms."""
    funcs = []
    for name in names:

        def fn(prompts: Any = None, completions: Any = None, _name: str = name, **kwargs: Any) -> list[float | None]:
            return [s.rewards()[_name] for s in score(prompts=prompts, completions=completions, **kwargs)]

        fn.__name__ = fn.__qualname__ = name
        funcs.append(fn)
    return funcs
