"""Plots of a run and a self-contained HTML report (`rlvr report RUN`).

Six plots, each a PNG written with matplotlib's Agg backend (no display needed): reward per term,
held-out accuracy, entropy, completion length, the zero-std fraction and KL. A per-step line of
more than 50 steps is drawn faint, under its trailing mean over a 25th of its steps (at least 5),
so a trend shows through the noise of small batches; held-out evals are drawn as they are. A plot whose metrics
the run did not log is left out and the report says so, rather than drawing an empty axis. A run
trained with rlvr's online filter (``rlvr.train.dynamic``) gets two more: the zero-variance share of the
groups the sampler drew and of the groups trained, and the filter's counts (kept, replaced and
starved groups, skipped prompts); a run without it gets neither, and nothing is said about them. The
HTML file embeds the PNGs as base64 and has no external links, scripts or fonts, so it can be
mailed or archived on its own; it also carries the doctor's findings and notes for the same run.

Resumes are marked (a dashed line on every plot, and a list of the run's sessions), and held-out
evals of different sizes (``--eval-prompts`` changed between sessions, say) are drawn as separate
lines and listed with their size: an accuracy over 8 prompts and one over 200 are not one curve.
The configuration table shows the gate's status or the ``--no-gate`` reason.

Reads the same inputs as ``rlvr doctor`` (run directory, TRL ``trainer_state.json``, CSV).
"""

from __future__ import annotations

import base64
import functools
import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import atomic
from .doctor import Diagnosis, Run, Series, diagnose
from .doctor.readings import held_out_accuracy, step_of

# The settings a reader needs to interpret the plots (the rest are in the run's config.yaml).
CONFIG_KEYS = (
    "loss_type",
    "scale_rewards",
    "beta",
    "epsilon",
    "epsilon_high",
    "importance_sampling_level",
    "num_iterations",
    "steps_per_generation",
    "gradient_accumulation_steps",
    "learning_rate",
    "num_generations",
    "per_device_train_batch_size",
    "temperature",
    "max_completion_length",
    "mask_truncated_completions",
    "max_steps",
)


@dataclass(frozen=True)
class Plot:
    name: str  # file stem
    title: str
    path: Path | None  # None when nothing to draw
    missing: str = ""  # why it was left out


@dataclass(frozen=True)
class Report:
    html: Path
    plots: tuple[Plot, ...]
    diagnosis: Diagnosis


@dataclass(frozen=True)
class PlotLine:
    """One line of a plot: a metric series, its legend label, and whether to mark its points."""

    series: Series
    label: str
    marker: bool = False  # evals are sparse: draw points


def eval_size(row: Mapping[str, Any]) -> int | None:
    """How many held-out prompts an eval line covers: ``eval/prompts``, else decided + masked."""
    for key in ("eval/prompts",):
        if isinstance(row.get(key), int | float):
            return int(row[key])
    n, masked = row.get("eval/n"), row.get("eval/masked")
    if isinstance(n, int | float):
        return int(n) + (int(masked) if isinstance(masked, int | float) else 0)
    return None


def accuracy_by_size(run: Run) -> list[tuple[int | None, Series]]:
    """Held-out accuracy split by eval size, largest first; one series when every eval has one size."""
    held = held_out_accuracy(run)
    sizes = {step_of(r): eval_size(r) for r in run.evals}
    groups: dict[int | None, list[tuple[int, float]]] = {}
    for step, value in zip(held.steps, held.values, strict=True):
        groups.setdefault(sizes.get(step), []).append((step, value))
    out = [(size, Series(held.key, tuple(s for s, _ in pts), tuple(v for _, v in pts))) for size, pts in groups.items()]
    return sorted(out, key=lambda t: -(t[0] or 0))


def resume_steps(run: Run) -> list[int]:
    return [int(e["step"]) for e in run.events if e.get("event") == "resume" and isinstance(e.get("step"), int | float)]


