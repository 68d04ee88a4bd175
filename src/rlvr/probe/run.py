"""Running the probe: choose the prompts, sample them in seeded chunks (resumable), score every
completion with the task's terms, write ``samples.jsonl``, ``probe.json`` and ``report.json``."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data import TrainedRows, trained_rows_of
from ..errors import ConfigError, Problem, RlvrError, RunError
from ..rewards.base import Outcome
from ..rewards.combine import RewardSet, prompt_text
from ..rollouts import Rollout
from .report import ProbeReport, PromptStat, summarize
from .samples import (
    EPISODES_SUMMARY_NAME,
    FILTERED_NAME,
    REPORT_NAME,
    RERUN,
    SAMPLES_NAME,
    SETTINGS_NAME,
    EpisodeSummary,
    ProbeSample,
    ProbeSettings,
    read_done,
)

if TYPE_CHECKING:
    from tqdm import tqdm

    from ..generate import Backend, Completion, Sampler
    from ..lengths import LengthReport
    from ..task import Task


def choose_prompts(n_rows: int, cap: int | None, seed: int) -> list[int]:
    """Row indices to probe: all when they fit, else a seeded random subset (in row order), so a
    split sorted by difficulty is not probed on its easy head only."""
    if cap is None or n_rows <= cap:
        return list(range(n_rows))
    return sorted(random.Random(seed).sample(range(n_rows), cap))


def choose_unseen(
    rows: Sequence[Mapping[str, Any]], trained: TrainedRows | None, cap: int | None, seed: int
) -> tuple[list[int], frozenset[int]]:
    """(row indices to probe, the ones among them the model was trained on).

    Without a record of trained rows, ``choose_prompts``. With one, the rows the model has not
    seen come first (a seeded subset when they exceed ``cap``); only when they are fewer than
    ``cap`` are seen rows added to fill it, so the report can say how much the seen rows differ.
    The route is decided on the unseen rows whenever there are any."""
    if trained is None:
        return choose_prompts(len(rows), cap, seed), frozenset()
    seen = [i for i, r in enumerate(rows) if trained.seen(r)]
    if not seen:
        return choose_prompts(len(rows), cap, seed), frozenset()
    seen_set = set(seen)
    unseen = [i for i in range(len(rows)) if i not in seen_set]
    pick = [unseen[j] for j in choose_prompts(len(unseen), cap, seed)]
    room = len(seen) if cap is None else max(0, cap - len(pick))
    fill = [seen[j] for j in choose_prompts(len(seen), room, seed)] if room else []
    return sorted(pick + fill), frozenset(fill)


def _stats(
    records: Sequence[ProbeSample], indices: list[int], term: str, names: list[str]
) -> tuple[list[PromptStat], dict[str, dict[str, int]]]:
    by_prompt: dict[int, list[int]] = {i: [0, 0, 0] for i in indices}
    outcomes = {t: {o.value: 0 for o in Outcome} for t in names}
    for rec in records:
        counts = by_prompt[rec.rollout.prompt_index]
        for t in names:
            outcomes[t][rec.rollout.verdicts[t].outcome.value] += 1
        outcome = rec.rollout.verdicts[term].outcome
        if outcome is Outcome.ERROR:
            counts[2] += 1
        else:
            counts[1] += 1
            counts[0] += outcome is Outcome.CORRECT
    return [PromptStat(i, *by_prompt[i]) for i in indices if sum(by_prompt[i][1:])], outcomes


def _check_args(task: Task, k: int, cap: int | None) -> None:
    problems = []
    if k < 1:
        problems.append(Problem("k", f"must be at least 1, got {k}", "the recipe probes with k=8"))
    if cap is not None and cap < 1:
        problems.append(
            Problem("max_prompts", f"must be at least 1, got {cap}", "omit it to use the task's probe.max_prompts")
        )
    term = task.success_term
    if term not in {t.name for t in task.rewards}:
        problems.append(Problem("success", f"names no reward term ({term!r})", "name one of the task's rewards"))
    if problems:
        raise ConfigError(problems, source="probe")


def _start(out: Path, settings: ProbeSettings, resume: bool) -> None:
    """Refuse to overwrite samples without ``resume``, or to resume other settings; write
    ``probe.json``."""
    samples_path, settings_path = out / SAMPLES_NAME, out / SETTINGS_NAME
    if samples_path.exists() and samples_path.stat().st_size and not resume:
        raise RunError(
            f"{samples_path} already holds samples: pass --resume to continue that probe, or choose another --out"
        )
    if resume and settings_path.exists():
        try:
            old = ProbeSettings.from_json(json.loads(settings_path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RunError(
                f"cannot resume {out}: {settings_path} is not probe settings ({type(exc).__name__}: {exc}); {RERUN}"
            ) from None
        diff = settings.differences(old)
        if diff:
            raise RunError(
                f"cannot resume {out}: it was probed with other settings ({', '.join(diff)} differ); use another --out"
            )
    settings_path.write_text(json.dumps(settings.to_json(), indent=2) + "\n")


def run_probe(
    task: Task | str | Path,
    *,
    model: str | None = None,
    out_dir: str | Path,
    k: int | None = None,
    max_prompts: int | None = None,
    resume: bool = False,
    filter: bool = False,  # noqa: A002 - the CLI flag's name
    sampler: Sampler | None = None,
    backend: Backend = "auto",
    seed: int | None = None,
    group_size: int | None = None,
    progress: bool = True,
) -> ProbeReport:
    """Probe ``task`` (a ``Task`` or a task file path) with ``model`` (default: the task's).

    ``sampler`` overrides model loading (anything with ``sample(prompts, n, temperature,
    max_new_tokens, top_p, seed)``, see ``rlvr.generate.Sampler``). Raises ``RunError`` when
    ``out_dir`` already holds samples and ``resume`` is off, or when they were made with other
    settings.
    """
    from ..settings import resolve
    from ..task import Task, load_task

    if not isinstance(task, Task):
        task = load_task(task)
    k = k if k is not None else task.probe.k
    cap = max_prompts if max_prompts is not None else task.probe.max_prompts
    _check_args(task, k, cap)
    term = task.success_term
    length_report = _check_budget(task, model, sampler)  # before any weights load
    seed = task.seed if seed is None else seed
    # The run's group size as training resolves it (recipe < task; the machine changes no group size).
    g = group_size or int(resolve(task, hw={}).grpo["num_generations"])
    model_ref = model or task.resolve(task.model)
    rows = task.load_split("train")
    trained = trained_rows_of(model_ref)  # a checkpoint that records the rows it trained on
    # The same prompts whatever the sampling seed; rows the model trained on only when too few are left.
    indices, seen = choose_unseen(rows, trained, cap, task.seed)
    chunk = max(1, 64 // k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    samples_path = out / SAMPLES_NAME
    gen = task.generation
    backend_name = str(getattr(sampler, "backend", backend)) if sampler is not None else backend
    settings = ProbeSettings(
        task=str(task.path),
        model=str(model or task.model),
        backend=backend_name,
        k=k,
        temperature=gen.temperature,
        top_p=gen.top_p,
        max_new_tokens=gen.max_completion_length,
        seed=seed,
        chunk=chunk,
        prompt_indices=tuple(indices),
        terms=tuple(t.name for t in task.rewards),
    )
    _start(out, settings, resume)
    records, done_chunks = read_done(samples_path, k, chunk, indices) if resume else ([], 0)

    n_chunks = math.ceil(len(indices) / chunk)
    if sampler is None and done_chunks < n_chunks:  # a finished probe re-reports without a model
        from ..generate import make_sampler

        sampler = make_sampler(model_ref, backend=backend)
        backend_name = str(getattr(sampler, "backend", backend))
    if sampler is not None:  # an episode task's samples are episodes (rlvr.rollouts)
        from ..episodes.tools import CallWatch
        from ..rollouts import rollout_sampler

        sampler = rollout_sampler(sampler, task, watch=CallWatch("rlvr probe", enabled=progress))
    reward_set = task.reward_set()
    bar = _progress_bar(len(indices), done_chunks * chunk, enabled=progress)
    try:
        with samples_path.open("a", encoding="utf-8") as fh:
            for c in range(done_chunks, n_chunks):
                assert sampler is not None  # loaded above whenever a chunk is left to sample
                chunk_idx = indices[c * chunk : (c + 1) * chunk]
                raw_prompts = [task.render_prompt(rows[i]) for i in chunk_idx]
                groups = sampler.sample(
                    raw_prompts,
                    n=k,
                    temperature=gen.temperature,
                    max_new_tokens=gen.max_completion_length,
                    top_p=gen.top_p,
                    seed=seed + c,
                )
                if len(groups) != len(chunk_idx):
                    raise RunError(f"the sampler returned {len(groups)} groups for {len(chunk_idx)} prompts")
                lines = _score_chunk(task, reward_set, chunk_idx, rows, raw_prompts, groups, k)
                # One write per chunk: an interruption can only cut the tail, which resume drops.
                fh.write("".join(s.line() for s in lines))
                fh.flush()
                records.extend(lines)
                bar.update(len(chunk_idx))
    finally:
        bar.close()

    stats, _ = _stats(records, indices, term, reward_set.names)
    # Counts beside the rate are over the same samples as the rate: the unseen rows, when there are any.
    counted = [rec for rec in records if rec.rollout.prompt_index not in seen] or records
    outcomes = _stats(counted, indices, term, reward_set.names)[1]
    filtered_path, n_filtered = None, None
    if filter:
        # Unseen rows only, when there are any: a memorised row's pass rate says nothing of its difficulty.
        pool = [s for s in stats if s.index not in seen] or stats
        keep = [s.index for s in pool if s.rate is not None and 0 < s.rate < 1]
        filtered_path = str((out / FILTERED_NAME).resolve())
        Path(filtered_path).write_text(
            "".join(json.dumps(rows[i], ensure_ascii=False, default=str) + "\n" for i in keep)
        )
        n_filtered = len(keep)
    report = summarize(
        stats,
        k=k,
        group_size=g,
        too_easy=task.probe.too_easy,
        term_outcomes=outcomes,
        task=task.name,
        model=settings.model,
        success_term=term,
        temperature=gen.temperature,
        max_new_tokens=gen.max_completion_length,
        backend=backend_name,
        seed=seed,
        out_dir=str(out.resolve()),
        filtered_path=filtered_path,
        n_filtered=n_filtered,
        n_truncated=sum(rec.rollout.finish_reason == "length" for rec in counted),
        length_report=length_report,
        seen=seen,
        trained_rows=trained.path if trained is not None else None,
        trained_by=" then ".join(trained.sources) if trained is not None else None,
        n_seen_rows=sum(trained.seen(r) for r in rows) if trained is not None else 0,
        n_train_rows=len(rows),
    )
    if task.environment is not None and report.route == "sft":  # what rlvr sft needs on an episode task
        from ..episodes.reference import sft_advice

        has_calls = any(task.environment.reference_column in r for r in rows)
        report = replace(report, reason=f"{report.reason} {sft_advice(task.environment, has_calls)}")
    if report.route == "sft" and (hint := json_format_hint(task, counted)):
        report = replace(report, reason=f"{report.reason} {hint}")
    summary = EpisodeSummary.of(records)  # None unless the samples are episodes
    if summary is not None:
        from .report import broken_tool

        fix = broken_tool(
            [(c.name, c.kind, c.error) for r in records if r.rollout.episode for c in r.rollout.episode.calls]
        )
        if fix is not None:
            report = replace(report, route=fix[0], reason=fix[1])
        (out / EPISODES_SUMMARY_NAME).write_text(json.dumps(summary.to_json(), indent=2) + "\n")
    (out / REPORT_NAME).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def json_format_hint(task: Task, records: Sequence[ProbeSample]) -> str | None:
    """When a JSON success term scored nothing under ``tags``/``boxed`` but the model already
    writes the right record without the answer span: how many samples the ``json`` format would
    read and the term score correct (the same term, re-scored), so the route does not send a
    model that has the capability to SFT only to learn tags. None when no sample would pass."""
    from ..rewards.base import Sample, kind_of

    spec = next((t for t in task.rewards if t.name == task.success_term), None)
    if spec is None or task.answer.style == "json":
        return None
    as_json = replace(task, answer=replace(task.answer, style="json"))
    try:
        verifier = as_json.term_verifier(spec)
    except RlvrError:
        return None
    if kind_of(verifier) not in ("json", "tool_call") or not records:
        return None
    verdicts = verifier.verify_batch([Sample(r.rollout.completion, r.rollout.row, r.rollout.prompt) for r in records])
    n = sum(v.outcome is Outcome.CORRECT for v in verdicts)
    if not n:
        return None
    return (
        f"But {n} of {len(records)} samples hold the right record outside any answer span: with answer.format: json "
        "(a bare JSON record, or one fenced ```json block) the same term scores them correct; set it and probe "
        "again before choosing SFT."
    )


def _check_budget(task: Task, model: str | None, sampler: Sampler | None) -> LengthReport | None:
    """The length report, or ``ConfigError`` when the budget exceeds the model's positions. With
    an injected sampler a model whose tokenizer cannot load is not measured (nothing else loads it)."""
    from ..errors import ModelError
    from ..lengths import check_lengths

    try:
        report = check_lengths(task, model)
    except ModelError:
        if sampler is None:
            raise
        return None
    if report.problems():
        raise ConfigError(report.problems(), source=str(task.path))
    return report


def _score_chunk(
    task: Task,
    reward_set: RewardSet,
    chunk_idx: list[int],
    rows: list[dict[str, Any]],
    raw_prompts: list[Any],
    groups: Sequence[Sequence[Completion]],
    k: int,
) -> list[ProbeSample]:
    term, gen = task.success_term, task.generation
    drawn, meta = [], []
    for i, raw, group in zip(chunk_idx, raw_prompts, groups, strict=True):
        if len(group) != k:
            raise RunError(f"the sampler returned {len(group)} completions for prompt {i}, expected {k}")
        for j, comp in enumerate(group):
            text = prompt_text(raw)
            drawn.append(Rollout(i, text, rows[i], comp.text, tuple(comp.token_ids), comp.finish_reason, comp.episode))
            meta.append((j, None if isinstance(raw, str) else tuple(raw)))
    out = []
    for d, (j, messages), sc in zip(drawn, meta, reward_set.score([d.sample for d in drawn]), strict=True):
        verdict = sc.verdicts[term]
        out.append(
            ProbeSample(
                rollout=replace(d, verdicts=dict(sc.verdicts), total=reward_set.total(sc)),
                sample_index=j,
                success=None if verdict.outcome is Outcome.ERROR else verdict.outcome is Outcome.CORRECT,
                temperature=gen.temperature,  # each line says how it was sampled (the gate checks this)
                max_new_tokens=gen.max_completion_length,
                messages=messages,
            )
        )
    return out


def _progress_bar(total: int, initial: int, *, enabled: bool) -> tqdm[Any]:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc="probe", unit="prompt", leave=False, disable=not enabled)
