"""The doctor: a run's metrics -> named findings with evidence -> one config change.

Plain GRPO first; a variant only when its symptom shows, otherwise two things changed at once and
nobody can tell what helped. So ``diagnose`` names every symptom it sees, and ``write_patch``
applies exactly one change group: the one for the first finding in priority order (a broken run --
NaN, failing verifiers, a reward that measures the wrong thing, a run that destroyed what the model
could do -- before the variants of DESIGN.md's table, whose overlays come from ``rlvr.settings.recipe``):

- entropy collapse -> DAPO (loss_type "dapo", epsilon 0.2, epsilon_high 0.28, beta 0,
  mask_truncated_completions, plus a soft overlong punishment term);
- length and reward climbing together, incorrect answers growing -> Dr. GRPO (loss_type
  "dr_grpo", scale_rewards "none");
- a mixture-of-experts model on plain GRPO -> GSPO (importance_sampling_level "sequence",
  epsilon 3e-4, epsilon_high 4e-4, beta 0, steps_per_generation 4x gradient accumulation).

Findings whose fix is not a config value (a broken verifier, prompts that are too easy or too
hard) carry no patch: ``write_patch`` then refuses and says what to do instead, rather than
turning a knob that cannot help. ``--finding`` picks another finding deliberately.

Inputs: an rlvr run directory, a TRL ``trainer_state.json`` or a CSV (see ``rlvr.doctor.table``).
The patched config keeps the run's format (``grpo:``, ``rlvr:``, ``trl_resolved:``, or a flat
GRPOConfig file), with a header naming the finding and a comment on every changed line; it is
written atomically and never over an existing file without ``force``.

Limits: see ``rlvr.doctor.checks`` for what is approximate. Everything here runs on CPU and reads
files only; nothing loads a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .. import atomic, yamlio
from ..errors import ConfigError, Problem, RunError
from .checks import CHECKS
from .findings import SEVERITY_ORDER, Finding, Note, Patch
from .table import Run, Series, is_moe, load_run, run_config


@dataclass(frozen=True)
class Diagnosis:
    run: Run
    findings: tuple[Finding, ...]  # symptoms, most urgent first
    notes: tuple[Note, ...]  # what the config explains, or what could not be judged

    @property
    def healthy(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        steps = self.run.steps()
        return {
            "source": self.run.source,
            "kind": self.run.kind,
            "config": self.run.config_path,
            "model_config": self.run.model_config_path,
            "steps": list(steps) if steps else None,
            "logged_steps": len(self.run.train),
            "evals": len(self.run.evals),
            "findings": [f.to_json() for f in self.findings],
            "notes": [n.to_json() for n in self.notes],
            "warnings": list(self.run.warnings),
        }


def diagnose(run: Run) -> Diagnosis:
    """Run every check. Findings are ordered by severity, then by check priority."""
    findings: list[tuple[int, int, Finding]] = []
    notes: list[Note] = []
    for i, check in enumerate(CHECKS):
        for item in check(run):
            if isinstance(item, Note):
                notes.append(item)
            else:
                findings.append((SEVERITY_ORDER[item.severity], i, item))
    findings.sort(key=lambda t: (t[0], t[1]))
    return Diagnosis(run, tuple(f for _, _, f in findings), tuple(notes))


def choose(diagnosis: Diagnosis, check: str | None = None) -> Finding:
    """The finding to act on: ``check`` if named, else the most urgent. Raises ``ConfigError``
    when there is none, or when its fix is not a config change."""
    if not diagnosis.findings:
        raise ConfigError(
            Problem(
                diagnosis.run.source,
                "no findings, so there is nothing to patch",
                "keep plain GRPO; a variant only when its symptom shows",
            )
        )
    if check is None:
        finding = diagnosis.findings[0]
    else:
        named = [f for f in diagnosis.findings if f.check == check]
        if not named:
            have = ", ".join(sorted({f.check for f in diagnosis.findings}))
            raise ConfigError(
                Problem("--finding", f"{check!r} is not among this run's findings", f"pick one of: {have}")
            )
        finding = named[0]
    if finding.patch is None:
        raise ConfigError(
            Problem(
                finding.check,
                "its fix is not a config change, so no patch was written",
                finding.suggestion
                + (" (or pick another finding with --finding)" if len(diagnosis.findings) > 1 else ""),
            )
        )
    return finding


# Keys a patch sets that are rlvr's options, not GRPOConfig fields: in the run form they go under
# rlvr: (their one spelling there; rlvr.settings.file), in a flat file they stay at the top level.
RLVR_KEYS = ("dynamic",)


def patched(config: Mapping[str, Any], patch: Patch) -> dict[str, Any]:
    """``config`` (a config.yaml mapping) with the patch's change group applied; a ``None`` value
    removes the key so TRL derives it."""
    out = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in config.items()}
    if "grpo" not in out:  # a flat GRPOConfig file: the keys are at the top level
        for k, v in patch.grpo.items():
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out
    grpo = dict(out.get("grpo") or {})
    rlvr = dict(out.get("rlvr") or {})
    for k, v in patch.grpo.items():
        section = rlvr if k in RLVR_KEYS else grpo
        if k in RLVR_KEYS and k in grpo:  # the old spelling (grpo: {dynamic: ...}) moves to rlvr:
            rlvr[k] = {**(rlvr.get(k) or {}), **grpo.pop(k)} if isinstance(grpo[k], Mapping) else grpo.pop(k)
        if v is None:
            section.pop(k, None)
        elif k in RLVR_KEYS and isinstance(v, Mapping) and isinstance(section.get(k), Mapping):
            section[k] = {**section[k], **v}  # e.g. the filter on, the run's other dynamic settings kept
        else:
            section[k] = v
    out["grpo"] = grpo
    if isinstance(out.get("trl_resolved"), dict):  # keep the record consistent with what will run
        for k, v in patch.grpo.items():
            if k not in RLVR_KEYS:
                out["trl_resolved"][k] = v
    if patch.add_terms:
        # Reward terms live in the task file, not in GRPOConfig: recorded here for the reader, and
        # the header says to add them to the task's rewards: list (never applied silently).
        rlvr["add_rewards"] = [dict(t) for t in patch.add_terms]
    if rlvr or "rlvr" in out:
        out["rlvr"] = rlvr
    return out


def render_patch(config: Mapping[str, Any], finding: Finding, *, source: str) -> str:
    """The patched config as YAML, with a header naming the finding and a comment on each changed line."""
    assert finding.patch is not None
    patch = finding.patch
    new = patched(config, patch)
    flat = "grpo" not in config
    old_grpo = config if flat else (config.get("grpo") or {})

    def one_line(text: str) -> str:  # evidence quotes names from the log: keep them inside the comment
        return " ".join(str(text).split())

    lines = [
        f"# Patched by `rlvr doctor` from {one_line(source)}: one change group, nothing else differs.",
        f"# finding: {finding.check} ({finding.severity}) -- {one_line(finding.evidence)}",
        f"# change: {patch.variant} -- {one_line(patch.why)}",
    ]
    removed = [k for k, v in patch.grpo.items() if v is None and k in old_grpo]
    if removed:
        lines.append(f"# removed (TRL derives them): {', '.join(removed)}")
    if patch.add_terms:
        lines.append("# this change also adds a reward term; put it in the task file's rewards: list:")
        for t in patch.add_terms:
            lines.append("#   - " + yaml.safe_dump(dict(t), default_flow_style=True, width=1_000_000).strip())
    body = yaml.safe_dump(new, sort_keys=False, default_flow_style=False, width=1_000_000).splitlines()
    changed = {k for k, v in patch.grpo.items() if v is not None}
    old_rlvr = {} if flat else (config.get("rlvr") or {})
    section = None
    for line in body:
        if line and not line.startswith(" "):
            section = line.rstrip(":")
        key = line.strip().split(":", 1)[0]
        top = line.startswith("  ") and not line.startswith("   ")
        if flat:
            where = old_grpo if not line.startswith(" ") and key in changed else None
        elif section == "grpo" and top and key in changed and key not in RLVR_KEYS:
            where = old_grpo
        elif section == "rlvr" and top and key in changed and key in RLVR_KEYS:
            where = old_rlvr
        else:
            where = None
        if where is not None:
            line += f"  # doctor: {finding.check} ({patch.variant}); was {where.get(key, '<unset>')!r}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def write_patch(
    diagnosis: Diagnosis, out: str | Path | None = None, *, check: str | None = None, force: bool = False
) -> tuple[Path, Finding]:
    """Write the patched config for the chosen finding; never overwrite without ``force``."""
    run = diagnosis.run
    if run.config_path is None:  # checked first: without a config no finding can carry a patch
        raise RunError(f"{run.source}: no config.yaml found to patch (fix: pass --config PATH to the run's config)")
    finding = choose(diagnosis, check)
    run_config(run.config_path)  # a malformed file is refused, naming the file and the key
    config = yamlio.load(Path(run.config_path).read_text())
    base = Path(run.source) if Path(run.source).is_dir() else Path(run.source).parent
    path = Path(out) if out is not None else base / f"config.doctor-{finding.check}.yaml"
    if path.exists() and not force:
        raise RunError(f"{path}: already exists (fix: pass --out elsewhere, or --force to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, render_patch(config, finding, source=run.config_path))
    return path, finding


def format_text(d: Diagnosis) -> str:
    """The terminal report."""
    run = d.run
    steps = run.steps()
    head = [
        f"run: {run.source} ({run.kind}; {len(run.train)} logged steps"
        + (f", steps {steps[0]}-{steps[1]}" if steps else "")
        + f", {len(run.evals)} held-out evals)"
    ]
    head.append(f"config: {run.config_path or 'not found (checks that need it say so; pass --config)'}")
    lines = head + [""]
    if d.healthy:
        lines.append("No findings: nothing in the metrics calls for a change. Keep plain GRPO.")
    for i, f in enumerate(d.findings, 1):
        lines.append(f"{i}. [{f.severity.upper()}] {f.check} ({f.metric})")
        lines.append(f"   evidence: {f.evidence}")
        lines.append(f"   fix: {f.suggestion}")
        if f.patch:
            changes = ", ".join(f"{k}={v!r}" if v is not None else f"{k} removed" for k, v in f.patch.grpo.items())
            extra = (
                " + reward term " + ", ".join(str(t.get("name")) for t in f.patch.add_terms)
                if f.patch.add_terms
                else ""
            )
            lines.append(f"   patch ({f.patch.variant}): {changes}{extra}")
        elif run.config_known:
            lines.append("   patch: none (the fix is not a config value)")
        else:
            lines.append("   patch: none (no config found to patch; pass --config)")
    if d.notes:
        lines += ["", "notes (explained by the config, or not judged):"] + [f"  - {n.check}: {n.text}" for n in d.notes]
    for w in run.warnings:
        lines.append(f"warning: {w}")
    if d.findings and d.findings[0].patch:
        lines += [
            "",
            f"`rlvr doctor {run.source} --patch` writes the {d.findings[0].patch.variant} change for "
            f"{d.findings[0].check}, and only that.",
        ]
    return "\n".join(lines)


__all__ = [
    "Diagnosis",
    "Finding",
    "Note",
    "Patch",
    "Run",
    "Series",
    "choose",
    "diagnose",
    "format_text",
    "is_moe",
    "load_run",
    "patched",
    "render_patch",
    "write_patch",
]
