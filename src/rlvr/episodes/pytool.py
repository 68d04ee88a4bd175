"""The built-in ``python`` tool: the model's code runs in rlvr's sandbox, a fresh program per
call or, with ``environment.python_session: true``, a session kept over the episode.

Each call runs in a worker of a ``rlvr.sandbox.SandboxPool`` (fresh processes, never forked from
the trainer, with every isolation layer the machine allows; ``docs/sandbox.md`` states the threat
model) with an empty stdin and the environment's per-call ``timeout``. What the model reads back:

- the program's stdout (cut to the tool result limit); a program that printed nothing gets
  ``(no output)``;
- a program that raised or exited non-zero: an error naming the last line of its stderr (the
  exception), after the output it printed;
- a program past its time: an error saying so. The sandbox kills it; the call waits for the pool
  (``GRACE`` seconds above the timeout, for a worker to start) before the episode moves on.

**The session** (``PythonSession``, one per episode, owned by ``environment.ToolSession``) is
kept by *replay*, so the sandbox runs exactly as for a per-call program: each call is ONE
sandboxed script (``session_program``) that first re-runs the episode's earlier cells that
succeeded, in one namespace (a fresh ``__main__``), with fds 1 and 2 pointed at ``/dev/null``
(restored afterwards, and checked to be the same pipes again), then runs the new cell with its
output kept. The cells go into the script as ``repr()`` string literals, never as code text.
Where it departs from a live interpreter, stated:

- a cell that raised (or exited non-zero, or timed out) is not replayed: its partial effects
  (names it bound before the error) are gone, where a live Jupyter kernel keeps them;
- replay is re-execution: ``random`` is seeded once per session, so its draws repeat, but
  ``time``, ``os.urandom``/``secrets``, object ids and the worker's hash seed (``set`` order of
  strings; a replaced worker draws a new one) may differ, and so may anything read from outside;
- a replayed cell that now fails (raises, exits non-zero, ends the process, runs past
  ``timeout``, or closes the descriptors the script keeps its output on, e.g. ``os.closerange``)
  means the session could not be restored: the call answers an error saying so (the
  cell's number and exception class, never its output), the new code does not run, and the
  session starts again empty. A new cell that ends the process (``os._exit``) also resets it;
- ``atexit`` handlers never run (a session has no end); non-daemon threads are joined after each
  cell (their output belongs to that cell); fds 1 and 2 are pointed back at the script's output
  after the replay and after the new cell, so a cell that redirected them hid only its own
  output. A new cell that closes the descriptors the script keeps (``os.closerange``) fails and
  is not kept. A cell's own ``SIGALRM``/``ITIMER_REAL`` replaces the script's timer (the
  sandbox's limit still holds);
- what the model reads is only what was written after the replay: everything before the
  script's per-call marker (a fresh random nonce) is dropped, so replayed output, even written on
  a descriptor a replayed cell found, does not reach it. A daemon thread an earlier cell left
  running can still write into a later call: text the episode's own code produced, nothing
  from outside it;
- time: the new cell gets ``timeout`` (a timer inside the script); each replayed cell gets
  ``timeout`` too, so a call's script runs at most ``timeout x (cells + 1)`` (the sandbox's own
  limit, ``SLACK`` above it, stops code that disables the timer). A call therefore costs the time
  of every earlier successful cell, and the sandbox moves the text of every cell again: slow or
  huge cells make later calls slow.

One pool per timeout is started on the first call and closed when the process exits.
"""

from __future__ import annotations

import atexit
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "GRACE",
    "SLACK",
    "CellOutcome",
    "PythonSession",
    "python_session_tool",
    "python_tool",
    "run_cell",
    "session_program",
]

