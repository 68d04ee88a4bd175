"""The routing probe: the base model's success rate on a task, and where to go from there.

RL sharpens a capability the model already has; it does not install one. The probe samples
``k`` completions for each of up to ``max_prompts`` train prompts at the task's generation
temperature, scores them with the task's reward terms, and routes:

- ``sft``: no sample succeeded. Every GRPO group would score the same, the group-relative
  advantage would be zero everywhere, and nothing would be learned. Warm up with SFT first.
- ``grpo``: the rate is low to intermediate.
- ``too-easy``: the rate is at or above ``probe.too_easy`` (default 0.9): little is left to
  sharpen; spend the budget on harder prompts or on evals.
- ``fix-verifier``: the correctness term could not decide any sample (every verdict an
  ``error``). That is a broken reward, not a 0 % base rate, and it is reported as such.

Before any weights load, the budget is checked against the task's answers and the model
(``rlvr.lengths``): a budget beyond the model's positions is refused, and reference answers
longer than the budget are warned about. The report counts the samples cut off at the budget
(``finish_reason`` ``length``); when they are the majority, the reason leads with that:
truncation, not capability, explains the rate (the route itself is still decided by the rate).

A sample succeeds when the outcome of the task's correctness term (``task.success_term``) is
``correct``. Samples on which that term errs are *undecided*: left out of the rate and counted
separately, as training masks them out of their group's baseline.

What is approximate, stated honestly:

- The Wilson 95 % interval treats all samples as independent. For the fixed set of probed
  prompts that is conservative (per-prompt rates that differ make the total *less* variable
  than a binomial); as a statement about the whole prompt distribution it is too narrow when
  few prompts are probed, because prompts are clusters.
- The expected share of zero-variance groups at group size G is the mean over prompts of
  p^G + (1 - p)^G. With k >= G it is estimated without bias from each prompt's k samples (the
  chance that G of them, drawn without replacement, all agree); with k < G it plugs in the
  per-prompt estimate p = s/k, which overstates the share (a prompt with 0 of 4 successes
  counts as certainly zero-variance). The expected group std is estimated the same way; it is
  the std of the *success indicator* within a group (Bessel-corrected, as TRL computes it), not
  of the weighted total reward, which adds the format term.
- Seeds: a probe is reproducible for the same model, backend, device and settings; prompts are
  sampled in fixed chunks with one seed per chunk, so ``resume`` regenerates exactly what an
  uninterrupted run would have written. Which prompts are probed (a seeded subset when the split
  exceeds ``max_prompts``) depends on the task's seed only, not the sampling seed, so probes
  before SFT, after SFT and after GRPO compare the same prompts.

Files written under ``out_dir``: ``probe.json`` (the settings, checked on resume),
``samples.jsonl`` (one line per completion with every term's verdict, reused by the inspection
gate), ``report.json``, and with ``filter`` ``filtered.jsonl`` (the probed rows with
0 < p < 1, for ``data.train``).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError, Problem, RunError
from .rewards.base import Outcome, Sample, Verdict
from .rewards.combine import prompt_text

ROUTES = ("sft", "grpo", "too-easy", "fix-verifier")
Z95 = 1.959963984540054
# A share of undecided samples above which the report warns even though it can still route.
ERROR_WARN_SHARE = 0.05
HIST_BINS = (
    (0.0, 0.0, "0"),
    (0.0, 0.25, "(0, 0.25)"),
    (0.25, 0.5, "[0.25, 0.5)"),
    (0.5, 0.75, "[0.5, 0.75)"),
    (0.75, 1.0, "[0.75, 1)"),
    (1.0, 1.0, "1"),
)


# -- statistics -------------------------------------------------------------------------------
def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (0, 1) when n == 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Exact at the edges: with 0 successes the lower bound is 0, with n it is 1 at the top.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def _group_law(successes: int, n: int, g: int) -> list[float]:
    """Estimated probability that a group of ``g`` has j successes, j = 0..g, from s of n
    samples: hypergeometric (unbiased for the binomial law) when n >= g, plug-in otherwise."""
    if n >= g:
        total = math.comb(n, g)
        return [math.comb(successes, j) * math.comb(n - successes, g - j) / total for j in range(g + 1)]
    p = successes / n
    return [math.comb(g, j) * p**j * (1 - p) ** (g - j) for j in range(g + 1)]


def zero_variance_share(counts: Sequence[tuple[int, int]], g: int) -> float:
    """Expected share of groups of size ``g`` with no reward variance, from (successes, n) per
    prompt: the mean of p^G + (1-p)^G (see the module docstring for the estimator)."""
    laws = [_group_law(s, n, g) for s, n in counts if n > 0]
    if not laws:
        return 1.0
    return sum(law[0] + law[g] for law in laws) / len(laws)


def expected_group_std(counts: Sequence[tuple[int, int]], g: int) -> float:
    """Expected Bessel-corrected std of the success indicator within a group of ``g``."""
    laws = [_group_law(s, n, g) for s, n in counts if n > 0]
    if not laws or g < 2:
        return 0.0
    stds = [math.sqrt(j * (g - j) / (g * (g - 1))) for j in range(g + 1)]
    return sum(sum(pj * sd for pj, sd in zip(law, stds, strict=True)) for law in laws) / len(laws)


def histogram(rates: Sequence[float]) -> tuple[tuple[str, int], ...]:
    out = []
    for lo, hi, label in HIST_BINS:
        if lo == hi:
            out.append((label, sum(r == lo for r in rates)))
        else:
            out.append((label, sum(lo <= r < hi and r not in (0.0, 1.0) for r in rates)))
    return tuple(out)


# -- the report -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptStat:
    """One probed prompt: its row index in the train split and its decided samples."""

    index: int
    successes: int
    n: int
    errors: int = 0

    @property
    def rate(self) -> float | None:
        return self.successes / self.n if self.n else None


@dataclass(frozen=True)
class ProbeReport:
    task: str
    model: str
    success_term: str
    k: int
    n_prompts: int
    n_samples: int  # decided samples: the denominator of the rate
    successes: int
    n_undecided: int  # samples whose correctness term returned an error
    rate: float
    low: float
    high: float
    group_size: int
    zero_variance_share: float
    expected_group_std: float
    route: str
    reason: str
    too_easy: float
    temperature: float
    max_new_tokens: int
    backend: str
    seed: int
    histogram: tuple[tuple[str, int], ...]
    term_outcomes: Mapping[str, Mapping[str, int]]
    prompts: tuple[PromptStat, ...] = field(repr=False)
    warnings: tuple[str, ...] = ()
    n_truncated: int = 0  # samples (decided or not) cut off at max_new_tokens
    lengths: Mapping[str, Any] | None = None  # rlvr.lengths.LengthReport.to_json(), when measured
    out_dir: str = ""
    filtered_path: str | None = None
    n_filtered: int | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["histogram"] = [{"bin": b, "prompts": c} for b, c in self.histogram]
        data["prompts"] = [asdict(p) for p in self.prompts]
        data["warnings"] = list(self.warnings)
        return data


def decide(successes: int, n: int, n_undecided: int, *, too_easy: float) -> tuple[str, str]:
    """The route and its reason in one sentence, from the decided samples."""
    low, high = wilson(successes, n)
    if n == 0:
        return "fix-verifier", (
            f"The correctness term could not decide any of {n_undecided} samples (every verdict an error): "
            "this is a verifier problem, not a 0 % base rate; fix the reward function and probe again."
        )
    rate = successes / n
    if successes == 0:
        return "sft", (
            f"No sample succeeded (0 of {n}; the true rate is below {high:.1%} with 95 % confidence): "
            "every GRPO group would score the same and teach nothing, so warm up with SFT first."
        )
    if rate >= too_easy:
        return "too-easy", (
            f"{rate:.1%} of {n} samples succeeded (95 % CI {low:.1%}-{high:.1%}), at or above the too-easy "
            f"threshold {too_easy:.0%}: little is left to sharpen; use harder prompts or spend the budget on evals."
        )
    return "grpo", (
        f"{rate:.1%} of {n} samples succeeded (95 % CI {low:.1%}-{high:.1%}), between zero and the too-easy "
        f"threshold {too_easy:.0%}: the base model has the capability and GRPO can sharpen it."
    )


def summarize(
    prompts: Sequence[PromptStat],
    *,
    k: int,
    group_size: int,
    too_easy: float,
    term_outcomes: Mapping[str, Mapping[str, int]] | None = None,
    n_truncated: int = 0,
    length_report: Any = None,
    **meta: Any,
) -> ProbeReport:
    """Everything the report says, from per-prompt counts (pure: no model, no files).
    ``length_report`` is an ``rlvr.lengths.LengthReport``."""
    from .lengths import truncation_reason

    n = sum(p.n for p in prompts)
    s = sum(p.successes for p in prompts)
    undecided = sum(p.errors for p in prompts)
    low, high = wilson(s, n)
    counts = [(p.successes, p.n) for p in prompts]
    route, reason = decide(s, n, undecided, too_easy=too_easy)
    total = n + undecided
    cut = (
        truncation_reason(n_truncated, total, int(meta.get("max_new_tokens") or 0), length_report)
        if route in ("sft", "grpo")
        else None
    )
    if cut:
        reason = f"{cut} {reason}"
    warnings = list(length_report.warnings()) if length_report is not None else []
    if route != "fix-verifier" and total and undecided / total > ERROR_WARN_SHARE:
        warnings.append(
            f"{undecided} of {total} samples ({undecided / total:.0%}) were undecided (verifier errors) and left out "
            "of the rate: check the verifier before trusting it."
        )
    zv = zero_variance_share(counts, group_size)
    if route == "grpo" and zv > 0.5:
        warnings.append(
            f"{zv:.0%} of groups at G={group_size} are expected to have zero reward variance (no learning "
            "signal): consider --filter to train on prompts the model sometimes solves."
        )
    return ProbeReport(
        k=k,
        n_prompts=len(prompts),
        n_samples=n,
        successes=s,
        n_undecided=undecided,
        rate=s / n if n else 0.0,
        low=low,
        high=high,
        group_size=group_size,
        zero_variance_share=zv,
        expected_group_std=expected_group_std(counts, group_size),
        route=route,
        reason=reason,
        too_easy=too_easy,
        histogram=histogram([p.rate for p in prompts if p.rate is not None]),
        term_outcomes={t: dict(c) for t, c in (term_outcomes or {}).items()},
        prompts=tuple(prompts),
        warnings=tuple(warnings),
        n_truncated=n_truncated,
        lengths=length_report.to_json() if length_report is not None else None,
        **meta,
    )


def format_report(report: ProbeReport) -> str:
    """The report for a terminal: rate, interval, histogram, learnability, route and reason."""
    lines = [
        f"probe  {report.task}  model {report.model}  ({report.backend}, T={report.temperature}, k={report.k})",
        f"  success ({report.success_term}): {report.successes}/{report.n_samples} = {report.rate:.1%}"
        f"   95 % CI [{report.low:.1%}, {report.high:.1%}]   over {report.n_prompts} prompts",
    ]
    if report.n_undecided:
        lines.append(f"  undecided (verifier errors, not counted): {report.n_undecided}")
    total = report.n_samples + report.n_undecided
    if total:
        lines.append(
            f"  cut off at {report.max_new_tokens} tokens (no EOS): {report.n_truncated}/{total} = {report.n_truncated / total:.0%}"
        )
    if report.lengths:
        ln = report.lengths
        lines.append(
            f"  lengths (tokens, p50/p95/max): answers in the format {ln['answer']['p50']}/{ln['answer']['p95']}/{ln['answer']['max']}, "
            f"prompts {ln['prompt']['p50']}/{ln['prompt']['p95']}/{ln['prompt']['max']}, model positions {ln['max_positions'] or 'unknown'}"
        )
    for term, counts in report.term_outcomes.items():
        lines.append(f"  term {term}: " + ", ".join(f"{o} {c}" for o, c in counts.items() if c))
    lines.append("  per-prompt pass rate:")
    width = max((c for _, c in report.histogram), default=0)
    for label, count in report.histogram:
        bar = "#" * (round(30 * count / width) if width else 0)
        lines.append(f"    {label:>12} {count:5d} {bar}")
    lines.append(
        f"  at G={report.group_size}: {report.zero_variance_share:.0%} of groups expected with zero variance, "
        f"expected group std {report.expected_group_std:.3f}"
    )
    lines.append(f"  route: {report.route.upper()}  {report.reason}")
    for w in report.warnings:
        lines.append(f"  warning: {w}")
    if report.filtered_path:
        lines.append(
            f"  filtered prompt set: {report.n_filtered} rows in {report.filtered_path} (point data.train at it)"
        )
    lines.append(f"  files: {report.out_dir}")
    return "\n".join(lines)


# -- running it -------------------------------------------------------------------------------
def choose_prompts(n_rows: int, cap: int | None, seed: int) -> list[int]:
    """Row indices to probe: all when they fit, else a seeded random subset (in row order), so a
    split sorted by difficulty is not probed on its easy head only."""
    if cap is None or n_rows <= cap:
        return list(range(n_rows))
    return sorted(random.Random(seed).sample(range(n_rows), cap))


def _settings(task: Any, model: str, backend: str, k: int, indices: list[int], chunk: int, seed: int) -> dict[str, Any]:
    return {
        "task": str(task.path),
        "model": model,
        "backend": backend,
        "k": k,
        "temperature": task.generation.temperature,
        "top_p": task.generation.top_p,
        "max_new_tokens": task.generation.max_completion_length,
        "seed": seed,
        "chunk": chunk,
        "prompt_indices": indices,
        "terms": [t.name for t in task.rewards],
    }


def _read_done(path: Path, k: int, chunk: int, indices: list[int]) -> tuple[list[dict[str, Any]], int]:
    """The complete chunks already in ``samples.jsonl``; truncates an interrupted tail (a partial
    line or a chunk with missing lines) so resuming appends exactly what was lost."""
    if not path.exists():
        return [], 0
    raw = path.read_bytes()
    records, offsets, pos = [], [], 0
    for line in raw.splitlines(keepends=True):
        if not line.endswith(b"\n"):
            break  # a line cut by the interruption
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            raise RunError(
                f"{path}: line {len(records) + 1} is not valid JSON; the file was edited, not just interrupted: move it away to start over"
            ) from None
        records.append(rec)
        pos += len(line)
        offsets.append(pos)
    per_chunk = k * chunk
    n_chunks = len(records) // per_chunk
    # The last chunk may be shorter (fewer prompts left).
    full = n_chunks * per_chunk
    rest = len(indices) - n_chunks * chunk
    if 0 < rest < chunk and len(records) - full == rest * k:
        n_chunks, full = n_chunks + 1, len(records)
    keep = offsets[full - 1] if full else 0
    for i, rec in enumerate(records[:full]):
        expected = indices[i // k]
        if rec.get("prompt_index") != expected:
            raise RunError(
                f"{path}: line {i + 1} has prompt_index {rec.get('prompt_index')}, expected {expected}: the file does not match probe.json; move it away to start over"
            )
    if keep < len(raw):
        with path.open("r+b") as fh:
            fh.truncate(keep)
    return records[:full], n_chunks


def _stats(
    records: Sequence[Mapping[str, Any]], indices: list[int], term: str, names: list[str]
) -> tuple[list[PromptStat], dict[str, dict[str, int]]]:
    by_prompt: dict[int, list[int]] = {i: [0, 0, 0] for i in indices}
    outcomes = {t: {o.value: 0 for o in Outcome} for t in names}
    for rec in records:
        counts = by_prompt[rec["prompt_index"]]
        for t in names:
            outcomes[t][rec["scores"][t]["outcome"]] += 1
        outcome = rec["scores"][term]["outcome"]
        if outcome == Outcome.ERROR.value:
            counts[2] += 1
        else:
            counts[1] += 1
            counts[0] += outcome == Outcome.CORRECT.value
    return [PromptStat(i, *by_prompt[i]) for i in indices if sum(by_prompt[i][1:])], outcomes


def run_probe(
    task: Any,
    *,
    model: str | None = None,
    out_dir: str | Path,
    k: int | None = None,
    max_prompts: int | None = None,
    resume: bool = False,
    filter: bool = False,  # noqa: A002 - the CLI flag's name
    sampler: Any = None,
    backend: str = "auto",
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
    from .task import Task, load_task

    if not isinstance(task, Task):
        task = load_task(task)
    k = k if k is not None else task.probe.k
    cap = max_prompts if max_prompts is not None else task.probe.max_prompts
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
    length_report = _check_budget(task, model, sampler)  # before any weights load
    seed = task.seed if seed is None else seed
    g = group_size or int(task.grpo.get("num_generations", 8))
    model_ref = model or task.resolve(task.model)
    rows = task.load_split("train")
    indices = choose_prompts(len(rows), cap, task.seed)  # the same prompts whatever the sampling seed
    chunk = max(1, 64 // k)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    samples_path, settings_path = out / "samples.jsonl", out / "probe.json"

    backend_name = getattr(sampler, "backend", backend) if sampler is not None else backend
    settings = _settings(task, str(model or task.model), backend_name, k, indices, chunk, seed)
    if samples_path.exists() and samples_path.stat().st_size and not resume:
        raise RunError(
            f"{samples_path} already holds samples: pass --resume to continue that probe, or choose another --out"
        )
    if resume and settings_path.exists():
        old = json.loads(settings_path.read_text())
        diff = [key for key in settings if key != "backend" and old.get(key) != settings[key]]
        if diff:
            raise RunError(
                f"cannot resume {out}: it was probed with other settings ({', '.join(diff)} differ); use another --out"
            )
    settings_path.write_text(json.dumps(settings, indent=2) + "\n")
    records, done_chunks = _read_done(samples_path, k, chunk, indices) if resume else ([], 0)

    n_chunks = math.ceil(len(indices) / chunk)
    if sampler is None and done_chunks < n_chunks:  # a finished probe re-reports without a model
        from .generate import make_sampler

        sampler = make_sampler(model_ref, backend=backend)  # type: ignore[arg-type]
        backend_name = sampler.backend
    reward_set = task.reward_set()
    gen = task.generation
    bar = _progress_bar(len(indices), done_chunks * chunk, enabled=progress)
    try:
        with samples_path.open("a", encoding="utf-8") as fh:
            for c in range(done_chunks, n_chunks):
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
                lines = _score_chunk(reward_set, term, chunk_idx, rows, raw_prompts, groups, k)
                for rec in lines:  # each line says how it was sampled (the gate checks this)
                    rec.update(temperature=gen.temperature, max_new_tokens=gen.max_completion_length)
                # One write per chunk: an interruption can only cut the tail, which resume drops.
                fh.write("".join(json.dumps(rec, ensure_ascii=False, default=str) + "\n" for rec in lines))
                fh.flush()
                records.extend(lines)
                bar.update(len(chunk_idx))
    finally:
        bar.close()

    stats, outcomes = _stats(records, indices, term, reward_set.names)
    filtered_path, n_filtered = None, None
    if filter:
        keep = [s.index for s in stats if s.rate is not None and 0 < s.rate < 1]
        filtered_path = str((out / "filtered.jsonl").resolve())
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
        model=str(model or task.model),
        success_term=term,
        temperature=gen.temperature,
        max_new_tokens=gen.max_completion_length,
        backend=backend_name,
        seed=seed,
        out_dir=str(out.resolve()),
        filtered_path=filtered_path,
        n_filtered=n_filtered,
        n_truncated=sum(rec.get("finish_reason") == "length" for rec in records),
        length_report=length_report,
    )
    (out / "report.json").write_text(json.dumps(report.to_json(), indent=2) + "\n")
    return report


def _check_budget(task: Any, model: str | None, sampler: Any) -> Any:
    """The length report, or ``ConfigError`` when the budget exceeds the model's positions. With
    an injected sampler a model whose tokenizer cannot load is not measured (nothing else loads it)."""
    from .errors import ModelError
    from .lengths import check_lengths

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
    reward_set: Any,
    term: str,
    chunk_idx: list[int],
    rows: list[dict[str, Any]],
    raw_prompts: list[Any],
    groups: list[list[Any]],
    k: int,
) -> list[dict[str, Any]]:
    samples, meta = [], []
    for i, raw, group in zip(chunk_idx, raw_prompts, groups, strict=True):
        if len(group) != k:
            raise RunError(f"the sampler returned {len(group)} completions for prompt {i}, expected {k}")
        for j, comp in enumerate(group):
            samples.append(
                Sample(completion=comp.text, row=rows[i], prompt=prompt_text(raw), completion_ids=list(comp.token_ids))
            )
            meta.append((i, j, raw, comp))
    scored = reward_set.score(samples)
    lines = []
    for (i, j, raw, comp), sc in zip(meta, scored, strict=True):
        verdicts: dict[str, Verdict] = sc.verdicts
        rec: dict[str, Any] = {
            "prompt_index": i,
            "sample_index": j,
            "prompt": prompt_text(raw),
            "row": rows[i],
            "completion": comp.text,
            "completion_ids": list(comp.token_ids),
            "n_tokens": len(comp.token_ids),
            "finish_reason": comp.finish_reason,
            "scores": {name: v.to_json() for name, v in verdicts.items()},
            "reward": reward_set.total(sc),
            "success": verdicts[term].outcome is Outcome.CORRECT
            if verdicts[term].outcome is not Outcome.ERROR
            else None,
        }
        if not isinstance(raw, str):
            rec["messages"] = list(raw)
        lines.append(rec)
    return lines


def _progress_bar(total: int, initial: int, *, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc="probe", unit="prompt", leave=False, disable=not enabled)


__all__ = [
    "ROUTES",
    "ProbeReport",
    "PromptStat",
    "choose_prompts",
    "decide",
    "expected_group_std",
    "format_report",
    "run_probe",
    "summarize",
    "wilson",
    "zero_variance_share",
]
