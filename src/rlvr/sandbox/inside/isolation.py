"""The isolation layers, as thin ``ctypes`` wrappers over Linux system calls, applied by the worker
(``harness.py``, ``probing.py``) to itself and its children (the inside package: standard library
only, see its ``__init__``).

Each function either applies one layer or raises ``OSError`` saying why it cannot; the worker
probes them at start-up (``probing.probe_layers``) and reports the result. x86-64 system call
numbers are used for clone and Landlock (the only architecture tested here).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import signal

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 16384, 1 << 18
MNT_DETACH = 2
F_SETPIPE_SZ = 1031
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_clone = 56
SYS_landlock_create_ruleset, SYS_landlock_add_rule, SYS_landlock_restrict_self = 444, 445, 446


libc = ctypes.CDLL(None, use_errno=True)
pylib = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL held across clone()
libc.syscall.restype = ctypes.c_long
pylib.syscall.restype = ctypes.c_long


def os_error(what: str) -> OSError:
    """The C library's last error (errno), as an ``OSError`` that says what failed."""
    e = ctypes.get_errno()
    return OSError(e, f"{what}: {os.strerror(e)}")


# -- layers (worker side, once) ----------------------------------------------------------------
def setup_namespaces(layers: dict[str, str], hide: list[str]) -> None:
    """Network, mount and IPC namespace for the whole worker; an empty tmpfs over each directory
    in ``hide`` (read-only except /tmp, where the workdirs live)."""
    flags = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC
    uid, gid = os.getuid(), os.getgid()
    if os.geteuid() != 0:
        flags |= CLONE_NEWUSER  # unprivileged: namespaces need a user namespace of our own
    if libc.unshare(flags) != 0:
        layers["netns"] = layers["mountns"] = layers["ipcns"] = "unavailable: " + str(os_error("unshare"))
        return
    if flags & CLONE_NEWUSER:
        try:
            with open("/proc/self/setgroups", "w") as fh:
                fh.write("deny")
            with open("/proc/self/uid_map", "w") as fh:
                fh.write(f"0 {uid} 1")
            with open("/proc/self/gid_map", "w") as fh:
                fh.write(f"0 {gid} 1")
        except OSError as exc:
            layers["netns"] = layers["mountns"] = layers["ipcns"] = f"unavailable: user namespace maps: {exc}"
            return
    layers["netns"] = "active"
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        layers["mountns"] = "unavailable: " + str(os_error("make / private"))
        return
    hidden: list[str] = []
    failed: list[str] = []
    for d in hide:
        if os.path.islink(d) or not os.path.isdir(d):
            continue
        flags = MS_NOSUID | MS_NODEV | MS_NOEXEC | (0 if d == "/tmp" else MS_RDONLY)
        opts = b"size=256m,mode=1777" if d == "/tmp" else b"size=4k,nr_inodes=2,mode=0755"
        if libc.mount(b"tmpfs", d.encode(), b"tmpfs", flags, opts) == 0:
            hidden.append(d)
        else:
            failed.append(d)
    layers["mountns"] = (
        "active: empty tmpfs over " + " ".join(hidden) + (f"; failed {' '.join(failed)}" if failed else "")
    )


def mount_tmpfs(path: str, opts: str) -> int:
    """0 on success. A sample's workdir: its own tmpfs, size- and inode-capped."""
    return libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts.encode())


