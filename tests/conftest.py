"""Suite-wide settings: offline, one thread, and a private cache for built-in models."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("OMP_NUM_THREADS", "1")  # two threads make tiny-model steps erratic
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ.setdefault("RLVR_CACHE", tempfile.mkdtemp(prefix="rlvr-test-cache-"))