GRACE = 3.0  # seconds a call may take beyond its timeout: a worker's start and the round trip
SLACK = 1.0  # seconds the sandbox's limit on a session script lies above the script's own timers
_POOLS: dict[float, object] = {}
_LOCK = threading.Lock()
# The session script's own exit statuses (literals in _WRAPPER; 86, the replay failed, is read from its message).
_TIMEOUT = 124  # the new cell ran past its time
_CLOSED = 87  # the new cell closed or replaced the descriptors the script keeps its output on


def _pool(timeout: float) -> object:
    from ..sandbox import Limits, SandboxPool

    with _LOCK:
        if timeout not in _POOLS:
            pool = SandboxPool(1, Limits(timeout=timeout))
            _POOLS[timeout] = pool
            atexit.register(pool.close)
        return _POOLS[timeout]


def _run_script(code: str, timeout: float, job_timeout: float) -> object:
    from ..sandbox import SandboxPool, read_script, script_job

    pool = _pool(timeout)
    assert isinstance(pool, SandboxPool)
    (reply,) = pool.run([script_job(code, "", job_timeout)])
    return read_script(reply)


def python_tool(timeout: float) -> Callable[..., str]:
    """The ``python`` tool with a per-call ``timeout`` (seconds)."""

    def python(code: str) -> str:
        """Run a Python program in a sandbox and return what it prints. Print every value you need.

        Args:
            code: The whole program, for example "print(sum(range(10)))".
        """
        from ..sandbox import ScriptResult

        result = _run_script(code, timeout, timeout)
        assert isinstance(result, ScriptResult)
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


# The script of one session call. Trusted text: the model's cells reach it only as repr() string
# literals in the last line (``session_program``). Everything the wrapper calls is bound before
# any cell runs, so a cell that rebinds os.dup2, a builtin or an exception class changes its own
# namespace, not the wrapper's. Statuses of its own: 86, the session could not be restored; 87,
# the new cell closed the descriptors the script keeps its output on; 124, the new cell ran past
# its time (os._exit from the timer's handler, which no except clause can catch; SIG_DFL would not
# do: the script is pid 1 of its PID namespace, and such a process ignores it). A cell can end
# with these statuses itself; it only misleads its own session.
_WRAPPER = r"""
def _rlvr_session(cells, cell, timeout, seed, begin, end):
    import atexit, builtins, os, random, signal, sys, threading, traceback, types

    dup, dup2, close, fstat, write, quit_now = os.dup, os.dup2, os.close, os.fstat, os.write, os._exit
    arm, on_signal, alrm, real = signal.setitimer, signal.signal, signal.SIGALRM, signal.ITIMER_REAL
    run, compile_, threads, main_thread = exec, compile, threading.enumerate, threading.main_thread()
    clear_atexit, format_exc, base_exc, sys_exit = atexit._clear, traceback.format_exception, BaseException, SystemExit
    isint, text = isinstance, str
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    random.seed(seed)
    streams = (sys.stdout, sys.stderr)

    def flush():
        for s in (sys.stdout, sys.stderr) + streams:
            try:
                s.flush()
            except base_exc:
                pass

    def settle():  # join the non-daemon threads the cell started, as python does at exit
        for t in threads():
            if t is not main_thread and not t.daemon:
                t.join()

    def status_of(exc):  # as python reports SystemExit (rlvr.sandbox.inside.script.exit_status)
        code = exc.code
        if code is None:
            return 0, ""
        if isint(code, int):
            return code & 0xFF, ""
        try:
            return 1, text(code) + "\n"
        except base_exc:
            return 1, ""

    def lost(why):
        try:
            write(saved[1], ("the session could not be restored: " + why + "\n").encode())
        finally:
            quit_now(86)

    ident = [(fstat(fd).st_dev, fstat(fd).st_ino) for fd in (1, 2)]
    saved = [dup(1), dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    flush()
    dup2(null, 1)
    dup2(null, 2)
    for i, source in enumerate(cells, 1):
        on_signal(alrm, lambda *_, i=i: lost("earlier cell %d ran past %g s" % (i, timeout)))
        arm(real, timeout)
        try:
            run(compile_(source, "<cell>", "exec"), main.__dict__)
            settle()
        except sys_exit as exc:
            if status_of(exc)[0]:
                lost("earlier cell %d now exits with status %d" % (i, status_of(exc)[0]))
        except base_exc as exc:
            lost("earlier cell %d now raises %s" % (i, type(exc).__name__))
        arm(real, 0)
        flush()
    clear_atexit()
    flush()
    def restore():
        dup2(saved[0], 1)
        dup2(saved[1], 2)
        if [(fstat(fd).st_dev, fstat(fd).st_ino) for fd in (1, 2)] != ident:
            raise OSError

    try:
        restore()
        close(null)
    except base_exc:
        lost("an earlier cell closed or replaced the script's output")
    write(1, begin)
    write(2, begin)
    on_signal(alrm, lambda *_: quit_now(124))
    arm(real, timeout)
    status, message = 0, ""
    try:
        run(compile_(cell, "<cell>", "exec"), main.__dict__)
        settle()
    except sys_exit as exc:
        status, message = status_of(exc)
    except base_exc as exc:
        status = 1
        try:
            message = "".join(format_exc(type(exc), exc, exc.__traceback__.tb_next if exc.__traceback__ else None))
        except base_exc:
            message = type(exc).__name__ + "\n"
    arm(real, 0)
    clear_atexit()
    flush()
    try:
        restore()  # a cell that pointed fd 1 or 2 elsewhere hid its own output, not the error or the marker
    except base_exc:
        quit_now(87)
    if message:
        write(2, message.encode("utf-8", "backslashreplace"))
    write(1, end)
    return status


"""


