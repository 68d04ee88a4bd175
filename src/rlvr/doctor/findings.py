"""What a check returns: a ``Finding`` (a symptom, with evidence and at most one ``Patch``) or a
``Note`` (something the configuration explains, or that could not be judged)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEVERITY_ORDER = {"error": 0, "warning": 1}


@dataclass(frozen=True)
class Patch:
    """One change group to the run's config. ``grpo`` maps GRPOConfig keys to new values (``None``
    clears a key so TRL derives it); ``add_terms`` are reward terms to add to the task."""

    variant: str  # "DAPO", "Dr. GRPO", "GSPO", or a plain description of the fix
    grpo: Mapping[str, Any]
    add_terms: tuple[Mapping[str, Any], ...] = ()
    why: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "grpo": dict(self.grpo),
            "add_terms": [dict(t) for t in self.add_terms],
            "why": self.why,
        }


@dataclass(frozen=True)
class Finding:
    check: str
    severity: str  # "error" | "warning"
    metric: str
    evidence: str  # numbers and steps, readable
    suggestion: str
    patch: Patch | None = None
    numbers: Mapping[str, float | int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity,
            "metric": self.metric,
            "evidence": self.evidence,
            "suggestion": self.suggestion,
            "patch": self.patch.to_json() if self.patch else None,
            # JSON has no inf/NaN: a ratio against a zero start is reported as null.
            "numbers": {k: (v if v is None or math.isfinite(v) else None) for k, v in self.numbers.items()},
        }


@dataclass(frozen=True)
class Note:
    """Something the configuration explains, or a check that could not run, and why."""

    check: str
    text: str

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "text": self.text}
