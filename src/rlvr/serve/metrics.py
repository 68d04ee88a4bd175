"""The counters behind the reward server's ``/metrics``: requests by endpoint and status, refusals,
samples scored and masked, verdicts by term and outcome, stand-in rewards by source, and the
per-term error, timeout and unparseable rates ``rlvr doctor`` reads, in Prometheus text exposition
format 0.0.4."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..rewards.base import Outcome
from ..rewards.combine import Scored


@dataclass
class Metrics:
    """Counters behind ``/metrics`` (Prometheus text exposition format 0.0.4), thread-safe."""

    terms: list[str]
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)
    samples: int = 0
    masked: int = 0
    deadline_rows: int = 0
    outcomes: dict[tuple[str, str], int] = field(default_factory=dict)
    error_kinds: dict[tuple[str, str], int] = field(default_factory=dict)
    imputed: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    active: int = 0
    capacity: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def request(self, endpoint: str, status: int) -> None:
        with self._lock:
            self.requests[(endpoint, status)] = self.requests.get((endpoint, status), 0) + 1

    def reject(self, reason: str) -> None:
        with self._lock:
            self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def count_imputed(self, sources: Sequence[str | None]) -> None:
        with self._lock:
            for src in sources:
                if src is not None:
                    self.imputed[src] = self.imputed.get(src, 0) + 1

    def scored(self, scored: Sequence[Scored], seconds: float, deadline_rows: int = 0) -> None:
        with self._lock:
            self.samples += len(scored)
            self.seconds += seconds
            self.deadline_rows += deadline_rows
            for s in scored:
                self.masked += s.masked
                for name, v in s.verdicts.items():
                    key = (name, v.outcome.value)
                    self.outcomes[key] = self.outcomes.get(key, 0) + 1
                    if v.error_kind:
                        self.error_kinds[(name, v.error_kind)] = self.error_kinds.get((name, v.error_kind), 0) + 1

    def rates(self) -> dict[str, dict[str, float]]:
        """Per term: the share of samples with outcome error, error kind timeout, outcome
        unparseable; and the masked share of all samples (key ``""``)."""
        with self._lock:
            n = self.samples or 1
            out = {
                t: {
                    "error_rate": self.outcomes.get((t, Outcome.ERROR.value), 0) / n,
                    "timeout_rate": self.error_kinds.get((t, "timeout"), 0) / n,
                    "unparseable_rate": self.outcomes.get((t, Outcome.UNPARSEABLE.value), 0) / n,
                }
                for t in self.terms
            }
            out[""] = {"masked_rate": self.masked / n}
            return out

    def prometheus(self) -> str:
        rates = self.rates()
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: Sequence[tuple[Mapping[str, str], float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for labels, value in samples:
                text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
                lines.append(f"{name}{{{text}}} {_num(value)}" if text else f"{name} {_num(value)}")

        with self._lock:
            metric(
                "rlvr_serve_requests_total",
                "counter",
                "HTTP requests answered, by endpoint and status code.",
                [({"endpoint": e, "code": str(c)}, n) for (e, c), n in sorted(self.requests.items())],
            )
            metric(
                "rlvr_serve_rejected_total",
                "counter",
                "Requests refused before scoring, by reason.",
                [({"reason": r}, n) for r, n in sorted(self.rejected.items())],
            )
            metric("rlvr_serve_samples_total", "counter", "Samples scored.", [({}, self.samples)])
            metric(
                "rlvr_serve_masked_total",
                "counter",
                "Samples masked (some term could not decide).",
                [({}, self.masked)],
            )
            metric(
                "rlvr_serve_deadline_samples_total",
                "counter",
                "Samples not scored before the request deadline (masked, error kind timeout).",
                [({}, self.deadline_rows)],
            )
            metric(
                "rlvr_serve_outcomes_total",
                "counter",
                "Verdicts by term and outcome.",
                [({"term": t, "outcome": o}, n) for (t, o), n in sorted(self.outcomes.items())],
            )
            metric(
                "rlvr_serve_errors_total",
                "counter",
                "Error verdicts by term and kind.",
                [({"term": t, "kind": k}, n) for (t, k), n in sorted(self.error_kinds.items())],
            )
            metric(
                "rlvr_serve_imputed_total",
                "counter",
                "Masked samples given a stand-in reward for an engine, by source.",
                [({"source": s}, n) for s, n in sorted(self.imputed.items())],
            )
            metric("rlvr_serve_scoring_seconds_total", "counter", "Seconds spent scoring.", [({}, self.seconds)])
            metric(
                "rlvr_serve_batches_active",
                "gauge",
                "Batches admitted and not finished (scoring or waiting).",
                [({}, self.active)],
            )
            metric(
                "rlvr_serve_batches_capacity",
                "gauge",
                "Batches admitted at most; beyond it requests get 503.",
                [({}, self.capacity)],
            )
        for key, help_text in (
            ("error_rate", "Share of samples whose verdict is an error (masked), by term."),
            ("timeout_rate", "Share of samples whose verdict is a timeout error, by term."),
            ("unparseable_rate", "Share of samples with no answer span to judge, by term."),
        ):
            metric(f"rlvr_serve_term_{key}", "gauge", help_text, [({"term": t}, r[key]) for t, r in rates.items() if t])
        metric("rlvr_serve_masked_rate", "gauge", "Share of samples masked.", [({}, rates[""]["masked_rate"])])
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _num(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return repr(float(value)) if math.isfinite(value) else "NaN"
