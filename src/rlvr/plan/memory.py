"""Memory planner: per-GPU memory of a GRPO run, from the model's config alone (no weights).

What it counts, per training GPU (bytes; GB below means 1e9 bytes):

- policy state: full fine-tuning keeps bf16 weights and gradients and fp32 AdamW master weights,
  m and v (16 B/param); LoRA a frozen bf16 base (2 B/param) plus the adapters at 16 B/param;
  QLoRA NF4 linears with double quantisation (~0.52 B/param) plus bf16 embeddings and lm_head.
  ZeRO-3 / FSDP divide weights, gradients and optimizer states by the training GPUs; ZeRO-2
  divides gradients and optimizer states; ZeRO-1 the optimizer states.
- the reference model when beta > 0: +2 B/param with full fine-tuning (sharded like the policy
  under ZeRO-3); nothing with PEFT (TRL disables the adapters instead) or with beta = 0.
- vLLM colocated: ``vllm_gpu_memory_utilization`` x GPU memory, which must hold bf16 weights
  (2 B/param over the tensor-parallel size) plus KV cache; KV bytes per token =
  2 (K and V) x layers x kv_heads x head_dim x 2 (bf16). With sleep mode vLLM releases its share
  during the training pass, so the peak is the larger of the two phases, not their sum.
- activations with gradient checkpointing: tokens x layers x hidden x 2 B for the saved layer
  inputs, plus one layer's working set (approximated as tokens x (6 x hidden + 3 x intermediate)
  x 2 B -- an estimate, not a measurement).
- the fp32 logits: tokens x vocab x 4 B (large at 150k-token vocabularies).
- a fixed 2 GB for the CUDA context, allocator fragmentation and CUDA graphs.

Limits, stated honestly: these are analytic estimates. Real runs add allocator fragmentation
beyond the fixed allowance, temporary copies inside kernels, and framework buffers; a plan that
fits with less than ~10 % headroom may not. MoE activations count the active experts only; LoRA
adapters are counted on attention and dense MLP projections only (not on expert weights). The
planner has not been checked against a GPU in this repository yet (bench/gpu_plan.sh does that).

The model's numbers (``Architecture``, the size-class table, reading a config) are in
``rlvr.plan.architecture``; this module holds the settings, the estimate and the search for a
setting that fits, and their text and table forms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import PlanError
from ..settings.recipe import RECIPE
from .architecture import SIZE_CLASSES, Architecture

GB = 1e9
OVERHEAD_BYTES = 2 * GB  # CUDA context, fragmentation, CUDA graphs (notes: 1-2 GB context)
VLLM_RUNTIME_BYTES = 1 * GB  # vLLM's own activations and buffers inside its share
NF4_BYTES_PER_PARAM = 0.52  # 4-bit weights + double-quantised scales


@dataclass(frozen=True)
class Setting:
    """One way to run: what the estimate depends on besides the model and the GPUs."""

    gpus: int = 1  # in all, over every node
    gpu_memory_gb: float = 80.0
    nodes: int = 1  # several nodes in server mode: the vLLM server gets one node of its own
    peft: str = "none"  # none | lora | qlora
    zero: int = 0  # 0 (plain DDP), 1, 2, 3 (FSDP counts as 3)
    beta: float = RECIPE["beta"]
    vllm: str = "colocate"  # colocate | server | none
    vllm_util: float = 0.3
    sleep_mode: bool = False
    server_gpus: int = 0
    tensor_parallel: int = 1
    per_device_batch: int = RECIPE["per_device_train_batch_size"]
    prompt_tokens: int = 256
    completion_tokens: int = RECIPE["max_completion_length"]
    gradient_checkpointing: bool = True

    @property
    def train_gpus(self) -> int:
        return max(1, self.gpus - (self.server_gpus if self.vllm == "server" else 0))

    @property
    def tokens(self) -> int:
        """Tokens in one training micro-batch on one GPU."""
        return self.per_device_batch * (self.prompt_tokens + self.completion_tokens)


@dataclass(frozen=True)
class Estimate:
    """Per-GPU bytes of each part, the peak and whether it fits."""

    arch: Architecture
    setting: Setting
    parts: Mapping[str, float]
    peak: float
    capacity: float
    notes: tuple[str, ...] = ()
    kv_budget: float = 0.0
    kv_tokens: int = 0
    server_needs: float = 0.0

    @property
    def fits(self) -> bool:
        return self.peak <= self.capacity and not any(n.startswith("does not fit") for n in self.notes)

    def gb(self) -> dict[str, float]:
        return {k: round(v / GB, 2) for k, v in self.parts.items()}

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.arch.name,
            "params": self.arch.params,
            "setting": self.setting.__dict__ | {},
            "parts_gb": self.gb(),
            "peak_gb": round(self.peak / GB, 2),
            "capacity_gb": round(self.capacity / GB, 2),
            "fits": self.fits,
            "kv_budget_gb": round(self.kv_budget / GB, 2),
            "kv_tokens": self.kv_tokens,
            "notes": list(self.notes),
        }


def policy_bytes(arch: Architecture, s: Setting) -> dict[str, float]:
    """Weights, gradients and optimizer states of the policy on one training GPU."""
    p, n = arch.params, s.train_gpus
    if s.peft == "none":
        w, g, o = 2.0 * p, 2.0 * p, 12.0 * p
        if s.zero >= 1:
            o /= n
        if s.zero >= 2:
            g /= n
        if s.zero >= 3:
            w /= n
        return {"weights": w, "gradients": g, "optimizer": o}
    adapters = 16.0 * arch.lora_params
    if s.peft == "lora":
        base = 2.0 * p / (n if s.zero >= 3 else 1)
    else:  # qlora: embeddings and lm_head stay in bf16
        base = NF4_BYTES_PER_PARAM * (p - arch.embedding_params) + 2.0 * arch.embedding_params
    return {"weights": base, "adapters": adapters}


def reference_bytes(arch: Architecture, s: Setting) -> float:
    """The reference model on one training GPU: none with PEFT (TRL disables the adapters) or beta = 0."""
    if s.beta <= 0 or s.peft != "none":
        return 0.0
    return 2.0 * arch.params / (s.train_gpus if s.zero >= 3 else 1)


def activation_bytes(arch: Architecture, s: Setting) -> float:
    """Activations of one training micro-batch (saved layer inputs plus one layer's working set)."""
    t = s.tokens
    hidden_mlp = arch.intermediate if not arch.moe else arch.experts_per_token * arch.moe_intermediate
    working = t * (6 * arch.hidden + 3 * hidden_mlp) * 2.0
    if s.gradient_checkpointing:
        return t * arch.layers * arch.hidden * 2.0 + working
    return arch.layers * working


def logits_bytes(arch: Architecture, s: Setting) -> float:
    """The fp32 logits of one training micro-batch."""
    return s.tokens * arch.vocab * 4.0


def kv_bytes(arch: Architecture, tokens: int) -> float:
    """vLLM's bf16 KV cache for ``tokens`` tokens."""
    return float(arch.kv_bytes_per_token) * tokens


def estimate(arch: Architecture, s: Setting) -> Estimate:
    """The per-GPU estimate of one setting. Server mode: the training GPUs' peak, with the server
    GPUs' need reported apart (``server_needs``, per server GPU)."""
    cap = s.gpu_memory_gb * GB
    parts: dict[str, float] = dict(policy_bytes(arch, s))
    parts["reference"] = reference_bytes(arch, s)
    parts["activations"] = activation_bytes(arch, s)
    parts["logits"] = logits_bytes(arch, s)
    parts["overhead"] = OVERHEAD_BYTES
    notes: list[str] = []
    seq = s.prompt_tokens + s.completion_tokens
    kv_budget, kv_tokens, server_needs = 0.0, 0, 0.0
    resident = sum(v for k, v in parts.items() if k not in ("activations", "logits"))
    training_peak = sum(parts.values())
    if s.vllm == "colocate":
        share = s.vllm_util * cap
        vllm_weights = 2.0 * arch.params / s.tensor_parallel
        kv_budget = share - vllm_weights - VLLM_RUNTIME_BYTES
        parts["vllm"] = share
        if s.sleep_mode:
            # vLLM's weights and cache are offloaded during the training pass: two phases.
            peak = max(resident + share, training_peak)
        else:
            peak = training_peak + share
        if kv_budget < kv_bytes(arch, seq):
            notes.append(
                f"does not fit: the vLLM share ({share / GB:.1f} GB) cannot hold its bf16 weights "
                f"({vllm_weights / GB:.1f} GB) plus the KV cache of one {seq}-token sequence "
                f"({kv_bytes(arch, seq) / GB:.2f} GB)"
            )
    else:
        peak = training_peak
        if s.vllm == "server":
            server_cap = s.server_gpus * cap * 0.9
            server_weights = 2.0 * arch.params
            kv_budget = server_cap - server_weights - VLLM_RUNTIME_BYTES * s.server_gpus
            server_needs = (server_weights + VLLM_RUNTIME_BYTES * s.server_gpus + kv_bytes(arch, seq)) / max(
                s.server_gpus, 1
            )
            if kv_budget < kv_bytes(arch, seq):
                notes.append(
                    f"does not fit: the vLLM server's {s.server_gpus} GPU(s) at 0.9 hold {server_cap / GB:.0f} GB, "
                    f"less than its bf16 weights ({server_weights / GB:.1f} GB) plus one sequence's KV cache"
                )
    if kv_budget > 0:
        kv_tokens = int(kv_budget // arch.kv_bytes_per_token)
        in_flight = s.per_device_batch * seq
        if s.vllm != "none" and kv_tokens < in_flight:
            notes.append(
                f"vLLM's KV budget holds {kv_tokens} tokens, fewer than a batch in flight ({in_flight}): "
                "vLLM pages and preempts, so generation is slower but does not fail"
            )
    if arch.moe:
        notes.append("mixture of experts: use the gspo variant")
    return Estimate(
        arch=arch,
        setting=s,
        parts=parts,
        peak=peak,
        capacity=cap,
        notes=tuple(notes),
        kv_budget=max(kv_budget, 0.0),
        kv_tokens=kv_tokens,
        server_needs=server_needs,
    )


@dataclass(frozen=True)
class Recommendation:
    """The first setting that fits, in order of preference, or why nothing does."""

    estimate: Estimate | None
    tried: int
    reason: str = ""
    closest: Estimate | None = None

    @property
    def fits(self) -> bool:
        return self.estimate is not None

    def config_patch(self) -> dict[str, Any]:
        """The GRPOConfig values the recommendation sets."""
        if self.estimate is None:
            return {}
        s = self.estimate.setting
        patch: dict[str, Any] = {
            "per_device_train_batch_size": s.per_device_batch,
            "gradient_checkpointing": s.gradient_checkpointing,
        }
        if s.vllm == "none":
            patch["use_vllm"] = False
        else:
            patch["use_vllm"] = True
            patch["vllm_mode"] = s.vllm
            if s.vllm == "colocate":
                patch["vllm_gpu_memory_utilization"] = s.vllm_util
                patch["vllm_enable_sleep_mode"] = s.sleep_mode
                if s.tensor_parallel > 1:
                    patch["vllm_tensor_parallel_size"] = s.tensor_parallel
            else:
                patch["vllm_server_host"] = "127.0.0.1"
        return patch


def candidates(base: Setting, *, fixed_peft: bool, vllm_available: bool = True) -> list[Setting]:
    """Settings in order of preference: the recipe's batch first, full fine-tuning before PEFT,
    no sharding before ZeRO, vLLM's share small before sleep mode (sleep mode costs step time)."""
    pefts = [base.peft] if fixed_peft else ["none", "lora", "qlora"]
    zeros = [0] if base.gpus == 1 else [0, 2, 3]
    out = []
    for peft in pefts:
        for zero in zeros:
            if peft == "qlora" and zero:
                continue  # bitsandbytes 4-bit weights are not sharded by ZeRO-3 here: keep it simple
            for batch in sorted({base.per_device_batch, 4, 2, 1}, reverse=True):
                if batch > base.per_device_batch:
                    continue
                if not vllm_available:
                    out.append(replace(base, peft=peft, zero=zero, per_device_batch=batch, vllm="none", server_gpus=0))
                    continue
                if base.gpus == 1:
                    for util, sleep in (
                        (0.3, False),
                        (0.4, False),
                        (0.3, True),
                        (0.5, True),
                        (0.7, True),
                        (0.2, False),
                        (0.2, True),
                    ):
                        out.append(
                            replace(
                                base,
                                peft=peft,
                                zero=zero,
                                per_device_batch=batch,
                                vllm="colocate",
                                vllm_util=util,
                                sleep_mode=sleep,
                                server_gpus=0,
                            )
                        )
                else:
                    per_node = base.gpus // max(base.nodes, 1)
                    # One node: a slice of its GPUs. Several: a whole node, as TRL's 72B recipe
                    # does (accelerate needs the same process count on every training node).
                    servers = {per_node} if base.nodes > 1 else {1, base.gpus // 4 or 1, base.gpus // 2}
                    for server in sorted(servers):
                        if 0 < server < base.gpus:
                            out.append(
                                replace(
                                    base,
                                    peft=peft,
                                    zero=zero,
                                    per_device_batch=batch,
                                    vllm="server",
                                    server_gpus=server,
                                )
                            )
                    for util, sleep in ((0.3, False), (0.3, True), (0.5, True)):
                        out.append(
                            replace(
                                base,
                                peft=peft,
                                zero=zero,
                                per_device_batch=batch,
                                vllm="colocate",
                                vllm_util=util,
                                sleep_mode=sleep,
                                server_gpus=0,
                            )
                        )
    return out


HEADROOM = 0.9  # plan to 90 % of the GPU: the estimate leaves out fragmentation beyond 2 GB


def recommend(
    arch: Architecture, base: Setting, *, fixed_peft: bool = False, vllm_available: bool = True
) -> Recommendation:
    """The first candidate whose peak stays under 90 % of the GPU, or the reason none does."""
    tried = candidates(base, fixed_peft=fixed_peft, vllm_available=vllm_available)
    closest: Estimate | None = None
    for s in tried:
        e = estimate(arch, s)
        if closest is None or e.peak < closest.peak:
            closest = e
        blocked = [n for n in e.notes if n.startswith("does not fit")]
        if e.peak <= HEADROOM * e.capacity and not blocked:
            return Recommendation(e, len(tried))
    assert closest is not None
    biggest = max(closest.parts.items(), key=lambda kv: kv[1])
    reason = (
        f"nothing fits {base.gpus} x {base.gpu_memory_gb:g} GB: the smallest of {len(tried)} settings needs "
        f"{closest.peak / GB:.1f} GB per GPU ({closest.setting.peft}, ZeRO-{closest.setting.zero}, "
        f"batch {closest.setting.per_device_batch}); its largest part is {biggest[0]} "
        f"at {biggest[1] / GB:.1f} GB. Add GPUs, use a smaller model, or shorten the completions"
    )
    blocked = [n for n in closest.notes if n.startswith("does not fit")]
    if blocked:
        reason += f"; {blocked[0]}"
    return Recommendation(None, len(tried), reason, closest)


@dataclass(frozen=True)
class SizeClassRow:
    """One row of the size-class table (``rlvr memory --table``): GB of each state, KV per token."""

    size_class: str  # the table's key: 0.5B, 7B, 30B-A3B, ...
    model: str
    params_b: float  # billions of parameters
    full_ft_gb: float  # bf16 weights and gradients + fp32 AdamW (16 B/param)
    lora_gb: float
    qlora_gb: float
    copy_gb: float  # one more bf16 copy: the reference model, or vLLM's weights
    kv_kib_per_token: float
    logits_gb: float  # fp32 logits of the micro-batch
    activations_gb: float  # saved layer inputs with gradient checkpointing
    moe: bool


def table(settings: Setting | None = None, classes: Mapping[str, Architecture] | None = None) -> list[SizeClassRow]:
    """One row per size class: parameters, state per regime, KV per token, logits, activations
    (training micro-batch of ``settings.tokens`` tokens, 16,384 by default as in the notes)."""
    s = settings or Setting(per_device_batch=8, prompt_tokens=0, completion_tokens=2048)
    return [
        SizeClassRow(
            size_class=key,
            model=a.name,
            params_b=round(a.params / 1e9, 2),
            full_ft_gb=round(16 * a.params / GB, 1),
            lora_gb=round(sum(policy_bytes(a, replace(s, peft="lora")).values()) / GB, 1),
            qlora_gb=round(sum(policy_bytes(a, replace(s, peft="qlora")).values()) / GB, 1),
            copy_gb=round(2 * a.params / GB, 1),
            kv_kib_per_token=a.kv_bytes_per_token / 1024,
            logits_gb=round(logits_bytes(a, s) / GB, 1),
            activations_gb=round(s.tokens * a.layers * a.hidden * 2 / GB, 1),
            moe=a.moe,
        )
        for key, a in (classes or SIZE_CLASSES).items()
    ]


def format_table(rows: Sequence[SizeClassRow]) -> str:
    """The rows of ``table`` as aligned text columns (``rlvr memory --table``); ``*`` marks MoE."""
    cols = [
        ("size_class", "class"),
        ("model", "model"),
        ("params_b", "params B"),
        ("full_ft_gb", "full FT"),
        ("lora_gb", "LoRA"),
        ("qlora_gb", "QLoRA"),
        ("copy_gb", "+ref/vLLM"),
        ("kv_kib_per_token", "KV KiB/tok"),
        ("logits_gb", "logits"),
        ("activations_gb", "ckpt acts"),
    ]
    data = [[str(getattr(r, k)) + ("*" if k == "model" and r.moe else "") for k, _ in cols] for r in rows]
    widths = [max(len(h), *(len(d[i]) for d in data)) for i, (_, h) in enumerate(cols)]
    lines = ["  ".join(h.ljust(w) for (_, h), w in zip(cols, widths, strict=True))]
    lines += ["  ".join(c.ljust(w) for c, w in zip(d, widths, strict=True)) for d in data]
    return "\n".join(lines)


def count_text(n: float) -> str:
    """A parameter count in the unit that shows its size: ``1.50 B``, ``124 M``, ``85.3 K``, ``12``."""
    for unit, size in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            value = n / size
            return (
                f"{value:.2f} {unit}"
                if value < 10
                else f"{value:.3g} {unit}"
                if value < 1000
                else f"{value:.0f} {unit}"
            )
    return f"{n:.0f}"


def format_estimate(e: Estimate) -> str:
    """An estimate as ``rlvr memory`` prints it: the setting, each part, the peak, the KV budget, notes."""
    s = e.setting
    moe = f" (MoE, {count_text(e.arch.active_params)} active)" if e.arch.moe else ""
    head = (
        f"{e.arch.name}: {count_text(e.arch.params)} params{moe}, "
        f"{s.gpus} GPU(s) x {s.gpu_memory_gb:g} GB, peft {s.peft}, ZeRO-{s.zero}, beta {s.beta:g}, vLLM {s.vllm}"
        + (f" ({s.vllm_util:g} of the GPU{', sleep mode' if s.sleep_mode else ''})" if s.vllm == "colocate" else "")
        + (f" ({s.server_gpus} server GPU(s))" if s.vllm == "server" else "")
        + f", micro-batch {s.per_device_batch} x {s.prompt_tokens + s.completion_tokens} tokens"
    )
    lines = [head] + [f"  {k:<12} {v / GB:8.2f} GB" for k, v in e.parts.items() if v]
    lines.append(
        f"  {'peak':<12} {e.peak / GB:8.2f} GB of {e.capacity / GB:g} GB per training GPU -> "
        + ("fits" if e.fits else "does not fit")
    )
    if e.kv_tokens:
        lines.append(
            f"  vLLM KV budget {e.kv_budget / GB:.2f} GB = {e.kv_tokens} tokens "
            f"({e.arch.kv_bytes_per_token / 1024:g} KiB/token)"
        )
    if e.server_needs:
        lines.append(f"  vLLM server needs ~{e.server_needs / GB:.1f} GB per server GPU")
    lines += [f"  note: {n}" for n in e.notes]
    return "\n".join(lines)


def fits_or_raise(rec: Recommendation) -> Estimate:
    """The recommended estimate; ``PlanError`` with the reason when nothing fits."""
    if rec.estimate is None:
        raise PlanError(rec.reason)
    return rec.estimate


__all__ = [
    "Estimate",
    "Recommendation",
    "Setting",
    "SizeClassRow",
    "estimate",
    "recommend",
    "table",
    "format_table",
    "format_estimate",
    "fits_or_raise",
]
