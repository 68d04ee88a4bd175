"""The demo: the whole workflow on the built-in tiny model and the built-in arithmetic task, on
CPU, offline, in minutes.

1. Build the tiny model (random weights) and measure it: held-out pass rate 0 %, probe route
   ``sft`` -- GRPO would get no signal from it.
2. SFT until a dev slice of the train split reaches a partial pass rate; probe again: ``grpo``.
3. The inspection gate, with the person stood in by an independent reference checker that
   computes each answer from the prompt itself (the record says so; a real task needs a person).
4. GRPO with the plain recipe (tiny-model learning rate, documented in the task file), gated.
5. Held-out pass rate and probe again, and a before/after table.

Honest framing: continuing SFT would also lift this task; the demo shows RL improving a model
with nothing but a verifier, not RL beating SFT.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..rewards.base import Verdict
from ..task import Task
from .arithmetic import reference_answer, write_task

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def reference_checker(row: Mapping[str, Any], completion: str, verdicts: Mapping[str, Verdict]) -> str:
    """Stand-in reviewer for arithmetic: recomputes the answer from the question (never from the
    dataset's answer column) and judges the task's reward verdicts against it.

    A completion deserves the correctness reward iff it holds exactly one answer span whose
    content is the true result; it deserves the format reward iff it holds exactly one span.
    "higher" when a term withheld what was deserved, "lower" when it granted what was not.
    """
    truth = reference_answer(str(row.get("question", "")) + "=")
    spans = _ANSWER.findall(completion)
    well_formed = len(spans) == 1 and completion.count("<answer>") == 1 and completion.strip().endswith("</answer>")
    deserved = {"format": well_formed, "correct": well_formed and truth is not None and spans[0].strip() == truth}
    for term, verdict in verdicts.items():
        if term not in deserved or verdict.score is None:
            continue
        granted = verdict.score > 0
        if deserved[term] and not granted:
            return "higher"
        if granted and not deserved[term]:
            return "lower"
    return "right"


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


def run_demo(
    out: Path,
    *,
    grpo_steps: int = 1000,
    target: float = 0.2,
    seed: int = 0,
    say: Callable[[str], None] = print,
    progress: bool = True,
) -> list[Stage]:
    from ..audit import gate_audit
    from ..evaluate import evaluate
    from ..gate import reference_gate
    from ..models import build_builtin, load_model, load_tokenizer
    from ..task import load_task
    from ..train import TrainOptions, train
    from ..train.sft import SftOptions, run_sft

    t_start = time.time()
    out.mkdir(parents=True, exist_ok=True)
    task = load_task(write_task(out / "task", seed=seed))
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

    say(f"rlvr demo: the built-in tiny model on the built-in arithmetic task ({task.path})")
    base = str(build_builtin("tiny", out / "base"))
    measure("base", base)

    say(f"[sft] supervised warm start until a dev slice reaches {target:.0%} (greedy)")
    sft = run_sft(task, SftOptions(out_dir=out / "sft", model=base, target_pass_rate=target, progress=progress))
    say(f"    {sft.steps} steps in {sft.seconds:.0f} s; dev pass rate {sft.dev_pass_rate:.1%}")
    measure("after SFT", str(sft.out_dir))

    say("[gate] inspection set sampled from the SFT model, read by the reference checker (demo stand-in for a person)")
    gate_path = reference_gate(
        task, model=str(sft.out_dir), out_dir=out / "gate", checker=reference_checker, audit=gate_audit
    )
    record = json.loads(Path(gate_path).read_text())
    say(
        f"    signed {gate_path}: {record.get('counts', {}).get('samples')} samples, kappa {record.get('kappa')}, "
        f"reviewer {record.get('reviewer')!r}"
    )

    say(f"[grpo] plain GRPO recipe, {grpo_steps} steps, gated")
    run = train(
        task,
        TrainOptions(
            run_dir=out / "grpo",
            model=str(sft.out_dir),
            max_steps=grpo_steps,
            gate_path=Path(gate_path),
            progress=progress,
        ),
    )
    say(f"    {run.steps} steps in {run.seconds:.0f} s; run directory {run.run_dir}")
    measure("after GRPO", str(run.final_dir))

    total = time.time() - t_start
    say("")
    say(format_table(stages))
    say("")
    lift = stages[-1].accuracy - stages[1].accuracy
    say(
        f"GRPO changed held-out accuracy by {lift * 100:+.1f} points ({stages[1].correct}/{stages[1].n} -> "
        f"{stages[-1].correct}/{stages[-1].n}) in {total / 60:.1f} min total."
    )
    say(f"Run directory: {run.run_dir}  (next: rlvr doctor {run.run_dir}; rlvr report {run.run_dir})")
    (out / "demo.json").write_text(
        json.dumps(
            {"stages": [asdict(s) for s in stages], "seconds": round(total, 1), "grpo_steps": grpo_steps, "seed": seed},
            indent=2,
        )
    )
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
