"""The memory of ``rlvr sft``: an estimate beside GRPO's (``rlvr.plan.memory``), from the model's
config and the task's measured lengths, with the point it was checked against.

``rlvr sft`` trains every weight in fp32 (``bf16=False`` on every device, AdamW, no gradient
checkpointing: ``rlvr.settings.recipe.SFT_DEFAULTS``), so its peak is, in bytes:

- 16 per parameter: fp32 weights (4), gradients (4) and AdamW's m and v (8);
- activations kept for the backward pass: tokens x layers x (12 x hidden + 4 x intermediate) x 4
  (each layer's norm inputs and outputs, q/k/v/o, the MLP's gate, up, activation and product),
  tokens = batch x the longest prompt + target (a batch is padded to its longest row);
- the fp32 logits five times (the logits, the shifted and upcast copies, their log-softmax and its
  gradient): tokens x vocab x 20;
- a fixed runtime: on CPU the interpreter, torch, transformers and TRL (0.5 GB, fitted), on a GPU
  the CUDA context (``rlvr.plan.memory.OVERHEAD_BYTES``).

Checked on CPU (``bench/sft_memory.py``: the peak RSS of an ``rlvr sft`` child process), on
builtin:smollm2 (135M parameters), 3 steps, rows of 50 tokens: batch 8 measured 3.43 GB
(estimate 3.67), batch 32 measured 6.76 GB (estimate 6.73), load average 6-9 on 2 cores. The
per-token terms were set from those two points (2.8 MB a token measured, 2.55 estimated), so
treat the estimate as +-10 % near them, not a bound: the allocator, the model's load path (a GGUF
file is dequantised once) and much longer sequences (attention grows with their square) move it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..settings.recipe import SFT_DEFAULTS, TRL_SFT_MAX_LENGTH
from .architecture import Architecture
from .memory import GB, OVERHEAD_BYTES

if TYPE_CHECKING:
    from ..task import Task

# What rlvr sft runs with unless the task's sft: section says otherwise (rlvr.settings.recipe, the
# one place a default is written; rlvr.train.sft reads the same dict).
SFT_BATCH_SIZE = int(SFT_DEFAULTS["per_device_train_batch_size"])
CPU_RUNTIME_BYTES = 0.5 * GB  # python + torch + transformers + TRL (fitted: bench/sft_memory.py)
BYTES_PER_PARAM = 16.0  # fp32 weights, gradients, AdamW m and v
LOGIT_COPIES = 5  # logits, shifted and upcast copies, log-softmax, its gradient (fp32)

Device = Literal["cpu", "gpu"]


@dataclass(frozen=True)
class SftEstimate:
    """The parts of one SFT run's peak memory, in bytes."""

    model: str
    params: int
    batch: int
    seq: int
    device: Device
    parts: dict[str, float]

    @property
    def peak(self) -> float:
        return sum(self.parts.values())

    def text(self) -> str:
        shown = ", ".join(f"{k} {v / GB:.2f}" for k, v in self.parts.items())
        where = "resident (RSS)" if self.device == "cpu" else "per GPU"
        return (
            f"SFT peak ~{self.peak / GB:.1f} GB {where} at batch {self.batch} x {self.seq} tokens "
            f"(fp32 full fine-tuning; GB: {shown})"
        )


def sft_estimate(arch: Architecture, *, batch: int, seq: int, device: Device = "cpu") -> SftEstimate:
    """The estimate for ``batch`` rows padded to ``seq`` tokens (module docstring)."""
    tokens = batch * seq
    mlp = arch.intermediate if not arch.moe else arch.experts_per_token * arch.moe_intermediate
    parts = {
        "weights+grads+adam": BYTES_PER_PARAM * arch.params,
        "activations": tokens * arch.layers * (12 * arch.hidden + 4 * mlp) * 4.0,
        "logits": tokens * arch.vocab * 4.0 * LOGIT_COPIES,
        "runtime": CPU_RUNTIME_BYTES if device == "cpu" else OVERHEAD_BYTES,
    }
    return SftEstimate(arch.name, arch.params, batch, seq, device, parts)


def sft_estimate_for_task(task: Task, arch: Architecture, prompt_tokens: int, *, device: Device) -> SftEstimate:
    """The estimate for ``task``'s SFT run on ``arch``: its ``sft:`` batch size (default
    ``SFT_BATCH_SIZE``), rows of ``prompt_tokens`` plus the longest SFT target at ~3 characters a
    token (what ``rlvr plan`` knows without a tokenizer), capped at SFT's ``max_length``."""
    from ..lengths import reference_completion

    settings = {"per_device_train_batch_size": SFT_BATCH_SIZE, **dict(task.sft)}
    rows = task.load_split("train")[:2000]
    target = max((len(reference_completion(task, r)) for r in rows), default=8)
    seq = min(prompt_tokens + -(-target // 3) + 1, int(settings.get("max_length", TRL_SFT_MAX_LENGTH)))
    return sft_estimate(arch, batch=int(settings["per_device_train_batch_size"]), seq=seq, device=device)
