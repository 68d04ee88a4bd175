"""The sandbox worker: runs *untrusted* code, one forked child per sample. Standard library only.

This file is executed as a script (``python -I -S harness.py WORKER_CONFIG_JSON``) by an
interpreter the pool chose, usually Debian's ``/usr/bin/python3``: the child drops to an
unprivileged uid, and that uid must still be able to import the standard library (pyenv under a
0700 ``/root`` fails that). It never imports rlvr, so it works whatever the trainer's environment.

Lifecycle:

1. The worker starts as root (or as the user, with a user namespace), unshares a network, a
   mount and an IPC namespace once, covers every top-level directory a sample does not need with
   an empty tmpfs, pre-imports the modules samples commonly use, probes every layer
   (``probing.py``) and reports them in its hello message.
2. For each sample it mounts a fresh tmpfs workdir and clones one child into a new PID and IPC
   namespace (the child is its pid 1: when it dies the kernel kills every process it left
   behind). The child closes every inherited fd, sets rlimits, drops to the slot's uid, sets
   no-new-privileges, restricts itself with Landlock and seccomp, then serves operations
   (``child.py``): the trusted side sends them, the child answers each with plain data.
3. The worker relays both ways with ``splice`` (it never reads a job or an answer into its own
   memory, so the next child, forked from it, cannot find one), enforces the wall-clock deadline
   whatever the child does with its pipes, kills the child (and so its namespace), and reports
   how the session ended as *it* measured it: CPU time and peak memory from ``wait4``.

Framing on stdin/stdout: a 1-byte type, a 4-byte big-endian length, the payload (see
``write_frame``).
"""

from __future__ import annotations

import fcntl
import json
import os
import resource
import select
import signal
import struct
import sys
import termios
import time
from typing import Any, NoReturn

# Run as a script with -I (no script directory on sys.path): find the sibling module by path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import child as child_module  # noqa: E402 - the child's side, loaded before any directory is hidden
from isolation import (  # noqa: E402
    F_SETPIPE_SZ,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    apply_seccomp,
    build_ruleset,
    detach,
    fork_sample,
    libc,
    mount_tmpfs,
    os_error,
    restrict_self,
    set_rlimits,
    setup_namespaces,
    vmsize,
)
from probing import hidden_dirs, probe_layers, readable_paths  # noqa: E402

sys.path[:] = [p for p in sys.path if p not in (_HERE, "")]  # samples import nothing from here

# Modules samples commonly import, loaded once here so the children inherit them (fast, and
# importable even where the uid could not read the interpreter's files).
PREIMPORT = (
    "io math re collections itertools functools heapq bisect string typing random fractions "
    "decimal operator copy statistics array datetime hashlib textwrap unicodedata dataclasses "
    "enum numbers cmath queue threading types"
).split()

MAX_FRAME = 1 << 20  # one answer from the child, bytes
MAX_OUTPUT = 4 << 20  # all answers of one sample, bytes
SECCOMP_BPF = b""
CHILD: Any = None  # the child module, imported before the host directories are hidden


# -- framing with the pool: 1-byte type, 4-byte big-endian length, payload ----------------------
# Trainer -> worker: J (session control JSON: only the timeout), D (data for the child: spliced
# from our stdin into the child's pipe, never read into this process), E (end the session).
# Worker -> trainer: H (hello), C (one answer of the child: spliced likewise), S (session status).
# The worker therefore never holds a job, a program or an answer in its memory, and the next
# child, forked from it, cannot find one there.
def write_frame(kind: bytes, payload: bytes) -> None:
    """One frame to the trainer, on stdout."""
    data = kind + struct.pack(">I", len(payload)) + payload
    while data:
        data = data[os.write(1, data) :]


def read_exact(fd: int, n: int) -> bytes | None:
    """Exactly ``n`` bytes from ``fd``, or None at end of file."""
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def discard(fd: int, n: int) -> None:
    """Move ``n`` bytes from ``fd`` to /dev/null without reading them into this process."""
    null = os.open("/dev/null", os.O_WRONLY)
    try:
        while n > 0:
            moved = os.splice(fd, null, n)
            if moved <= 0:
                return
            n -= moved
    finally:
        os.close(null)


