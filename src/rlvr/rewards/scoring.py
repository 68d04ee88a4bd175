"""Scoring JSONL files of completions: what ``rlvr score``, the probe and the inspection gate use.

Input: one JSON object per line with ``completion`` (a string, or a list of chat messages) and
optionally ``prompt``, plus any dataset columns the terms read (``answer``, ``tests``...).
Output: the same objects, in the same order, each with ``scores`` (term -> verdict JSON:
outcome, score, detail, answer, span, error_kind), ``reward`` (the weighted total TRL would
compute, or null when the row is masked) and ``masked``.

Every output line is strict JSON: non-finite numbers (which Python's reader accepts in input
rows) are written as null, and a line holding a lone surrogate is written with ``\\u`` escapes.

Every line is read and checked before anything is written; a bad line raises ``DataError``
naming the file, the line and the field. The output is written to a temporary file and moved
into place at the end, so an interrupted run never leaves a half-written file over a good one,
and the input file is never overwritten.

Rows are scored in chunks on a thread pool; verifiers that need CPU (math, code) fan out to
their own worker processes, so threads are enough here.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic
from ..data import read_objects
from ..errors import DataError
from .base import Outcome, Sample
from .combine import RewardSet, Scored, Term, completion_text, prompt_text
from .format import AnswerFormat


@dataclass(frozen=True)
class ScoreSummary:
    """What a scoring run did: counts per term per outcome, masked rows, time."""

    source: str
    output: str | None
    rows: int
    counts: dict[str, dict[str, int]]
    masked: int
    seconds: float
    mean_reward: float | None
    error_kinds: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "output": self.output,
            "rows": self.rows,
            "counts": self.counts,
            "error_kinds": self.error_kinds,
            "masked": self.masked,
            "seconds": round(self.seconds, 3),
            "mean_reward": self.mean_reward,
        }

    def text(self) -> str:
        outcomes = [o.value for o in Outcome]
        width = max([len(t) for t in self.counts] + [4])
        lines = [f"{'term':<{width}}  " + "  ".join(f"{o:>11}" for o in outcomes)]
        for term, c in self.counts.items():
            lines.append(f"{term:<{width}}  " + "  ".join(f"{c.get(o, 0):>11}" for o in outcomes))
            kinds = self.error_kinds.get(term)
            if kinds:
                lines.append(f"{'':<{width}}  errors: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
        rate = self.rows / self.seconds if self.seconds > 0 else float("inf")
        mean = "n/a" if self.mean_reward is None else f"{self.mean_reward:.4f}"
        lines.append(
            f"{self.rows} rows, {self.masked} masked, mean reward {mean}, {self.seconds:.2f} s ({rate:.1f} rows/s)"
        )
        if self.output:
            lines.append(f"wrote {self.output}")
        return "\n".join(lines)


def read_completions(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a completions JSONL; ``DataError`` names the file, line and field."""
    p = Path(path)
    rows = []
    for lineno, row in read_objects(p):
        if "completion" not in row:
            raise DataError(f"{p}:{lineno}: field 'completion' is missing (fields: {', '.join(sorted(row)) or 'none'})")
        if not isinstance(row["completion"], (str, list)):
            raise DataError(
                f"{p}:{lineno}: field 'completion' must be a string or a list of messages, "
                f"got {type(row['completion']).__name__}"
            )
        if "prompt" in row and not isinstance(row["prompt"], (str, list, type(None))):
            raise DataError(
                f"{p}:{lineno}: field 'prompt' must be a string or a list of messages, "
                f"got {type(row['prompt']).__name__}"
            )
        rows.append(row)
    if not rows:
        raise DataError(f"{p}: no rows")
    return rows


def to_sample(row: Mapping[str, Any], reward_set: RewardSet | None = None) -> Sample:
    """A line of ``rlvr score``'s input as the sample ``reward_set`` scores (an episode task's
    completion, a message list, is an episode)."""
    ids = row.get("completion_ids")
    columns = {k: v for k, v in row.items() if k not in ("completion", "completion_ids", "scores", "reward", "masked")}
    ids = ids if isinstance(ids, list) else None
    if reward_set is not None:
        return reward_set.sample(row["completion"], columns, row.get("prompt") or "", ids)
    return Sample(completion_text(row["completion"]), columns, prompt_text(row.get("prompt") or ""), ids)


