"""Reward-hack audit: attack a task's reward terms with known exploits before any training.

``run_audit(task)`` samples prompts, builds for each a correct completion, a wrong one and every
exploit that targets each term's verifier kind (``rlvr.audit.exploits``), scores them with the
term, and reports per exploit and term: ``exploitable`` (the exploit scored at least as high as
the correct answer on some prompt, or ended in an error, which masks a wrong answer in training),
``leaky`` (above the wrong answer), ``ok``, or ``untested`` -- a finding, never clean: an
untested term fails ``rlvr audit`` and blocks signing the gate like an exploitable one (a hole
the probes cannot reach is still a hole). It also checks that the task's
success term is a correctness term, and reads length terms' options for ties. The columns and
specs a term checks against come from what its verifier declares it reads (``rlvr.rewards.Reads``).

Modules: ``types`` (the shared dataclasses), ``answers``, ``weakvalues``, ``structured`` and
``code`` (the exploit generators), ``exploits`` (the library), ``specs`` (what a structured row expects), ``run`` (the
audit), ``findings`` (scored attempts -> a finding), ``tokens`` (lengths), ``report``.

Threat model and limits: the library holds *known* hacks (restating, hedging, answers outside
the span or inside the think block, repeated, empty or invisible spans, confusables and values a
loose normalisation folds onto the answer, values a weak reading folds onto the gold (its
opposite, its digits permuted, its last digits, a value-changing word after it, a difference
below double precision, a Unicode minus), a self-certifying phrase (on every term), infinities
and huge numbers, extra JSON keys, broken
``format`` rules, code that exits early or fakes its output, length, loops with and without
spaces); passing it does not prove a reward sound, so the human gate still reads samples. The
audit itself never executes model text: code exploits reach only the term's own verifier (the
sandbox, for ``unit_tests``). No GPU and no model weights are needed.
"""

from __future__ import annotations

from ..gate.record import AuditOutcome
from ..task import Task
from .episodes import audit_episodes
from .exploits import EXPLOITS, exploits_for
from .report import AuditReport, Example, Finding, TermSummary, format_table
from .run import run_audit
from .types import Attempt, Context, Exploit


def gate_audit(task: Task) -> AuditOutcome:
    """The audit as the gate records it: ``rlvr inspect sign`` (and the demo's reference gate)
    pass this to ``rlvr.gate.sign``, which refuses to sign while a term is exploitable and has no
    recorded reason."""
    report = run_audit(task)
    # An untested term blocks signing like an exploitable one: the audit could not call it safe.
    data, exploitable = report.to_json(), set(report.exploitable_terms) | set(report.untested_terms)
    found = audit_episodes(task)  # an episode task: its holes block signing too (none without tools)
    if found:
        data = {**data, "episodes": [f.to_json() for f in found]}
        exploitable |= {f"episode:{f.exploit}" for f in found if f.hit}
    return AuditOutcome(data, tuple(sorted(exploitable)))


__all__ = [
    "Attempt",
    "AuditReport",
    "Context",
    "EXPLOITS",
    "Example",
    "Exploit",
    "Finding",
    "TermSummary",
    "exploits_for",
    "format_table",
    "gate_audit",
    "run_audit",
]
