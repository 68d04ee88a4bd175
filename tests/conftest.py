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

# One rule for every property test, instead of a `deadline=None` on each: a loaded CI machine must
# never fail a property on time (hypothesis' default 200 ms deadline is a timing flake), and a
# failure prints the example's reproduction blob so it can be replayed exactly.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("rlvr", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rlvr")


def pytest_terminal_summary(terminalreporter, config) -> None:  # type: ignore[no-untyped-def]
    """Name the order this run took (pytest-randomly shuffles modules and tests on every run), above
    pytest's summary line, so a failure that depends on order can be replayed."""
    seed = getattr(config.option, "randomly_seed", None)
    if isinstance(seed, int):
        terminalreporter.write_line(
            f"test order: random, seed {seed} (replay: python -m pytest --randomly-seed={seed})"
        )
