"""The measured run of the tool-search example on builtin:smollm2 (SmolLM2-135M-Instruct, CPU).

    python examples/tool-search/measure_smollm2.py OUT_DIR [--sft-steps N] [--sft-lr X] [--sft-dir DIR] [--no-base]
        [--grpo-steps N] [--lr X] [--k K] [--temperature T]

1. Held-out episodes of the base model (eval split, ``--k`` per question, sampled at
   ``--temperature``, 0.7: the task's 1.0 is for the random tiny model; the task's token budget):
   calls per episode, share of well-formed calls, accuracy of the final answer, share cut off
   (``measure.measure``, shared with the tiny run).
2. An SFT warm start (full fine-tuning, lr 1e-4, 16 a step) on reference episodes (search the
   country's name, read the result, answer) of ``sft.jsonl``: countries in neither the train nor
   the eval split, so GRPO's reward on its train rows is never a capital SFT had the model learn by
   heart. SFT trains on the whole episode text, tool results included (TRL's SFTTrainer has no
   tool mask); GRPO never does.
3. The same held-out measurement, then ``rlvr train`` (GRPOTrainer with environment_factory, a
   LoRA adapter merged into final/, the task's 2 prompts x 8 episodes a step, at the same
   temperature) from the SFT checkpoint, then the held-out measurement again. ``--grpo-steps 0``
   stops after step 2's measurement.

Prints one JSON line per stage, with the standard error of the accuracy over the held-out
episodes and the CPU seconds of this process so far.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODEL = "builtin:smollm2"


def reference_pair(task: Any, tok: Any, row: dict[str, Any], toolbox: Any) -> tuple[str, str]:
    """(prompt, completion) of one reference episode, as the model's chat template renders it."""
    from rlvr.episodes.template import render, tool_suffix

    prompt = render(tok, task.render_prompt(row), toolbox.schemas())
    country = re.sub(r"^Capital of (.*)\?$", r"\1", row["question"])
    args = {"query": country}
    result = toolbox.call("search", args).content
    call = "<tool_call>" + json.dumps({"name": "search", "arguments": args}) + "</tool_call>" + tok.eos_token
    suffix = tool_suffix(tok, [{"role": "tool", "name": "search", "content": result}])
    return prompt, call + suffix + task.answer.wrap(row["answer"]) + tok.eos_token


def sft_rows() -> list[dict[str, Any]]:
    sft_file = HERE / "sft.jsonl"
    if not sft_file.exists():
        raise SystemExit(f"{sft_file} is missing: python {HERE / 'make_data.py'} writes it")
    return [json.loads(line) for line in sft_file.read_text().splitlines() if line.strip()]


def sft(task: Any, rows: list[dict[str, Any]], model_dir: Path, steps: int, lr: float) -> None:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from rlvr.episodes import build_toolbox, prepare_tokenizer
    from rlvr.models import load_model, load_tokenizer

    tok = prepare_tokenizer(load_tokenizer(MODEL))
    toolbox = build_toolbox(task.environment)
    pairs = [reference_pair(task, tok, r, toolbox) for r in rows]
    data = Dataset.from_list([{"prompt": p, "completion": c} for p, c in pairs])
    args = SFTConfig(
        output_dir=str(model_dir / "sft-out"),
        max_steps=steps,
        learning_rate=lr,
        per_device_train_batch_size=16,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        use_cpu=True,
        seed=3407,
    )
    trainer = SFTTrainer(model=load_model(MODEL), args=args, train_dataset=data, processing_class=tok)
    trainer.train()
    trainer.save_model(str(model_dir))
    tok.save_pretrained(str(model_dir))


def main() -> None:
    from measure import measure

    from rlvr.task import load_task
    from rlvr.train import TrainOptions, train

    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--sft-steps", type=int, default=4)
    ap.add_argument("--sft-lr", type=float, default=1e-4)
    ap.add_argument("--sft-dir", type=Path, help="reuse this SFT checkpoint (skip steps 1 and 2)")
    ap.add_argument("--grpo-steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=3e-4, help="GRPO learning rate (LoRA)")
    ap.add_argument("--no-base", action="store_true", help="skip step 1 (the base model measured already)")
    ap.add_argument("--k", type=int, default=1, help="held-out episodes per eval question")
    ap.add_argument("--temperature", type=float, default=0.7, help="sampling temperature (held-out and GRPO)")
    a = ap.parse_args()
    task = load_task(HERE / "task.yaml")
    # The task's temperature (1.0) suits the random tiny model; a pretrained model's samples at 1.0
    # ramble (a pilot's did), so this run samples at rlvr's default run temperature, 0.7.
    task = dataclasses.replace(task, generation=dataclasses.replace(task.generation, temperature=a.temperature))
    t0 = time.time()

    def say(result: dict[str, Any]) -> None:
        n, p = result["episodes"], result["accuracy"]
        cpu = os.times()
        print(
            json.dumps(
                {
                    **result,
                    "accuracy_se": round(math.sqrt(p * (1 - p) / n), 4),
                    "seconds": round(time.time() - t0),
                    "cpu_seconds": round(cpu.user + cpu.system),
                }
            ),
            flush=True,
        )

    sft_dir = a.sft_dir or a.out / "sft"
    if a.sft_dir is None:
        if not a.no_base:
            say(measure(task, MODEL, "base", k=a.k))
        sft(task, sft_rows(), sft_dir, a.sft_steps, a.sft_lr)
    say(measure(task, str(sft_dir), f"after SFT ({a.sft_steps} steps), before GRPO", k=a.k))
    if a.grpo_steps <= 0:  # SFT only: measure it before spending the GRPO steps
        return
    result = train(
        task,
        TrainOptions(
            run_dir=a.out / "grpo",
            model=str(sft_dir),
            max_steps=a.grpo_steps,
            no_gate_reason="measured run",
            progress=False,
            eval_every=0,
            peft="lora",
            overrides={"learning_rate": a.lr, "temperature": a.temperature},
        ),
    )
    say(measure(task, str(result.final_dir), f"after GRPO ({a.grpo_steps} steps)", k=a.k))


if __name__ == "__main__":
    main()
