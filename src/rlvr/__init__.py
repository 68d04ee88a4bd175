"""rlvr: GRPO on verifiable rewards, with the gates that keep it honest.

The stages, in workflow order (each also a ``rlvr`` command): ``load_task`` (the task file),
``run_probe`` (base rate and route), the verifiers (``build_verifier``), the inspection gate
(``rlvr.gate``), ``run_audit`` (reward-hack probes), ``rlvr.plan`` (recipe, memory, launch plan),
``run_sft`` and ``train`` (TRL), ``diagnose`` (the doctor). Importing ``rlvr`` loads no torch,
TRL or transformers: they are imported where they are used.

``rlvr.train`` on this package is the function; the modules of the ``rlvr/train/`` package
import by name (``from rlvr.train import sft``), not as ``import rlvr.train.sft``.
"""

from __future__ import annotations

from .audit import AuditReport, run_audit
from .doctor import Diagnosis, diagnose, load_run
from .errors import ConfigError, RlvrError
from .probe import ProbeReport, run_probe
from .rewards import AnswerFormat, Outcome, Sample, Verdict, build_verifier
from .task import Task, load_task
from .train import TrainOptions, TrainResult, train
from .train.sft import SftOptions, SftResult, run_sft

__version__ = "0.1.0"

__all__ = [
    "AnswerFormat",
    "AuditReport",
    "ConfigError",
    "Diagnosis",
    "Outcome",
    "ProbeReport",
    "RlvrError",
    "Sample",
    "SftOptions",
    "SftResult",
    "Task",
    "TrainOptions",
    "TrainResult",
    "Verdict",
    "__version__",
    "build_verifier",
    "diagnose",
    "load_run",
    "load_task",
    "run_audit",
    "run_probe",
    "run_sft",
    "train",
]
