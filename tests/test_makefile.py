"""`make` keeps a machine's own torch: TORCH=system builds .venv on python3's site-packages, an
existing torch is never reinstalled, and nothing pins torch to one build (dry runs, no install)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def dry_run(tmp_path: Path, *args: str) -> list[str]:
    out = subprocess.run(
        ["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return out.stdout.splitlines()


@needs_make
def test_torch_system_builds_the_venv_on_the_system_packages(tmp_path: Path) -> None:
    [venv] = [line for line in dry_run(tmp_path, "TORCH=system") if " -m venv " in line]
    assert "--system-site-packages" in venv


@needs_make
def test_a_plain_make_builds_an_isolated_venv(tmp_path: Path) -> None:
    [venv] = [line for line in dry_run(tmp_path) if " -m venv " in line]
    assert "--system-site-packages" not in venv


@needs_make
def test_torch_is_installed_only_when_none_imports(tmp_path: Path) -> None:
    [line] = [line for line in dry_run(tmp_path) if "torch==" in line]
    assert line.index('-c "import torch"') < line.index("||") < line.index("pip install")


def test_no_requirement_pins_a_torch_build() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [torch] = [d for d in deps if d.startswith("torch")]
    assert "==" not in torch and ">=" in torch
    pins = [line for line in (ROOT / "constraints.txt").read_text().splitlines() if line.strip().startswith("torch")]
    assert pins == []


@needs_make
def test_make_test_runs_lint_format_and_type_checks_before_the_suite(tmp_path: Path) -> None:
    out = subprocess.run(
        ["make", "-n", "-B", "test", f"VENV={tmp_path / 'venv'}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    steps = [
        next(i for i, line in enumerate(out) if want in line)
        for want in ("ruff check", "ruff format --check", "bin/mypy", "-m pytest")
    ]
    assert steps == sorted(steps)


def test_the_default_suite_takes_its_tests_in_a_random_order(pytestconfig: pytest.Config) -> None:
    # The flake that stopped a landing depended on request order; a fixed order hides that class.
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(req.startswith("pytest-randomly") for req in dev)
    if pytestconfig.pluginmanager.hasplugin("randomly"):  # absent only under an explicit -p no:randomly
        assert isinstance(pytestconfig.option.randomly_seed, int)
