"""The gate record (``gate.json``): signing it, and checking it before a run.

Where the gate lives: ``<task dir>/.rlvr/gate/<task file stem>/`` by default (``--gate PATH``
overrides it; a path ending in ``.json`` names the record itself, anything else the folder). It
sits beside the task because it certifies the task's reward, and it is built before any run
directory exists; ``rlvr train`` copies the summary into the run's ``config.yaml``. The folder
holds ``inspection.db`` (the set and every verdict), ``inspection.jsonl`` (an export) and
``gate.json``.

``gate.json`` binds the reviewer's verdicts to SHA-256 hashes (computed in ``rlvr.gate.hashes``) of

- the reward code: the source file of every module that defines a term (user files included),
  the modules they import from ``rlvr.rewards``, ``rlvr.sandbox`` or the task's folder (followed
  transitively, by reading their ``import`` statements, including imports inside functions), and
  ``rlvr.rewards.base``, ``format`` and ``combine``, which every term goes through;
- the task file (its bytes: prompt, answer format, terms, weights, temperature, model);
- the data the rewards are scored against: the train and eval files (the ground truths) and every
  file or folder a term's options name (schemas, test files), each hashed whole, so editing
  ``train.jsonl`` after signing stops ``rlvr train``;
- the inspection set (prompts, rows, completions), the reward's current scores on it, and every
  verdict given;
- the record itself (``record_sha256``), so an edit to the record is caught.

Threat model, honestly: this is tamper-*evident* against accidents and casual edits -- a changed
reward module, an edited task file, a hand-edited database or record. It is not a signature: there
is no secret key, and someone with write access who recomputes every hash can forge a record. Not
covered: files a reward reads at run time without naming them in its options, hub datasets
(``hf:`` references are recorded by name, not hashed), modules imported dynamically, installed
third-party packages.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import atomic
from ..errors import GateError
from ..rewards import source_module
from .agreement import Agreement, agreement
from .build import MIN_SIZE, export_jsonl, score
from .hashes import data_files, reward_code, set_hashes, sha256_file, sha256_json
from .review import NO_TTY_MARK
from .store import Store, now, same_total

if TYPE_CHECKING:
    from ..rewards.combine import RewardSet
    from ..task import Task

RECORD_FORMAT = "rlvr-gate/1"
DB_NAME = "inspection.db"
RECORD_NAME = "gate.json"


# -- where ------------------------------------------------------------------------------------
def gate_dir(task: Task, gate_path: str | Path | None = None) -> Path:
    """The gate folder of ``task``: ``gate_path`` (a folder, or a ``.json`` record inside one)
    or ``<task dir>/.rlvr/gate/<task file stem>/``."""
    if gate_path is not None:
        p = Path(gate_path)
        return p.parent if p.suffix == ".json" else p
    return Path(task.path).parent / ".rlvr" / "gate" / Path(task.path).stem


def record_path(task: Task, gate_path: str | Path | None = None) -> Path:
    if gate_path is not None and Path(gate_path).suffix == ".json":
        return Path(gate_path)
    return gate_dir(task, gate_path) / RECORD_NAME


def db_path(task: Task, gate_path: str | Path | None = None) -> Path:
    return gate_dir(task, gate_path) / DB_NAME


def _check_data(task: Task, record: Mapping[str, Any]) -> list[str]:
    old: Mapping[str, Any] | None = record.get("data")
    if not isinstance(old, Mapping):
        return [
            "the record does not bind the data files the rewards are scored against (signed by an older rlvr): "
            "sign it again (rlvr inspect sign)"
        ]
    new = data_files(task)
    problems = []
    for role in sorted(set(old) | set(new)):
        o, n = old.get(role) or {}, new.get(role) or {}
        if o.get("sha256") != n.get("sha256") or o.get("path") != n.get("path"):
            where = n.get("path") or o.get("path")
            problems.append(
                f"{role} ({where}) changed since signing: sha256 was {o.get('sha256')}, now {n.get('sha256')}"
                + ("; the rewards are scored against it, so read the set again and sign" if n else "")
            )
    return problems


def signed_terms(task: Task, codes: Mapping[str, Mapping[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Every term training pays (the episode terms included), as the record lists it: name,
    verifier, weight, options and the SHA-256 of the module that defines its verifier."""
    codes = reward_code(task) if codes is None else codes
    out = []
    for t in task.rewards:
        code = codes.get(source_module(t.verifier)) or {}
        out.append(
            {
                "name": t.name,
                "verifier": t.verifier,
                "weight": t.weight,
                "options": dict(t.options),
                "code_sha256": code.get("sha256"),
            }
        )
    return out


