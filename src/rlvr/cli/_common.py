"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse
from pathlib import Path
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


def replace_own_folder(out: Path, marker: str, flag: str = "--out", *, also: tuple[str, ...] = ()) -> None:
    """Commands never delete what they did not create. A command that replaces its output folder
    calls this first: an empty or missing folder is made, one that holds ``marker`` (the file the
    command writes into every folder it makes; ``also``: files that proved it before the marker
    existed) is emptied, and any other non-empty folder is refused, naming the marker, so that
    ``--out .`` or a typo never wipes a user's files. Writes ``marker`` into the folder."""
    import shutil

    from ..errors import ConfigError, Problem

    if out.is_dir() and any(out.iterdir()):
        if not any((out / name).is_file() for name in (marker, *also)):
            raise ConfigError(
                Problem(
                    f"{flag} {out}",
                    f"holds files this command did not write (it has no {marker}), and it replaces only a folder it "
                    "made",
                    f"choose a new or empty folder, or move the files away; a folder with {marker} in it is replaced",
                )
            )
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / marker).write_text("written by rlvr: this folder is replaced when the command runs again\n")
