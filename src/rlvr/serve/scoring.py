"""What the reward server and the engine adapters share: a gated task's terms, the request
shapes they accept and stand-in rewards for engines that cannot mask (the counters behind
``/metrics`` are in ``rlvr.serve.metrics``).

The order of a scoring call, server or adapter alike:

1. ``Scorer.from_task`` loads the task and checks its gate with ``rlvr.gate.enforce``, the
   function ``rlvr train`` calls: no matching record, no scorer (``--no-gate REASON`` bypasses it,
   and the reason is copied into every response's ``meta``).
2. A request becomes ``Sample`` objects (``rlvr_samples`` for the rlvr API, ``openrlhf_samples``
   for OpenRLHF's remote reward protocol, ``verl_sample`` for verl's ``compute_score``).
3. ``RewardSet.score`` scores every term (``rewards/combine.py``: a row is masked when any term
   could not decide it).
4. For an engine without masking, ``Imputer.fill`` gives each masked row a stand-in reward (see
   its docstring and docs/serve.md for what that does to the GRPO advantage).

Departure from TRL: TRL can leave a row out of its group's baseline (every reward function
returns ``None``); verl and OpenRLHF take one number per row, so a masked row must be given one.
The rlvr API still returns ``reward: null`` and ``masked: true`` for it; only the engine-facing
fields (``engine_reward``, OpenRLHF's ``rewards``, verl's ``score``) carry the stand-in.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rewards import fault
from ..rewards.base import Outcome, Sample, Verdict
from ..rewards.combine import RewardSet, Scored, completion_text, prompt_text
from ..rewards.rules import untrusted
from ..rewards.rules.strictjson import JsonError, json_key, read_json
from ..task import Task
from .metrics import Metrics


@dataclass(frozen=True)
class QuerySample(Sample):
    """An OpenRLHF sample: ``completion`` is the response without its trailing special tokens,
    ``response`` the response exactly as sent (the query after its prompt), which an episode task
    reads back into turns (``rlvr.serve.episodes``)."""

    response: str = ""


class RequestError(ValueError):
    """A request the server refuses: ``status`` is the HTTP status, ``where`` the field."""

    def __init__(self, status: int, message: str, where: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.where = where

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": str(self)}
        if self.where:
            out["where"] = self.where
        return out


# -- requests ---------------------------------------------------------------------------------
def rlvr_samples(body: Any, max_rows: int, reward_set: Any = None) -> tuple[list[Sample], list[Hashable]]:
    """The rlvr API's request: ``{"samples": [{"completion": ..., "prompt": ..., "group": ...,
    <dataset columns>}, ...]}``, each sample shaped like a line of ``rlvr score``'s input and read
    as ``reward_set.sample`` reads it (an episode task's completion is an episode). The group key
    (for stand-in rewards) is ``group`` when given, else the prompt text."""
    if not isinstance(body, Mapping):
        raise RequestError(400, f"the body must be a JSON object, got {type(body).__name__}")
    rows = body.get("samples")
    if not isinstance(rows, list):
        raise RequestError(400, "field 'samples' must be a list of objects", "samples")
    _check_count(len(rows), max_rows, "samples")
    samples: list[Sample] = []
    keys: list[Hashable] = []
    for i, row in enumerate(rows):
        where = f"samples[{i}]"
        if not isinstance(row, Mapping):
            raise RequestError(400, f"each sample must be an object, got {type(row).__name__}", where)
        completion = row.get("completion")
        if not isinstance(completion, (str, list)):
            raise RequestError(400, "field 'completion' must be a string or a list of messages", f"{where}.completion")
        prompt = row.get("prompt") or ""
        if not isinstance(prompt, (str, list)):
            raise RequestError(400, "field 'prompt' must be a string or a list of messages", f"{where}.prompt")
        ids = row.get("completion_ids")
        columns = {k: v for k, v in row.items() if k not in ("completion", "completion_ids", "prompt", "group")}
        text, ids = prompt_text(prompt), ids if isinstance(ids, list) else None
        if reward_set is not None:
            samples.append(reward_set.sample(completion, columns, text, ids))
        else:
            samples.append(Sample(completion=completion_text(completion), row=columns, prompt=text, completion_ids=ids))
        group = row.get("group")
        keys.append(_key(group) if group is not None else ("prompt", text))
    return samples, keys


# The end-of-sequence markers a decoded query ends with: OpenRLHF decodes prompt + response with
# skip_special_tokens=False (openrlhf/utils/agent.py, SingleTurnAgentExecutor.execute), so the
# response carries its EOS token, which the format term would read as text after the answer.
_SPECIAL_LITERALS = ("</s>", "<eos>", "<end_of_turn>")


def _special_before(text: str, end: int) -> int:
    """Where a special token ending at ``end`` starts (``<|name|>`` with an ASCII word name, or
    one of ``_SPECIAL_LITERALS``), or -1."""
    for lit in _SPECIAL_LITERALS:
        if end >= len(lit) and text.startswith(lit, end - len(lit)):
            return end - len(lit)
    if end < 4 or text[end - 2 : end] != "|>":
        return -1
    i = end - 2
    while i > 0 and (text[i - 1].isascii() and (text[i - 1].isalnum() or text[i - 1] == "_")):
        i -= 1
    if i == end - 2 or i < 2 or text[i - 2 : i] != "<|":
        return -1
    return i - 2


def strip_trailing_special(text: str) -> str:
    """``text`` without the special tokens (and the whitespace around them) it ends with; text
    that ends with none is returned as it is. One backward pass: each character is looked at a
    bounded number of times (a backtracking pattern here cost quadratic time on whitespace runs,
    on the server's event loop)."""
    cut, i = len(text), len(text)
    while True:
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        start = _special_before(text, j)
        if start < 0:
            break
        i = cut = start
    if cut == len(text):
        return text
    while cut > 0 and text[cut - 1].isspace():
        cut -= 1
    return text[:cut]


def split_query(query: str, prompt: str) -> tuple[str, bool]:
    """The response part of an OpenRLHF query (prompt + response) and whether the prompt was
    found in it. Trailing special tokens (``<|im_end|>``, ``</s>``...) are removed. When the query
    does not contain the prompt verbatim (a tokenizer that does not round-trip), the whole query
    is the completion: extraction is anchored to the answer span, but a prompt that itself holds
    an answer span would then be read as a second answer (a format failure, never a pass)."""
    idx = query.find(prompt) if prompt else -1
    text = query[idx + len(prompt) :] if idx >= 0 else query
    return strip_trailing_special(text), idx >= 0 or not prompt


def label_row(label: Any, answer_column: str) -> dict[str, Any]:
    """An OpenRLHF label (``--label_key``'s value) as dataset columns: a JSON object (or a string
    holding one) gives its keys as columns; anything else is the task's answer column."""
    if isinstance(label, Mapping):
        return dict(label)
    if isinstance(label, str) and untrusted.lstrip(label).startswith("{"):
        value = _json_object(label)
        if value is not None:
            return value
    return {answer_column: label}


def openrlhf_samples(body: Any, answer_column: str, max_rows: int) -> tuple[list[Sample], list[Hashable], int]:
    """OpenRLHF's remote reward request ``{"query": [...], "prompts": [...], "labels": [...]}``
    (openrlhf/utils/agent.py ``_fetch_rewards_via_http``; older releases' remote_rm_utils.py sends
    the same three keys). Returns the samples (``QuerySample``: an episode task reads the response
    as sent back into turns), their group keys (the prompt text: OpenRLHF sends each prompt's
    samples with the same prompt string) and how many queries did not contain their prompt."""
    if not isinstance(body, Mapping):
        raise RequestError(400, f"the body must be a JSON object, got {type(body).__name__}")
    queries = body.get("query")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RequestError(400, "field 'query' must be a list of strings (prompt + response)", "query")
    _check_count(len(queries), max_rows, "query")
    prompts = body.get("prompts", [""] * len(queries))
    labels = body.get("labels", [None] * len(queries))
    if prompts is None:
        prompts = [""] * len(queries)
    if labels is None:
        labels = [None] * len(queries)
    for name, values in (("prompts", prompts), ("labels", labels)):
        if not isinstance(values, list) or len(values) != len(queries):
            raise RequestError(400, f"field '{name}' must be a list with one entry per query ({len(queries)})", name)
    samples: list[Sample] = []
    keys: list[Hashable] = []
    missing = 0
    for i, (q, p, label) in enumerate(zip(queries, prompts, labels, strict=True)):
        if not isinstance(p, str):
            raise RequestError(400, "each prompt must be a string", f"prompts[{i}]")
        completion, found = split_query(q, p)
        missing += not found
        at = q.find(p) if p else -1
        response = q[at + len(p) :] if at >= 0 else q
        samples.append(QuerySample(completion, label_row(label, answer_column), p, response=response))
        keys.append(("prompt", p))
    return samples, keys, missing


def verl_sample(solution_str: Any, ground_truth: Any, extra_info: Any, answer_column: str) -> tuple[Sample, Hashable]:
    """One verl sample: the decoded response, ``reward_model.ground_truth`` as the task's answer
    column (a mapping gives several columns), ``extra_info``'s keys as further columns; an
    ``extra_info.rlvr_row`` (a JSON object, written by ``rlvr serve --launch``) is the whole row
    and wins over the rest. The group key is ``extra_info``'s ``uid`` or ``index`` when present
    (verl's example preprocessing writes ``index``), else the ground truth: two prompts with the
    same answer in one batch share a group, an approximation that only matters for masked rows."""
    extra = dict(extra_info) if isinstance(extra_info, Mapping) else {}
    whole = _json_object(extra.get("rlvr_row"))
    if whole is not None:  # written by rlvr.serve.launch: the task's row, exactly
        row = whole
    else:
        row = {k: v for k, v in extra.items() if k not in ("uid", "index")}
        if isinstance(ground_truth, Mapping):
            row.update(ground_truth)
        else:
            row[answer_column] = ground_truth
    prompt = extra.get("question") or extra.get("prompt") or ""
    if "uid" in extra:
        key: Hashable = ("uid", _key(extra["uid"]))
    elif "index" in extra:
        key = ("index", _key(extra["index"]))
    else:
        key = ("truth", _key(ground_truth))
    return Sample(completion=str(solution_str), row=row, prompt=prompt_text(prompt)), key


def _json_object(value: Any) -> dict[str, Any] | None:
    """A JSON object read by the strict reader (request values read as the data reader reads
    rows: floats), or None."""
    if not isinstance(value, str):
        return None
    try:
        obj = read_json(value, decimals="float", surrogates=True)
    except JsonError:
        return None
    return obj if isinstance(obj, dict) else None


def _check_count(n: int, max_rows: int, where: str) -> None:
    if n == 0:
        raise RequestError(400, "no samples to score", where)
    if n > max_rows:
        raise RequestError(
            413, f"{n} samples in one request; the limit is {max_rows} (split the batch, or raise --max-rows)", where
        )


def _key(value: Any) -> Hashable:
    try:
        hash(value)
        return value
    except TypeError:
        return json_key(value)


# -- stand-in rewards -------------------------------------------------------------------------
IMPUTE_SOURCES = ("group", "history", "global", "fallback")


class Imputer:
    """Stand-in rewards for masked rows, for engines that take one number per row.

    A masked row gets, in this order: the mean reward of the decided rows of its group in the
    same call (``group``); else the mean of the decided rows of its group seen in earlier calls
    (``history``, a bounded LRU of ``history`` groups); else the mean of every decided row seen so
    far (``global``); else ``fallback`` (only before any row was ever decided).

    Why the group mean: GRPO's advantage is ``(r - mean(group)) / std(group)``. A row at the group
    mean of the others leaves the mean unchanged and gets advantage exactly 0, as TRL's masking
    does; what differs is the std, which shrinks from ``sqrt(SS/(k-1))`` to ``sqrt(SS/k)`` for
    ``k`` decided rows, so their advantages grow by ``sqrt(k/(k-1))`` (1.08 for k=7). A row scored
    0 instead moves the mean and gives the slow-but-maybe-correct answer a negative advantage.
    A group whose rows are all masked gets one value for all of them: zero advantage everywhere,
    as with true masking. ``tests/serve/test_serve_engines.py`` measures all of this.
    """

    def __init__(self, history: int = 4096, fallback: float = 0.0) -> None:
        self.history = history
        self.fallback = float(fallback)
        self._groups: OrderedDict[Hashable, tuple[float, int]] = OrderedDict()
        self._total = (0.0, 0)
        self._lock = threading.Lock()

    def fill(self, values: Sequence[float | None], keys: Sequence[Hashable]) -> list[tuple[float, str | None]]:
        """``(reward, source)`` per row: the value itself when decided (source ``None``), else the
        stand-in and where it came from (one of ``IMPUTE_SOURCES``)."""
        batch: dict[Hashable, list[float]] = {}
        for v, k in zip(values, keys, strict=True):
            if v is not None:
                batch.setdefault(k, []).append(v)
        with self._lock:
            out: list[tuple[float, str | None]] = []
            for v, k in zip(values, keys, strict=True):
                if v is not None:
                    out.append((v, None))
                elif k in batch:
                    out.append((sum(batch[k]) / len(batch[k]), "group"))
                elif k in self._groups:
                    s, n = self._groups[k]
                    out.append((s / n, "history"))
                elif self._total[1]:
                    out.append((self._total[0] / self._total[1], "global"))
                else:
                    out.append((self.fallback, "fallback"))
            for k, vs in batch.items():
                s, n = self._groups.pop(k, (0.0, 0))
                self._groups[k] = (s + sum(vs), n + len(vs))
                self._total = (self._total[0] + sum(vs), self._total[1] + len(vs))
            while len(self._groups) > self.history:
                self._groups.popitem(last=False)
        return out


# -- the scorer -------------------------------------------------------------------------------
def past_deadline(names: Sequence[str], deadline: float, gold: Mapping[str, Verdict | None] | None) -> Scored:
    """A row not scored within the server's deadline, every term's timeout settled by
    ``rlvr.rewards.fault.whose_fault`` against ``gold``: what the same terms made of the row's
    gold within a deadline of its own (a term maps to None when it has no gold to score), or
    None when the gold was not scored in time either (it is as slow: the row stays masked)."""
    late = Verdict.error(f"not scored within the server's deadline of {deadline:g} s", kind="timeout")
    slow = Verdict.error(f"the gold was not scored within {deadline:g} s either", kind="timeout")
    return Scored({n: fault.whose_fault(late, slow if gold is None else gold.get(n)) for n in names})


def gold_verdicts(reward_set: Any, sample: Sample) -> dict[str, Verdict | None]:
    """What each term makes of ``sample``'s gold (``RewardSet.gold_verdicts``); an episode task's
    episode terms have no gold (None)."""
    return dict(reward_set.gold_verdicts(sample))


def gold_row_key(sample: Sample) -> str:
    """One key per (row, prompt): the rows of a group share one gold run."""
    from ..rewards.fault import gold_key

    return gold_key(Sample("", sample.row, sample.prompt))


class Scorer:
    """A gated task's reward terms and what every response carries (``meta``)."""

    def __init__(
        self, task: Task, reward_set: RewardSet, gate: Mapping[str, Any], *, fallback: float = 0.0, history: int = 4096
    ) -> None:
        self.task = task
        self.reward_set = reward_set
        self.gate = dict(gate)
        self.metrics = Metrics(list(reward_set.names))
        self.imputer = Imputer(history, fallback)
        self.success_imputer = Imputer(history, fallback)
        try:
            self.success: str | None = task.success_term
        except Exception:  # noqa: BLE001 - a task without one still serves; OpenRLHF's scores use the total
            self.success = None
        from ..gate.hashes import sha256_file

        # No path on this machine goes out: a response names the task and its hash, and the gate
        # record by its file name only.
        self.meta: dict[str, Any] = {
            "task": task.name,
            "task_sha256": sha256_file(task.path),
            "terms": [{"name": t.name, "weight": t.weight} for t in reward_set.terms],
            "success_term": self.success,
            "gate": {
                k: (Path(str(self.gate[k])).name if k == "record" and self.gate.get(k) else self.gate.get(k))
                for k in ("status", "record", "record_sha256", "reviewer", "signed_at", "no_gate_reason")
            },
        }

    @classmethod
    def from_task(
        cls,
        path: str | Path,
        *,
        gate_path: str | Path | None = None,
        no_gate_reason: str | None = None,
        fallback: float = 0.0,
        model: str | None = None,
    ) -> Scorer:
        """Load the task and enforce its gate exactly as ``rlvr train`` does (``GateError`` when the
        record is missing or does not match; ``no_gate_reason`` bypasses it and is recorded).
        ``model``: the model the engine's run starts from when it is not the task's (an SFT
        checkpoint); the gate must have been signed on it, as ``rlvr train --model`` checks."""
        from ..gate import enforce
        from ..task import load_task

        task = load_task(path, check_data=False)
        gate = enforce(task, gate_path=gate_path, no_gate_reason=no_gate_reason, model=model)
        reward_set: Any = task.reward_set()
        if task.environment is not None:  # an episode task scores whole episodes: rlvr.serve.episodes
            from .episodes import ServedEpisodes

            reward_set = ServedEpisodes(task, model)
        return cls(task, reward_set, gate, fallback=fallback)

    def engine_rewards(self, scored: Sequence[Scored], keys: Sequence[Hashable]) -> list[tuple[float, str | None]]:
        """One number per row for an engine without masking (``Imputer``); counted in
        ``/metrics`` by source."""
        out = self.imputer.fill([self.reward_set.total(s) for s in scored], keys)
        self.metrics.count_imputed([src for _, src in out])
        return out

    def success_scores(self, scored: Sequence[Scored], keys: Sequence[Hashable]) -> list[float]:
        """The success term's score per row (OpenRLHF's ``scores``, read by its dynamic
        filtering), with the same stand-in for masked rows; the total when the task has none."""
        if self.success is None:
            values = [self.reward_set.total(s) for s in scored]
        else:
            values = [None if s.masked else s.verdicts[self.success].score for s in scored]
        return [v for v, _ in self.success_imputer.fill(values, keys)]

    def result(self, scored: Scored, engine: tuple[float, str | None]) -> dict[str, Any]:
        return {
            "scores": {name: v.to_json() for name, v in scored.verdicts.items()},
            "reward": self.reward_set.total(scored),
            "masked": scored.masked,
            "engine_reward": engine[0],
            "imputed": engine[1],
        }

    def term_logs(self, scored: Sequence[Scored]) -> dict[str, list[float]]:
        """Per-sample values an engine averages into its own metrics: each term's score (an
        error verdict logs 0 here; its share is in ``/error``), and 0/1 indicators whose means
        are the rates ``rlvr doctor`` reads: ``rlvr/<term>/error``, ``/timeout``,
        ``/unparseable`` and ``rlvr/masked``."""
        logs: dict[str, list[float]] = {}
        for name in self.reward_set.names:
            vs = [s.verdicts[name] for s in scored]
            logs[f"rlvr/{name}/score"] = [v.score if v.score is not None else 0.0 for v in vs]
            logs[f"rlvr/{name}/error"] = [float(v.outcome is Outcome.ERROR) for v in vs]
            logs[f"rlvr/{name}/timeout"] = [float(v.error_kind == "timeout") for v in vs]
            logs[f"rlvr/{name}/unparseable"] = [float(v.outcome is Outcome.UNPARSEABLE) for v in vs]
        logs["rlvr/masked"] = [float(s.masked) for s in scored]
        return logs
