"""The sandbox worker: runs *untrusted* code, one forked child per sample. Standard library only.

This file is executed as a script (``python -I -S harness.py WORKER_CONFIG_JSON``) by an
interpreter the pool chose, usually Debian's ``/usr/bin/python3``: the child drops to an
unprivileged uid, and that uid must still be able to import the standard library (pyenv under a
0700 ``/root`` fails that). It never imports rlvr, so it works whatever the trainer's environment.

Lifecycle:

1. The worker starts as root (or as the user, with a user namespace), unshares a network and a
   mount namespace once, mounts tmpfs over /tmp, /run, /dev/shm, /home and /root, pre-imports the
   modules samples commonly use, probes every layer and reports them in its hello message.
2. For each job it clones one child into a new PID namespace (the child is its pid 1: when it
   dies the kernel kills every process it left behind). The child closes every inherited fd,
   sets rlimits, drops to the slot's uid, sets no-new-privileges, restricts itself with Landlock
   and seccomp, runs the program and the test calls, and writes the *outputs* as tagged JSON to
   a pipe. It never sees expected values, so it has nothing to compare: the pool decides.
3. The worker enforces the wall-clock deadline, kills the child (and so its namespace), and
   returns the raw result bytes, the exit status and why it stopped.

Framing on stdin/stdout: 4-byte big-endian length, then UTF-8 JSON.
"""

import json
import os
import resource
import select
import shutil
import signal
import struct
import sys
import time

# Run as a script with -I (no script directory on sys.path): find the sibling module by path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
from isolation import (  # noqa: E402
    HIDDEN_DIRS,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    _err,
    apply_landlock,
    apply_seccomp,
    build_ruleset,
    build_seccomp_bpf,
    fork_sample,
    landlock_abi,
    libc,
    restrict_self,
    seccomp_lib,
    set_rlimits,
    setup_namespaces,
    vmsize,
)

sys.path[:] = [p for p in sys.path if p not in (_HERE, "")]  # samples import nothing from here

# Modules samples commonly import, loaded once here so the children inherit them (fast, and
# importable even where the uid could not read the interpreter's files).
PREIMPORT = (
    "io math re collections itertools functools heapq bisect string typing random fractions "
    "decimal operator copy statistics array datetime hashlib textwrap unicodedata dataclasses "
    "enum numbers cmath queue threading types"
).split()

MAX_RESULT = 4 << 20
SECCOMP_BPF = b""