def term_changes(signed: Sequence[Mapping[str, Any]], trained: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each difference between the terms the gate signed and those a run pays, named: a term
    added or dropped, or a field (verifier, weight, options, code) that differs. Fields one side
    does not carry are not compared (``rlvr train`` compares its reward set's names and weights)."""
    old = {str(t.get("name")): t for t in signed}
    new = {str(t.get("name")): t for t in trained}
    out = [f"term {n!r} is trained but was not signed (weight {new[n].get('weight')})" for n in new if n not in old]
    out += [f"term {n!r} was signed but is not trained" for n in old if n not in new]
    for n in (n for n in new if n in old):
        for key in sorted(set(old[n]) & set(new[n]) - {"name"}):
            if old[n][key] != new[n][key]:
                out.append(f"term {n!r}: {key} was {old[n][key]!r} when signed, the run has {new[n][key]!r}")
    if not out and [t.get("name") for t in signed] != [t.get("name") for t in trained]:
        out.append(f"the terms' order changed: signed {list(old)}, the run has {list(new)}")
    return out


# -- signing ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditOutcome:
    """What the audit found, as recorded in gate.json: the report, the exploitable terms and the
    reviewer's reasons for accepting any of them."""

    report: Mapping[str, Any]
    exploitable: tuple[str, ...]


def sign(
    task: Task,
    gate_path: str | Path | None = None,
    *,
    reviewer: str | None = None,
    min_samples: int = MIN_SIZE,
    accept_exploits: Mapping[str, str] | None = None,
    audit: Callable[[Task], AuditOutcome] | None,
) -> Path:
    """Write ``gate.json`` for a passing gate. ``audit`` is the reward-hack audit whose outcome the
    record carries (``rlvr.audit.gate_audit``; the gate sits below the audit, so the caller passes
    it); ``None`` signs without one and records that the caller disabled it. Raises ``GateError``
    naming what is missing:
    unreviewed or open samples, scores that the current reward code no longer gives, too small a
    set, or an exploitable term without a recorded reason."""
    store = Store(db_path(task, gate_path))
    store.check()
    samples = store.samples()
    latest = store.latest_reviews()
    a = agreement(samples, latest)
    problems = []
    if a.n < min_samples:
        problems.append(
            f"the set has {a.n} samples; the gate asks a person to read at least {min_samples} "
            "(rlvr inspect build --size)"
        )
    if not a.passed:
        unreviewed = [sid for sid in a.open_ids if sid not in latest]
        disagree = [sid for sid in a.open_ids if sid in latest]
        if unreviewed:
            problems.append(f"{len(unreviewed)} samples have no verdict yet (ids {_ids(unreviewed)})")
        if disagree:
            problems.append(
                f"{len(disagree)} disagreements are open (ids {_ids(disagree)}): fix the reward and rlvr inspect "
                "rescore, or record why each is acceptable"
            )
    # The scores in the database must be what the reward code gives *now*: the record binds this
    # code's hash to verdicts that were given on these scores.
    current = score(task, task.reward_set(), [s.rollout.sample for s in samples])
    stale = [
        s.id
        for s, (_, total, klass) in zip(samples, current, strict=True)
        if not same_total(s.rollout.total, total) or s.reward_class != klass
    ]
    if stale:
        problems.append(
            f"{len(stale)} samples score differently with the current reward code (ids {_ids(stale)}): "
            "run rlvr inspect rescore and read them again"
        )
    meta = store.meta()
    if [t["name"] for t in meta.get("terms", [])] != [t.name for t in task.rewards]:
        problems.append(
            f"the set was built for terms {[t['name'] for t in meta.get('terms', [])]}, "
            f"the task now has {[t.name for t in task.rewards]}: rlvr inspect rescore"
        )
    reviewers = sorted({r.reviewer for r in latest.values()})
    if reviewer is None:
        if len(reviewers) > 1:
            problems.append(
                f"verdicts come from several reviewers ({', '.join(reviewers)}): name the one who signs with --reviewer"
            )
        reviewer = reviewers[0] if reviewers else ""
    accept_exploits = {k: v.strip() for k, v in (accept_exploits or {}).items() if v and v.strip()}
    audit_json: dict[str, Any]
    if audit is None:
        audit_json = {"status": "unavailable", "reason": "audit disabled by the caller"}
    else:
        outcome = audit(task)
        unexplained = [t for t in outcome.exploitable if t not in accept_exploits]
        if unexplained:
            problems.append(
                f"the audit found exploitable reward terms: {', '.join(unexplained)}; fix them, "
                "or record why each is acceptable (--accept-exploit TERM=REASON)"
            )
        audit_json = {
            "status": "ran",
            "exploitable": list(outcome.exploitable),
            "accepted": {t: accept_exploits[t] for t in outcome.exploitable if t in accept_exploits},
            "report": dict(outcome.report),
        }
    if problems:
        raise GateError("cannot sign the gate:\n" + "\n".join(f"  - {p}" for p in problems))
    hashes = set_hashes(store)
    codes = reward_code(task)
    record: dict[str, Any] = {
        "format": RECORD_FORMAT,
        "reviewer": reviewer,
        "reviewers": reviewers,
        "no_tty_verdicts": sum(r.reviewer.endswith(NO_TTY_MARK) for r in latest.values()),
        "signed_at": now(),
        "task": {"name": task.name, "path": str(task.path), "sha256": sha256_file(task.path)},
        "data": data_files(task),
        "model": meta.get("model"),
        "sampling": {k: meta.get(k) for k in ("temperature", "top_p", "max_new_tokens", "seed", "source", "pool")},
        "terms": signed_terms(task, codes),
        "reward_code": codes,
        "inspection_set": {"path": DB_NAME, "samples": a.n, "sha256": hashes["inspection_set"]},
        "scores": {"sha256": hashes["scores"]},
        "verdicts": {"count": store.count_reviews(), "sha256": hashes["verdicts"]},
        "counts": _counts(a),
        "kappa": a.kappa,
        "confusion": a.to_json()["confusion"],
        "accepted_disagreements": [
            {"sample_id": r.sample_id, "label": r.label, "reason": r.accepted} for r in latest.values() if r.accepted
        ],
        "audit": audit_json,
    }
    record["record_sha256"] = sha256_json(record)
    path = record_path(task, gate_path)
    atomic.write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    export_jsonl(store)
    return path


def _counts(a: Agreement) -> dict[str, Any]:
    return {
        "samples": a.n,
        "reviewed": a.reviewed,
        **{f"state_{k}": v for k, v in a.states.items()},
        **{f"label_{k}": v for k, v in a.labels.items()},
    }


def _ids(ids: list[int], limit: int = 20) -> str:
    text = ", ".join(map(str, ids[:limit]))
    return text + (f", ... {len(ids) - limit} more" if len(ids) > limit else "")


# -- checking ---------------------------------------------------------------------------------
def verify(
    task: Task, gate_path: str | Path | None = None, *, model: str | None = None
) -> tuple[dict[str, Any], list[str]]:
    """Check the gate record against what is about to run. Returns (record, problems); each
    problem names what changed, where, and the old and new hash. ``model``: the model the run
    starts from, when it is not the task's (an SFT checkpoint); the set must come from it."""
    path = record_path(task, gate_path)
    if not path.exists():
        raise GateError(
            f"no gate record at {path}: inspect the reward first (rlvr inspect build, serve or review, sign), "
            "or pass --gate PATH, or --no-gate REASON"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise GateError(f"{path}: not a readable gate record ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise GateError(
            f"{path}: not a gate record "
            f"(format {record.get('format') if isinstance(record, dict) else None!r}, expected {RECORD_FORMAT!r})"
        )
    problems: list[str] = []
    claimed = record.get("record_sha256")
    actual = sha256_json({k: v for k, v in record.items() if k != "record_sha256"})
    if claimed != actual:
        problems.append(
            f"{path} was edited after signing: record_sha256 says {claimed}, its content hashes to {actual}"
        )
    task_hash = sha256_file(task.path)
    old_task = (record.get("task") or {}).get("sha256")
    if old_task != task_hash:
        problems.append(f"task file {task.path} changed: sha256 was {old_task}, now {task_hash}")
    old_code: Mapping[str, Any] = record.get("reward_code") or {}
    try:
        new_code = reward_code(task)
    except GateError as exc:
        problems.append(str(exc))
        new_code = {}
    for name in sorted(set(old_code) | set(new_code)):
        old, new = old_code.get(name), new_code.get(name)
        if new is None:  # then the name is in the old code
            if new_code:
                gone = old_code[name]
                problems.append(
                    f"reward module {name} ({gone.get('path')}) is no longer used by the task: "
                    f"sha256 was {gone.get('sha256')}, now none"
                )
        elif old is None:
            problems.append(
                f"reward module {name} ({new['path']}) is new since the gate was signed: "
                f"sha256 was none, now {new['sha256']}"
            )
        elif old.get("sha256") != new["sha256"]:
            problems.append(
                f"reward module {name} ({new['path']}) changed: sha256 was {old.get('sha256')}, now {new['sha256']}"
            )
    changes = term_changes(record.get("terms") or [], signed_terms(task, new_code))
    problems += [f"reward terms changed: {c}" for c in changes]
    run_model = model or task.model
    if not same_model(record.get("model"), run_model):
        problems.append(
            f"model changed: the set was sampled from {record.get('model')!r}, the run starts from {run_model!r}"
            + (
                f" (a run that starts from the model the gate was signed on passes --model {record.get('model')})"
                if model is None and record.get("model")
                else ""
            )
        )
    sampling = record.get("sampling") or {}
    for key, value in (
        ("temperature", task.generation.temperature),
        ("max_new_tokens", task.generation.max_completion_length),
    ):
        if sampling.get(key) != value:
            problems.append(f"{key} changed: the set was sampled with {sampling.get(key)}, the run uses {value}")
    problems += _check_data(task, record)
    problems += _check_store(task, gate_path, record)
    audit_rec = record.get("audit") or {}
    unexplained = [t for t in audit_rec.get("exploitable", []) if t not in (audit_rec.get("accepted") or {})]
    if unexplained:
        problems.append(f"the record lists exploitable terms with no recorded reason: {', '.join(unexplained)}")
    return record, problems


def check_trained(summary: Mapping[str, Any], rewards: RewardSet) -> None:
    """``rlvr train``'s check that the reward set it is about to pay is the one the gate signed
    (each term's name and weight, in order): ``GateError`` naming each difference on one line."""
    if summary.get("status") != "passed":
        return
    trained = [{"name": t.name, "weight": t.weight} for t in rewards.terms]
    changes = term_changes(summary.get("terms") or [], trained)
    if changes:
        raise GateError(f"the reward this run would pay is not the one the gate signed: {'; '.join(changes)}")


def same_model(a: Any, b: Any) -> bool:
    """Two model references name the same model: equal, or the same folder once resolved (a
    built-in resolves to its cache folder)."""
    if a == b:
        return True
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    if not any(Path(r).exists() for r in (a, b) if not r.startswith("builtin:")):
        return False  # different names and no folder on either side: nothing to resolve

    def key(ref: str) -> str:
        if ref.startswith("builtin:"):
            from ..models import resolve_model

            try:
                ref = resolve_model(ref)
            except Exception:  # noqa: BLE001 - an unknown built-in simply does not match
                return ref
        p = Path(ref)
        return str(p.resolve()) if p.exists() else ref

    return key(a) == key(b)


def _check_store(task: Task, gate_path: str | Path | None, record: Mapping[str, Any]) -> list[str]:
    db = gate_dir(task, gate_path) / (record.get("inspection_set") or {}).get("path", DB_NAME)
    store = Store(db)
    try:
        store.check()
        hashes = set_hashes(store)
        a = agreement(store.samples(), store.latest_reviews())
    except (GateError, ValueError, KeyError, json.JSONDecodeError) as exc:
        return [f"inspection database {db} cannot be checked: {exc}"]
    problems = []
    for key, rec_key in (("inspection_set", "inspection_set"), ("scores", "scores"), ("verdicts", "verdicts")):
        old = (record.get(rec_key) or {}).get("sha256")
        if old != hashes[key]:
            what = {
                "inspection_set": "the inspection set (samples)",
                "scores": "the reward scores stored in the set",
                "verdicts": "the reviewer verdicts",
            }[key]
            problems.append(f"{what} in {db} changed since signing: sha256 was {old}, now {hashes[key]}")
    if not a.passed:
        problems.append(f"the inspection set in {db} no longer passes: {len(a.open_ids)} samples unreviewed or open")
    return problems


def enforce(
    task: Task, *, gate_path: str | Path | None = None, no_gate_reason: str | None = None, model: str | None = None
) -> dict[str, Any]:
    """What ``rlvr train`` calls before training. Returns the summary it writes into the run's
    config; raises ``GateError`` listing exactly what changed when the record does not match.

    ``no_gate_reason`` bypasses the gate; it must say why (it is written into the run's config
    and metrics, so the run carries its reason). ``model``: the model the run starts from when it
    is not ``task.model`` (e.g. an SFT checkpoint); the record must have been built from it.
    """
    path = record_path(task, gate_path)
    if no_gate_reason is not None:
        reason = no_gate_reason.strip()
        if not reason:
            raise GateError(
                "--no-gate needs a reason (it is written into the run's config), "
                "e.g. --no-gate 'smoke test of the launcher'"
            )
        return {"status": "bypassed", "no_gate_reason": reason, "record": str(path) if path.exists() else None}
    record, problems = verify(task, gate_path, model=model)
    if problems:
        raise GateError(
            f"the gate record {path} does not match this run:\n"
            + "\n".join(f"  - {p}" for p in problems)
            + (
                "\n  (fix the cause, or re-score the set (rlvr inspect rescore), read the changed samples, "
                "and sign again (rlvr inspect sign))"
                if any(not p.startswith("model changed") for p in problems)
                else "\n  (start from the model the set was sampled from, or build and sign a gate for this model: "
                "rlvr inspect build --model ...)"
            )
        )
    codes = record.get("reward_code") or {}
    audit_rec = record.get("audit") or {}
    return {
        "status": "passed",
        "record": str(path),
        "record_sha256": record.get("record_sha256"),
        "reviewer": record.get("reviewer"),
        "model": record.get("model"),
        "signed_at": record.get("signed_at"),
        "samples": (record.get("counts") or {}).get("samples"),
        "kappa": record.get("kappa"),
        "accepted_disagreements": len(record.get("accepted_disagreements") or []),
        "task_sha256": (record.get("task") or {}).get("sha256"),
        "data_sha256": {role: d.get("sha256") for role, d in (record.get("data") or {}).items()},
        "reward_code_sha256": sha256_json({k: v.get("sha256") for k, v in codes.items()}),
        "audit": audit_rec.get("status"),
        "terms": [{"name": t.get("name"), "weight": t.get("weight")} for t in record.get("terms") or []],
        "no_gate_reason": None,
    }
