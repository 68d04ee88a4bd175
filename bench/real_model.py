"""Where a GRPO step's time goes on a real model (builtin:smollm2, 135 M parameters) on this CPU.

Side by side in one run, each pair printed with its ratio:

1. generation: one ``generate`` call per prompt (batch 1) against rlvr's batched sampler (all
   completions of a step in one left-padded call, KV cache on), and the KV cache off against on;
2. threads: the batched generation and a training step at 1 thread against 2;
3. training: one forward + backward + optimiser step on the same completions, full fine-tuning
   (AdamW over every weight) against LoRA rank 16 on every linear layer (rlvr --peft lora);
4. how a step grows: generation and LoRA training time at several batch sizes and completion
   lengths (tokens per second for each).

Prompts are the real-model demo's chat prompts (rlvr.demo.chat); completions are sampled, not
forced, so generation stops at EOS as in training. Timings are medians of ``--repeats`` runs, in
CPU seconds of this process (``time.process_time``): on a shared machine they stay close to what
an idle one would take on one thread, where wall-clock time does not. The thread comparisons
(2.) are in wall-clock seconds, the only measure in which a second thread can help: on a loaded
machine they say little.

    OMP_NUM_THREADS=1 .venv/bin/python bench/real_model.py [--repeats 2] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


CLOCK = time.process_time  # CPU seconds; the thread comparisons switch to wall-clock


def timed(fn: Callable[[], Any], repeats: int, clock: Callable[[], float] | None = None) -> tuple[float, Any]:
    clock = clock or CLOCK
    times, out = [], None
    for _ in range(repeats):
        t = clock()
        out = fn()
        times.append(clock() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer sizes (a check that the script runs)")
    args = ap.parse_args()

    import torch

    from rlvr.demo.chat import write_chat_task
    from rlvr.generate import TransformersSampler
    from rlvr.models import load_model, load_tokenizer, quiet_libraries
    from rlvr.task import load_task

    quiet_libraries()
    torch.set_num_threads(1)
    tmp = Path(tempfile.mkdtemp(prefix="rlvr-bench-real-"))
    task = load_task(write_chat_task(tmp, seed=0))
    rows = task.load_split("train")
    tok = load_tokenizer("builtin:smollm2")
    model = load_model("builtin:smollm2")
    sampler = TransformersSampler(model, tok, batch_size=64)
    prompts = [task.render_prompt(r) for r in rows[:64]]
    budget = 16
    n_prompts, group = (2, 4) if args.quick else (4, 8)
    print(
        f"builtin:smollm2 on {torch.get_num_threads()} thread(s); {n_prompts} prompts x {group} completions, "
        f"budget {budget} tokens, median of {args.repeats}; CPU seconds unless marked wall-clock"
    )

    def batched() -> int:
        gs = sampler.sample(prompts[:n_prompts], n=group, temperature=1.0, max_new_tokens=budget, seed=0)
        return sum(c.n_tokens for g in gs for c in g)

    one = TransformersSampler(model, tok, batch_size=1)

    def one_by_one() -> int:
        gs = one.sample(prompts[:n_prompts], n=1, temperature=1.0, max_new_tokens=budget, seed=0)
        return sum(c.n_tokens for g in gs for c in g) * group  # the same count of completions, one call each

    def ratio_line(name: str, before: tuple[float, int], after: tuple[float, int]) -> None:
        (tb, nb), (ta, na) = before, after
        print(f"  {name:<44} {nb / tb:8.1f} -> {na / ta:8.1f} tokens/s   ({tb / ta * na / nb:.2f}x)")

    print("\n1. generation (tokens/s; ratio = after/before)")
    t1, n1 = timed(one_by_one, 1)
    # one_by_one sampled n_prompts completions and scaled; time scales too
    before = (t1 * group, n1)
    after = timed(batched, args.repeats)
    ratio_line("one call per completion -> batched, KV cache", before, after)
    model.generation_config.use_cache = False
    nocache = timed(batched, 1)
    model.generation_config.use_cache = True
    ratio_line("batched without KV cache -> with", nocache, after)

    print("\n2. threads (1 -> 2), wall-clock")
    wall1 = timed(batched, args.repeats, time.perf_counter)
    torch.set_num_threads(2)
    wall2 = timed(batched, args.repeats, time.perf_counter)
    torch.set_num_threads(1)
    ratio_line("batched generation", wall1, wall2)

    # Training: one GRPO-shaped update on sequences of prompt + completion tokens.
    def train_step(m: Any, opt: Any, batch: int, length: int) -> Callable[[], int]:
        ids = tok.apply_chat_template(prompts[0], add_generation_prompt=True, tokenize=True, return_dict=True)
        prompt = list(ids["input_ids"])
        seq = torch.tensor([prompt + [tok.eos_token_id] * length] * batch)

        def step() -> int:
            m.train()
            logits = m(input_ids=seq).logits[:, len(prompt) - 1 : -1]
            logp = torch.log_softmax(logits.float(), -1).gather(-1, seq[:, len(prompt) :, None]).squeeze(-1)
            loss = -(logp.mean())
            loss.backward()
            opt.step()
            opt.zero_grad()
            return batch * (len(prompt) + length)

        return step

    from peft import LoraConfig, get_peft_model

    from rlvr.train.settings import LORA

    full = load_model("builtin:smollm2")
    full_opt = torch.optim.AdamW(full.parameters(), lr=1e-6)
    lora = get_peft_model(
        load_model("builtin:smollm2"),
        LoraConfig(r=LORA["r"], lora_alpha=LORA["lora_alpha"], target_modules="all-linear", task_type="CAUSAL_LM"),
    )
    lora_opt = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-4)
    b, n = n_prompts * group, 12
    prompt_len = len(
        tok.apply_chat_template(prompts[0], add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
    )
    print(
        f"\n3. training step, {b} sequences x ({prompt_len} prompt + {n} completion tokens) (tokens/s, prompt included)"
    )
    tf = timed(train_step(full, full_opt, b, n), args.repeats)
    tl = timed(train_step(lora, lora_opt, b, n), args.repeats)
    ratio_line("full fine-tuning -> LoRA r16", tf, tl)
    tl1 = timed(train_step(lora, lora_opt, b, n), args.repeats, time.perf_counter)
    torch.set_num_threads(2)
    tl2 = timed(train_step(lora, lora_opt, b, n), args.repeats, time.perf_counter)
    torch.set_num_threads(1)
    ratio_line("LoRA, 1 -> 2 threads (wall-clock)", tl1, tl2)

    print("\n4. how a step grows (1 thread): CPU seconds (tokens per CPU second)")
    sizes = [(8, 16), (32, 16)] if args.quick else [(8, 16), (16, 16), (32, 16), (64, 16), (32, 32), (32, 64)]
    print(f"  {'sequences':>9} {'tokens':>6} {'generate':>20} {'LoRA train':>20}")
    for seqs, length in sizes:
        k = max(1, seqs // group)

        def gen(k: int = k, length: int = length, seqs: int = seqs) -> int:
            gs = sampler.sample(prompts[:k], n=seqs // k, temperature=1.0, max_new_tokens=length, seed=1)
            return sum(c.n_tokens for g in gs for c in g)

        tg, ng = timed(gen, 1)
        tt, nt = timed(train_step(lora, lora_opt, seqs, length), 1)
        print(f"  {seqs:>9} {length:>6} {tg:8.2f} s ({ng / tg:7.1f}) {tt:8.2f} s ({nt / tt:7.1f})")


if __name__ == "__main__":
    main()
