"""Fetch the engines' own reward code for the opt-in contract tests (test_serve_engine_code.py).

verl 0.9.1 and OpenRLHF 0.11.2 cannot be installed beside rlvr (their transformers pins, CUDA,
Ray), so their wheels are downloaded without dependencies and unpacked into a folder, with
aiohttp (OpenRLHF's HTTP client) installed beside them. The tests load only the modules of the
reward path from there: OpenRLHF's ``utils/agent.py`` (the remote-reward client and the
``reward_func`` loader) and verl's reward managers and GRPO advantage, with the package imports
they do not use stubbed out. Needs PyPI once:

    .venv/bin/python tests/serve/engine_code.py /tmp/rlvr-engines
    RLVR_ENGINE_CODE=/tmp/rlvr-engines .venv/bin/pytest tests/serve/test_serve_engine_code.py

``--fixtures`` also rewrites tests/serve/data/ (the logs test_serve_enginelogs.py reads) with the
engines' own loggers: OpenRLHF's ``TensorboardLogger`` (torch's SummaryWriter, with tensorboard,
protobuf and absl-py installed beside it, no dependencies) and verl's ``FileLogger`` (orjson).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PINS = ("openrlhf==0.11.2", "verl==0.9.1")
# What verl's config validation (verl/utils/config.py) imports, installed beside it without dependencies:
# test_serve_launch.py runs it on the launch script's overrides.
VERL_CONFIG_DEPS = (
    "omegaconf",
    "hydra-core",
    "antlr4-python3-runtime==4.9.3",
    "codetiming",
    "orjson",
    "ray",
    "msgpack",
    "protobuf",
    "tensordict",
    "pyvers",
    "cloudpickle",
)


def prepare(folder: Path) -> None:
    wheels, src, site = folder / "wheels", folder / "src", folder / "site"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(wheels), *PINS], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--target", str(site), "aiohttp"], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(site), *VERL_CONFIG_DEPS], check=True
    )
    src.mkdir(exist_ok=True)
    for wheel in wheels.glob("*.whl"):
        with zipfile.ZipFile(wheel) as z:
            for name in z.namelist():
                # OpenRLHF ships its package under <dist>.data/purelib/
                rel = name.split("/purelib/", 1)[1] if "/purelib/" in name else name
                if rel.startswith(("openrlhf/", "verl/")) and not name.endswith("/"):
                    target = src / rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with z.open(name) as fin, open(target, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
    print(f"ready: RLVR_ENGINE_CODE={folder}")


_TB_SCRIPT = """
import importlib.util, sys, types
from types import SimpleNamespace
src = sys.argv[1] + "/openrlhf"
for name, path in (("openrlhf", src), ("openrlhf.utils", src + "/utils")):
    m = types.ModuleType(name); m.__path__ = [path]; sys.modules[name] = m
spec = importlib.util.spec_from_file_location("openrlhf.utils.logging_utils", src + "/utils/logging_utils.py")
lu = importlib.util.module_from_spec(spec); sys.modules[spec.name] = lu; spec.loader.exec_module(lu)
logger = SimpleNamespace(tensorboard_dir=sys.argv[2], wandb=SimpleNamespace(run_name="run"))
log = lu.TensorboardLogger(SimpleNamespace(logger=logger))
for step in range(1, 4):
    log.log_train(step, {"reward": 0.1 * step, "kl": 0.01 * step, "response_length": 100.0 + step,
                         "response_clip_ratio": 0.0, "ppo_clip_ratio": 0.02, "policy_loss": -0.5,
                         "rlvr/masked": 0.25 if step == 2 else 0.0,
                         "rlvr/correct/score": 0.5, "rlvr/correct/error": 0.25 if step == 2 else 0.0,
                         "rlvr/correct/timeout": 0.0, "rlvr/correct/unparseable": 0.125,
                         "generated_samples": ["text", 0.5]})
log.close()
"""

_VERL_SCRIPT = """
import ast, os, sys, orjson
import numpy as np
src = open(sys.argv[1] + "/verl/utils/tracking.py").read()
cls = next(n for n in ast.parse(src).body if isinstance(n, ast.ClassDef) and n.name == "FileLogger")
ns = {"os": os, "orjson": orjson}
exec(compile(ast.Module(body=[cls], type_ignores=[]), "tracking.py", "exec"), ns)
os.environ["VERL_FILE_LOGGER_PATH"] = sys.argv[2]
log = ns["FileLogger"]("proj", "exp")
for step in range(1, 4):
    log.log({"critic/score/mean": np.float32(0.1 * step), "critic/rewards/mean": 0.1 * step - 0.01,
             "actor/entropy": 1.0 - 0.1 * step, "response_length/mean": 100.0 + step,
             "response_length/clip_ratio": 0.0, "actor/pg_clipfrac": 0.02,
             "actor/kl_loss": 0.001 * step, "actor/ppo_kl": 0.0001, "actor/grad_norm": 0.5, "actor/lr": 1e-6,
             "critic/advantages/mean": 0.0, "timing_s/gen": 3.2}, step)
log.log({"val-core/arith/reward/mean@1": 0.4}, 3)
log.finish()
"""


def fixtures(folder: Path) -> None:
    import os
    import tempfile

    tools = folder / "logsite"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--target",
            str(tools),
            "tensorboard",
            "protobuf",
            "absl-py",
            "orjson",
        ],
        check=True,
    )
    data = Path(__file__).parent / "data"
    data.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(tools)}
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-c", _TB_SCRIPT, str(folder / "src"), tmp], env=env, check=True)
        event = next(Path(tmp).rglob("events.out.tfevents.*"))
        shutil.copyfile(event, data / "openrlhf-0.11.2.tfevents")
    subprocess.run(
        [sys.executable, "-c", _VERL_SCRIPT, str(folder / "src"), str(data / "verl-0.9.1-file-logger.jsonl")],
        env=env,
        check=True,
    )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--fixtures"]
    target = Path(args[0] if args else "/tmp/rlvr-engines")
    prepare(target)
    if "--fixtures" in sys.argv:
        fixtures(target)
