"""The sandbox worker: runs *untrusted* code, one forked child per sample. Standard library only.

``main`` runs in a fresh interpreter the pool chose (``python -I -S``, started by ``worker.py``
with this package loaded as ``inside``, see its ``__init__``), usually Debian's
``/usr/bin/python3``: the child drops to an unprivileged uid, and that uid must still be able to
import the standard library (pyenv under a 0700 ``/root`` fails that). It never imports rlvr, so
it works whatever the trainer's environment. ``main`` reads the worker's config (JSON) from
``sys.argv[1]``.

Lifecycle:

1. The worker starts as root (or as the user, with a user namespace), unshares a network, a
   mount and an IPC namespace once, covers every top-level directory a sample does not need with
   an empty tmpfs, pre-imports the modules samples commonly use, probes every layer
   (``probing.py``) and reports them in its hello message.
2. For each assert-style sample it mounts a fresh tmpfs workdir and forks two children: the
   *candidate child*, cloned into a new PID and IPC namespace (its pid 1: when it dies the
   kernel kills everything it left behind), which holds the program (``child.serve``); and the
   *test child* (``testchild.main``), which runs the row's test file in real CPython and reaches
   the program only through a proxy over two pipes. Each child places its fds, sets rlimits,
   drops to its own unprivileged uid (the test child's is the candidate's plus
   ``TEST_UID_OFFSET``), sets no-new-privileges, restricts itself with Landlock and seccomp. The
   candidate child holds only its two pipes to the test child: never the job, the result pipe or
   a way to the test child's memory (another uid, outside its PID namespace, ptrace and
   process_vm_readv denied). For a stdin/stdout sample it forks one candidate child per input
   and runs the program as a script (``script.run``).
3. The worker relays with ``splice`` (``relay.py``; it never reads a job or an answer into its own memory, so
   the next child, forked from it, cannot find one), enforces the wall-clock deadline whatever
   the children do with their pipes, decides an output cap the moment it is crossed, kills the
   children, and reports how the session ended as *it* measured it: CPU time and peak memory
   from ``wait4``.

Framing on stdin/stdout: a 1-byte type, a 4-byte big-endian length, the payload (see
``write_frame``).
"""

from __future__ import annotations

import _sitebuiltins
import builtins
import fcntl
import gc
import json
import os
import resource
import signal
import struct
import sys
import time
from typing import Any, NoReturn

from . import child, script, testchild  # the children's code, loaded before any directory is hidden
from .isolation import (
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
    writes_only_beneath,
)
from .probing import hidden_dirs, probe_layers, readable_paths
from .relay import discard, fill, pump, read_exact, write_frame

# Modules samples commonly import, loaded once here so the children inherit them. Not threading
# or random (nor queue and statistics, which import them): each registers a fork hook that then
# runs in every child, about 0.8 ms and 0.3 ms of CPU per child here, while few samples use them
# (4 of HumanEval's 164 rows import random, none threading); a sample that does imports its own.
PREIMPORT = (
    "io math re collections itertools functools heapq bisect string typing fractions "
    "decimal operator copy array datetime hashlib textwrap unicodedata dataclasses "
    "enum numbers cmath types ast json reprlib traceback atexit"
).split()
FORK_HOOKED = ("threading", "random")  # the worker never loads them (test_sandbox_pool checks)

MAX_OUTPUT = 4 << 20  # all answers of one sample, bytes
SECCOMP_BPF = b""


# -- the children --------------------------------------------------------------------------------
TEST_UID_OFFSET = 1000  # the test child's uid: the candidate's plus this (never the same uid)
# A child's whole environment, with HOME (its workdir, or / for the test child). The worker takes
# it as its own at start-up, once, and sets HOME before each fork (``home``): clearing and
# refilling os.environ cost each child about 0.25 ms, and even setting one variable there writes
# about 30 pages the child would otherwise share with the worker.
CHILD_ENV = {"PATH": "/nonexistent", "LANG": "C.UTF-8"}
RULESET_FD = 9


def high(fd: int) -> int:
    """``fd`` moved above ``RULESET_FD`` (close-on-exec; the children never exec), in the worker:
    every fd a child is handed comes from here, so ``place_fds`` needs no temporary copies."""
    if fd > RULESET_FD:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, RULESET_FD + 1)
    os.close(fd)
    return moved


