"""Fetch the engines' own reward code for the opt-in contract tests (test_serve_engine_code.py).

verl 0.9.1 and OpenRLHF 0.11.2 cannot be installed beside rlvr (their transformers pins, CUDA,
Ray), so their wheels are downloaded without dependencies and unpacked into a folder, with
aiohttp (OpenRLHF's HTTP client) installed beside them. The tests load only the modules of the
reward path from there: OpenRLHF's ``utils/agent.py`` (the remote-reward client and the
``reward_func`` loader) and verl's reward managers and GRPO advantage, with the package imports
they do not use stubbed out. Needs PyPI once:

    .venv/bin/python tests/serve/engine_code.py /tmp/rlvr-engines
    RLVR_ENGINE_CODE=/tmp/rlvr-engines .venv/bin/pytest tests/serve/test_serve_engine_code.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

PINS = ("openrlhf==0.11.2", "verl==0.9.1")


def prepare(folder: Path) -> None:
    wheels, src, site = folder / "wheels", folder / "src", folder / "site"
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(wheels), *PINS], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "--target", str(site), "aiohttp"], check=True)
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


if __name__ == "__main__":
    prepare(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/rlvr-engines"))
