"""Dynamic sampling's resample mode, the parts that need no trainer: which groups each process
trains after each generation round (``pick_groups``), fresh prompts for the missing slots
(``refill``), and one process's batch joined from its rounds' outputs (``assemble``). The trainer
hook that drives them is ``rlvr.train.dynamic.trainer_class``; the mode is described there.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Pick:
    """One slot of a process's batch: local group ``group`` of generation round ``round``."""

    round: int
    group: int
    flat: bool
    masked: bool  # a flat fill whose loss is masked out (short_batch: kept)


def pick_groups(
    spreads: Sequence[Sequence[float]], per_rank: int, ranks: int, epsilon: float, short_batch: str
) -> tuple[list[list[Pick]], int]:
    """The ``per_rank`` groups each process trains after the rounds so far. ``spreads[r][k]``: the
    reward spread of global group k in round r (in a round of n groups per process, process q holds
    groups q*n ... (q+1)*n - 1). Each process takes its groups with variance in order of
    generation; when there are too few, the dropped groups with the largest spread fill the rest
    (masked for ``kept``). Returns the picks and how many groups the neediest process still lacks
    (0: no further round needed; the next round generates that many per process)."""
    out, need = [], 0
    for q in range(ranks):
        mine = [
            (r, j, row[q * (len(row) // ranks) + j]) for r, row in enumerate(spreads) for j in range(len(row) // ranks)
        ]
        kept = [Pick(r, j, False, False) for r, j, s in mine if s > epsilon]
        if len(kept) < per_rank:
            need = max(need, per_rank - len(kept))
            flat = sorted(
                (t for t in mine if t[2] <= epsilon), key=lambda t: -t[2]
            )  # stable: earlier rounds first among equals
            kept += [Pick(r, j, True, short_batch == "kept") for r, j, _ in flat[: per_rank - len(kept)]]
        out.append(kept[:per_rank])
    return out, need


def refill(n_prompts: int, used: set[int], count: int, rng: random.Random) -> list[int]:
    """``count`` fresh prompts (dataset indices) not in ``used``; repeats only once every prompt is used."""
    fresh = [i for i in range(n_prompts) if i not in used] if n_prompts <= 64 * count else []
    out: list[int] = []
    while len(out) < count:
        if fresh:
            out.append(fresh.pop(rng.randrange(len(fresh))))
            used.add(out[-1])
            continue
        q = rng.randrange(n_prompts)
        if q not in used or len(used) >= n_prompts:
            out.append(q)
        used.add(q)
    return out


# Row-aligned tensors of TRL's generation output and how each is padded when rounds of different
# lengths are joined: (side, value); "pad" means the tokenizer's pad id.
ROW_KEYS: dict[str, tuple[str | None, Any]] = {
    "prompt_ids": ("left", "pad"),
    "prompt_mask": ("left", 0),
    "completion_ids": ("right", "pad"),
    "completion_mask": ("right", 0),
    "tool_mask": ("right", 1),
    "old_per_token_logps": ("right", 0.0),
    "ref_per_token_logps": ("right", 0.0),
    "sampling_per_token_logps": ("right", 0.0),
    "importance_sampling_ratio": ("right", 0.0),
    "advantages": (None, None),
}


def assemble(
    rounds: Sequence[Mapping[str, Any]], picks: Sequence[Pick], group_size: int, pad_id: int
) -> dict[str, Any]:
    """One process's batch from its rounds' outputs: the picked groups' rows, each tensor padded to
    the longest round. A masked pick keeps its rows (the shapes stay) with completion mask and
    advantage zero. ``num_items_in_batch`` is left to the caller (it is a sum over processes)."""
    import torch
    import torch.nn.functional as F

    unknown = sorted(set(rounds[0]) - set(ROW_KEYS) - {"num_items_in_batch"})
    if unknown:
        from ..errors import RunError

        raise RunError(
            f"dynamic sampling (resample) cannot join generation outputs with {', '.join(unknown)} (multimodal "
            "inputs); use mode: filter"
        )
    rows = [(p.round, p.group * group_size + i, p.masked) for p in picks for i in range(group_size)]
    out: dict[str, Any] = {}
    for key, (side, value) in ROW_KEYS.items():
        if key not in rounds[0]:
            continue
        tensors = [r[key] for r in rounds]
        if side is not None and tensors[0].dim() == 2:
            width = max(t.size(1) for t in tensors)
            fill = float(pad_id) if value == "pad" else float(value)
            tensors = [
                F.pad(t, (width - t.size(1), 0) if side == "left" else (0, width - t.size(1)), value=fill)
                for t in tensors
            ]
        out[key] = torch.stack([tensors[r][i] for r, i, _ in rows])
    masked = torch.tensor([m for _, _, m in rows], device=out["completion_mask"].device)
    if bool(masked.any()):
        out["completion_mask"] = out["completion_mask"] * (~masked).unsqueeze(1).to(out["completion_mask"].dtype)
        out["advantages"] = out["advantages"].masked_fill(masked, 0.0)
    return out