# -- framing ------------------------------------------------------------------------------------
def read_msg(fd):
    head = _read_exact(fd, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    body = _read_exact(fd, n)
    return None if body is None else json.loads(body.decode("utf-8"))


def _read_exact(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def write_msg(fd, obj):
    data = json.dumps(obj).encode("utf-8")
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


# -- the child ---------------------------------------------------------------------------------
def encode(x, depth=0):
    """Tagged JSON with exact types: the pool decodes it into plain builtins, so nothing the
    child defines (an always-equal object, a subclass) survives the trip."""
    if depth > 60:
        raise ValueError("nested too deeply")
    t = type(x)
    if x is None:
        return ["n"]
    if t is bool:
        return ["b", x]
    if t is int:
        return ["i", str(x)] if abs(x) > 2**53 else ["i", x]
    if t is float:
        return ["f", repr(x)]
    if t is str:
        return ["s", x]
    if t is list or t is tuple:
        return ["l" if t is list else "t", [encode(v, depth + 1) for v in x]]
    if t is set or t is frozenset:
        return ["S" if t is set else "F", [encode(v, depth + 1) for v in x]]
    if t is dict:
        return ["d", [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in x.items()]]
    if t is bytes:
        return ["y", x.hex()]
    if t is complex:
        return ["c", repr(x.real), repr(x.imag)]
    return ["?", t.__name__ if isinstance(t.__name__, str) else "object"]


def _run_calls(job, ns):
    out = []
    for expr in job.get("calls", []):
        try:
            value = eval(compile(expr, "<test>", "eval"), ns)  # noqa: S307 - inside the sandbox
            out.append(["ok", encode(value)])
        except MemoryError:
            out.append(["mem"])
        except BaseException as exc:  # noqa: BLE001 - SystemExit from a call is a failed call
            out.append(["exc", type(exc).__name__])
    return out


def _run_stdio(job):
    import io

    out = []
    real_in, real_out = sys.stdin, sys.stdout
    cap = job.get("max_output", 1 << 20)
    for text in job.get("inputs", []):
        buf = io.BytesIO()
        sys.stdin = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(buf, encoding="utf-8", write_through=True)
        status = "ok"
        try:
            exec(compile(job["code"], "<solution>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
        except SystemExit:
            pass  # a program may end itself; its output so far is what it printed
        except MemoryError:
            status = "mem"
        except BaseException as exc:  # noqa: BLE001
            status = "exc:" + type(exc).__name__
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001
            pass
        data = buf.getvalue()
        sys.stdin, sys.stdout = real_in, real_out
        if status == "mem":
            out.append(["mem"])
        elif status != "ok":
            out.append(["exc", status[4:]])
        elif len(data) > cap:
            out.append(["exc", "OutputLimit"])
        else:
            out.append(["ok", ["s", data.decode("utf-8", "replace")]])
    return out


def run_job(job):
    if job["mode"] == "stdio":
        return {"calls": _run_stdio(job)}
    ns = {"__name__": "__sandbox__", "__builtins__": __builtins__}
    try:
        exec(compile(job["code"], "<solution>", "exec"), ns)  # noqa: S102 - inside the sandbox
    except MemoryError:
        return {"load": "mem"}
    except BaseException as exc:  # noqa: BLE001 - includes SystemExit before the tests
        return {"load": "exc:" + type(exc).__name__}
    try:
        if job.get("setup"):
            exec(compile(job["setup"], "<test-setup>", "exec"), ns)  # noqa: S102
    except BaseException as exc:  # noqa: BLE001
        return {"load": "setup:" + type(exc).__name__}
    result = {"calls": _run_calls(job, ns)}
    if job.get("residual"):
        try:
            exec(compile(job["residual"], "<test>", "exec"), ns)  # noqa: S102
            result["residual"] = "ok"
        except MemoryError:
            result["residual"] = "mem"
        except BaseException as exc:  # noqa: BLE001
            result["residual"] = "exc:" + type(exc).__name__
    return result


def child_main(cfg, job, wfd, workdir):
    """Never returns. Order matters: rlimits and uid before no-new-privs, then Landlock, then
    seccomp last (it forbids what the earlier steps need)."""
    code = 70
    try:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        keep = sorted(fd for fd in (wfd, cfg["ruleset_fd"]) if fd >= 0)
        start = 3
        for fd in keep:
            os.closerange(start, fd)
            start = fd + 1
        os.closerange(start, 1 << 16)
        if not cfg["pidns"]:
            os.setpgid(0, 0)
        lim = cfg["limits"]
        if cfg["rlimits"]:
            set_rlimits(lim, job)
        os.chdir(workdir)
        if cfg["uid"] is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (lim["processes"], lim["processes"]))
            os.setgroups([])
            os.setresgid(cfg["uid"], cfg["uid"], cfg["uid"])
            os.setresuid(cfg["uid"], cfg["uid"], cfg["uid"])
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # a uid change clears it
        if cfg["nnp"] and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _err("no_new_privs")
        if cfg["ruleset_fd"] >= 0:
            restrict_self(cfg["ruleset_fd"])
            os.close(cfg["ruleset_fd"])
        if cfg["seccomp"]:
            apply_seccomp(SECCOMP_BPF)
        os.environ.clear()
        os.environ.update({"HOME": workdir, "PATH": "/nonexistent", "LANG": "C.UTF-8"})
        result = run_job(job)
        data = json.dumps(result).encode("utf-8")
        while data:
            data = data[os.write(wfd, data):]
        code = 0
    except MemoryError:
        code = 71
    except BaseException:  # noqa: BLE001 - the worker reports the exit code
        code = 70
    os._exit(code)


def run_sample(cfg, job, seq):
    # Forked when the job arrives, so the job reaches the child in memory. (Cloning the next
    # child ahead of time was measured: no faster here, and more moving parts.)
    workdir = f"{cfg['workroot']}/s{seq}"
    os.mkdir(workdir, 0o700)
    if cfg["uid"] is not None:
        os.chown(workdir, cfg["uid"], cfg["uid"])
    rfd, wfd = os.pipe()
    t0 = time.monotonic()
    pid = fork_sample(cfg["pidns"])
    if pid == 0:
        os.close(rfd)
        child_main(cfg, job, wfd, workdir)
    os.close(wfd)
    deadline = t0 + job["timeout"]
    data, why = b"", None
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timeout"
                break
            ready, _, _ = select.select([rfd], [], [], left)
            if not ready:
                continue
            chunk = os.read(rfd, 1 << 16)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_RESULT:
                why = "output_limit"
                break
    finally:
        os.close(rfd)
    if why is not None:
        _kill(pid, cfg["pidns"])
    _, status = os.waitpid(pid, 0)
    if not cfg["pidns"]:
        _kill(pid, False)  # leftovers in its process group
    shutil.rmtree(workdir, ignore_errors=True)
    if why is None:
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            why = "timeout" if sig in (signal.SIGXCPU, signal.SIGKILL) else f"signal:{signal.Signals(sig).name}"
        elif os.WEXITSTATUS(status) == 71:
            why = "memory"
        elif os.WEXITSTATUS(status) != 0 or not data:
            why = f"exit:{os.WEXITSTATUS(status)}"
        else:
            why = "done"
    return {"why": why, "result": data.decode("utf-8", "replace") if why == "done" else "", "wall": time.monotonic() - t0}


def _kill(pid, pidns):
    try:
        if pidns:
            os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: the kernel kills the rest
        else:
            os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, signal.SIGKILL)


# -- probing -----------------------------------------------------------------------------------
def probe_in_child(cfg, fn):
    """Run ``fn`` in a throwaway child; '' on success, else the reason."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            fn()
            msg = b""
        except BaseException as exc:  # noqa: BLE001
            msg = (f"{type(exc).__name__}: {exc}" or "failed").encode()[:500] or b"failed"
        os.write(w, msg or b"\0")
        os._exit(0)
    os.close(w)
    msg = os.read(r, 1000)
    os.close(r)
    os.waitpid(pid, 0)
    return "" if msg == b"\0" else (msg.decode("utf-8", "replace") or "probe child died")


def probe_layers(cfg, layers):
    on = set(cfg["enable"])
    uid = cfg["uid"] if "uid" in on else None
    cfg["uid"] = uid
    if uid is not None:
        def as_uid():
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            import importlib

            for name in ("fractions", "email.mime.text", "xml.dom.minidom", "json.tool"):
                if name not in sys.modules:
                    importlib.import_module(name)
        why = probe_in_child(cfg, as_uid)
        if why:
            layers["uid"] = f"unavailable: uid {uid} cannot import this interpreter's standard library ({why})"
            cfg["uid"] = None
        else:
            layers["uid"] = f"active: uid {uid}"
    else:
        layers["uid"] = "unavailable: " + ("disabled" if "uid" not in on else "not root")
    cfg["rlimits"] = "rlimits" in on
    if cfg["rlimits"]:
        layers["rlimits"] = "active: cpu, address space budget, file size, open files, no core" + (", processes" if cfg["uid"] is not None else "")
    else:
        layers["rlimits"] = "unavailable: disabled"
    cfg["nnp"] = False
    if "no_new_privs" in on:
        why = probe_in_child(cfg, lambda: libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 or (_ for _ in ()).throw(_err("prctl")))
        layers["no_new_privs"] = "unavailable: " + why if why else "active"
        cfg["nnp"] = not why
    else:
        layers["no_new_privs"] = "unavailable: disabled"
    abi = landlock_abi() if cfg["nnp"] or os.geteuid() == 0 else 0
    cfg["landlock"] = 0
    if "landlock" not in on:
        layers["landlock"] = "unavailable: disabled"
    elif abi:
        def ll():
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            apply_landlock(abi, cfg["readable"], [cfg["workroot"]])
        why = probe_in_child(cfg, ll)
        if why:
            layers["landlock"] = "unavailable: " + why
        else:
            cfg["landlock"] = abi
            extra = ("network" if abi >= 4 else "no network rules") + (", scope" if abi >= 6 else "")
            layers["landlock"] = f"active: ABI {abi} (filesystem, {extra})"
    else:
        layers["landlock"] = "unavailable: the kernel has no Landlock"
    cfg["seccomp"] = False
    if "seccomp" not in on:
        layers["seccomp"] = "unavailable: disabled"
    elif not seccomp_lib():
        layers["seccomp"] = "unavailable: libseccomp.so.2 not found (apt-get install libseccomp2)"
    else:
        global SECCOMP_BPF
        try:
            SECCOMP_BPF = build_seccomp_bpf()
        except OSError as exc:
            SECCOMP_BPF = b""
            why = str(exc)

        def sc():
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            apply_seccomp(SECCOMP_BPF)
            try:
                os.fork()
            except PermissionError:
                return
            os._exit(0)
        why = probe_in_child(cfg, sc) if SECCOMP_BPF else why
        if why:
            layers["seccomp"] = "unavailable: " + why
        else:
            cfg["seccomp"] = True
            layers["seccomp"] = "active: no exec, no fork, only AF_UNIX sockets, no ptrace/mount/unshare/bpf/io_uring"
    cfg["pidns"] = False
    if "pidns" not in on:
        layers["pidns"] = "unavailable: disabled"
        return
    try:
        pid = fork_sample(True)
        if pid == 0:
            os._exit(0 if os.getpid() == 1 else 3)
        _, st = os.waitpid(pid, 0)
        if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0:
            cfg["pidns"] = True
            layers["pidns"] = "active: one per sample"
        else:
            layers["pidns"] = "unavailable: the clone child was not pid 1"
    except OSError as exc:
        layers["pidns"] = f"unavailable: {exc}"


def readable_paths():
    """What a sample may read: the interpreter's files and shared libraries, nothing else (no
    /etc, /proc, /home, the repository or the data)."""
    import sysconfig

    out = {"/usr", "/lib", "/lib64", "/bin", "/dev/null", "/dev/urandom"}
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            out.add(os.path.realpath(p))
    out.add(os.path.realpath(os.path.dirname(os.__file__)))
    dyn = [p for p in sys.path if p.endswith("lib-dynload")]
    out.update(os.path.realpath(p) for p in dyn)
    return sorted(p for p in out if os.path.exists(p))


def main():
    cfg = json.loads(sys.argv[1])
    for name in PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass
    layers = {}
    cfg["readable"] = readable_paths()
    # Never hide the directory the interpreter lives in (pyenv under /root): later imports would fail.
    prefix = os.path.realpath(sys.prefix)
    hide = [d for d in HIDDEN_DIRS if not (prefix + "/").startswith(d + "/")]
    if "netns" in cfg["enable"] or "mountns" in cfg["enable"]:
        setup_namespaces(layers, hide)
    else:
        layers["netns"] = layers["mountns"] = "unavailable: disabled"
    # Workdirs live on a tmpfs: our private /tmp inside the mount namespace, else /dev/shm
    # (a disk-backed /tmp costs milliseconds per sample in mkdir and rmtree).
    if layers["mountns"].startswith("active") and "/tmp" in layers["mountns"]:
        cfg["workroot"] = "/tmp/rlvr-sandbox"
    elif os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        cfg["workroot"] = f"/dev/shm/rlvr-sandbox-{os.getpid()}"
    else:
        cfg["workroot"] = f"/tmp/rlvr-sandbox-{os.getpid()}"
    os.makedirs(cfg["workroot"], exist_ok=True)
    os.chmod(cfg["workroot"], 0o711)
    probe_layers(cfg, layers)
    cfg["ruleset_fd"] = -1
    if cfg["landlock"]:
        cfg["ruleset_fd"] = build_ruleset(cfg["landlock"], cfg["readable"], [cfg["workroot"], "/dev/null"])
    cfg["limits"]["vmsize"] = vmsize()
    layers["python"] = f"{sys.executable} {sys.version.split()[0]}"
    write_msg(1, {"hello": layers, "pid": os.getpid()})
    seq = 0
    while True:
        job = read_msg(0)
        if job is None:
            shutil.rmtree(cfg["workroot"], ignore_errors=True)
            return
        seq += 1
        try:
            reply = run_sample(cfg, job, seq)
        except Exception as exc:  # noqa: BLE001 - the pool maps this to a sandbox error
            reply = {"why": f"sandbox:{type(exc).__name__}: {exc}", "result": "", "wall": 0.0}
        reply["id"] = job.get("id")
        write_msg(1, reply)


if __name__ == "__main__":
    main()