# -- the child -----------------------------------------------------------------------------------
def child_main(cfg: dict[str, Any], job_timeout: float, rfd: int, wfd: int, workdir: str) -> NoReturn:
    """Never returns. Order matters: rlimits and uid before no-new-privs, then Landlock, then
    seccomp last (it forbids what the earlier steps need)."""
    code = 70
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = sorted(fd for fd in (rfd, wfd, cfg["ruleset_fd"]) if fd >= 0)
        start = 3
        for fd in keep:
            os.closerange(start, fd)
            start = fd + 1
        os.closerange(start, 1 << 16)
        if not cfg["pidns"]:
            os.setpgid(0, 0)
        lim = cfg["limits"]
        if cfg["rlimits"]:
            set_rlimits(lim, {"timeout": job_timeout})
        os.chdir(workdir)
        if cfg["uid"] is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
            os.setgroups([])
            os.setresgid(cfg["uid"], cfg["uid"], cfg["uid"])
            os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a uid change clears it
        if cfg["nnp"] and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise os_error("no_new_privs")
        if cfg["ruleset_fd"] >= 0:
            restrict_self(cfg["ruleset_fd"])
            os.close(cfg["ruleset_fd"])
        if cfg["seccomp"]:
            apply_seccomp(SECCOMP_BPF)
        os.environ.clear()
        os.environ.update({"HOME": workdir, "PATH": "/nonexistent", "LANG": "C.UTF-8"})
        CHILD.Child(rfd, wfd).serve()
        code = 0
    except BaseException:  # noqa: BLE001 - the exit code is reported but decides nothing
        code = 70
    os._exit(code)


def make_workdir(cfg: dict[str, Any], seq: int) -> str:
    """A fresh directory per sample: its own size-capped tmpfs when we have a mount namespace
    (removed by one detach, whatever the sample built in it), else a plain directory."""
    workdir = f"{cfg['workroot']}/s{seq}"
    os.mkdir(workdir, 0o700)
    if cfg["tmpfs_per_sample"]:
        opts = f"size={cfg['limits']['workdir_bytes']},nr_inodes=4096,mode=0700"
        if cfg["uid"] is not None:
            opts += f",uid={cfg['uid']},gid={cfg['uid']}"
        if mount_tmpfs(workdir, opts) != 0:
            os.rmdir(workdir)
            raise OSError("could not mount the sample's tmpfs")
    elif cfg["uid"] is not None:
        os.chown(workdir, cfg["uid"], cfg["uid"])
    return workdir


def remove_workdir(cfg: dict[str, Any], workdir: str) -> None:
    """Remove a sample's workdir, whatever the sample left in it."""
    if cfg["tmpfs_per_sample"]:
        detach(workdir)
        os.rmdir(workdir)
    else:
        remove_tree(workdir)


