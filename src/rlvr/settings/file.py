"""A run's config file, read and written in one place: ``RunConfig``.

Two forms, one reader (``RunConfig.read``), each key with one spelling:

- the **run form** that ``rlvr train`` writes into ``<run>/config.yaml``::

      grpo:          the GRPOConfig values the run set (as TRL normalised them)
      rlvr:          rlvr's own settings and record: variant, justification, task, model, model_arg,
                     peft ({method: lora, r: 16, ...}), stop, dynamic, and the record (gate, eval,
                     reward terms, hardware, origin: the layer each value came from, ...)
      trl_resolved:  every value TRL resolved, derived ones included (read by the doctor)

- the **flat form** that ``rlvr plan`` writes (``write_config``) and ``trl grpo --config`` takes:
  every top-level key a GRPOConfig field, rlvr's record under ``env:`` (the only free-form place
  TRL's YAML parser accepts; it exports it as environment variables): ``RLVR_VARIANT``,
  ``RLVR_TASK``, ``RLVR_MODEL``, ``RLVR_PEFT``, ``RLVR_JUSTIFY_<KEY>``, ``RLVR_STOP_<KEY>``.

Old spellings still read, never written: ``rlvr: {justifications: ...}`` (now ``justification``),
``rlvr: {peft: lora}`` (now a mapping with ``method``), and ``grpo: {dynamic: ...}`` (how a doctor
patch once wrote the online filter; it is rlvr's option, not a GRPOConfig field: now
``rlvr: {dynamic: ...}``). A malformed file is refused with the file and the key named
(``ConfigError``); the values of ``stop`` and ``dynamic`` are checked where every layer of a run
is resolved (``rlvr.settings.layers.merge``), which names the file too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import atomic, yamlio
from ..errors import ConfigError, Problem
from .layers import variant_of
from .recipe import EXPLICIT_KEYS

# Keys of the rlvr: section that RunConfig reads into its own fields; the rest is the record.
OWN_KEYS = ("task", "model", "model_arg", "variant", "peft", "stop", "dynamic", "justification")
# Spellings an older rlvr wrote, read and never written: old key -> current key.
OLD_SPELLINGS = {"justifications": "justification"}
# Sections of the run form.
SECTIONS = ("grpo", "rlvr", "trl_resolved")


@dataclass(frozen=True)
class ConfigMeta:
    """rlvr's own record stored beside the GRPOConfig values in a plan file (the flat form)."""

    variant: str = "grpo"
    justifications: Mapping[str, str] = field(default_factory=dict)
    task: str = ""
    model: str = ""
    peft: str = "none"
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RunConfig:
    """One run's settings, as a config file holds them (either form; see the module docstring)."""

    grpo: Mapping[str, Any]  # the GRPOConfig values set explicitly
    variant: str = "grpo"
    justification: Mapping[str, str] = field(default_factory=dict)  # key -> why the recipe's floor is crossed
    task: str = ""
    model: str = ""  # the model the run loaded (resolved)
    model_arg: str = ""  # the model as it was asked for (--model or the task's)
    peft: str = "none"  # none | lora | qlora
    lora: Mapping[str, Any] = field(default_factory=dict)  # the adapter's settings when peft is not none
    stop: Mapping[str, Any] = field(default_factory=dict)  # rlvr.train.stopping thresholds
    dynamic: Mapping[str, Any] = field(default_factory=dict)  # rlvr.train.dynamic settings
    record: Mapping[str, Any] = field(default_factory=dict)  # the rest of rlvr: (gate, eval, ...), kept as is
    resolved: Mapping[str, Any] = field(default_factory=dict)  # trl_resolved: (run form only)
    flat: bool = False  # read from (and written as) the flat form
    source: str = ""  # the file it was read from

    # -- reading ------------------------------------------------------------------------------
    @classmethod
    def read(cls, path: str | Path) -> RunConfig:
        """A config file in either form. Raises ``ConfigError`` naming the file and the key."""
        import yaml

        path = Path(path)
        try:
            raw = yamlio.load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ConfigError(
                Problem(
                    str(path), f"cannot read the config: {exc}", "pass a YAML file written by rlvr plan or rlvr train"
                )
            ) from None
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise ConfigError(
                Problem(
                    str(path),
                    f"a config file must be a YAML mapping of GRPOConfig fields, got {type(raw).__name__}",
                    "pass a YAML file written by rlvr plan or rlvr train",
                )
            )
        if any(k in raw for k in SECTIONS):
            return cls._read_run_form(raw, str(path))
        return cls._read_flat_form(raw, str(path))

    @classmethod
    def _read_run_form(cls, raw: Mapping[str, Any], source: str) -> RunConfig:
        sections: dict[str, dict[str, Any]] = {}
        for name in SECTIONS:
            section = raw.get(name)
            if section is not None and not isinstance(section, Mapping):
                raise ConfigError(
                    Problem(
                        source,
                        f"field '{name}' must be a mapping, got {type(section).__name__}",
                        "pass the config.yaml that rlvr train wrote",
                    )
                )
            sections[name] = dict(section or {})
        grpo, rl = sections["grpo"], sections["rlvr"]
        for old, new in OLD_SPELLINGS.items():
            if old in rl:
                if new in rl:
                    raise ConfigError(
                        Problem(f"{source}: rlvr.{old}", f"is written twice, as {old} and as {new}", f"keep {new} only")
                    )
                rl[new] = rl.pop(old)
        dynamic = _mapping(rl.get("dynamic"), f"{source}: rlvr.dynamic")
        if "dynamic" in grpo:  # the old spelling: not a GRPOConfig field
            dynamic = {**dynamic, **_mapping(grpo.pop("dynamic"), f"{source}: grpo.dynamic")}
        peft, lora = _peft(rl.get("peft"), f"{source}: rlvr.peft")
        return cls(
            grpo=grpo,
            variant=_text(rl.get("variant", variant_of(grpo)), f"{source}: rlvr.variant"),
            justification=_reasons(rl.get("justification"), f"{source}: rlvr.justification"),
            task=_text(rl.get("task", ""), f"{source}: rlvr.task"),
            model=_text(rl.get("model", ""), f"{source}: rlvr.model"),
            model_arg=_text(rl.get("model_arg", ""), f"{source}: rlvr.model_arg"),
            peft=peft,
            lora=lora,
            stop=_mapping(rl.get("stop"), f"{source}: rlvr.stop"),
            dynamic=dynamic,
            record={k: v for k, v in rl.items() if k not in OWN_KEYS},
            resolved=sections["trl_resolved"],
            source=source,
        )

    @classmethod
    def _read_flat_form(cls, raw: Mapping[str, Any], source: str) -> RunConfig:
        env = raw.get("env") or {}
        if not isinstance(env, Mapping):
            raise ConfigError(
                Problem(
                    f"{source}: env",
                    "must be a mapping of environment variables",
                    "write env: followed by NAME: value lines",
                )
            )
        grpo = {k: v for k, v in raw.items() if k != "env"}
        dynamic = _mapping(grpo.pop("dynamic", None), f"{source}: dynamic")
        just, stop, extra = {}, {}, {}
        for k, v in env.items():
            name = str(k)
            if name.startswith("RLVR_JUSTIFY_"):
                just[name[len("RLVR_JUSTIFY_") :].lower()] = str(v)
            elif name.startswith("RLVR_STOP_"):
                stop[name[len("RLVR_STOP_") :].lower()] = yamlio.load(str(v))
            elif name.startswith("RLVR_") and name not in ("RLVR_VARIANT", "RLVR_TASK", "RLVR_MODEL", "RLVR_PEFT"):
                extra[name[len("RLVR_") :].lower()] = str(v)
        peft, lora = _peft(env.get("RLVR_PEFT"), f"{source}: env.RLVR_PEFT")
        return cls(
            grpo=grpo,
            variant=str(env.get("RLVR_VARIANT", variant_of(grpo))),
            justification=just,
            task=str(env.get("RLVR_TASK", "")),
            model=str(env.get("RLVR_MODEL", "")),
            peft=peft,
            lora=lora,
            stop=stop,
            dynamic=dynamic,
            record=extra,
            flat=True,
            source=source,
        )

    # -- views --------------------------------------------------------------------------------
    def effective(self) -> dict[str, Any]:
        """Every GRPOConfig value known: TRL's resolved ones, the explicit ones winning."""
        return {**self.resolved, **self.grpo}

    def rlvr_section(self) -> dict[str, Any]:
        """The ``rlvr:`` mapping of the run form, each key in its one spelling."""
        own = {"task": self.task, "model": self.model, "model_arg": self.model_arg, "variant": self.variant}
        out: dict[str, Any] = {k: v for k, v in own.items() if v}
        out.update(self.record)
        if self.stop:
            out["stop"] = dict(self.stop)
        if self.dynamic:
            out["dynamic"] = dict(self.dynamic)
        out["peft"] = {"method": self.peft, **self.lora}
        if self.justification:
            out["justification"] = dict(self.justification)
        return out

    def meta(self) -> ConfigMeta:
        """rlvr's record as the flat form holds it."""
        extra = {k: str(v) for k, v in self.record.items()} if self.flat else {}
        return ConfigMeta(self.variant, dict(self.justification), self.task, self.model, self.peft, extra)

    def document(self) -> dict[str, Any]:
        """The mapping ``write`` serialises, in this config's form."""
        if self.flat:
            env = meta_env(self.meta())
            env.update({f"RLVR_STOP_{k.upper()}": str(v) for k, v in self.stop.items()})
            body = {"env": env, **ordered(self.grpo)}
            if self.dynamic:
                body["dynamic"] = dict(self.dynamic)
            return body
        doc: dict[str, Any] = {"grpo": dict(self.grpo), "rlvr": self.rlvr_section()}
        if self.resolved:
            doc["trl_resolved"] = dict(self.resolved)
        return doc

    # -- writing ------------------------------------------------------------------------------
    def write(self, path: str | Path, *, header: str = "") -> Path:
        """Write this config (atomically: a crash leaves the old file or the new one)."""
        return write_yaml(path, self.document(), header=header)


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(Problem(where, f"must be a mapping, got {value!r}", "write key: value lines under it"))
    return {str(k): v for k, v in value.items()}


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping | list):
        raise ConfigError(Problem(where, f"must be a single value, got {value!r}"))
    return str(value)