def plot_lines(run: Run) -> dict[str, tuple[str, str, list[PlotLine]]]:
    """The report's plots of ``run``: plot name -> (title, y label, lines)."""
    terms = run.term_names()
    rewards = [PlotLine(run.series("reward"), "reward (weighted sum)")] + [
        PlotLine(run.series(f"rewards/{t}/mean"), t) for t in terms
    ]
    by_size = accuracy_by_size(run)
    if len(by_size) > 1:
        acc = [
            PlotLine(series, f"held-out accuracy (n={size if size is not None else '?'})", True)
            for size, series in by_size
        ]
    else:
        held = by_size[0][1] if by_size else Series("eval/accuracy", (), ())
        acc = [PlotLine(held if len(held) else run.series("eval/accuracy", evals=True), "held-out accuracy", True)]
    length = [
        PlotLine(run.series("completions/mean_length"), "mean length (train)"),
        PlotLine(run.series("completions/mean_terminated_length"), "mean terminated length (train)"),
        PlotLine(run.series("eval/mean_length_correct", evals=True), "held-out correct", True),
        PlotLine(run.series("eval/mean_length_incorrect", evals=True), "held-out incorrect", True),
    ]
    return {
        "rewards": ("Reward per term", "mean reward", rewards),
        "accuracy": ("Held-out verified accuracy", "accuracy", acc),
        "entropy": ("Token entropy", "nats", [PlotLine(run.series("entropy"), "entropy")]),
        "length": ("Completion length", "tokens", length),
        "zero_std": (
            "Groups with zero reward variance",
            "fraction",
            [
                PlotLine(run.series("frac_reward_zero_std"), "frac_reward_zero_std"),
                PlotLine(run.series("completions/clipped_ratio"), "clipped (truncated) ratio"),
            ],
        ),
        "kl": ("KL to the reference", "nats / token", [PlotLine(run.series("kl"), "kl")]),
        **_dynamic_lines(run),
        **_episode_lines(run),
    }


def _episode_lines(run: Run) -> dict[str, tuple[str, str, list[PlotLine]]]:
    """An episode task's plots (rlvr.episodes): turns and calls per episode, failing calls and
    episodes cut off; only for a run that logged them."""
    if not len(run.series("episodes/calls")):
        return {}
    return {
        "episodes": (
            "Episodes: turns and tool calls",
            "per episode",
            [PlotLine(run.series("episodes/turns"), "turns"), PlotLine(run.series("episodes/calls"), "tool calls")],
        ),
        "episode_errors": (
            "Episodes: failing calls and cut-offs",
            "fraction",
            [
                PlotLine(run.series("episodes/tool_error_rate"), "tool calls that failed"),
                PlotLine(run.series("episodes/invalid_call_rate"), "calls malformed or off-schema"),
                PlotLine(run.series("episodes/cut_off_rate"), "episodes cut off"),
            ],
        ),
    }


def _dynamic_lines(run: Run) -> dict[str, tuple[str, str, list[PlotLine]]]:
    """The online filter's plots, only for a run that logged its metrics."""
    if not len(run.series("dynamic/zero_std_before")):
        return {}
    return {
        "dynamic": (
            "Dynamic sampling: zero-variance share before and after the filter",
            "fraction of groups",
            [
                PlotLine(run.series("dynamic/zero_std_before"), "drawn groups skipped (predicted flat)"),
                PlotLine(run.series("dynamic/zero_std_after"), "trained groups found flat"),
            ],
        ),
        "dynamic_counts": (
            "Dynamic sampling: groups and skipped prompts",
            "count",
            [
                PlotLine(run.series(f"dynamic/{k}"), label)
                for k, label in (
                    ("kept_groups", "kept groups"),
                    ("replaced_groups", "replaced groups"),
                    ("starved_groups", "starved groups (no replacement)"),
                    ("skipped_prompts", "skipped prompts"),
                    ("skipped_solved", "skipped: all solved"),
                    ("skipped_unsolved", "skipped: none solved"),
                )
            ],
        ),
    }


SMOOTH_FROM = 50  # a per-step line of more points than this is drawn faint under its trailing mean


