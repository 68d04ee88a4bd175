"""Reading a run's metrics into one table, whatever wrote them.

Three inputs, one shape (``Run``):

- an rlvr run directory: ``metrics.jsonl`` (training lines and held-out ``eval/*`` lines),
  ``config.yaml`` (``grpo:`` and ``rlvr:``) and the model's ``config.json`` under ``final/`` or the
  newest ``checkpoints/checkpoint-N/``;
- a TRL ``trainer_state.json`` (its ``log_history``), or a checkpoint folder holding one; the
  model's ``config.json`` beside it is used for the mixture-of-experts check. TRL does not save the
  GRPOConfig in readable form (``training_args.bin`` is a pickle, which we never load), so checks
  that depend on the config say they could not tell unless ``config=`` names a config.yaml;
- a CSV export with a ``step`` column and the same metric names (empty cell = not logged).

Values are floats; ``None`` means "not logged in that window" (TRL logs ``None`` when a metric had
no valid value) and is never read as zero. NaN and infinities are kept: they are a finding.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import yamlio
from ..errors import ConfigError, DataError, RunError
from ..settings.file import RunConfig
from ..train.tripwire import reading as tripwire_reading

# Summary keys TRL adds once at the end of training; they are not a time series.
_SUMMARY_KEYS = frozenset(
    {"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos", "train_loss"}
)
# Where a model config says it routes tokens to experts.
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")

Row = Mapping[str, float | None]


@dataclass(frozen=True)
class Series:
    """One metric over steps, finite values only (NaN, inf and missing windows are dropped)."""

    key: str
    steps: tuple[int, ...]
    values: tuple[float, ...]

    def __len__(self) -> int:
        return len(self.values)

    def slice(self, start: int, stop: int | None = None) -> Series:
        return Series(self.key, self.steps[start:stop], self.values[start:stop])


@dataclass(frozen=True)
class Run:
    """Everything the checks and the report read about one run."""

    source: str  # the path given
    kind: str  # "run" | "trainer_state" | "csv"
    train: tuple[Row, ...]  # training log lines, sorted by step; each has "step"
    evals: tuple[Row, ...]  # held-out eval lines, sorted by step
    grpo: Mapping[str, Any] = field(default_factory=dict)  # resolved GRPOConfig values ({} = unknown)
    rlvr: Mapping[str, Any] = field(default_factory=dict)
    config_path: str | None = None  # the config.yaml the grpo/rlvr values came from
    explicit: frozenset[str] = frozenset()  # keys the config sets under grpo: (the rest TRL derived)
    model_config: Mapping[str, Any] | None = None  # the model's config.json, if found
    model_config_path: str | None = None
    warnings: tuple[str, ...] = ()  # things skipped while reading (a torn last line, ...)
    rollout_errors: str = ""  # the most common error among the run's kept rollouts (rlvr.keptrollouts)
    rollout_quotes: tuple[str, ...] = ()  # the best-rewarded kept rollouts of the last kept step, quoted
    events: tuple[Mapping[str, Any], ...] = ()  # resume / stopped lines of metrics.jsonl, in order
    tripwire: Mapping[str, Any] = field(default_factory=dict)  # rlvr.train.tripwire.reading: rounds and trip

    @property
    def config_known(self) -> bool:
        return bool(self.grpo)

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for row in self.train:
            for k in row:
                if k != "step":
                    seen.setdefault(k, None)
        return list(seen)

    def series(self, key: str, *, evals: bool = False) -> Series:
        rows = self.evals if evals else self.train
        pts = [
            (int(r["step"] or 0), float(v))
            for r in rows
            if isinstance(v := r.get(key), int | float) and math.isfinite(v)
        ]
        return Series(key, tuple(s for s, _ in pts), tuple(v for _, v in pts))

    def term_names(self) -> list[str]:
        """Reward terms: from the config when it lists them, else from ``rewards/<term>/mean``."""
        names = _config_term_names(self.rlvr)
        if names:
            return names
        out: list[str] = []
        for k in self.keys():
            parts = k.split("/")
            if len(parts) == 3 and parts[0] == "rewards" and parts[2] == "mean":
                out.append(parts[1])
        return out

    def steps(self) -> tuple[int, int] | None:
        if not self.train:
            return None
        return int(self.train[0]["step"] or 0), int(self.train[-1]["step"] or 0)


def _config_term_names(rlvr: Mapping[str, Any]) -> list[str]:
    for key in ("rewards", "reward_terms", "terms"):
        terms = rlvr.get(key)
        if isinstance(terms, Sequence) and not isinstance(terms, str):
            names = [t.get("name") if isinstance(t, Mapping) else t for t in terms]
            if names and all(isinstance(n, str) for n in names):
                return names  # type: ignore[return-value]
        if isinstance(terms, Mapping) and terms:
            return [str(k) for k in terms]
    listed = rlvr.get("reward_names") or rlvr.get("reward_terms_names")
    if isinstance(listed, Sequence) and not isinstance(listed, str):
        return [str(n) for n in listed]
    return []


# ------------------------------------------------------------------------------------------
# Loading


def load_run(path: str | Path, *, config: str | Path | None = None, engine: str | None = None) -> Run:
    """Read a run directory, a ``trainer_state.json`` (or its checkpoint folder), a
    ``metrics.jsonl`` or a CSV; with ``engine`` (``verl`` or ``openrlhf``), that engine's log: a
    verl file-logger JSONL or TensorBoard events, translated to rlvr's metric names by
    ``rlvr.doctor.enginelogs``. ``config`` names a config.yaml to use instead of the one found
    beside the metrics. Raises ``RunError`` when nothing readable is there and ``DataError``
    naming the file, line and field when a file is malformed."""
    p = Path(path)
    if not p.exists():
        raise RunError(
            f"{p}: no such run directory or metrics file (fix: pass a run directory, a trainer_state.json or a CSV)"
        )
    if engine is not None:
        import tempfile

        from .enginelogs import read_engine_log, write_metrics_jsonl

        with tempfile.TemporaryDirectory() as tmp:
            run = _from_jsonl(
                write_metrics_jsonl(read_engine_log(p, engine), Path(tmp) / "metrics.jsonl"), source=str(p), kind="run"
            )
    elif p.is_dir():
        if (p / "metrics.jsonl").is_file():
            run = _from_jsonl(p / "metrics.jsonl", source=str(p), kind="run")
        elif (p / "trainer_state.json").is_file():
            run = _from_trainer_state(p / "trainer_state.json", source=str(p))
        elif (ckpt := _newest_checkpoint(p)) is not None and (ckpt / "trainer_state.json").is_file():
            run = _from_trainer_state(ckpt / "trainer_state.json", source=str(p))
        else:
            raise RunError(
                f"{p}: no metrics.jsonl, trainer_state.json or "
                f"checkpoints/checkpoint-N/trainer_state.json{_run_status(p)} (fix: point at a run written by "
                "`rlvr train` or a TRL output folder)"
            )
    elif p.suffix == ".csv":
        run = _from_csv(p)
    elif p.suffix == ".jsonl":
        run = _from_jsonl(p, source=str(p), kind="run")
    elif p.suffix == ".json":
        run = _from_trainer_state(p, source=str(p))
    else:
        raise RunError(
            f"{p}: unknown input (fix: pass a run directory, a trainer_state.json, a metrics.jsonl or a .csv)"
        )
    if not run.train and not run.evals:
        raise RunError(
            f"{p}: no logged steps yet{_run_status(p if p.is_dir() else p.parent)} (fix: wait for the first logging "
            "step, or check logging_steps)"
        )

    base = p if p.is_dir() else p.parent
    cfg_path = Path(config) if config is not None else _find_config(base)
    grpo: Mapping[str, Any] = {}
    rlvr: Mapping[str, Any] = {}
    explicit: frozenset[str] = frozenset()
    if cfg_path is not None:
        cfg = run_config(cfg_path)
        grpo, rlvr, explicit = cfg.effective(), cfg.rlvr_section(), frozenset(cfg.grpo)
    mc, mc_path = _find_model_config(base, rlvr)
    return Run(
        source=run.source,
        kind=run.kind,
        train=run.train,
        evals=run.evals,
        grpo=grpo,
        rlvr=rlvr,
        config_path=str(cfg_path) if cfg_path is not None else None,
        explicit=explicit,
        model_config=mc,
        model_config_path=mc_path,
        warnings=run.warnings,
        rollout_errors=_rollout_errors(base),
        rollout_quotes=rollout_quotes(base),
        events=run.events,
        tripwire=tripwire_reading(base),
    )


def _rollout_errors(run_dir: Path) -> str:
    from ..keptrollouts import error_summary

    return error_summary(run_dir)


def rollout_quotes(run_dir: Path, n: int = 2, width: int = 160) -> tuple[str, ...]:
    """The ``n`` best-rewarded rollouts of the last step the run kept, one line each: step, reward,
    each term's outcome and the completion's start (what the training reward pays for)."""
    from .. import keptrollouts as rollouts

    try:
        kept = rollouts.steps(run_dir) if rollouts.files(run_dir) else []
        rows = rollouts.at_step(run_dir, kept[-1]) if kept else []
    except (RunError, OSError, ValueError, KeyError, TypeError):
        return ()
    rows = sorted((r for r in rows if isinstance(r.get("reward"), (int, float))), key=lambda r: -float(r["reward"]))[:n]
    out = []
    for r in rows:
        text = r.get("completion")
        if isinstance(text, list):  # conversational: the assistant's message
            text = " ".join(str(m.get("content", "")) for m in text if isinstance(m, Mapping))
        text = " ".join(str(text).split())
        outcomes = ", ".join(
            f"{t} {v.get('outcome')}" for t, v in (r.get("scores") or {}).items() if isinstance(v, Mapping)
        )
        short = text if len(text) <= width else text[: width - 3] + "..."
        out.append(f"step {r['rollout']['step']}, reward {float(r['reward']):.2f} ({outcomes}): {short!r}")
    return tuple(out)


def _run_status(run_dir: Path) -> str:
    """What run.json says about a run that left no metrics, e.g. that it failed and why."""
    try:
        meta = json.loads((run_dir / "run.json").read_text())
    except (OSError, json.JSONDecodeError):
        return ""
    if not isinstance(meta, dict) or not meta.get("status"):
        return ""
    error = f": {' '.join(str(meta['error']).split())[:200]}" if meta.get("error") else ""
    return (
        f"; run.json says the run {meta['status']}{error}"
        if meta["status"] != "running"
        else "; run.json says it is still running"
    )


def run_config(path: str | Path) -> RunConfig:
    """A run's config file for the doctor: ``RunError`` when it is missing, ``DataError`` naming
    the file and the key when it is malformed or has no GRPOConfig values."""
    path = Path(path)
    if not path.is_file():
        raise RunError(f"{path}: config file not found (fix: pass the config.yaml of the run)")
    try:
        cfg = RunConfig.read(path)
    except ConfigError as exc:
        raise DataError(str(exc)) from None
    if not cfg.flat and not cfg.grpo:
        raise DataError(f"{path}: no 'grpo:' mapping (fix: pass the config.yaml that `rlvr train` wrote)")
    return cfg


def _find_config(base: Path) -> Path | None:
    # A checkpoint folder sits at <run>/checkpoints/checkpoint-N: the run's config is two levels up.
    # Nowhere else is searched, so an unrelated config.yaml higher up is never picked by accident.
    folders = [base] + ([base.parent.parent] if base.name.startswith("checkpoint-") else [])
    for folder in folders:
        cand = folder / "config.yaml"
        if cand.is_file():
            try:
                data = yamlio.load(cand.read_text())
            except yaml.YAMLError:
                continue
            if isinstance(data, Mapping) and isinstance(data.get("grpo"), Mapping):
                return cand
    return None


def _newest_checkpoint(run_dir: Path) -> Path | None:
    best: tuple[int, Path] | None = None
    for folder in (run_dir / "checkpoints", run_dir):
        if not folder.is_dir():
            continue
        for c in folder.glob("checkpoint-*"):
            tail = c.name.rpartition("-")[2]
            if tail.isdigit() and (best is None or int(tail) > best[0]):
                best = (int(tail), c)
    return best[1] if best else None


def _find_model_config(base: Path, rlvr: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    cands = [base / "config.json", base / "final" / "config.json"]
    if (ckpt := _newest_checkpoint(base)) is not None:
        cands.append(ckpt / "config.json")
    model = rlvr.get("model")
    if isinstance(model, str) and not model.startswith("builtin:"):
        cands.append(Path(model) / "config.json")
        cands += _hub_cache_configs(model)
    for c in cands:
        if c.is_file():
            try:
                data = json.loads(c.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if isinstance(data, dict):
                return data, str(c)
    if isinstance(model, str) and model.startswith("builtin:"):
        # Built-in models are dense Qwen2 decoders by construction (rlvr.models); no need to build one.
        return {"model_type": "qwen2", "_rlvr_builtin": model}, model
    return None, None


def _hub_cache_configs(model_id: str) -> list[Path]:
    """config.json of a hub model already in the local Hugging Face cache (never downloads)."""
    if model_id.count("/") != 1 or Path(model_id).exists():
        return []
    env = os.environ
    root = (
        Path(env["HF_HUB_CACHE"])
        if env.get("HF_HUB_CACHE")
        else Path(env.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    )
    snaps = root / ("models--" + model_id.replace("/", "--")) / "snapshots"
    return sorted(snaps.glob("*/config.json")) if snaps.is_dir() else []


def is_moe(model_config: Mapping[str, Any] | None) -> str | None:
    """Why this model config is a mixture of experts, or ``None``."""
    if not model_config:
        return None
    configs = [model_config] + [v for k, v in model_config.items() if k.endswith("_config") and isinstance(v, Mapping)]
    for cfg in configs:
        for key in _EXPERT_KEYS:
            v = cfg.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v > 1:
                return f"{key}={v}"
        mt = cfg.get("model_type")
        if isinstance(mt, str) and "moe" in mt.lower():
            return f"model_type={mt!r}"
    return None


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise DataError(f"{where}: expected a number, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    raise DataError(f"{where}: expected a number, got {value!r}")


def _split_row(
    raw: Mapping[str, Any], where: str, eval_prefixes: tuple[str, ...]
) -> tuple[dict[str, float | None], dict[str, float | None]]:
    if "step" not in raw:
        raise DataError(f"{where}: field 'step' is missing (fix: every metrics line needs an integer step)")
    step = raw["step"]
    if (
        isinstance(step, bool)
        or not isinstance(step, int | float)
        or (isinstance(step, float) and not step.is_integer())
    ):
        raise DataError(f"{where}: field 'step' must be an integer, got {step!r}")
    train: dict[str, float | None] = {}
    ev: dict[str, float | None] = {}
    for k, v in raw.items():
        if k in ("step", "time") or k in _SUMMARY_KEYS or isinstance(v, str | list | dict):
            continue  # timestamps, summaries and text are not metrics
        value = _number(v, f"{where}, field {k!r}")
        (ev if k.startswith(eval_prefixes) else train)[k] = value
    if train:
        train["step"] = float(int(step))
    if ev:
        ev["step"] = float(int(step))
    return train, ev


def _finish(
    source: str,
    kind: str,
    train: list[dict[str, float | None]],
    evals: list[dict[str, float | None]],
    warnings: list[str],
) -> Run:
    def merge(rows: list[dict[str, float | None]]) -> tuple[Row, ...]:
        # Several lines for one step (a resumed run re-logging, a metric logged separately) merge,
        # later lines winning, so a resume never doubles a point.
        by_step: dict[int, dict[str, float | None]] = {}
        for r in rows:
            by_step.setdefault(int(r["step"]), {}).update(r)  # type: ignore[arg-type]
        return tuple(by_step[s] for s in sorted(by_step))

    return Run(source=source, kind=kind, train=merge(train), evals=merge(evals), warnings=tuple(warnings))


def _from_jsonl(path: Path, *, source: str, kind: str) -> Run:
    lines = path.read_text().splitlines()
    train, evals, warnings = [], [], []
    events: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}, line {i}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines):  # a run still writing (or killed mid-write) leaves a torn last line
                warnings.append(f"{where}: skipped an incomplete last line")
                continue
            raise DataError(f"{where}: not valid JSON: {exc.msg}") from exc
        if not isinstance(raw, dict):
            raise DataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
        if isinstance(raw.get("event"), str):  # rlvr train's resume / stopped marks, not metrics
            events.append(dict(raw))
            continue
        t, e = _split_row(raw, where, ("eval/", "eval_"))
        if t:
            train.append(t)
        if e:
            evals.append(e)
    run = _finish(source, kind, train, evals, warnings)
    return Run(
        source=run.source, kind=run.kind, train=run.train, evals=run.evals, warnings=run.warnings, events=tuple(events)
    )


def _from_trainer_state(path: Path, *, source: str) -> Run:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    history = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(history, list):
        raise DataError(f"{path}: field 'log_history' is missing or not a list (fix: pass TRL's trainer_state.json)")
    train, evals = [], []
    for i, raw in enumerate(history):
        where = f"{path}, log_history[{i}]"
        if not isinstance(raw, dict):
            raise DataError(f"{where}: expected an object, got {type(raw).__name__}")
        t, e = _split_row(raw, where, ("eval/", "eval_"))
        if t:
            train.append(t)
        if e:
            evals.append(e)
    return _finish(source, "trainer_state", train, evals, [])


def _from_csv(path: Path) -> Run:
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or "step" not in reader.fieldnames:
            raise DataError(
                f"{path}: no 'step' column in the header (fix: export with a step column and TRL metric names)"
            )
        train, evals = [], []
        for i, rec in enumerate(reader, 2):  # line 1 is the header
            raw: dict[str, Any] = {}
            for k, v in rec.items():
                if k is None:
                    raise DataError(f"{path}, row {i}: more cells than header columns")
                v = (v or "").strip()
                if v == "":
                    continue
                try:
                    raw[k] = int(v) if k == "step" and v.lstrip("-").isdigit() else float(v)
                except ValueError:
                    if k in ("time",):
                        continue
                    raise DataError(f"{path}, row {i}, column {k!r}: {v!r} is not a number") from None
            if "step" not in raw:
                raise DataError(f"{path}, row {i}: column 'step' is empty")
            t, e = _split_row(raw, f"{path}, row {i}", ("eval/", "eval_"))
            if t:
                train.append(t)
            if e:
                evals.append(e)
    return _finish(str(path), "csv", train, evals, [])