def session_program(cells: Sequence[str], code: str, timeout: float, seed: int, nonce: str) -> str:
    """The script of one session call: replay ``cells`` with their output discarded, then run
    ``code``; its output is framed by markers made of ``nonce`` (see ``run_cell``). Model text
    appears only inside ``repr()`` string literals (a valid literal for any string)."""
    args = (tuple(_as_run(c) for c in cells), _as_run(code), float(timeout), int(seed))
    begin, end = _markers(nonce)
    call = ", ".join(repr(a) for a in (*args, begin.encode(), end.encode()))
    return _WRAPPER + f"raise SystemExit(_rlvr_session({call}))\n"


def _as_run(code: str) -> str:
    # What a per-call program becomes on its way into the sandbox (script_job encodes with
    # surrogatepass, the child decodes with replace): the session runs the same text.
    return code.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _markers(nonce: str) -> tuple[str, str]:
    return f"\x00rlvr-{nonce}-begin\x00", f"\x00rlvr-{nonce}-end\x00"


@dataclass(frozen=True)
class CellOutcome:
    """One session call: ``kind`` is ``ok`` (``text`` is the answer), ``failed`` or ``timeout``
    (the cell is not kept; ``text`` is the error) or ``lost`` (the session could not go on and
    starts again empty; ``text`` is the error)."""

    kind: str
    text: str


_RESET = "the session was reset: names from earlier calls are gone"