def remove_tree(top: str) -> None:
    """Delete a directory tree without recursion and without long paths (a sample can nest it
    thousands deep): walk down by directory fd, one level open at a time."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(top, flags)
    except FileNotFoundError:
        return
    names: list[str] = []
    while True:
        sub: str | None = None
        with os.scandir(fd) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    sub = e.name
                    break
                os.unlink(e.name, dir_fd=fd)
        if sub is not None:
            nfd = os.open(sub, flags, dir_fd=fd)
            os.close(fd)
            fd = nfd
            names.append(sub)
            continue
        if not names:
            os.close(fd)
            os.rmdir(top)
            return
        parent = os.open("..", flags, dir_fd=fd)
        os.close(fd)
        fd = parent
        os.rmdir(names.pop(), dir_fd=fd)


def run_sample(cfg: dict[str, Any], ctl: dict[str, Any], seq: int) -> dict[str, Any]:
    """One session: fork the child, relay frames both ways until the trainer ends it, the child
    ends, or the deadline passes; then report how it ended, as measured here."""
    timeout = float(ctl["timeout"])
    workdir = make_workdir(cfg, seq)
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        fcntl.fcntl(out_r, F_SETPIPE_SZ, MAX_FRAME)
    except OSError:
        pass
    t0 = time.monotonic()
    pid = fork_sample(cfg["pidns"], cfg["ipcns"])
    if pid == 0:
        os.close(in_w)
        os.close(out_r)
        child_main(cfg, timeout, in_r, out_w, workdir)
    os.close(in_r)
    os.close(out_w)
    pidfd = os.pidfd_open(pid)
    os.set_blocking(in_w, False)
    os.set_blocking(out_r, False)
    deadline = t0 + timeout
    why: str | None = None
    ended = False  # the trainer said E
    inbound = 0  # bytes of the current D frame still to move into the child's pipe
    inbound_head = b""  # length prefix still to write into the child's pipe
    total_out = 0
    out_eof = False
    child_gone = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = why or "timeout"
                break
            if ended and why is None:
                why = "ended"
                break
            if out_eof:
                # The child closed its answer pipe (or died): nothing more can come back.
                why = why or ("exited" if child_gone else "closed")
                break
            rl: list[int] = []
            wl: list[int] = []
            if not ended and inbound == 0 and not inbound_head:
                rl.append(0)
            if inbound or inbound_head:
                wl.append(in_w)
            if not out_eof:
                rl.append(out_r)
            if not child_gone:
                rl.append(pidfd)
            r, w, _ = select.select(rl, wl, [], left)
            if pidfd in r:
                child_gone = True
            if out_r in r:
                sent = _pump_out(out_r)
                if sent is None:
                    out_eof = True
                else:
                    total_out += sent
                    if total_out > MAX_OUTPUT:
                        why = "output_limit"
                        break
            if in_w in w:
                try:
                    if inbound_head:
                        inbound_head = inbound_head[os.write(in_w, inbound_head) :]
                    elif inbound:
                        inbound -= os.splice(0, in_w, inbound, flags=os.SPLICE_F_NONBLOCK)
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    discard(0, inbound)
                    inbound, inbound_head = 0, b""
            if 0 in r and inbound == 0 and not inbound_head:
                head = read_exact(0, 5)
                if head is None:
                    ended = True
                    continue
                kind, n = head[:1], struct.unpack(">I", head[1:])[0]
                if kind == b"D":
                    if child_gone:
                        discard(0, n)
                    else:
                        inbound, inbound_head = n, struct.pack(">I", n)
                elif kind == b"E":
                    ended = True
                else:
                    discard(0, n)
    finally:
        _kill(pid, cfg["pidns"])
        _, status, usage = os.wait4(pid, 0)
        if not cfg["pidns"]:
            _kill(pid, False)  # leftovers in its process group
        if inbound:
            discard(0, inbound)
        # What is still in the pipe (written before the end) goes to the trainer.
        while why != "output_limit" and total_out <= MAX_OUTPUT:
            sent = _pump_out(out_r)
            if not sent:
                break
            total_out += sent
        for fd in (in_w, out_r, pidfd):
            os.close(fd)
        remove_workdir(cfg, workdir)
    wall = time.monotonic() - t0
    cpu = usage.ru_utime + usage.ru_stime
    if why in ("ended", "exited") and cpu >= timeout:
        why = "timeout"  # the CPU limit was hit: measured by the kernel, not claimed
    if os.WIFSIGNALED(status):
        exit_desc = f"signal:{signal.Signals(os.WTERMSIG(status)).name}"
    else:
        exit_desc = f"exit:{os.WEXITSTATUS(status)}"
    return {"why": why, "wall": wall, "cpu": cpu, "maxrss": usage.ru_maxrss * 1024, "status": exit_desc}


def _pump_out(fd: int) -> int | None:
    """Forward what the child wrote to the trainer, as it comes (the trainer splits it into
    answers). Returns the bytes forwarded, or None at end of file."""
    avail = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
    if avail <= 0:
        try:
            if os.read(fd, 1) == b"":
                return None
        except BlockingIOError:
            return 0
        return None  # unreachable: FIONREAD said the pipe was empty
    avail = min(avail, MAX_FRAME)
    os.write(1, b"R" + struct.pack(">I", avail))
    n = avail
    while n:
        try:
            n -= os.splice(fd, 1, n)
        except BlockingIOError:
            select.select([], [1], [])  # the trainer is behind: wait until our stdout has room
    return avail


def _kill(pid: int, pidns: bool) -> None:
    try:
        if pidns:
            os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: the kernel kills the rest
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    """Start the worker: set up the namespaces, probe the layers, say hello, serve sessions."""
    global CHILD, SECCOMP_BPF
    cfg = json.loads(sys.argv[1])
    for name in PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass
    CHILD = child_module
    layers: dict[str, str] = {}
    cfg["readable"] = readable_paths()
    cfg["limits"]["vmsize"] = vmsize()  # before /proc is hidden
    # Never hide the directory the interpreter lives in (pyenv under /root): later imports would fail.
    prefix = os.path.realpath(sys.prefix)
    if "netns" in cfg["enable"] or "mountns" in cfg["enable"]:
        setup_namespaces(layers, hidden_dirs(prefix))
    else:
        layers["netns"] = layers["mountns"] = layers["ipcns"] = "unavailable: disabled"
    mounted = layers["mountns"].startswith("active")
    # Workdirs live on a tmpfs: our private /tmp inside the mount namespace, else /dev/shm
    # (a disk-backed /tmp costs milliseconds per sample in mkdir and rmtree).
    if mounted and "/tmp" in layers["mountns"]:
        cfg["workroot"] = "/tmp/rlvr-sandbox"
    elif os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        cfg["workroot"] = f"/dev/shm/rlvr-sandbox-{os.getpid()}"
    else:
        cfg["workroot"] = f"/tmp/rlvr-sandbox-{os.getpid()}"
    os.makedirs(cfg["workroot"], exist_ok=True)
    os.chmod(cfg["workroot"], 0o711)
    cfg["tmpfs_per_sample"] = False
    if mounted:
        probe_dir = cfg["workroot"] + "/probe"
        os.mkdir(probe_dir)
        if mount_tmpfs(probe_dir, "size=1m,nr_inodes=16,mode=0700") == 0:
            detach(probe_dir)
            cfg["tmpfs_per_sample"] = True
        os.rmdir(probe_dir)
    SECCOMP_BPF = probe_layers(cfg, layers)
    cfg["ruleset_fd"] = -1
    if cfg["landlock"]:
        cfg["ruleset_fd"] = build_ruleset(cfg["landlock"], cfg["readable"], [cfg["workroot"], "/dev/null"])
    layers["workdir"] = (
        "active: a fresh tmpfs per sample, capped"
        if cfg["tmpfs_per_sample"]
        else "unavailable: a plain directory per sample (no mount namespace)"
    )
    layers["python"] = f"{sys.executable} {sys.version.split()[0]}"
    write_frame(b"H", json.dumps({"hello": layers, "pid": os.getpid()}).encode())
    seq = 0
    while True:
        head = read_exact(0, 5)
        if head is None:
            remove_tree(cfg["workroot"])
            return
        kind, n = head[:1], struct.unpack(">I", head[1:])[0]
        if kind != b"J":
            discard(0, n)  # data for a session that already ended
            continue
        ctl = json.loads(read_exact(0, n) or b"{}")
        seq += 1
        try:
            status = run_sample(cfg, ctl, seq)
        except Exception as exc:  # noqa: BLE001 - the pool maps this to a sandbox error
            status = {"why": f"sandbox:{type(exc).__name__}: {exc}"}
        write_frame(b"S", json.dumps(status).encode())


if __name__ == "__main__":
    main()
