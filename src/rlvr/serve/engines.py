"""A task file as verl's ``custom_reward_function`` and OpenRLHF's ``reward_func``, in process.

Neither engine is imported: verl 0.9 and OpenRLHF 0.11 pin transformers versions rlvr cannot
share, so these adapters are written against the engines' call signatures, read from their code:

- verl, per sample: ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)``,
  called by the reward loop's ``NaiveRewardManager.run_single`` in verl 0.9.1
  (verl/experimental/reward_loop/reward_manager/naive.py, from executor threads, possibly
  concurrently) and by the legacy ``NaiveRewardManager`` (verl/workers/reward_manager/naive.py);
  a dict result must hold ``score`` and its other keys are collected per sample into
  ``reward_extra_info`` (so every row returns the same keys).
- verl, batched (the legacy ``BatchRewardManager``, verl/workers/reward_manager/batch.py,
  ``reward_model.reward_manager=batch`` in releases that use it; verl 0.9.1's reward loop has no
  batch manager): ``compute_score(data_sources=, solution_strs=, ground_truths=, extra_infos=,
  **reward_kwargs)`` returning one float or dict per sample.
- OpenRLHF (``--remote_rm_url /path/reward_func.py``; openrlhf/utils/agent.py
  ``SingleTurnAgentExecutor``): ``reward_func(queries, prompts, labels)`` returning
  ``{"rewards", "scores", "extra_logs"}``; queries are prompt + response decoded with special
  tokens. Recent releases call it with one sample at a time.

``tests/serve/test_serve_engines.py`` checks these contracts as recorded; the opt-in
``tests/serve/test_serve_engine_code.py`` runs OpenRLHF 0.11.2's and verl 0.9.1's own reward
code (downloaded without dependencies) against these adapters and the server.

Undecidable samples: neither engine can leave a row out of its group's baseline, so a masked row
gets a stand-in reward (``scoring.Imputer``: the mean of its group's decided rows, which gives it
advantage 0). The batched verl variant sees whole groups; the per-sample one and OpenRLHF's
one-sample calls fall back to the group's earlier rows (``history``). Every masked row is counted
in the logged values (``rlvr_masked``, ``rlvr/masked``) and in ``imputed``'s source.

The gate is enforced when an adapter is built (at the engine's import of the adapter file), the
same check ``rlvr train`` makes. rlvr's reward path imports neither torch nor transformers, so
rlvr can be installed in the engine's environment from a wheel built from the checkout (it is not
on PyPI) with ``pip install --no-deps`` plus its light dependencies (pyyaml, sympy,
latex2sympy2_extended, jsonschema, pydantic, httpx, regex, google-re2); see docs/serve.md.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from ..rewards.base import Sample
from ..rewards.combine import Scored
from ..task import Task
from .scoring import Scorer, openrlhf_samples, verl_sample


def _verl_dict(scorer: Scorer, scored: Any, engine: tuple[float, str | None]) -> dict[str, Any]:
    """verl's per-sample dict: ``score`` plus the same keys for every row, numbers only (verl
    averages them), so a masked row is visible as ``rlvr_masked`` 1 and per term as ``_error``."""
    out: dict[str, Any] = {"score": float(engine[0])}
    for name, v in scored.verdicts.items():
        out[f"rlvr_{name}"] = float(v.score) if v.score is not None else 0.0
        out[f"rlvr_{name}_error"] = float(v.score is None)
    out["rlvr_masked"] = float(scored.masked)
    out["rlvr_imputed_group"] = float(engine[1] == "group")
    out["rlvr_imputed_other"] = float(engine[1] not in (None, "group"))
    return out


class VerlAdapter:
    """``compute_score`` and ``compute_score_batch`` for one gated task (see module docstring)."""

    def __init__(
        self,
        task_path: str | Path,
        *,
        gate_path: str | Path | None = None,
        no_gate_reason: str | None = None,
        fallback: float = 0.0,
        model: str | None = None,
    ) -> None:
        self.scorer = Scorer.from_task(
            task_path, gate_path=gate_path, no_gate_reason=no_gate_reason, fallback=fallback, model=model
        )

    def compute_score(
        self,
        data_source: Any = None,
        solution_str: Any = "",
        ground_truth: Any = None,
        extra_info: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        return self.compute_score_batch([data_source], [solution_str], [ground_truth], [extra_info])[0]

    def compute_score_batch(
        self,
        data_sources: Sequence[Any] = (),
        solution_strs: Sequence[Any] = (),
        ground_truths: Sequence[Any] = (),
        extra_infos: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> list[dict[str, Any]]:
        n = len(solution_strs)
        extras = list(extra_infos) if extra_infos is not None else [None] * n
        column = self.scorer.task.answer_column
        pairs = [verl_sample(s, g, e, column) for s, g, e in zip(solution_strs, ground_truths, extras, strict=True)]
        samples, keys = [p[0] for p in pairs], [p[1] for p in pairs]
        start = time.monotonic()
        scored = self.scorer.reward_set.score(samples)
        self.scorer.metrics.scored(scored, time.monotonic() - start)
        engine = self.scorer.engine_rewards(scored, keys)
        out = [_verl_dict(self.scorer, s, e) for s, e in zip(scored, engine, strict=True)]
        if os.environ.get(CALL_LOG_ENV):
            _log_calls(os.environ[CALL_LOG_ENV], solution_strs, ground_truths, extras, out)
        return out


# Set in the engine's environment, every verl call is appended to this JSONL file, one line per
# sample: the process, the completion, the ground truth, the row verl passed and what rlvr returned.
CALL_LOG_ENV = "RLVR_ADAPTER_LOG"


def _log_calls(
    path: str, solutions: Sequence[Any], truths: Sequence[Any], extras: Sequence[Any], out: Sequence[dict[str, Any]]
) -> None:
    """One write of whole lines per call (O_APPEND): verl's reward workers may call at once."""
    lines = "".join(
        json.dumps(
            {
                "pid": os.getpid(),
                "solution_str": s,
                "ground_truth": g,
                "rlvr_row": e.get("rlvr_row") if isinstance(e, dict) else None,
                "result": o,
            },
            ensure_ascii=False,
            default=str,
        )
        + "\n"
        for s, g, e, o in zip(solutions, truths, extras, out, strict=True)
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


class OpenRLHFAdapter:
    """``reward_func(queries, prompts, labels)`` for one gated task, same answers as the
    server's ``/get_reward`` (module docstring)."""

    def __init__(
        self,
        task_path: str | Path,
        *,
        gate_path: str | Path | None = None,
        no_gate_reason: str | None = None,
        fallback: float = 0.0,
        model: str | None = None,
    ) -> None:
        self.scorer = Scorer.from_task(
            task_path, gate_path=gate_path, no_gate_reason=no_gate_reason, fallback=fallback, model=model
        )

    def __call__(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
    ) -> dict[str, Any]:
        body = {"query": list(queries), "prompts": list(prompts), "labels": list(labels)}
        samples, keys, _ = openrlhf_samples(body, self.scorer.task.answer_column, max_rows=1 << 30)
        return openrlhf_response(self.scorer, samples, keys)


def openrlhf_response(
    scorer: Scorer, samples: Sequence[Sample], keys: Sequence[Hashable], scored: Sequence[Scored] | None = None
) -> dict[str, Any]:
    """The answer to an OpenRLHF reward call: ``rewards`` (stand-ins for masked rows),
    ``scores`` (the success term, for ``--dynamic_filtering``), ``extra_logs`` (per-sample
    values, see ``Scorer.term_logs``) and ``rlvr`` (every term's verdict, the mask, ``meta``).
    ``scored``: verdicts already computed (the server scores with a deadline)."""
    if scored is None:
        start = time.monotonic()
        scored = scorer.reward_set.score(samples)
        scorer.metrics.scored(scored, time.monotonic() - start)
    engine = scorer.engine_rewards(scored, keys)
    return {
        "rewards": [e[0] for e in engine],
        "scores": scorer.success_scores(scored, keys),
        "extra_logs": scorer.term_logs(scored),
        "rlvr": {"results": [scorer.result(s, e) for s, e in zip(scored, engine, strict=True)], "meta": scorer.meta},
    }


# -- adapter files ----------------------------------------------------------------------------
_OPENRLHF_FILE = '''"""OpenRLHF reward function for task {name!r}, written by `rlvr serve --write-adapter openrlhf`.

Use: --remote_rm_url {out} (older releases) or --reward.remote_url {out}, with --label_key
naming the dataset column that holds the answer (or a JSON object of columns). The gate is checked
when OpenRLHF imports this file, as `rlvr train` checks it.
"""
from rlvr.serve.engines import OpenRLHFAdapter

reward_func = OpenRLHFAdapter(
    {task!r}, gate_path={gate!r}, no_gate_reason={reason!r}, fallback={fallback!r}, model={model!r}
)
'''

_VERL_FILE = '''"""verl reward function for task {name!r}, written by `rlvr serve --write-adapter verl`.

Use (verl 0.9.1): reward.custom_reward_function.path={out}
reward.custom_reward_function.name=compute_score (per sample). With verl's legacy
BatchRewardManager (reward_model.reward_manager=batch, releases that have it):
custom_reward_function.name=compute_score_batch (whole groups: masked samples get their group's mean).
The gate is checked when verl imports this file, as `rlvr train` checks it.
"""
from rlvr.serve.engines import VerlAdapter

_adapter = VerlAdapter(
    {task!r}, gate_path={gate!r}, no_gate_reason={reason!r}, fallback={fallback!r}, model={model!r}
)
compute_score = _adapter.compute_score
compute_score_batch = _adapter.compute_score_batch
'''


def _absolute(model: str | None) -> str | None:
    """A local model folder as an absolute path (the engine imports the adapter from elsewhere);
    a hub id or a built-in model as it is."""
    if model is None or model.startswith("builtin:") or not Path(model).expanduser().exists():
        return model
    return str(Path(model).expanduser().resolve())


def write_adapter(
    engine: str,
    task: Task,
    out: str | Path,
    *,
    gate_path: str | Path | None = None,
    no_gate_reason: str | None = None,
    fallback: float = 0.0,
    model: str | None = None,
) -> Path:
    """Write the adapter file ``out`` for ``engine`` (``openrlhf`` or ``verl``) bound to ``task``
    by absolute paths. The caller has already enforced the gate. ``model``: the model the engine's
    run starts from when it is not the task's (a local path is written absolute); the adapter
    checks the gate against it, as ``rlvr train --model`` does."""
    template = {"openrlhf": _OPENRLHF_FILE, "verl": _VERL_FILE}[engine]
    path = Path(out)
    text = template.format(
        name=task.name,
        task=str(Path(task.path).resolve()),
        out=str(path),
        gate=str(Path(gate_path).resolve()) if gate_path else None,
        reason=no_gate_reason,
        fallback=float(fallback),
        model=_absolute(model),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path