def smoothing_window(line: PlotLine) -> int:
    """The trailing-mean window a line is drawn with: 0 (drawn as is) for evals and short runs,
    else a 25th of its points, at least 5."""
    n = len(line.series)
    return 0 if line.marker or n <= SMOOTH_FROM else max(5, n // 25)


def trailing_mean(values: Sequence[float], w: int) -> list[float]:
    """Each point's mean over itself and the ``w - 1`` points before it (fewer at the start)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= w:
            total -= values[i - w]
        out.append(total / min(i + 1, w))
    return out


def plot_run(run: Run, out_dir: str | Path) -> tuple[Plot, ...]:
    """Write one PNG per plot that has data; return every plot, drawn or not."""
    # The Agg canvas directly, not pyplot: no display, no global figure state, safe in threads.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    plots = []
    for name, (title, ylabel, lines) in plot_lines(run).items():
        drawn = [ln for ln in lines if len(ln.series)]
        path = out / f"{name}.png"
        if not drawn:
            keys = ", ".join(ln.series.key for ln in lines)
            plots.append(Plot(name, title, None, f"not logged in this run ({keys})"))
            continue
        fig = Figure(figsize=(6.4, 3.4), dpi=100)
        FigureCanvasAgg(fig)
        ax = fig.subplots()
        for ln in drawn:
            w = smoothing_window(ln)
            raw = ax.plot(
                ln.series.steps,
                ln.series.values,
                label=None if w else ln.label,
                marker="o" if ln.marker or len(ln.series) == 1 else None,
                linewidth=0.8 if w else 1.4,
                alpha=0.3 if w else 1.0,
            )
            if w:
                label = f"{ln.label}, mean of {w} steps"
                ax.plot(ln.series.steps, trailing_mean(ln.series.values, w), color=raw[0].get_color(), label=label)
        if name == "accuracy":
            # Two binomial standard errors, so a reader does not over-read a wiggle between evals.
            n_series = run.series("eval/n", evals=True)
            ns = dict(zip(n_series.steps, n_series.values, strict=True))
            for ln in drawn:
                acc = ln.series
                err = [
                    2 * math.sqrt(v * (1 - v) / ns[s]) if ns.get(s, 0) >= 1 and 0 <= v <= 1 else 0.0
                    for s, v in zip(acc.steps, acc.values, strict=True)
                ]
                ax.errorbar(acc.steps, acc.values, yerr=err, fmt="none", capsize=3, linewidth=1)
        for i, step in enumerate(resume_steps(run)):
            ax.axvline(step, color="#777", linestyle="--", linewidth=1, label="resume" if i == 0 else None)
        if resume_steps(run) and len(drawn) == 1:
            ax.legend(fontsize=8)
        if name in ("accuracy", "zero_std", "dynamic"):
            ax.set_ylim(-0.02, 1.02)  # fractions on their whole scale
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if len(drawn) > 1:
            ax.legend(fontsize=8)
        fig.tight_layout()
        atomic.replace_file(path, functools.partial(fig.savefig, format="png"))
        plots.append(Plot(name, title, path))
    return tuple(plots)


def _table(rows: Sequence[Sequence[str]], head: Sequence[str]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.4g}" if math.isfinite(v) else str(v)


def render_html(d: Diagnosis, plots: Sequence[Plot]) -> str:
    run = d.run
    steps = run.steps()
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>rlvr report: {esc(run.source)}</title>",
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px "
        "8px;vertical-align:top;text-align:left}"
        ".error{color:#a00}.warning{color:#a60}img{max-width:100%}.missing{color:#777}</style></head><body>",
        f"<h1>rlvr report</h1><p>run: <code>{esc(run.source)}</code> ({esc(run.kind)}); {len(run.train)} logged steps"
        + (f" (steps {steps[0]}-{steps[1]})" if steps else "")
        + f"; {len(run.evals)} held-out evals; config: "
        + (f"<code>{esc(run.config_path)}</code>" if run.config_path else "not found")
        + "</p>",
    ]
    if run.config_known:
        rows = [[k, repr(run.grpo[k])] for k in CONFIG_KEYS if k in run.grpo]
        if isinstance(run.rlvr.get("model"), str):
            rows.insert(0, ["model", run.rlvr["model"]])
        rows.insert(0, ["inspection gate", gate_text(run.rlvr)])
        if isinstance(run.rlvr.get("stop"), Mapping):
            rows.append(["stop rules", ", ".join(f"{k} {v}" for k, v in run.rlvr["stop"].items())])
        if isinstance(run.rlvr.get("dynamic"), Mapping):
            rows.append(["dynamic sampling", ", ".join(f"{k} {v}" for k, v in run.rlvr["dynamic"].items())])
        parts.append("<h2>Configuration</h2>" + _table(rows, ["setting", "value"]))
    sessions = [e for e in run.events if e.get("event") in ("resume", "stopped")]
    if sessions:
        rows = []
        for e in sessions:
            if e.get("event") == "resume":
                skipped = e.get("skipped") or []
                what = f"resumed from {e.get('resumed_from')}" + (
                    f"; skipped incomplete {', '.join(map(str, skipped))}" if skipped else ""
                )
            else:
                what = f"stopped: {e.get('reason')}"
            rows.append([str(e.get("step")), str(e.get("time", "")), what])
        parts.append("<h2>Resumes and stops</h2>" + _table(rows, ["step", "run time (s)", "what"]))
    parts.append("<h2>Doctor</h2>")
    if d.healthy:
        parts.append("<p>No findings: nothing in the metrics calls for a change. Keep plain GRPO.</p>")
    else:
        rows = []
        for f in d.findings:
            patch = "none"
            if f.patch:
                patch = f"{f.patch.variant}: " + ", ".join(f"{k}={v!r}" for k, v in f.patch.grpo.items())
            rows.append([f.severity, f.check, f.metric, f.evidence, f.suggestion, patch])
        table = _table(rows, ["severity", "finding", "metric", "evidence", "fix", "config patch"])
        for sev in ("error", "warning"):  # colour the severity cell
            table = table.replace(f"<td>{sev}</td>", f"<td class='{sev}'>{sev}</td>")
        parts.append(table)
    notes = [f"{n.check}: {n.text}" for n in d.notes] + [f"reading the log: {w}" for w in run.warnings]
    if notes:
        parts.append("<h3>Notes</h3><ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Plots</h2>")
    for p in plots:
        if p.path is None:
            parts.append(f"<h3>{esc(p.title)}</h3><p class='missing'>{esc(p.missing)}</p>")
            continue
        data = base64.b64encode(p.path.read_bytes()).decode("ascii")
        parts.append(f"<h3>{esc(p.title)}</h3><img alt='{esc(p.title)}' src='data:image/png;base64,{data}'>")
    if run.evals:
        acc = held_out_accuracy(run)
        by_step = {step_of(r): r for r in run.evals}
        rows = []
        for s_, v in zip(acc.steps, acc.values, strict=True):
            r = by_step.get(s_, {})
            size = eval_size(r)
            rows.append(
                [
                    str(s_),
                    _fmt(v),
                    str(size) if size is not None else "-",
                    _fmt(r.get("eval/n")),
                    _fmt(r.get("eval/masked")),
                ]
            )
        if rows:
            note = (
                "<p>Evals of different sizes are separate lines in the plot: their accuracies are not one series.</p>"
                if len(accuracy_by_size(run)) > 1
                else ""
            )
            sampled = [by_step.get(s_, {}) for s_ in acc.steps]
            head = ["step", "accuracy", "prompts", "decided", "masked (undecided)"]
            if any("eval/pass@1" in r for r in sampled):
                head = ["step", "pass@1 (95% CI)", "pass@k (95% CI)", "greedy accuracy", *head[2:]]
                rows = [
                    [row[0], _ci(r, "pass@1"), _ci(r, "pass@k"), *row[1:]] for row, r in zip(rows, sampled, strict=True)
                ]
            parts.append("<h2>Held-out evals</h2><p>" + esc(headline(sampled)) + "</p>" + note + _table(rows, head))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def headline(evals: Sequence[Mapping[str, Any]]) -> str:
    """Which held-out number is the headline, and why: pass@1 when the run sampled its evals."""
    last = next((r for r in reversed(evals) if "eval/pass@1" in r), None)
    if last is not None:
        return (
            f"Headline: pass@1, {_fmt(last.get('eval/samples'))} completions per prompt at T="
            f"{_fmt(last.get('eval/temperature'))} (the training temperature), the mean over prompts with its 95 % "
            "interval: GRPO reweights the sampling distribution, and this measures it. Greedy accuracy (one "
            "completion, the policy's mode) is shown beside it."
        )
    return (
        "Headline: greedy accuracy, one completion per prompt, the only held-out measure this run logged. It reads "
        "the policy's mode and can stay put while GRPO lifts the sampled success rate: set eval.samples in the "
        "task file to log pass@1 and pass@k at the training temperature."
    )


def _ci(row: Mapping[str, Any], key: str) -> str:
    value, low, high = (row.get(f"eval/{key}{end}") for end in ("", "_low", "_high"))
    if not isinstance(value, (int, float)):
        return "-"
    k = f" (k={_fmt(row.get('eval/k'))})" if key == "pass@k" else ""
    return (
        f"{value:.1%} [{low:.1%}, {high:.1%}]{k}" if isinstance(low, float) and isinstance(high, float) else _fmt(value)
    )


def gate_text(rlvr: Mapping[str, Any]) -> str:
    """The gate's status as the run recorded it: passed (who, how many samples) or bypassed (why)."""
    gate = rlvr.get("gate")
    reason = rlvr.get("no_gate_reason")
    if not isinstance(gate, Mapping):
        return f"bypassed: {reason}" if reason else "not recorded"
    status = gate.get("status")
    if status == "passed":
        bits = [
            f"reviewer {gate.get('reviewer')}" if gate.get("reviewer") else "",
            f"{gate.get('samples')} samples read" if gate.get("samples") else "",
            f"signed {gate.get('signed_at')}" if gate.get("signed_at") else "",
            f"record {gate.get('record')}" if gate.get("record") else "",
        ]
        return "passed (" + ", ".join(b for b in bits if b) + ")"
    if status == "bypassed" or reason or gate.get("bypassed"):
        return f"bypassed with --no-gate: {gate.get('no_gate_reason') or gate.get('reason') or reason}"
    return str(status or "not recorded")


def write_report(run: Run, out_dir: str | Path) -> Report:
    """Plots as PNG files and ``report.html`` (PNGs embedded) in ``out_dir``."""
    out = Path(out_dir)
    plots = plot_run(run, out)
    d = diagnose(run)
    path = out / "report.html"
    atomic.write_text(path, render_html(d, plots))
    return Report(path, plots, d)


def default_out_dir(run: Run) -> Path:
    src = Path(run.source)
    return (src if src.is_dir() else src.parent) / "report"
