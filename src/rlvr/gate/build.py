"""Building and re-scoring the inspection set.

``build_set`` samples a pool of completions from the base model at the run's temperature (or
reuses ``rlvr probe`` samples taken with the same settings), scores the pool with every reward
term, and picks the set a person will read:

- every masked sample (a term could not decide) up to a quarter of the set: infrastructure
  failures hide there;
- the lowest quarter and the highest quarter of the weighted total (ties broken at random, so
  the prompt order does not choose);
- a seeded random draw from the rest: the middle.

The set is then shuffled, so the reviewer does not read all failures in a row. With a binary
reward the "tails" are simply the failing and the passing samples; the pool (``pool`` times the
set size, default 2x) is what makes both tails reachable when the base rate is low or high. If
the pool has no failures (or no passes) at all, no choice of set can show one: status and the
record then report a kappa that is undefined, and the counts say why.

``rescore`` re-scores the *same* samples with the reward code as it is now and replaces only the
reward side; every reviewer verdict is kept.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .. import atomic
from ..errors import DataError, GateError
from ..probe import ProbeSettings, read_samples, read_settings
from ..rewards.base import Sample, Verdict
from ..rewards.combine import RewardSet, prompt_text
from ..rollouts import Rollout
from .agreement import sample_state
from .store import InspectionSample, Store, reward_class

if TYPE_CHECKING:
    from ..generate import Backend, Sampler
    from ..task import Task

DEFAULT_SIZE = 64
MIN_SIZE, MAX_SIZE = 50, 100  # what the gate asks a person to read


@dataclass(frozen=True)
class Rescored:
    """One sample whose reward changed in a rescore, and what that did to its review state."""

    sample_id: int
    old_total: float | None
    new_total: float | None
    old_class: str
    new_class: str
    state_before: str
    state_after: str


def score(
    task: Task, reward_set: RewardSet, samples: Sequence[Sample]
) -> list[tuple[dict[str, Verdict], float | None, str]]:
    """Each sample's verdicts per term, weighted total (None when masked), and reward class."""
    out = []
    for scored in reward_set.score(samples):
        out.append((dict(scored.verdicts), reward_set.total(scored), reward_class(scored.verdicts, task.success_term)))
    return out