NULL_FD = -1  # /dev/null, opened once by the worker (``high``)


def place_fds(want: dict[int, int]) -> None:
    """Make this process's fds exactly ``want`` (target -> source, every source from ``high``),
    with 0-2 on /dev/null unless given; close every other one, by ranges: a few plain system
    calls, none of which can fail on a closed fd (each Python-level step a fresh child takes
    writes pages it shares with the worker)."""
    if NULL_FD <= RULESET_FD or min(want.values(), default=NULL_FD) <= RULESET_FD:
        raise OSError("place_fds: a source fd the worker did not move above the targets")
    for dst in range(3):
        os.dup2(want.get(dst, NULL_FD), dst)
    low = 3
    for dst in sorted(d for d in want if d >= 3):
        os.dup2(want[dst], dst)
        os.closerange(low, dst)
        low = dst + 1
    os.closerange(low, 1 << 16)


def child_main(cfg: dict[str, Any], job_timeout: float, fds: dict[int, int], workdir: str, role: str) -> NoReturn:
    """A sample's child (``role``: ``candidate``, ``test`` or ``script``). Never returns. Order
    matters: rlimits and uid before no-new-privs, then Landlock, then seccomp last (it forbids
    what the earlier steps need)."""
    code = 70
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        test = role == "test"
        ruleset = cfg["ruleset_test"] if test else cfg["ruleset_fd"]
        place_fds({**fds, **({RULESET_FD: ruleset} if ruleset >= 0 else {})})
        if not cfg["pidns"] and not test:
            os.setpgid(0, 0)
        lim = cfg["limits"]
        if cfg["rlimits"]:
            set_rlimits(lim, {"timeout": job_timeout})
        os.chdir("/" if test else workdir)
        uid = cfg["uid"]
        if uid is not None:
            uid += TEST_UID_OFFSET if test else 0
            resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a uid change clears it
        if cfg["nnp"] and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise os_error("no_new_privs")
        if ruleset >= 0:
            restrict_self(RULESET_FD)
            os.close(RULESET_FD)
            if not test:  # and writes only in this sample's own workdir (the worker's ruleset allows the root)
                writes_only_beneath(cfg["landlock"], [workdir], ["/dev/null"])
        if cfg["seccomp"]:
            apply_seccomp(SECCOMP_BPF)
        if role == "candidate":
            child.serve(3, 4)
            code = 0
        elif test:
            testchild.main(3, 4, 5, 6)
            code = 0
        else:
            code = script.run()
    except BaseException:  # noqa: BLE001 - the exit code is reported but decides nothing
        code = 70
    os._exit(code)


def home(path: str) -> None:
    """HOME for the children the worker forks next (a sample's own workdir, or / for the test
    child), set here so that they inherit it."""
    os.environ["HOME"] = path


def make_workdir(cfg: dict[str, Any], seq: int) -> str:
    """A fresh directory per sample: its own size-capped tmpfs when we have a mount namespace
    (removed by one detach, whatever the sample built in it), else a plain directory. Its name
    is unpredictable, and one that exists already is never reused: a folder an earlier sample
    managed to create cannot block or reach this one."""
    while True:
        workdir = f"{cfg['workroot']}/s{seq}-{os.urandom(8).hex()}"
        try:
            os.mkdir(workdir, 0o700)
            break
        except FileExistsError:
            continue
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


MAX_STDOUT = 1 << 20  # a stdin/stdout program's output per input: over it, the case fails
MAX_STDERR = 64 << 10  # its stderr: kept up to here, the rest dropped


def pipe(size: int = 0) -> tuple[int, int]:
    r, w = os.pipe()
    r, w = high(r), high(w)
    if size:
        try:
            fcntl.fcntl(w, F_SETPIPE_SZ, size)
        except OSError:
            pass
    return r, w