def score_rows(
    rows: Sequence[Mapping[str, Any]], reward_set: RewardSet, workers: int | None = None, chunk: int = 32
) -> list[Scored]:
    """Score rows in chunks, ``workers`` chunks at a time; results in row order."""
    samples = [to_sample(r, reward_set) for r in rows]
    starts = list(range(0, len(samples), chunk))
    workers = max(1, workers or min(4, os.cpu_count() or 1))

    def one(start: int) -> list[Scored]:
        return reward_set.score(samples[start : start + chunk], offset=start)

    if workers == 1 or len(starts) <= 1:
        parts = [one(i) for i in starts]
    else:
        with ThreadPoolExecutor(workers) as ex:
            parts = list(ex.map(one, starts))
    return [s for part in parts for s in part]


def summarize(
    reward_set: RewardSet, scored: Sequence[Scored], source: str, output: str | None, seconds: float
) -> ScoreSummary:
    counts: dict[str, dict[str, int]] = {name: {} for name in reward_set.names}
    kinds: dict[str, dict[str, int]] = {}
    totals = []
    for s in scored:
        for name, v in s.verdicts.items():
            counts[name][v.outcome.value] = counts[name].get(v.outcome.value, 0) + 1
            if v.error_kind:
                kinds.setdefault(name, {})
                kinds[name][v.error_kind] = kinds[name].get(v.error_kind, 0) + 1
        total = reward_set.total(s)
        if total is not None:
            totals.append(total)
    mean = sum(totals) / len(totals) if totals else None
    return ScoreSummary(source, output, len(scored), counts, sum(s.masked for s in scored), seconds, mean, kinds)


def scored_row(row: Mapping[str, Any], scored: Scored, reward_set: RewardSet) -> dict[str, Any]:
    out = dict(row)
    out["scores"] = {name: v.to_json() for name, v in scored.verdicts.items()}
    out["reward"] = reward_set.total(scored)
    out["masked"] = scored.masked
    return out


def jsonable(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None: ``NaN`` and ``Infinity`` are not
    JSON (Python writes them, most readers refuse them). Input rows can carry them, because
    Python's reader accepts them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def json_line(value: Any) -> str:
    """One line of strict JSON. Text is written as UTF-8 where it can be; a line holding a lone
    surrogate (which UTF-8 cannot encode; a model can emit one) is written with ``\\u`` escapes
    instead, so the file stays valid and reads back to the same strings."""
    value = jsonable(value)
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(value, ensure_ascii=True, allow_nan=False)
    return text


def write_jsonl(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write atomically (``rlvr.atomic``). Every line is
    strict JSON (see ``json_line``)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as f:
            for r in rows:
                f.write(json_line(r) + "\n")

    atomic.replace_file(p, write)


def default_output(path: str | Path) -> Path:
    p = Path(path)
    stem = p.name[: -len(".jsonl")] if p.name.endswith(".jsonl") else p.name
    return p.with_name(f"{stem}.scored.jsonl")


def score_file(
    path: str | Path,
    reward_set: RewardSet,
    out: str | Path | None = None,
    workers: int | None = None,
    write: bool = True,
) -> ScoreSummary:
    """Score every row of ``path`` and write ``out`` (default ``<name>.scored.jsonl``)."""
    start = time.monotonic()
    rows = read_completions(path)
    target = Path(out) if out is not None else default_output(path)
    if write and target.resolve() == Path(path).resolve():
        raise DataError(f"{path}: refusing to overwrite the input file with scores; choose another --out")
    scored = score_rows(rows, reward_set, workers)
    if write:
        write_jsonl(target, [scored_row(r, s, reward_set) for r, s in zip(rows, scored, strict=True)])
    return summarize(reward_set, scored, str(path), str(target) if write else None, time.monotonic() - start)


def reward_set_from_names(
    names: Sequence[str],
    options: Mapping[str, Mapping[str, Any]] | None = None,
    answer_format: AnswerFormat | None = None,
    column: str = "answer",
) -> RewardSet:
    """A reward set of named verifiers (built-ins or dotted paths), each weight 1, each term
    named after its verifier. ``options`` maps a verifier name to its options."""
    from . import build_verifier

    options = options or {}
    dups = sorted({n for n in names if list(names).count(n) > 1})
    if dups:
        from ..errors import ConfigError

        raise ConfigError(f"reward {', '.join(dups)} named more than once; each term is one metric")
    terms = []
    for name in names:
        opts = dict(options.get(name, {}))
        terms.append(
            Term(name, build_verifier(name, opts, answer_format, search=Path.cwd(), answer_column=column), 1.0)
        )
    return RewardSet(terms, answer_format=answer_format, answer_column=column)