def select(pool: Sequence[InspectionSample], size: int, seed: int) -> list[tuple[InspectionSample, str]]:
    """Pick ``size`` candidates covering both tails and a random middle (see the module doc)."""
    rng = random.Random(seed)
    if len(pool) <= size:
        picked = [(c, "all") for c in pool]
        rng.shuffle(picked)
        return picked
    masked = [c for c in pool if c.rollout.total is None]
    rng.shuffle(masked)
    chosen: list[tuple[InspectionSample, str]] = [(c, "masked") for c in masked[: size // 4]]
    decided = [c for c in pool if c.rollout.total is not None]
    rng.shuffle(decided)
    # Stable: equal totals stay in random order. (Every total here is decided; the 0.0 is for the type.)
    decided.sort(key=lambda c: c.rollout.total or 0.0)
    room = size - len(chosen)
    tail = min(room // 4, len(decided) // 2)
    low, high = decided[:tail], decided[len(decided) - tail :]
    middle = decided[tail : len(decided) - tail]
    chosen += [(c, "low") for c in low] + [(c, "high") for c in high]
    chosen += [(c, "middle") for c in rng.sample(middle, min(len(middle), size - len(chosen)))]
    # Pool short of decided samples: fill with the remaining masked ones.
    rest = masked[size // 4 :]
    chosen += [(c, "masked") for c in rest[: size - len(chosen)]]
    rng.shuffle(chosen)
    return chosen


def sample_pool(
    task: Task,
    sampler: Sampler,
    *,
    n_prompts: int,
    per_prompt: int,
    temperature: float,
    max_new_tokens: int,
    top_p: float,
    seed: int,
    split: str = "train",
) -> list[Rollout]:
    """Sample ``per_prompt`` completions for ``n_prompts`` seeded-random prompts of ``split``."""
    rows = task.load_split(split)
    if not rows:
        raise DataError(f"{task.path}: the {split} split is empty")
    rng = random.Random(seed)
    indices = sorted(rng.sample(range(len(rows)), min(n_prompts, len(rows))))
    prompts = [task.render_prompt(rows[i]) for i in indices]
    groups = sampler.sample(
        prompts, n=per_prompt, temperature=temperature, max_new_tokens=max_new_tokens, top_p=top_p, seed=seed
    )
    return [
        Rollout(i, prompt_text(prompt), rows[i], comp.text, tuple(comp.token_ids), comp.finish_reason, comp.episode)
        for i, prompt, group in zip(indices, prompts, groups, strict=True)
        for comp in group
    ]


def read_probe_samples(
    path: str | Path, *, temperature: float, max_new_tokens: int, model: str | None = None
) -> tuple[ProbeSettings, list[Rollout]]:
    """The settings and samples ``rlvr probe`` wrote (its folder, or ``samples.jsonl`` in it),
    checked to have been taken from ``model`` (when given), at ``temperature`` and with
    ``max_new_tokens``; a set sampled at another temperature would show the reviewer a different
    distribution from the one training will see."""
    path = Path(path)
    samples_path = path / "samples.jsonl" if path.is_dir() else path
    if not samples_path.exists():
        raise GateError(f"no probe samples at {samples_path}")
    settings = read_settings(samples_path.parent)
    if model is not None and settings.model != model:
        raise GateError(
            f"{samples_path.parent}: the probe sampled {settings.model!r}, the gate is for {model!r}: "
            "sample afresh (drop --probe)"
        )
    out = []
    for lineno, s in read_samples(samples_path):
        where = f"{samples_path}:{lineno}"
        if abs(s.temperature - temperature) > 1e-9:
            raise GateError(
                f"{where}: probe samples were taken at temperature {s.temperature}, the run samples at {temperature}: "
                f"sample afresh (drop --probe) or re-run the probe at {temperature}"
            )
        if s.max_new_tokens != max_new_tokens:
            raise GateError(
                f"{where}: probe samples had a budget of {s.max_new_tokens} new tokens, the run has {max_new_tokens}: "
                "sample afresh (drop --probe)"
            )
        out.append(s.rollout)  # re-scored below with the reward as it is now
    if not out:
        raise DataError(f"{samples_path}: no samples")
    return settings, out


def read_rollout_samples(run_dir: str | Path, step: int) -> list[Rollout]:
    """The completions ``rlvr train`` kept at ``step`` of the run in ``run_dir`` (what the policy
    wrote mid-run), in the shape ``build_set`` samples. Re-scored with the reward as it is now."""
    from .. import keptrollouts
    from ..errors import RunError

    try:
        lines = keptrollouts.at_step(Path(run_dir), step)
    except RunError as exc:
        raise GateError(str(exc)) from None
    return [Rollout.from_line(rec) for rec in lines]


def build_set(
    task: Task,
    db_path: str | Path,
    *,
    model: str | None = None,
    sampler: Sampler | None = None,
    probe_samples: str | Path | None = None,
    rollouts: tuple[str | Path, int] | None = None,
    size: int = DEFAULT_SIZE,
    pool: int = 2,
    seed: int | None = None,
    backend: Backend = "auto",
    overwrite: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Store:
    """Sample, score and select the inspection set; write it to ``db_path`` and export JSONL.

    ``sampler`` (anything with ``rlvr.generate.Sampler``'s ``sample``) overrides sampling from
    ``model`` (default: the task's model). ``probe_samples`` reuses ``rlvr probe`` samples: the
    set then records the probe's model, top_p and seed, which are how its samples were drawn
    (``model``, when given, must be the probe's). ``rollouts=(run_dir, step)`` builds the set from
    what a training run's policy wrote at that step (``rlvr inspect build --run RUN --step N``):
    re-inspecting mid-run, where reward hacking shows. Such a set records the run and step as its
    model, so it never passes as a base gate.
    """
    if size < 1:
        raise GateError(f"the inspection set needs at least one sample, got size {size}")
    Store.preflight(db_path, overwrite=overwrite)  # refused now, not after sampling and scoring
    gen = task.generation
    seed = task.seed if seed is None else seed
    say = progress or (lambda _msg: None)
    top_p, sampling_seed = gen.top_p, seed
    raw: list[Rollout]
    if rollouts is not None:
        run_dir, step = rollouts
        raw = read_rollout_samples(run_dir, step)
        source = f"rollouts:{Path(run_dir)}@{step}"
        model = f"{Path(run_dir)} at step {step}"
    elif probe_samples is not None:
        settings, raw = read_probe_samples(
            probe_samples, temperature=gen.temperature, max_new_tokens=gen.max_completion_length, model=model
        )
        source = f"probe:{Path(probe_samples)}"
        model, top_p, sampling_seed = settings.model, settings.top_p, settings.seed
    else:
        model = model or task.model
        if sampler is None:
            from ..generate import make_sampler

            say(f"loading {model}")
            sampler = make_sampler(model, backend)
        from ..rollouts import rollout_sampler

        sampler = rollout_sampler(sampler, task)  # an episode task's samples are episodes
        per_prompt = 2
        n_prompts = max(1, -(-size * pool // per_prompt))
        say(f"sampling {n_prompts} prompts x {per_prompt} at temperature {gen.temperature}")
        raw = sample_pool(
            task,
            sampler,
            n_prompts=n_prompts,
            per_prompt=per_prompt,
            temperature=gen.temperature,
            max_new_tokens=gen.max_completion_length,
            top_p=gen.top_p,
            seed=seed,
        )
        source = "sampled"
    reward_set = task.reward_set()
    samples = [d.sample for d in raw]
    say(f"scoring {len(samples)} completions with {', '.join(reward_set.names)}")
    scored = score(task, reward_set, samples)
    # The pool, scored; each one's bucket is set when it is picked.
    candidates = [
        InspectionSample(0, replace(d, verdicts=verdicts, total=total), "", klass)
        for d, (verdicts, total, klass) in zip(raw, scored, strict=True)
    ]
    picked = select(candidates, size, seed)
    meta = {
        "task": str(task.path),
        "task_name": task.name,
        "model": model,
        "temperature": gen.temperature,
        "top_p": top_p,
        "max_new_tokens": gen.max_completion_length,
        "seed": sampling_seed,
        "source": source,
        "pool": len(candidates),
        "terms": [{"name": t.name, "verifier": t.verifier, "weight": t.weight} for t in task.rewards],
        "correctness_term": task.success_term,
        "answer_column": task.answer_column,
    }
    store = Store.create(
        db_path, meta, [replace(c, id=i, bucket=b) for i, (c, b) in enumerate(picked, 1)], overwrite=overwrite
    )
    export_jsonl(store)
    return store


def rescore(task: Task, store: Store) -> list[Rescored]:
    """Re-score the same set with the reward code as it is now. Verdicts are kept; returns the
    samples whose reward changed, with their review state before and after."""
    store.check()
    samples = store.samples()
    latest = store.latest_reviews()
    before = {s.id: s for s in samples}
    reward_set = task.reward_set()
    new = score(task, reward_set, [s.rollout.sample for s in samples])
    changed = set(store.replace_scores({s.id: n for s, n in zip(samples, new, strict=True)}))
    after = {s.id: s for s in store.samples()}
    export_jsonl(store)
    return [
        Rescored(
            sid,
            before[sid].rollout.total,
            after[sid].rollout.total,
            before[sid].reward_class,
            after[sid].reward_class,
            sample_state(before[sid], latest.get(sid)),
            sample_state(after[sid], latest.get(sid)),
        )
        for sid in sorted(changed)
    ]


def export_jsonl(store: Store, path: str | Path | None = None) -> Path:
    """Write the set, with each sample's latest verdict, as JSONL beside the database (written
    to a temporary file and renamed, so a reader never sees half a file)."""
    path = Path(path) if path else store.path.with_suffix(".jsonl")
    latest = store.latest_reviews()

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8") as fh:
            for s in store.samples():
                rec = s.to_json()
                review = latest.get(s.id)
                rec["review"] = review.to_json() if review else None
                rec["review_state"] = sample_state(s, review)
                fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")

    atomic.replace_file(path, write)
    return path