def detach(path: str) -> None:
    """Unmount at once, whatever is inside (no tree walk, no recursion limit)."""
    if libc.umount2(path.encode(), MNT_DETACH) != 0:
        raise os_error(f"umount {path}")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 without Landlock."""
    abi = libc.syscall(SYS_landlock_create_ruleset, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    return abi if abi > 0 else 0


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def apply_landlock(abi: int, readable: list[str], writable: list[str]) -> None:
    """Restrict this process to ``readable`` (read-only) and ``writable`` (read-write)."""
    fd = build_ruleset(abi, readable, writable)
    try:
        restrict_self(fd)
    finally:
        os.close(fd)


def restrict_self(fd: int) -> None:
    """Apply a ruleset from ``build_ruleset`` to this process."""
    if libc.syscall(SYS_landlock_restrict_self, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
        raise os_error("landlock_restrict_self")


def build_ruleset(abi: int, readable: list[str], writable: list[str]) -> int:
    """A ruleset fd: read-only ``readable``, read-write ``writable``, everything else denied; TCP
    bind/connect denied (ABI >= 4); abstract UNIX sockets and signals scoped (ABI >= 6). Built once
    per worker; each child only calls ``restrict_self`` with it."""
    fs_all = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
    if abi >= 2:
        fs_all |= 1 << 13  # REFER
    if abi >= 3:
        fs_all |= 1 << 14  # TRUNCATE
    if abi >= 5:
        fs_all |= 1 << 15  # IOCTL_DEV
    attr = _RulesetAttr(fs_all, 3 if abi >= 4 else 0, 3 if abi >= 6 else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    fd = libc.syscall(SYS_landlock_create_ruleset, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise os_error("landlock_create_ruleset")
    read_dir = (1 << 0) | (1 << 2) | (1 << 3)
    read_file = (1 << 0) | (1 << 2)
    file_rw = (1 << 1) | (1 << 2) | ((1 << 14) if abi >= 3 else 0)
    try:
        paths: list[tuple[str, int | None]] = [(p, None) for p in readable] + [(p, fs_all) for p in writable]
        for path, allowed in paths:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            is_dir = os.path.isdir(path)
            if allowed is None:
                allowed = read_dir if is_dir else read_file
            elif not is_dir:
                allowed = file_rw
            _add_rule(fd, path, pfd, allowed)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _add_rule(fd: int, path: str, pfd: int, allowed: int) -> None:
    """Allow ``allowed`` beneath the path opened as ``pfd`` in the ruleset ``fd``; closes ``pfd``."""
    rule = _PathBeneath(allowed, pfd)
    rc = libc.syscall(SYS_landlock_add_rule, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule), ctypes.c_uint32(0))
    os.close(pfd)
    if rc != 0:
        raise os_error(f"landlock_add_rule {path}")


def writes_only_beneath(abi: int, dirs: list[str], files: list[str]) -> None:
    """Stack a Landlock layer on this process that handles only the rights that write (create,
    remove, write, truncate, link, rename): allowed beneath ``dirs`` and on ``files``, nowhere
    else. A sample's candidate gets it with its own workdir, so it can neither plant a file for a
    later sample nor pre-create a later sample's folder, with or without the uid layer."""
    write_file = 1 << 1
    handled = write_file | sum(1 << b for b in range(4, 13))  # REMOVE_DIR .. MAKE_SYM
    if abi >= 2:
        handled |= 1 << 13  # REFER
    if abi >= 3:
        handled |= 1 << 14  # TRUNCATE
    attr = _RulesetAttr(handled, 0, 0)
    fd = libc.syscall(SYS_landlock_create_ruleset, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if fd < 0:
        raise os_error("landlock_create_ruleset")
    try:
        for path, allowed in [(d, handled) for d in dirs] + [(f, handled & (write_file | (1 << 14))) for f in files]:
            _add_rule(fd, path, os.open(path, os.O_PATH | os.O_CLOEXEC), allowed)
        restrict_self(fd)
    finally:
        os.close(fd)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


_seccomp: ctypes.CDLL | None = None
_seccomp_looked = False


def seccomp_lib() -> ctypes.CDLL | None:
    """libseccomp, loaded once; None where it is not installed."""
    global _seccomp, _seccomp_looked
    if not _seccomp_looked:
        name = ctypes.util.find_library("seccomp") or "libseccomp.so.2"
        try:
            lib = ctypes.CDLL(name, use_errno=True)
            lib.seccomp_init.restype = ctypes.c_void_p
            lib.seccomp_init.argtypes = [ctypes.c_uint32]
            lib.seccomp_rule_add_array.argtypes = [
                ctypes.c_void_p,
                ctypes.c_uint32,
                ctypes.c_int,
                ctypes.c_uint,
                ctypes.POINTER(_ArgCmp),
            ]
            lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
            lib.seccomp_load.argtypes = [ctypes.c_void_p]
            lib.seccomp_release.argtypes = [ctypes.c_void_p]
            _seccomp = lib
        except OSError:
            _seccomp = None
        _seccomp_looked = True
    return _seccomp


# Denied outright (EPERM): running programs, new processes (not threads), tracing, namespaces and
# mounts, kernel-facing interfaces that have carried sandbox escapes.
DENY = (
    "execve execveat fork vfork ptrace process_vm_readv process_vm_writev mount umount2 "
    "pivot_root chroot unshare setns bpf io_uring_setup io_uring_enter io_uring_register "
    "keyctl add_key request_key perf_event_open userfaultfd kexec_load init_module finit_module "
    "delete_module reboot swapon swapoff open_by_handle_at name_to_handle_at personality "
    "fanotify_init move_mount open_tree fsopen fsmount fspick mount_setattr "
    # Memory outside the address-space budget, and objects that outlive a process.
    "memfd_create memfd_secret shmget shmat shmctl shmdt msgget msgsnd msgrcv msgctl semget semop "
    "semtimedop semctl mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr "
    # Reaching other processes through pidfds or comparing their kernel objects.
    "pidfd_open pidfd_getfd pidfd_send_signal process_madvise kcmp "
    # Sockets: only socketpair() is left (below). socket() is refused for every family, so no
    # pathname UNIX socket (a host daemon's, anywhere) can be connected to or sent to.
    "socket connect"
).split()


def build_seccomp_bpf() -> bytes:
    """Compile the filter once per worker (libseccomp takes ~6 ms); children load the bytes."""
    lib = seccomp_lib()
    if not lib:
        raise OSError("libseccomp not found")
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    ctx = lib.seccomp_init(allow)
    if not ctx:
        raise OSError("seccomp_init failed")

    def rule(action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0:
            return
        arr = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
        if lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr) != 0:
            raise OSError(f"seccomp rule {name} failed")

    try:
        for name in DENY:
            rule(eperm, name)
        rule(eperm, "clone", (0, 7, CLONE_THREAD, 0))  # (flags & CLONE_THREAD) == 0: a process
        rule(enosys, "clone3")  # glibc then falls back to clone(), which the rule above checks
        rule(eperm, "socketpair", (0, 1, 1, 0))  # domain != AF_UNIX
        rule(eperm, "socketpair", (1, 7, 0xF, 2))  # (type & 0xf) == SOCK_DGRAM: sendto() could name a path
        rule(eperm, "sendto", (4, 1, 0, 0))  # an explicit destination address

        rule(eperm, "kill", (0, 6, 1, 0))  # pid > 1 (unsigned, so -1 too): only itself (pid 1)
        fd = os.memfd_create("seccomp")
        try:
            if lib.seccomp_export_bpf(ctx, fd) != 0:
                raise OSError("seccomp_export_bpf failed")
            os.lseek(fd, 0, os.SEEK_SET)
            data = b""
            while True:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(fd)
    finally:
        lib.seccomp_release(ctx)
    return data


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


def apply_seccomp(bpf: bytes) -> None:
    """Load a filter from ``build_seccomp_bpf`` into this process (after no-new-privileges)."""
    prog = _SockFprog(len(bpf) // 8, bpf)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise os_error("seccomp filter")


def vmsize() -> int:
    """This process's mapped size: children start at about the same, and get a budget over it."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def set_rlimits(lim: dict[str, int], job: dict[str, float]) -> None:
    """CPU seconds just above the job's timeout, no core dumps, file size, open files, and the
    address-space budget over this process's size."""
    cpu = int(job["timeout"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (lim["file_bytes"], lim["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lim["open_files"], lim["open_files"]))
    # Address space as a budget over what this process already maps: an absolute cap breaks
    # every mmap in a large process (LiveBench PR #536).
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = lim["vmsize"] + lim["memory_bytes"]
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, hard))


def fork_sample(pidns: bool, ipcns: bool = False) -> int:
    """fork(), or a raw clone() into a new PID namespace, and with ``ipcns`` a new IPC namespace
    (unshare(CLONE_NEWPID) works once per process, so a per-sample namespace needs clone)."""
    if not pidns:
        return os.fork()
    if os.uname().machine != "x86_64":
        raise OSError("per-sample PID namespaces use the x86-64 clone() number; not on " + os.uname().machine)
    pylib.PyOS_BeforeFork()
    pid = pylib.syscall(
        ctypes.c_long(SYS_clone),
        ctypes.c_ulong(CLONE_NEWPID | (CLONE_NEWIPC if ipcns else 0) | signal.SIGCHLD),
        None,
        None,
        None,
        ctypes.c_ulong(0),
    )
    errno = ctypes.get_errno()
    if pid == 0:
        pylib.PyOS_AfterFork_Child()
    else:
        pylib.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, "clone(CLONE_NEWPID): " + os.strerror(errno))
    return pid
