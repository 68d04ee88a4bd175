"""How trainer_state.json and config.json here were made: a plain TRL GRPOTrainer run (no rlvr
training code) of the untrained built-in tiny model on the arithmetic prompts, 12 steps on CPU.

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 .venv/bin/python tests/data/doctor/trl_checkpoint/make_trainer_state.py OUT
    cp OUT/checkpoint-12/{trainer_state.json,config.json} tests/data/doctor/trl_checkpoint/
"""

from __future__ import annotations

import re
import sys

from rlvr.demo.arithmetic import generate
from rlvr.models import build_builtin, load_model, load_tokenizer


def fmt(completions: list[str], **kw: object) -> list[float]:
    return [1.0 if re.search(r"<answer>.*?</answer>", c) else 0.0 for c in completions]


def correct(completions: list[str], answer: list[str], **kw: object) -> list[float]:
    out = []
    for c, a in zip(completions, answer, strict=True):
        m = re.search(r"<answer>(.*?)</answer>", c)
        out.append(1.0 if m and m.group(1).strip() == a else 0.0)
    return out


def main(out_dir: str) -> None:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    torch.set_num_threads(1)
    ref = str(build_builtin("tiny"))
    rows = generate(64, 0)
    ds = Dataset.from_list([{"prompt": r["question"] + "=", "answer": r["answer"]} for r in rows])
    cfg = GRPOConfig(
        output_dir=out_dir,
        num_generations=8,
        max_completion_length=16,
        per_device_train_batch_size=16,
        gradient_accumulation_steps=1,
        max_steps=12,
        logging_steps=1,
        save_steps=12,
        learning_rate=1e-4,
        beta=0.01,
        loss_type="grpo",
        use_cpu=True,
        bf16=False,
        report_to="none",
        temperature=1.0,
        seed=3407,
        gradient_checkpointing=False,
    )
    trainer = GRPOTrainer(
        model=load_model(ref),
        processing_class=load_tokenizer(ref),
        reward_funcs=[fmt, correct],
        args=cfg,
        train_dataset=ds,
    )
    trainer.train()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/trl_doctor_fixture")
