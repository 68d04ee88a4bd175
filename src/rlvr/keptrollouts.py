"""The rollouts a training run keeps on disk: ``Recorder`` writes them, ``read``, ``steps``,
``at_step`` and ``error_summary`` read them back (``rlvr inspect build --run``, ``rlvr doctor``,
the stop rules' evidence). One reader and one writer of the format, in one module.

Rollouts kept: a bounded sample of what the policy wrote during training, with every verdict.

Reward hacking shows in the text before it shows in any metric, so a run directory keeps, for
each logging step, the first ``per_step`` completions of the step (whole prompt groups, in the
order TRL scored them) with every term's verdict, the weighted reward and whether the sample was
masked::

    <run>/rollouts/rollouts.jsonl      the newest lines
    <run>/rollouts/rollouts.1.jsonl    older (rotated when rollouts.jsonl passes max_bytes)
    ...                                up to rollouts.<keep>.jsonl; older files are deleted

One JSON object per completion, in the shape ``rlvr score`` reads and writes: ``prompt``,
``completion``, ``completion_ids``, every dataset column of the row, ``scores`` (term -> verdict),
``reward`` and ``masked``, plus ``rollout`` (``step``, ``group``, ``session``: which training
session wrote it, so a step logged again after a resume is read from the newest session only).
So ``rlvr score rollouts.jsonl --task task.yaml`` re-scores them with the reward as it is now,
``rlvr inspect build --run RUN --step N`` builds an inspection set from them, and ``rlvr doctor``
quotes the verdicts of a broken reward.

Bounded on purpose: ``per_step`` lines per logging step, and at most ``(keep + 1) * max_bytes``
bytes on disk (the defaults: 16 lines, 6 files of 20 MB). Written by the main process only; on
several processes this is rank 0's share of the batch.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import RunError
from .rewards.combine import RewardSet, trl_columns
from .rewards.rules import untrusted

FOLDER = "rollouts"
NAME = "rollouts.jsonl"
PER_STEP = 16
MAX_BYTES = 20 * 1024 * 1024
KEEP = 5
# Keys of a kept rollout line that are not dataset columns.
LINE_KEYS = frozenset({"rollout", "prompt", "completion", "completion_ids", "scores", "reward", "masked"})


def files(run_dir: Path) -> list[Path]:
    """The rollout files of a run, oldest first."""
    folder = run_dir / FOLDER
    # Only rollouts.<N>.jsonl: `rlvr score` writes rollouts.scored.jsonl beside them by default.
    numbered = [p for p in folder.glob("rollouts.*.jsonl") if p.name.split(".")[1].isdigit()]
    rotated = sorted(numbered, key=lambda p: -int(p.name.split(".")[1]))
    current = folder / NAME
    return rotated + ([current] if current.exists() else [])


def _jsonable(x: Any) -> Any:
    if isinstance(x, float) and x != x:  # NaN is not JSON
        return None
    return str(x)


class Recorder:
    """Wraps a reward set's TRL functions so each scored batch is kept (see the module doc)."""

    def __init__(
        self,
        run_dir: Path,
        reward_set: RewardSet,
        *,
        group_size: int,
        logging_steps: int,
        session: int = 1,
        per_step: int = PER_STEP,
        max_bytes: int = MAX_BYTES,
        keep: int = KEEP,
        enabled: bool = True,
    ) -> None:
        self.folder = run_dir / FOLDER
        self.reward_set = reward_set
        self.group_size = max(1, group_size)
        self.logging_steps = max(1, logging_steps)
        self.session = session
        self.per_step = per_step
        self.max_bytes = max_bytes
        self.keep = keep
        self.enabled = enabled and per_step > 0
        self.counts: dict[int, int] = {}

    def wrap(self, funcs: Sequence[Callable[..., Any]]) -> list[Callable[..., Any]]:
        """The same functions; the first also records its batch (it scores every term, the others
        read the reward set's cache)."""
        if not funcs or not self.enabled:
            return list(funcs)
        first = funcs[0]

        def recorded(*args: Any, **kwargs: Any) -> Any:
            out = first(*args, **kwargs)
            try:
                self.record(kwargs)
            except OSError:
                pass  # a full disk must not stop training; the metrics still say what happened
            return out

        recorded.__name__ = first.__name__
        recorded.__qualname__ = getattr(first, "__qualname__", first.__name__)
        return [recorded, *funcs[1:]]

    def record(self, kwargs: Mapping[str, Any]) -> None:
        state = kwargs.get("trainer_state")
        step = int(getattr(state, "global_step", 0)) + 1  # the optimizer step these completions train
        if step % self.logging_steps and step != 1:
            return
        room = self.per_step - self.counts.get(step, 0)
        if room <= 0:
            return
        completions = kwargs.get("completions") or []
        n = len(completions)
        scored = self.reward_set.scored_trl_batch(**kwargs)
        prompts = kwargs.get("prompts") or [None] * n
        ids = kwargs.get("completion_ids") or [None] * n
        columns = trl_columns(kwargs, n)
        take = min(n, room)
        if n >= self.group_size:
            take -= take % self.group_size  # whole groups (a group split across ranks can't be whole)
        if take <= 0:
            return
        first_group = self.counts.get(step, 0) // self.group_size
        lines = []
        for i in range(take):
            line: dict[str, Any] = {
                "rollout": {"step": step, "group": first_group + i // self.group_size, "session": self.session}
            }
            line["prompt"] = prompts[i]
            line["completion"] = completions[i]
            if ids[i] is not None:
                line["completion_ids"] = list(ids[i])
            line.update({k: v[i] for k, v in columns.items()})
            s = scored[i]
            line["scores"] = {name: v.to_json() for name, v in s.verdicts.items()}
            line["reward"] = self.reward_set.total(s)
            line["masked"] = s.masked
            lines.append(json.dumps(line, ensure_ascii=False, default=_jsonable))
        self.counts[step] = self.counts.get(step, 0) + take
        self._append(lines)

    def _append(self, lines: list[str]) -> None:
        if not lines:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / NAME
        if path.exists() and path.stat().st_size >= self.max_bytes:
            self._rotate()
        with path.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")

    def _rotate(self) -> None:
        oldest = self.folder / f"rollouts.{self.keep}.jsonl"
        oldest.unlink(missing_ok=True)
        for k in range(self.keep - 1, 0, -1):
            src = self.folder / f"rollouts.{k}.jsonl"
            if src.exists():
                src.replace(self.folder / f"rollouts.{k + 1}.jsonl")
        if self.keep > 0:
            (self.folder / NAME).replace(self.folder / "rollouts.1.jsonl")
        else:
            (self.folder / NAME).unlink()


def read(run_dir: Path) -> Iterator[dict[str, Any]]:
    """Every kept rollout line, oldest first (a torn last line, from a killed run, is skipped)."""
    for path in files(run_dir):
        lines = untrusted.jsonl_lines(path.read_text(encoding="utf-8"))  # \n only: a U+2028 is text
        for i, text in enumerate(lines):
            if untrusted.is_blank(text):
                continue
            try:
                rec = json.loads(text)
            except json.JSONDecodeError:
                if i == len(lines) - 1:
                    continue
                raise RunError(f"{path}:{i + 1}: not a JSON line") from None
            if isinstance(rec, dict) and isinstance(rec.get("rollout"), dict):
                yield rec


def steps(run_dir: Path) -> list[int]:
    """The steps that have rollouts, in order."""
    return sorted({int(r["rollout"]["step"]) for r in read(run_dir)})


def at_step(run_dir: Path, step: int) -> list[dict[str, Any]]:
    """The rollouts of ``step`` (from the newest session that logged it). ``RunError`` naming the
    steps that do have rollouts when there are none."""
    if not files(run_dir):
        raise RunError(
            f"{run_dir}: no rollouts kept ({run_dir / FOLDER}/ is missing): the run predates rollouts or logged no "
            "step yet"
        )
    rows = [r for r in read(run_dir) if int(r["rollout"]["step"]) == step]
    if not rows:
        have = steps(run_dir)
        near = ", ".join(map(str, have[:5])) + (f", ... {have[-1]}" if len(have) > 5 else "")
        raise RunError(f"{run_dir}: no rollouts at step {step}; kept steps: {near or 'none'}")
    newest = max(int(r["rollout"].get("session", 1)) for r in rows)
    return [r for r in rows if int(r["rollout"].get("session", 1)) == newest]


def error_summary(run_dir: Path, step: int | None = None) -> str:
    """The most common error among the masked rollouts of ``step`` (default: the newest step
    with any), as one line: "at step 5, 16 of 16 kept samples say term 'x': ValueError: ...";
    '' when there are none (or no rollouts)."""
    from collections import Counter

    try:
        if step is None:
            with_errors = [int(r["rollout"]["step"]) for r in read(run_dir) if _errors(r)]
            if not with_errors:
                return ""
            step = max(with_errors)
        rows = at_step(run_dir, step)
    except (RunError, OSError):
        return ""
    counts: Counter[str] = Counter()
    for r in rows:
        for term, v in _errors(r):
            counts[f"term {term!r}: {error_text(str(v.get('detail') or v.get('error_kind') or ''))}"] += 1
    if not counts:
        return ""
    what, n = counts.most_common(1)[0]
    return f"at step {step}, {n} of {len(rows)} kept samples say {what}"


def _errors(rec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    scores = rec.get("scores") or {}
    return (
        [(t, v) for t, v in scores.items() if isinstance(v, Mapping) and v.get("outcome") == "error"]
        if isinstance(scores, Mapping)
        else []
    )


def error_text(detail: str) -> str:
    """A verdict's error detail as one short line, without the row number (so equal errors on
    different rows count together)."""
    import re

    return re.sub(r"^row \d+: ", "", untrusted.collapse(detail))[:160]
