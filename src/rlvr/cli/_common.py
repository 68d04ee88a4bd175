"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse
from typing import Any

from .. import yamlio
from ..errors import ConfigError, Problem


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict[str, Any]:
    """``KEY=VALUE`` pairs, values parsed as YAML scalars (``1e-4``, ``true``, ``[1, 2]``)."""
    import yaml

    out: dict[str, Any] = {}
    problems = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            problems.append(Problem(f"{flag} {item}", "expected KEY=VALUE", "e.g. --set learning_rate=1e-5"))
            continue
        try:
            out[key.strip()] = yamlio.load(value)
        except yaml.YAMLError as exc:
            problems.append(Problem(f"{flag} {item}", f"value is not valid YAML: {exc}"))
    if problems:
        raise ConfigError(problems)
    return out


def add_set(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help=f"override one {what} value (repeatable); values are YAML (1e-4, true, [1, 2])",
    )


def check_model_arg(model: str | None, flag: str = "--model") -> None:
    """A ``--model`` that is a local path must exist: otherwise the hub client tries the network
    and reports a malformed repo id or an offline error for what is a missing folder. A path is
    what starts with ``.``, ``/`` or ``~``, has more than one ``/``, or whose first part is a folder
    here (``runs/sft``); ``org/name`` without such a folder is a hub id, left to load."""
    from pathlib import Path

    from ..errors import ModelError

    if not model or model.startswith(("builtin:", "hf:")):
        return
    parts = model.split("/")
    path_like = model.startswith((".", "/", "~")) or model.endswith("/") or "\\" in model or len(parts) > 2
    if not path_like and not (len(parts) == 2 and Path(parts[0]).is_dir()):
        return
    path = Path(model).expanduser()
    if not path.exists():
        raise ModelError(
            f"{flag} {model}: no such local model folder ({path.resolve()}); pass a folder holding config.json and "
            "weights (rlvr sft --out, a run's final/), or a hub id org/name"
        )
