"""The built-in ``python`` tool: the model's code runs as a script in rlvr's sandbox.

Each call is a fresh program (no state kept between calls of an episode): it runs in a worker of
a ``rlvr.sandbox.SandboxPool`` (fresh processes, never forked from the trainer, with every
isolation layer the machine allows; ``docs/sandbox.md`` states the threat model) with an empty
stdin and the environment's per-call ``timeout``. What the model reads back:

- the program's stdout (cut to the tool result limit); a program that printed nothing gets
  ``(no output)``;
- a program that raised or exited non-zero: an error naming the last line of its stderr (the
  exception), after the output it printed;
- a program past its time: an error saying so. The sandbox kills it; the call waits for the pool
  (``GRACE`` seconds above the timeout, for a worker to start) before the episode moves on.

One pool per timeout is started on the first call and closed when the process exits.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable

__all__ = ["GRACE", "python_tool"]

GRACE = 3.0  # seconds a call may take beyond its timeout: a worker's start and the round trip
_POOLS: dict[float, object] = {}
_LOCK = threading.Lock()


def _pool(timeout: float) -> object:
    from ..sandbox import Limits, SandboxPool

    with _LOCK:
        if timeout not in _POOLS:
            pool = SandboxPool(1, Limits(timeout=timeout))
            _POOLS[timeout] = pool
            atexit.register(pool.close)
        return _POOLS[timeout]


def python_tool(timeout: float) -> Callable[..., str]:
    """The ``python`` tool with a per-call ``timeout`` (seconds)."""

    def python(code: str) -> str:
        """Run a Python program in a sandbox and return what it prints. Print every value you need.

        Args:
            code: The whole program, for example "print(sum(range(10)))".
        """
        from ..sandbox import SandboxPool, read_script, script_job

        pool = _pool(timeout)
        assert isinstance(pool, SandboxPool)
        (reply,) = pool.run([script_job(code, "", timeout)])
        result = read_script(reply)
        if result.why == "timeout":
            raise TimeoutError(f"the program ran past {timeout:g} s and was stopped")
        out = result.stdout
        if result.why == "output_limit":
            out += "\n(output cut: the program printed too much)"
        if result.status not in ("exit:0", ""):
            lines = [x for x in result.stderr.strip().splitlines() if x.strip()]
            last = lines[-1] if lines else result.status
            raise RuntimeError((out.rstrip() + "\n" if out.strip() else "") + last)
        if not result.status and not out:
            raise RuntimeError(f"the sandbox could not run the program ({result.why})")
        return out if out else "(no output)"

    python.grace_seconds = GRACE  # type: ignore[attr-defined]
    return python
