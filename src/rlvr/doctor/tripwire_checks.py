"""The reward-hack tripwire's findings, read back (``rlvr.train.tripwire``): run first with the
reward checks, because a reward a probe showed paying for something other than the answer makes
every later symptom a consequence, and its fix is the reward, never a config patch.

Thresholds are the run's own (``grpo.tripwire``, recorded in its config.yaml); this check only
reports what the tripwire wrote: a trip is an error, hits below the stop threshold a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .findings import Finding
from .readings import Result
from .table import Run

FIX = (
    "fix the reward term named, not the hyperparameters: re-run rlvr audit on it, re-score the kept "
    "rollouts (rlvr score) and pass the inspection gate again; then rlvr train --resume continues from "
    "the checkpoint kept at the trip"
)


def _example(h: Mapping[str, Any]) -> str:
    completion = " ".join(str(h.get("completion", "")).split())[:100]
    return f"step {h.get('step')}, term {h.get('term')!r}, probe {h.get('probe')}: {completion!r}"


def check_tripwire(run: Run) -> Result:
    """A run the tripwire stopped (an error naming its signal, term and probe), or probes that
    found a reward surviving below the stop threshold (a warning)."""
    tw = run.tripwire
    if not tw:
        return []
    trip = tw.get("trip")
    examples = [_example(h) for h in tw.get("examples") or () if isinstance(h, Mapping)]
    quoted = ("; examples: " + " | ".join(examples)) if examples else ""
    numbers: dict[str, float | int | None] = {
        "rounds": int(tw.get("rounds") or 0),
        "rollouts_probed": int(tw.get("rollouts") or 0),
        "found": int(tw.get("found") or 0),
    }
    if isinstance(trip, Mapping):
        numbers["step"] = int(trip.get("step") or 0)
        return [
            Finding(
                "reward_hack_tripwire",
                "error",
                f"tripwire/{trip.get('signal')}",
                f"the tripwire stopped the run at step {trip.get('step')}: {trip.get('reason')}{quoted}",
                FIX,
                numbers=numbers,
            )
        ]
    by = tw.get("by") or {}
    if not numbers["found"]:
        return []
    listed = ", ".join(f"{k} x{v}" for k, v in list(by.items())[:4])
    return [
        Finding(
            "reward_hack_tripwire",
            "warning",
            "tripwire/findings",
            f"{numbers['found']} probed rollout(s) kept a reward a probe must remove ({listed}), below the run's stop "
            f"threshold{quoted}",
            FIX,
            numbers=numbers,
        )
    ]