def run_tests(cfg: dict[str, Any], ctl: dict[str, Any], seq: int) -> dict[str, Any]:
    """An assert-style sample: the candidate child (new PID namespace) and the test child; the
    job (from the trainer) goes into the test child's fd 3, its records come back as R frames.
    Ends when the test child closes its result pipe, or at the deadline."""
    timeout = float(ctl["timeout"])
    workdir = make_workdir(cfg, seq)
    job_r, job_w = pipe()
    req_r, req_w = pipe(1 << 20)
    ans_r, ans_w = pipe(1 << 20)
    res_r, res_w = pipe()
    t0 = time.monotonic()
    cpid = tpid = -1
    why = "sandbox: the children did not start"
    try:
        home(workdir)
        cpid = fork_sample(cfg["pidns"], cfg["ipcns"])
        if cpid == 0:
            child_main(cfg, timeout, {3: req_r, 4: ans_w}, workdir, "candidate")
        home("/")
        tpid = os.fork()
        if tpid == 0:
            child_main(cfg, timeout, {3: job_r, 4: req_w, 5: ans_r, 6: res_w}, workdir, "test")
        for fd in (job_r, req_r, req_w, ans_r, ans_w, res_w):
            os.close(fd)
        head = read_exact(0, 5)
        n = struct.unpack(">I", head[1:])[0] if head else 0
        why = pump(t0 + timeout, n, job_w, {res_r: [b"R", MAX_OUTPUT, 0]}, None)
    finally:
        cu = tu = None
        cstatus = tstatus = 0
        if cpid > 0:
            _kill(cpid, cfg["pidns"])
            _, cstatus, cu = os.wait4(cpid, 0)
            if not cfg["pidns"]:
                _kill(cpid, False)
        if tpid > 0:
            _kill(tpid, False, group=False)
            _, tstatus, tu = os.wait4(tpid, 0)
        os.close(res_r)
        remove_workdir(cfg, workdir)
    cpu = cu.ru_utime + cu.ru_stime if cu else 0.0
    if why == "" and cpu >= timeout:
        why = "timeout"  # the CPU limit was hit: measured by the kernel, not claimed
    return {
        "why": why or "ended",
        "wall": time.monotonic() - t0,
        "cpu": cpu,
        "tcpu": tu.ru_utime + tu.ru_stime if tu else 0.0,
        "faults": cu.ru_minflt if cu else 0,
        "tfaults": tu.ru_minflt if tu else 0,
        "maxrss": cu.ru_maxrss * 1024 if cu else 0,
        "status": exit_desc(cstatus),
        "tstatus": exit_desc(tstatus),
    }


def run_stdio(cfg: dict[str, Any], ctl: dict[str, Any], seq: int) -> dict[str, Any]:
    """A stdin/stdout sample: one fresh child per input (``python prog.py < input``), its stdout
    and stderr relayed as O and E frames, then a C frame saying how that case ended."""
    timeout = float(ctl["timeout"])
    cap = min(int(ctl.get("cap", MAX_STDOUT)), MAX_OUTPUT)
    workdir = make_workdir(cfg, seq)
    t0 = time.monotonic()
    # One timeout per input (a slow first input does not eat the next one's time), under the
    # row's total (every input's timeout), which the trainer's own deadline also follows.
    deadline = t0 + float(ctl.get("total", timeout))
    why, cpu, maxrss = "ended", 0.0, 0
    try:
        for _ in range(int(ctl.get("cases", 0))):
            head = read_exact(0, 5)
            if head is None:
                break
            n = struct.unpack(">I", head[1:])[0]
            if time.monotonic() >= deadline:
                discard(0, n)
                why = "timeout"
                break
            case_deadline = min(time.monotonic() + timeout, deadline)
            # The frame: the program's length (4 bytes), the program, the input. Both go into
            # sealed files (the input is fd 0, a regular file as a judge gives it: size, seek,
            # mmap), moved by splice, never read into this process.
            head4 = read_exact(0, 4) if n >= 4 else None
            n_prog = min(struct.unpack(">I", head4)[0], n - 4) if head4 else 0
            src, inp = sealed_file("program"), sealed_file("stdin")
            try:
                got = bool(head4) and fill(src, n_prog, case_deadline)
                if head4 and not got:
                    discard(0, n - 4 - n_prog)  # the rest of the frame: the next one starts after it
                got = got and fill(inp, n - 4 - n_prog, case_deadline)
                seal(src)
                seal(inp)
            except BaseException:
                os.close(src)
                os.close(inp)
                raise
            if not got:
                os.close(src)
                os.close(inp)
                why = "timeout"
                break
            out_r, out_w = pipe(1 << 20)
            err_r, err_w = pipe()
            home(workdir)
            pid = fork_sample(cfg["pidns"], cfg["ipcns"])
            if pid == 0:
                child_main(cfg, timeout, {0: inp, 1: out_w, 2: err_w, 3: src}, workdir, "script")
            for fd in (inp, src, out_w, err_w):
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            try:
                case_why = pump(case_deadline, 0, -1, {out_r: [b"O", cap, 0], err_r: [b"E", -MAX_STDERR, 0]}, pidfd)
            finally:
                _kill(pid, cfg["pidns"])
                _, status, usage = os.wait4(pid, 0)
                if not cfg["pidns"]:
                    _kill(pid, False)
                for fd in (out_r, err_r, pidfd):
                    os.close(fd)
            c = usage.ru_utime + usage.ru_stime
            cpu += c
            maxrss = max(maxrss, usage.ru_maxrss * 1024)
            if case_why == "" and c >= timeout:
                case_why = "timeout"
            case = {"why": case_why or "exited", "status": exit_desc(status), "maxrss": usage.ru_maxrss * 1024}
            write_frame(b"C", json.dumps(case).encode())
            if case_why == "timeout":
                why = "timeout"
                break
    finally:
        remove_workdir(cfg, workdir)
    return {"why": why, "wall": time.monotonic() - t0, "cpu": cpu, "maxrss": maxrss, "status": ""}


