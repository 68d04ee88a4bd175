"""The worker's start-up probes: which isolation layers work on this machine (each tried in a
throwaway child), and what a sample may see (``hidden_dirs``, ``readable_paths``).

Runs in the worker (the inside package: standard library only, see its ``__init__``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from .isolation import (
    PR_SET_NO_NEW_PRIVS,
    apply_landlock,
    apply_seccomp,
    build_seccomp_bpf,
    fork_sample,
    landlock_abi,
    libc,
    os_error,
    seccomp_lib,
)


def probe_in_child(cfg: dict[str, Any], fn: Callable[[], object]) -> str:
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


def probe_layers(cfg: dict[str, Any], layers: dict[str, str]) -> bytes:
    """Probe every enabled layer in a throwaway child, write each one's status into ``layers``
    and what the children should apply into ``cfg``. Returns the seccomp program (empty
    without one)."""
    bpf = b""
    on = set(cfg["enable"])
    uid = cfg["uid"] if "uid" in on else None
    cfg["uid"] = uid
    if uid is not None:

        def as_uid() -> None:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            import importlib

            for name in ("fractions", "email.mime.text", "xml.dom.minidom", "json.tool"):
                if name not in sys.modules:
                    importlib.import_module(name)

        why = probe_in_child(cfg, as_uid)
        if not why:
            uid += 1000  # the test child's own uid (harness.TEST_UID_OFFSET)
            why = probe_in_child(cfg, as_uid)
            uid -= 1000
        if why:
            layers["uid"] = f"unavailable: uid {uid} cannot import this interpreter's standard library ({why})"
            cfg["uid"] = None
        else:
            layers["uid"] = f"active: uid {uid} (candidate), {uid + 1000} (test child)"
    else:
        layers["uid"] = "unavailable: " + ("disabled" if "uid" not in on else "not root")
    cfg["rlimits"] = "rlimits" in on
    if cfg["rlimits"]:
        layers["rlimits"] = "active: cpu, address space budget, file size, open files, no core" + (
            ", processes" if cfg["uid"] is not None else ""
        )
    else:
        layers["rlimits"] = "unavailable: disabled"
    cfg["nnp"] = False
    if "no_new_privs" in on:
        why = probe_in_child(
            cfg, lambda: libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 or (_ for _ in ()).throw(os_error("prctl"))
        )
        layers["no_new_privs"] = "unavailable: " + why if why else "active"
        cfg["nnp"] = not why
    else:
        layers["no_new_privs"] = "unavailable: disabled"
    abi = landlock_abi() if cfg["nnp"] or os.geteuid() == 0 else 0
    cfg["landlock"] = 0
    if "landlock" not in on:
        layers["landlock"] = "unavailable: disabled"
    elif abi:

        def ll() -> None:
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
        try:
            bpf = build_seccomp_bpf()
        except OSError as exc:
            bpf = b""
            why = str(exc)

        def sc() -> None:
            libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            apply_seccomp(bpf)
            try:
                os.fork()
            except PermissionError:
                return
            os._exit(0)

        why = probe_in_child(cfg, sc) if bpf else why
        if why:
            layers["seccomp"] = "unavailable: " + why
        else:
            cfg["seccomp"] = True
            layers["seccomp"] = (
                "active: no exec, no fork, no socket() or connect() (socketpair only), no memfd or SysV IPC,"
                " no ptrace/mount/unshare/bpf/io_uring, no file metadata changes (chmod, chown, utime, xattrs,"
                " chattr); the table: isolation.SECCOMP_TABLE"
            )
    cfg["pidns"] = cfg["ipcns"] = False
    if "pidns" not in on:
        layers["pidns"] = "unavailable: disabled"
        layers.setdefault("ipcns", "unavailable: disabled")
        return bpf
    try:
        pid = fork_sample(True, False)
        if pid == 0:
            os._exit(0 if os.getpid() == 1 else 3)
        _, st = os.waitpid(pid, 0)
        if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0:
            cfg["pidns"] = True
            layers["pidns"] = "active: one per sample"
            if "ipcns" in on:
                try:
                    pid = fork_sample(True, True)
                    if pid == 0:
                        os._exit(0)
                    os.waitpid(pid, 0)
                    cfg["ipcns"] = True
                    layers["ipcns"] = "active: one per sample (its SysV objects and message queues die with it)"
                except OSError as exc:
                    layers["ipcns"] = f"unavailable: {exc}"
            else:
                layers["ipcns"] = "unavailable: disabled"
        else:
            layers["pidns"] = "unavailable: the clone child was not pid 1"
    except OSError as exc:
        layers["pidns"] = f"unavailable: {exc}"
    layers.setdefault("ipcns", "unavailable: needs the per-sample PID namespace (one clone)")
    return bpf


def hidden_dirs(prefix: str) -> list[str]:
    """Every top-level directory a sample does not need, so that even ``stat`` (which Landlock
    does not restrict) finds nothing of the host there: /etc, /proc, /sys, /var, /home, the
    repository, ... The interpreter's directories (/usr, /lib*, /bin, the prefix) and /dev stay."""
    keep = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/dev"}
    out = []
    for name in sorted(os.listdir("/")):
        d = "/" + name
        if d in keep or os.path.islink(d) or not os.path.isdir(d):
            continue
        if (prefix + "/").startswith(d + "/"):
            continue  # the interpreter lives here (pyenv under /root, a venv in the repository)
        out.append(d)
    return out + [d for d in ("/dev/shm", "/dev/mqueue") if os.path.isdir(d) and not os.path.islink(d)]


def readable_paths() -> list[str]:
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
