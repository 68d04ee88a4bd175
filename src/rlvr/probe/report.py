"""The probe report: per-prompt counts in (``PromptStat``), the route and its reason out
(``ProbeReport``, written to ``report.json`` through ``to_json`` and read back through
``from_json``), and the text a terminal shows. Pure: no model, no files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .stats import bound_text, expected_group_std, histogram, percent, wilson, zero_variance_share

if TYPE_CHECKING:
    from ..lengths import LengthReport

ROUTES = ("sft", "grpo", "too-easy", "fix-verifier", "fix-tool")
# An episode task's tool is broken, not the model, when at least this share of the calls that reached
# a tool (well-formed, on its schema) failed or timed out, over at least BROKEN_TOOL_CALLS calls.
BROKEN_TOOL_SHARE = 0.5
BROKEN_TOOL_CALLS = 4
# A share of undecided samples above which the report warns even though it can still route.
ERROR_WARN_SHARE = 0.05


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
    """Everything ``rlvr probe`` found: the rate with its interval, the route and its reason, the
    learnability at group size G, and the settings it sampled with."""

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
    # The model's record of the rows it trained on (rlvr.data.TrainedRows), when it has one: the rate
    # above is over the probed rows it never saw; rows it saw are probed only to fill max_prompts,
    # and counted apart (seen_*), or, when every train row was seen, carry the route with a warning.
    trained_rows: str | None = None
    trained_by: str | None = None
    n_seen_rows: int = 0  # train rows the model trained on
    seen_prompts: int = 0
    seen_successes: int = 0
    seen_samples: int = 0
    n_train_rows: int = 0  # rows in the train split (the probe samples up to max_prompts of them)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["histogram"] = [{"bin": b, "prompts": c} for b, c in self.histogram]
        data["prompts"] = [asdict(p) for p in self.prompts]
        data["warnings"] = list(self.warnings)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProbeReport:
        """The report ``to_json`` wrote (``report.json``); unknown keys are ignored."""
        known = {f.name for f in fields(cls)}
        kw = {k: v for k, v in data.items() if k in known}
        kw["histogram"] = tuple((str(h["bin"]), int(h["prompts"])) for h in data.get("histogram") or ())
        kw["prompts"] = tuple(PromptStat(**p) for p in data.get("prompts") or ())
        kw["warnings"] = tuple(data.get("warnings") or ())
        kw["term_outcomes"] = {t: dict(c) for t, c in (data.get("term_outcomes") or {}).items()}
        return cls(**kw)


def decide(
    successes: int, n: int, n_undecided: int, *, too_easy: float, model: str = "the base model"
) -> tuple[str, str]:
    """The route and its reason in one sentence, from the decided samples. ``model``: what the
    sentence calls the probed model (a trained one is not "the base model")."""
    low, high = wilson(successes, n)
    if n == 0:
        return "fix-verifier", (
            f"The correctness term could not decide any of {n_undecided} samples (every verdict an error): "
            "this is a verifier problem, not a 0 % base rate; fix the reward function and probe again."
        )
    rate = successes / n
    if successes == 0:
        return "sft", (
            f"No sample succeeded (0 of {n}; the true rate is below {bound_text(high)} with 95 % confidence): "
            "every GRPO group would score the same and teach nothing, so warm up with SFT first."
        )
    if rate >= too_easy:
        return "too-easy", (
            f"{rate:.1%} of {n} samples succeeded (95 % CI {low:.1%}-{high:.1%}), at or above the too-easy "
            f"threshold {too_easy:.0%}: little is left to sharpen; use harder prompts or spend the budget on evals."
        )
    return "grpo", (
        f"{rate:.1%} of {n} samples succeeded (95 % CI {low:.1%}-{high:.1%}), between zero and the too-easy "
        f"threshold {too_easy:.0%}: {model} has the capability and GRPO can sharpen it."
    )


def broken_tool(calls: Sequence[tuple[str | None, str | None, str | None]]) -> tuple[str, str] | None:
    """The ``fix-tool`` route and its reason when most tool calls that reached a tool failed; calls
    are (tool name, kind, error) as ``rlvr.episodes.Call`` records them. A tool that raises or hangs
    scores every episode wrong: that reads as a 0 % base rate and would route to SFT, which would
    then teach calls to a tool that cannot answer. None when the tools mostly work."""
    reached = [(n, k, e) for n, k, e in calls if k not in ("malformed", "invalid", "budget")]
    bad = [(str(n), str(e)) for n, k, e in reached if k in ("failed", "timeout")]
    if len(reached) < BROKEN_TOOL_CALLS or len(bad) < BROKEN_TOOL_SHARE * len(reached):
        return None
    counts: dict[tuple[str, str], int] = {}
    for key in bad:
        counts[key] = counts.get(key, 0) + 1
    (tool, error), n = max(counts.items(), key=lambda kv: kv[1])
    return "fix-tool", (
        f"{len(bad)} of {len(reached)} tool calls ({len(bad) / len(reached):.0%}) failed; the tool {tool!r} failed "
        f"most, commonest error ({n} times): {error}. The tool is broken, not the model: fix it (call it by hand "
        "with one row's arguments) and probe again; SFT would teach calls to a tool that cannot answer."
    )


def summarize(
    prompts: Sequence[PromptStat],
    *,
    k: int,
    group_size: int,
    too_easy: float,
    term_outcomes: Mapping[str, Mapping[str, int]] | None = None,
    n_truncated: int = 0,
    length_report: LengthReport | None = None,
    seen: frozenset[int] = frozenset(),
    **meta: Any,
) -> ProbeReport:
    """Everything the report says, from per-prompt counts (pure: no model, no files). ``seen``:
    the probed row indices the model was trained on; the rate and route are over the others
    whenever there are any."""
    from ..lengths import truncation_reason

    seen_stats = [p for p in prompts if p.index in seen]
    unseen_stats = [p for p in prompts if p.index not in seen]
    all_seen = bool(seen_stats) and not unseen_stats
    every_prompt = tuple(prompts)
    if not all_seen:
        prompts = unseen_stats
    n = sum(p.n for p in prompts)
    s = sum(p.successes for p in prompts)
    undecided = sum(p.errors for p in prompts)
    low, high = wilson(s, n)
    counts = [(p.successes, p.n) for p in prompts]
    trained_by = meta.get("trained_by")
    subject = f"this model (trained: {trained_by})" if trained_by else "the base model"
    route, reason = decide(s, n, undecided, too_easy=too_easy, model=subject)
    total = n + undecided
    cut = (
        truncation_reason(n_truncated, total, int(meta.get("max_new_tokens") or 0), length_report)
        if route in ("sft", "grpo")
        else None
    )
    if cut:
        reason = f"{cut} {reason}"
    warnings = list(length_report.warnings()) if length_report is not None else []
    seen_n, seen_s = sum(p.n for p in seen_stats), sum(p.successes for p in seen_stats)
    by = meta.get("trained_by") or "training"
    if all_seen and route != "fix-verifier":
        # One statement: a rate on trained prompts says nothing of capability, so the reason must not
        # go on to claim any (decide()'s "has the capability" or "little is left to sharpen").
        verdict = (
            f"{reason}"
            if route == "sft"  # failing even on trained prompts: SFT first holds whatever the cause
            else f"Its {s / n:.1%} of {n} samples (95 % CI {low:.1%}-{high:.1%}) says how well it fits prompts it "
            "trained on; what it can do is measured on held-out prompts (the held-out eval)."
        )
        reason = (
            f"Could not probe unseen prompts: the model was trained ({by}) on every train row it was asked to "
            f"probe, so this rate measures memorisation, not capability. {verdict}"
        )
        warnings.append(
            "every probed prompt is one the model trained on (see trained_rows.json): hold rows out of SFT "
            "(--dev-size with --target-pass-rate) or add train rows, and probe again"
        )
    elif seen_stats and seen_n and route != "fix-verifier":
        reason = (
            f"{reason} (Over the {len(prompts)} prompts the model never trained on; on {len(seen_stats)} prompts "
            f"it trained on ({by}) {seen_s}/{seen_n} = {_pct(seen_s, seen_n)} succeeded, "
            f"{_pct(seen_s, seen_n, against=(s, n))} the unseen rate: not counted.)"
        )
    if route != "fix-verifier" and total and undecided / total > ERROR_WARN_SHARE:
        warnings.append(
            f"{undecided} of {total} samples ({undecided / total:.0%}) were undecided (verifier errors) and left out "
            "of the rate: check the verifier before trusting it."
        )
    zv = zero_variance_share(counts, group_size)
    if route == "grpo" and zv > 0.5:
        warnings.append(
            f"{zv:.0%} of groups at G={group_size} are expected to have zero reward variance (no learning "
            "signal): " + filter_advice(meta.get("n_train_rows") or 0)
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
        prompts=every_prompt,
        warnings=tuple(warnings),
        n_truncated=n_truncated,
        lengths=length_report.to_json() if length_report is not None else None,
        seen_prompts=len(seen_stats),
        seen_successes=seen_s,
        seen_samples=seen_n,
        **meta,
    )


def _pct(k: int, n: int, *, against: tuple[int, int] | None = None) -> str:
    """``k/n`` as a percentage that is never rounded to 0 % or 100 % when it is neither; with
    ``against``, how far it lies from that rate, in points."""
    if against is None:
        return percent(k, n)
    other = against[0] / against[1] if against[1] else 0.0
    diff = (k / n if n else 0.0) - other
    return f"{abs(diff) * 100:.1f} points {'above' if diff >= 0 else 'below'}"


def filter_advice(n_train_rows: int) -> str:
    """How to train on the prompts the model sometimes solves: ``--filter`` keeps only the rows it
    probed, so the whole split has to be probed, and training reads ``data.train``."""
    every = f" --max-prompts {n_train_rows}" if n_train_rows else " --max-prompts N (N: every train row)"
    return (
        f"to train on prompts the model sometimes solves, probe the whole split with --filter{every} (the filter "
        "keeps only probed rows), then point data.train at the filtered.jsonl it writes (in the task file or a copy "
        "of it) and build the gate and train from that task."
    )


def format_report(report: ProbeReport) -> str:
    """The report for a terminal: rate, interval, histogram, learnability, route and reason."""
    r = report
    lines = [
        f"probe  {r.task}  model {r.model}  ({r.backend}, T={r.temperature}, k={r.k})",
        f"  success ({r.success_term}): {r.successes}/{r.n_samples} = {r.rate:.1%}"
        f"   95 % CI [{r.low:.1%}, {r.high:.1%}]   over {r.n_prompts} prompts",
    ]
    if r.n_undecided:
        lines.append(f"  undecided (verifier errors, not counted): {r.n_undecided}")
    total = r.n_samples + r.n_undecided
    if total:
        lines.append(
            f"  cut off at {r.max_new_tokens} tokens (no EOS): {r.n_truncated}/{total} = "
            f"{percent(r.n_truncated, total)}"
        )
    if r.trained_rows:
        lines.append(
            f"  trained rows: {r.n_seen_rows} train rows were trained on ({r.trained_by or 'unknown'}; "
            f"{r.trained_rows}); "
            + (
                f"{r.seen_prompts} of them probed apart: {r.seen_successes}/{r.seen_samples} = "
                f"{percent(r.seen_successes, r.seen_samples)}, not in the rate above"
                if r.seen_prompts and r.seen_prompts < len(r.prompts)
                else "every probed prompt is one of them"
                if r.seen_prompts
                else "none probed"
            )
        )
    if r.lengths:
        answer, prompt = r.lengths["answer"], r.lengths["prompt"]
        lines.append(
            f"  lengths (tokens, p50/p95/max): answers in the format {answer['p50']}/{answer['p95']}/{answer['max']}, "
            f"prompts {prompt['p50']}/{prompt['p95']}/{prompt['max']}, "
            f"model positions {r.lengths['max_positions'] or 'unknown'}"
        )
    for term, counts in r.term_outcomes.items():
        lines.append(f"  term {term}: " + ", ".join(f"{o} {c}" for o, c in counts.items() if c))
    lines.append("  per-prompt pass rate:")
    width = max((c for _, c in r.histogram), default=0)
    for label, count in r.histogram:
        bar = "#" * (round(30 * count / width) if width else 0)
        lines.append(f"    {label:>12} {count:5d} {bar}")
    lines.append(
        f"  at G={r.group_size}: {r.zero_variance_share:.0%} of groups expected with zero variance, "
        f"expected group std {r.expected_group_std:.3f}"
    )
    lines.append(f"  route: {r.route.upper()}  {r.reason}")
    for w in r.warnings:
        lines.append(f"  warning: {w}")
    if r.filtered_path:
        lines.append(f"  filtered prompt set: {r.n_filtered} rows in {r.filtered_path} (point data.train at it)")
        if r.n_train_rows > r.n_prompts + r.seen_prompts:
            lines.append(
                f"  note: only the {r.n_prompts + r.seen_prompts} probed of {r.n_train_rows} train rows were filtered: "
                f"probe again with --filter --max-prompts {r.n_train_rows} to filter the whole split"
            )
    lines.append(f"  files: {r.out_dir}")
    return "\n".join(lines)