def sealed_file(name: str) -> int:
    """An anonymous file in memory (not the sample's workdir, whose space is the program's)."""
    return high(os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING))


def seal(fd: int) -> None:
    """No write, growth or shrinking from now on (fd 0 of a case is its input, as given), and
    back at offset 0."""
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
    os.lseek(fd, 0, os.SEEK_SET)


def exit_desc(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"signal:{signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit:{os.WEXITSTATUS(status)}"


def _kill(pid: int, pidns: bool, group: bool = True) -> None:
    try:
        if pidns or not group:
            os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: the kernel kills the rest
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    """Start the worker: set up the namespaces, probe the layers, say hello, serve sessions."""
    global SECCOMP_BPF, NULL_FD
    cfg = json.loads(sys.argv[1])
    sys.argv[:] = [""]  # every child's sys.argv, set once here
    # python -S has no exit() or quit(); programs (and tests) call them.
    builtins.exit = _sitebuiltins.Quitter("exit", "Ctrl-D (i.e. EOF)")
    builtins.quit = _sitebuiltins.Quitter("quit", "Ctrl-D (i.e. EOF)")
    for name in PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass
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
    cfg["ruleset_fd"] = cfg["ruleset_test"] = -1
    if cfg["landlock"]:
        cfg["ruleset_fd"] = high(build_ruleset(cfg["landlock"], cfg["readable"], [cfg["workroot"], "/dev/null"]))
        cfg["ruleset_test"] = high(build_ruleset(cfg["landlock"], cfg["readable"], ["/dev/null"]))
    NULL_FD = high(os.open("/dev/null", os.O_RDWR))
    layers["workdir"] = (
        "active: a fresh tmpfs per sample, capped"
        if cfg["tmpfs_per_sample"]
        else "unavailable: a plain directory per sample (no mount namespace)"
    )
    layers["python"] = f"{sys.executable} {sys.version.split()[0]}"
    os.environ.clear()
    os.environ.update(CHILD_ENV)
    # Everything the worker holds now is shared with every child: keep the collector off it, so
    # a child's collections do not touch (and copy) those pages.
    gc.collect()
    gc.freeze()
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
            status = (run_stdio if ctl.get("mode") == "stdio" else run_tests)(cfg, ctl, seq)
        except Exception as exc:  # noqa: BLE001 - the pool maps this to a sandbox error
            status = {"why": f"sandbox:{type(exc).__name__}: {exc}"}
        write_frame(b"S", json.dumps(status).encode())