def run_cell(cells: Sequence[str], code: str, timeout: float, seed: int) -> CellOutcome:
    """Run ``code`` after replaying ``cells`` (the session's earlier successful cells), in one
    sandboxed script; what the model reads and what becomes of the session."""
    from ..sandbox import ScriptResult

    nonce = secrets.token_hex(16)
    begin, end = _markers(nonce)
    program = session_program(cells, code, timeout, seed, nonce)
    result = _run_script(program, timeout, timeout * (len(cells) + 1) + SLACK)
    assert isinstance(result, ScriptResult)
    out, err, status = result.stdout, result.stderr, result.status
    at = out.rfind(begin)
    if at < 0:  # the replay did not finish
        if not status and result.why != "timeout":
            return CellOutcome("failed", f"the sandbox could not run the program ({result.why})")
        if result.why == "timeout" and not cells:
            return CellOutcome("timeout", f"the program ran past {timeout:g} s and was stopped")
        if result.why == "timeout":
            why = f"the session could not be restored: replaying the earlier cells ran past {timeout:g} s each"
        else:
            said = [x for x in err.splitlines() if x.startswith("the session could not be restored: ")]
            why = said[-1] if said else f"the session could not be restored: the replay ended with {status}"
        return CellOutcome("lost", f"{why}; {_RESET}; this code did not run")
    out = out[at + len(begin) :]
    ended = out.rfind(end)
    if ended >= 0:
        out = out[:ended]
    if err.rfind(begin) >= 0:
        err = err[err.rfind(begin) + len(begin) :]
    if result.why == "timeout" or (ended < 0 and status == f"exit:{_TIMEOUT}"):
        return CellOutcome("timeout", f"the program ran past {timeout:g} s and was stopped")
    shown = out.rstrip() + "\n" if out.strip() else ""
    if result.why == "output_limit":
        return CellOutcome("failed", out + "\n(output cut: the program printed too much)")
    if ended < 0 and status == f"exit:{_CLOSED}":
        return CellOutcome("failed", f"{shown}the code closed the descriptors the script writes its output on")
    if ended < 0:
        return CellOutcome("lost", f"{shown}the code ended the Python process ({status}); {_RESET}")
    if status != "exit:0":
        lines = [x for x in err.strip().splitlines() if x.strip()]
        return CellOutcome("failed", shown + (lines[-1] if lines else status))
    return CellOutcome("ok", out if out else "(no output)")


class PythonSession:
    """The ``python`` tool of one episode in session mode (see the module docstring): call it as
    the tool (``session(code=...)``); the cells that succeeded are kept in ``cells`` and replayed
    before the next one; ``reset`` starts a new episode. Only calls started since the last
    ``reset``/``abandon`` change the cells, so a call the toolbox gave up on (timeout) that
    finishes late changes nothing."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.cells: list[str] = []
        self.seed = secrets.randbits(63)  # random.seed of every script of this session
        self._epoch = 0
        self._lock = threading.Lock()

    @property
    def grace_seconds(self) -> float:
        # Read by ToolBox.call when it waits for a call: the replay's time comes on top of the timeout.
        return GRACE + SLACK + self.timeout * len(self.cells)

    def reset(self) -> None:
        with self._lock:
            self.cells, self.seed, self._epoch = [], secrets.randbits(63), self._epoch + 1

    def abandon(self, keep: int) -> None:
        """Keep only the first ``keep`` cells and ignore every call still running."""
        with self._lock:
            del self.cells[keep:]
            self._epoch += 1

    def __call__(self, code: str) -> str:
        with self._lock:
            cells, seed, epoch = tuple(self.cells), self.seed, self._epoch
        outcome = run_cell(cells, code, self.timeout, seed)
        with self._lock:
            if self._epoch == epoch and outcome.kind == "ok":
                self.cells.append(code)
            elif self._epoch == epoch and outcome.kind == "lost":
                self.cells, self.seed, self._epoch = [], secrets.randbits(63), self._epoch + 1
        if outcome.kind == "ok":
            return outcome.text
        raise (TimeoutError if outcome.kind == "timeout" else RuntimeError)(outcome.text)


def python_session_tool(timeout: float) -> Callable[..., str]:
    """The ``python`` tool of a session task, as the toolbox lists it (its schema): outside an
    episode's ``ToolSession`` each call is a session of one call; a ``ToolSession`` calls its
    own ``PythonSession`` under this schema."""

    def python(code: str) -> str:
        """Run Python code in a sandbox and return what it prints. Print every value you need.
        Variables, functions and imports defined by earlier successful calls stay defined.

        Args:
            code: The code to run, for example "x = 6 * 7" and, in a later call, "print(x)".
        """
        return PythonSession(timeout)(code)

    python.grace_seconds = GRACE + SLACK  # type: ignore[attr-defined]
    return python
