"""The model side of the memory planner: a decoder-only transformer's shape, read from its config.

- ``Architecture``: the numbers memory depends on (layers, widths, heads, vocabulary, experts), and
  the parameter counts derived from them, read from a Hugging Face ``config.json`` (no weights).
- ``SIZE_CLASSES`` / ``HUB_IDS``: one published model per size class (``7B``, ``70B``, ``30B-A3B``)
  and where its weights live on the hub, so a plan can be made without downloading anything.
- ``load_architecture``: a size class, a table name, a config.json, a model folder, ``builtin:<name>``
  or a cached hub id -> ``Architecture``.
- ``model_facts``: what the recipe's validation needs to know about a model reference (mixture of
  experts, and whether rlvr can load it at all).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, ModelError, Problem

if TYPE_CHECKING:
    from ..settings import ModelFacts

LORA_RANK = 16


@dataclass(frozen=True)
class Architecture:
    """The numbers of a decoder-only transformer that memory depends on."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool = False
    experts: int = 0
    experts_per_token: int = 0
    moe_intermediate: int = 0
    shared_expert_intermediate: int = 0
    qkv_bias: bool = False
    qk_norm: bool = False  # Qwen3: RMSNorm on q and k per head

    @property
    def moe(self) -> bool:
        return self.experts > 1

    @property
    def embedding_params(self) -> int:
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def attention_params(self) -> int:
        q = self.hidden * self.heads * self.head_dim
        kv = 2 * self.hidden * self.kv_heads * self.head_dim
        o = self.heads * self.head_dim * self.hidden
        bias = (self.heads + 2 * self.kv_heads) * self.head_dim if self.qkv_bias else 0
        norms = 2 * self.head_dim if self.qk_norm else 0
        return q + kv + o + bias + norms

    @property
    def mlp_params(self) -> int:
        """Per layer, all experts (gated MLPs: gate, up, down)."""
        if not self.moe:
            return 3 * self.hidden * self.intermediate
        experts = self.experts * 3 * self.hidden * self.moe_intermediate
        shared = 3 * self.hidden * self.shared_expert_intermediate
        return experts + shared + self.hidden * self.experts  # + router

    @property
    def active_mlp_params(self) -> int:
        if not self.moe:
            return self.mlp_params
        return (
            self.experts_per_token * 3 * self.hidden * self.moe_intermediate
            + 3 * self.hidden * self.shared_expert_intermediate
        )

    @property
    def params(self) -> int:
        per_layer = self.attention_params + self.mlp_params + 2 * self.hidden
        return self.embedding_params + self.layers * per_layer + self.hidden

    @property
    def active_params(self) -> int:
        per_layer = self.attention_params + self.active_mlp_params + 2 * self.hidden
        return self.embedding_params + self.layers * per_layer + self.hidden

    @property
    def lora_params(self) -> int:
        """Rank-16 adapters on every attention and dense MLP projection (not on experts)."""
        r = LORA_RANK
        h, q, kv = self.hidden, self.heads * self.head_dim, self.kv_heads * self.head_dim
        attn = r * ((h + q) + 2 * (h + kv) + (q + h))
        mlp = 0 if self.moe else r * 3 * (h + self.intermediate)
        return self.layers * (attn + mlp)

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 2

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], name: str = "") -> Architecture:
        """From a Hugging Face ``config.json`` (Llama, Qwen2/3, Mistral, Qwen-MoE, Mixtral style)."""
        cfg = dict(cfg.get("text_config") or cfg) if isinstance(cfg.get("text_config"), Mapping) else dict(cfg)
        problems = [
            Problem(f"config.{k}", "missing", "a decoder-only transformer config.json has it")
            for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")
            if not cfg.get(k)
        ]
        if problems:
            raise ConfigError(problems, source=name or "model config")
        heads = int(cfg["num_attention_heads"])
        hidden = int(cfg["hidden_size"])
        experts = int(cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts") or 0)
        return cls(
            name=name or str(cfg.get("_name_or_path") or cfg.get("model_type") or "model"),
            layers=int(cfg["num_hidden_layers"]),
            hidden=hidden,
            heads=heads,
            kv_heads=int(cfg.get("num_key_value_heads") or heads),
            head_dim=int(cfg.get("head_dim") or hidden // heads),
            intermediate=int(cfg.get("intermediate_size") or 4 * hidden),
            vocab=int(cfg["vocab_size"]),
            tied_embeddings=bool(cfg.get("tie_word_embeddings", False)),
            experts=experts,
            experts_per_token=int(cfg.get("num_experts_per_tok") or 0),
            moe_intermediate=int(
                cfg.get("moe_intermediate_size") or (cfg.get("intermediate_size") if experts else 0) or 0
            ),
            shared_expert_intermediate=int(cfg.get("shared_expert_intermediate_size") or 0),
            qkv_bias=bool(cfg.get("attention_bias", cfg.get("model_type") in ("qwen2", "qwen2_moe"))),
            qk_norm=str(cfg.get("model_type", "")).startswith("qwen3"),
        )


# Published config.json numbers (no weights) of one model per size class.
SIZE_CLASSES: dict[str, Architecture] = {
    "0.5B": Architecture(
        "Qwen2.5-0.5B",
        layers=24,
        hidden=896,
        heads=14,
        kv_heads=2,
        head_dim=64,
        intermediate=4864,
        vocab=151936,
        tied_embeddings=True,
        qkv_bias=True,
    ),
    "1.5B": Architecture(
        "Qwen2.5-1.5B",
        layers=28,
        hidden=1536,
        heads=12,
        kv_heads=2,
        head_dim=128,
        intermediate=8960,
        vocab=151936,
        tied_embeddings=True,
        qkv_bias=True,
    ),
    "3B": Architecture(
        "Qwen2.5-3B",
        layers=36,
        hidden=2048,
        heads=16,
        kv_heads=2,
        head_dim=128,
        intermediate=11008,
        vocab=151936,
        tied_embeddings=True,
        qkv_bias=True,
    ),
    "7B": Architecture(
        "Qwen2.5-7B",
        layers=28,
        hidden=3584,
        heads=28,
        kv_heads=4,
        head_dim=128,
        intermediate=18944,
        vocab=152064,
        qkv_bias=True,
    ),
    "8B": Architecture(
        "Llama-3.1-8B", layers=32, hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336, vocab=128256
    ),
    "14B": Architecture(
        "Qwen2.5-14B",
        layers=48,
        hidden=5120,
        heads=40,
        kv_heads=8,
        head_dim=128,
        intermediate=13824,
        vocab=152064,
        qkv_bias=True,
    ),
    "32B": Architecture(
        "Qwen2.5-32B",
        layers=64,
        hidden=5120,
        heads=40,
        kv_heads=8,
        head_dim=128,
        intermediate=27648,
        vocab=152064,
        qkv_bias=True,
    ),
    "70B": Architecture(
        "Llama-3.1-70B", layers=80, hidden=8192, heads=64, kv_heads=8, head_dim=128, intermediate=28672, vocab=128256
    ),
    # A mixture of experts, to show what GSPO is required for.
    "30B-A3B": Architecture(
        "Qwen3-30B-A3B",
        layers=48,
        hidden=2048,
        heads=32,
        kv_heads=4,
        head_dim=128,
        intermediate=6144,
        vocab=151936,
        experts=128,
        experts_per_token=8,
        moe_intermediate=768,
        qk_norm=True,
    ),
}


# Where the weights of each size class live on the Hugging Face hub (used in launch commands).
HUB_IDS: dict[str, str] = {
    "0.5B": "Qwen/Qwen2.5-0.5B",
    "1.5B": "Qwen/Qwen2.5-1.5B",
    "3B": "Qwen/Qwen2.5-3B",
    "7B": "Qwen/Qwen2.5-7B",
    "8B": "meta-llama/Llama-3.1-8B",
    "14B": "Qwen/Qwen2.5-14B",
    "32B": "Qwen/Qwen2.5-32B",
    "70B": "meta-llama/Llama-3.1-70B",
    "30B-A3B": "Qwen/Qwen3-30B-A3B",
}


def load_architecture(ref: str) -> Architecture:
    """A size class (``7B``), a model name from the table (``Llama-3.1-8B``), a config.json, a
    model folder, ``builtin:<name>``, or a hub id already in the local cache."""
    for key, arch in SIZE_CLASSES.items():
        if ref.lower() in (key.lower(), arch.name.lower(), HUB_IDS[key].lower()):
            return arch
    path = Path(ref)
    if path.is_file():
        try:
            return Architecture.from_config(json.loads(path.read_text()), name=str(path))
        except (OSError, json.JSONDecodeError) as exc:
            raise ModelError(f"{path}: not a readable config.json: {exc}") from None
    if (path / "config.json").is_file() or ref.startswith("builtin:"):
        from ..models import model_config

        return Architecture.from_config(model_config(ref), name=ref)
    try:
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(ref)
    except Exception as exc:  # noqa: BLE001 - offline, unknown id, not a model
        known = ", ".join(f"{k} ({a.name})" for k, a in SIZE_CLASSES.items())
        raise ModelError(
            f"cannot read the config of {ref!r} ({type(exc).__name__}); "
            f"pass a config.json, a model folder or a size class: {known}"
        ) from None
    return Architecture.from_config(cfg.to_dict(), name=ref)


def model_facts(ref: str, arch_is_table: bool, moe: bool) -> ModelFacts:
    """The recipe's facts about model ``ref``: whether it is a mixture of experts (``moe``, from its
    architecture) and whether it can be loaded -- a size-class entry (``arch_is_table``) or a
    built-in always can; a config file alone or a folder without weights cannot, and the reason
    says which."""
    from ..settings import ModelFacts

    if arch_is_table or ref.startswith("builtin:"):
        return ModelFacts(ref, moe, True)
    p = Path(ref)
    if p.is_file():
        return ModelFacts(ref, moe, False, "it is a config file, not a checkpoint")
    if p.is_dir() and not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
        return ModelFacts(ref, moe, False, "the folder holds no weights (*.safetensors or *.bin)")
    return ModelFacts(ref, moe, True)
