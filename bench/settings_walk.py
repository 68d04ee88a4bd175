"""The training walk: the modules ``rlvr train`` passes ``learning_rate`` through, from the command
line to TRL's ``GRPOConfig``, and how many times that walk climbs back to a module it has passed.

Definition (the count the issue-35 report gives): run ``rlvr train examples/arithmetic --config
PLAN --set learning_rate=2e-4`` (every layer: recipe, task, config file, ``--set``) and trace every
line executed in an ``rlvr`` module until ``GRPOConfig`` is constructed. A line is *on the walk*
when its frame holds the value (a local variable is a mapping with the key ``learning_rate``) and
its code is in a source file (a dataclass's generated ``__init__`` is not). Consecutive walk lines
in one module are one visit; the walk is the list of visits, and a **climb-back** is a visit to a
module that an earlier visit already passed through.

Run: ``PYTHONPATH=src python bench/settings_walk.py`` (loads no model weights; about 10 s).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class Reached(Exception):
    """GRPOConfig was constructed: the walk ends."""


def holds_value(frame: FrameType) -> bool:
    return any(isinstance(v, Mapping) and "learning_rate" in v for v in frame.f_locals.values())


def walk() -> list[str]:
    import trl

    from rlvr.cli.main import main

    class Stop(trl.GRPOConfig):  # a subclass: the type checks still read GRPOConfig's hints
        def __init__(self, **kwargs: Any) -> None:
            raise Reached(kwargs.get("learning_rate"))

    visits: list[str] = []

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("rlvr") or frame.f_code.co_filename.startswith("<"):
            return None  # generated code (a dataclass's __init__) is not a module a reader opens
        if event == "line" and holds_value(frame) and (not visits or visits[-1] != module):
            visits.append(module)
        return tracer

    trl.GRPOConfig = Stop  # type: ignore[misc]
    with tempfile.TemporaryDirectory() as tmp:
        task = str(ROOT / "examples" / "arithmetic")
        plan = str(Path(tmp) / "plan.yaml")
        main(["plan", task, "--gpus", "0", "--out", plan])
        argv = ["train", task, "--run-dir", f"{tmp}/run", "--no-gate", "walk", "--config", plan]
        sys.settrace(tracer)
        try:
            main([*argv, "--set", "learning_rate=2e-4", "--no-progress"])
        except Reached as done:
            assert done.args[0] == 2e-4, done.args
        finally:
            sys.settrace(None)
    return visits


def climb_backs(visits: list[str]) -> int:
    return sum(1 for i, m in enumerate(visits) if m in visits[:i])


if __name__ == "__main__":
    visits = walk()
    for i, m in enumerate(visits):
        print(f"{i:3d} {m}{'   <- climb-back' if m in visits[:i] else ''}")
    print(f"{len(visits)} visits, {len(set(visits))} modules, {climb_backs(visits)} climb-backs")