def _reasons(value: Any, where: str) -> dict[str, str]:
    return {k: str(v) for k, v in _mapping(value, where).items()}


def _peft(value: Any, where: str) -> tuple[str, dict[str, Any]]:
    """(method, adapter settings) from ``{method: lora, r: 16, ...}`` or a bare method name."""
    if value is None:
        return "none", {}
    if isinstance(value, Mapping):
        settings = {str(k): v for k, v in value.items()}
        method = settings.pop("method", None)
        if not isinstance(method, str):
            raise ConfigError(
                Problem(f"{where}.method", f"must name the method, got {method!r}", "none, lora or qlora")
            )
        return method, settings if method != "none" else {}
    if isinstance(value, str):
        return value, {}
    raise ConfigError(Problem(where, f"must be a method name or a mapping, got {value!r}", "none, lora or qlora"))


# -- the flat form (rlvr plan) -----------------------------------------------------------------
def ordered(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The explicit keys first (what matters most, in recipe order), then the rest sorted."""
    head = [k for k in EXPLICIT_KEYS if k in cfg]
    return {**{k: cfg[k] for k in head}, **{k: cfg[k] for k in sorted(cfg) if k not in head}}


def meta_env(meta: ConfigMeta) -> dict[str, str]:
    """rlvr's record as the ``env:`` mapping of a flat TRL config (string values: TRL exports them)."""
    env = {"RLVR_VARIANT": meta.variant}
    if meta.task:
        env["RLVR_TASK"] = meta.task
    if meta.model:
        env["RLVR_MODEL"] = meta.model
    if meta.peft != "none":
        env["RLVR_PEFT"] = meta.peft
    for key, reason in sorted(meta.justifications.items()):
        env[f"RLVR_JUSTIFY_{key.upper()}"] = reason
    for key, value in sorted(meta.extra.items()):
        env[f"RLVR_{key.upper()}"] = value
    return env


def write_yaml(path: str | Path, body: Mapping[str, Any], *, header: str = "") -> Path:
    """``body`` as YAML under ``header`` (each line a comment), written to a temporary file and
    renamed, so an existing file is never left half-written."""
    import yaml

    path = Path(path)
    text = yaml.safe_dump(dict(body), sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    comments = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic.write_text(path, comments + text)


def write_config(path: str | Path, cfg: Mapping[str, Any], meta: ConfigMeta, *, header: str = "") -> Path:
    """Write the flat form ``trl grpo --config`` and ``rlvr train --config`` both read."""
    return write_yaml(path, {"env": meta_env(meta), **ordered(cfg)}, header=header)


def read_config(path: str | Path) -> tuple[dict[str, Any], ConfigMeta]:
    """A config file in either form, as (GRPOConfig values, rlvr's record): ``RunConfig.read``."""
    cfg = RunConfig.read(path)
    return dict(cfg.grpo), cfg.meta()
