"""The training walk: the modules ``rlvr train`` passes a setting through, from the command line to
TRL's ``GRPOConfig``, and how many times that walk climbs back to a module it has passed.

Definition: run ``rlvr train examples/arithmetic --config PLAN --set KEY=VALUE`` (every layer:
recipe, task, config file, ``--set``) and trace every line executed in an ``rlvr`` module until
``GRPOConfig`` is constructed. A line is *on the walk* when its frame holds the value and its code
is in a source file (a dataclass's generated ``__init__`` is not). Consecutive walk lines in one
module are one visit; the walk is the list of visits, and a **climb-back** is a visit to a module
that an earlier visit already passed through.

"Holds the value", two readings, both printed:

- ``value`` (the walk of the value set on the command line): a local variable is a mapping whose
  ``KEY`` is the ``--set`` value (a value no other layer of the example sets, checked below).
- ``key`` (the issue-35 reading): a local variable is a mapping with the key ``KEY`` at all, so
  reading the task file's ``grpo:`` section (and its ``sft:`` section, whose ``learning_rate`` is
  SFT's) counts too.

Walked for ``learning_rate=2e-4`` and ``num_generations=16`` (the example task sets 1e-4 and
leaves the group size to the recipe's 8). Run: ``PYTHONPATH=src python bench/settings_walk.py``
(loads no model weights; about 20 s).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SETS: dict[str, Any] = {"learning_rate": 2e-4, "num_generations": 16}


class Reached(Exception):
    """GRPOConfig was constructed: the walk ends."""


def holds(frame: FrameType, key: str, value: Any, reading: str) -> bool:
    for v in frame.f_locals.values():
        if isinstance(v, Mapping) and key in v:
            if reading == "key" or (type(v[key]) is type(value) and v[key] == value):
                return True
    return False


def walk(key: str, value: Any, reading: str) -> list[str]:
    import trl

    from rlvr.cli.main import main

    class Stop(trl.GRPOConfig):  # a subclass: the type checks still read GRPOConfig's hints
        def __init__(self, **kwargs: Any) -> None:
            raise Reached(kwargs.get(key))

    visits: list[str] = []

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("rlvr") or frame.f_code.co_filename.startswith("<"):
            return None  # generated code (a dataclass's __init__) is not a module a reader opens
        if event == "line" and holds(frame, key, value, reading) and (not visits or visits[-1] != module):
            visits.append(module)
        return tracer

    original = trl.GRPOConfig
    trl.GRPOConfig = Stop  # type: ignore[misc]
    try:
        with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as quiet:
            task = str(ROOT / "examples" / "arithmetic")
            plan = str(Path(tmp) / "plan.yaml")
            stdout, sys.stdout = sys.stdout, quiet
            try:
                main(["plan", task, "--gpus", "0", "--out", plan])
            finally:
                sys.stdout = stdout
            text = Path(plan).read_text(encoding="utf-8")
            assert f"{key}: {value}" not in text, f"the plan already sets {key}={value}: pick another value"
            argv = ["train", task, "--run-dir", f"{tmp}/run", "--no-gate", "walk", "--config", plan]
            sys.settrace(tracer)
            try:
                main([*argv, "--set", f"{key}={value}", "--no-progress"])
            except Reached as done:
                assert done.args[0] == value, done.args
            else:
                raise AssertionError("GRPOConfig was never constructed")
            finally:
                sys.settrace(None)
    finally:
        trl.GRPOConfig = original  # type: ignore[misc]
    return visits


def climb_backs(visits: list[str]) -> int:
    return sum(1 for i, m in enumerate(visits) if m in visits[:i])


if __name__ == "__main__":
    summary = []
    for reading in ("value", "key"):
        for key, value in SETS.items():
            visits = walk(key, value, reading)
            print(f"== --set {key}={value}, reading '{reading}'")
            for i, m in enumerate(visits):
                print(f"{i:3d} {m}{'   <- climb-back' if m in visits[:i] else ''}")
            line = f"{key:15s} {reading:5s}: {len(visits)} visits, {len(set(visits))} modules, "
            summary.append(line + f"{climb_backs(visits)} climb-backs")
    print("\n".join(summary))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
