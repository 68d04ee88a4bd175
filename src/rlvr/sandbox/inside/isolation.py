"""The isolation layers, as thin ``ctypes`` wrappers over Linux system calls, applied by the worker
(``harness.py``, ``probing.py``) to itself and its children (the inside package: standard library
only, see its ``__init__``).

Each function either applies one layer or raises ``OSError`` saying why it cannot; the worker
probes them at start-up (``probing.probe_layers``) and reports the result. x86-64 system call
numbers are used for clone and Landlock (the only architecture tested here).
"""

from __future__ import annotations

import ctypes
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
# Every foreign function a child calls, fetched here, in the worker (the library object keeps it as
# an attribute): a fresh child's first fetch builds the function object, about 70 of the pages it
# shares with the worker written, where a call of one already fetched writes about 15.
getattr(libc, "prctl")  # noqa: B009 - fetched for its side effect: cached on the library object
getattr(pylib, "PyOS_AfterFork_Child")  # noqa: B009


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
        # By its soname: ctypes.util.find_library would import subprocess and with it threading,
        # whose fork hook then runs (and touches its pages) in every child of the worker.
        try:
            lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
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


# The seccomp filter, as one table: system call -> x86-64 number, the condition on its arguments
# under which it is refused (empty: always), the errno, and why. Numbers rather than names:
# libseccomp 2.5 does not know the newer calls (fchmodat2, setxattrat, file_setattr) and would
# skip a name it cannot resolve, silently leaving the call open. A condition is (argument index,
# libseccomp comparison, a, b): NE 1, GT 6, MASKED_EQ 7 ((arg & a) == b).
NE, GT, MASKED_EQ = 1, 6, 7
EPERM, ENOSYS = 1, 38
FS_IOCTL_TYPES = {
    0x66: "'f': FS_IOC_SETFLAGS (chattr), fscrypt policies, fs-verity",
    0x76: "'v': FS_IOC_SETVERSION",
    0x58: "'X': FS_IOC_FSSETXATTR (project id, flags), FIFREEZE/FITHAW, FITRIM",
    0x94: "0x94: FICLONE and the btrfs family, FS_IOC_SETFSLABEL",
}
_PROCESSES = "new processes and programs: the sandbox's children are the only processes"
_KERNEL = "kernel interfaces that have carried sandbox escapes, or that act on the whole host"
_META = (
    "changes a file's metadata; Landlock does not cover it, and without the uid layer the host's files are the caller's"
)
_HOST = "changes host-wide state (needs a capability the uid layer drops; refused for the case without it)"
_IPC = "memory outside the address-space budget, or objects that outlive the sample"
SECCOMP_TABLE: tuple[tuple[str, int, tuple[tuple[int, int, int, int], ...], int, str], ...] = (
    ("execve", 59, (), EPERM, _PROCESSES),
    ("execveat", 322, (), EPERM, _PROCESSES),
    ("fork", 57, (), EPERM, _PROCESSES),
    ("vfork", 58, (), EPERM, _PROCESSES),
    ("clone", 56, ((0, MASKED_EQ, CLONE_THREAD, 0),), EPERM, _PROCESSES + " (threads are allowed)"),
    ("clone3", 435, (), ENOSYS, "glibc then falls back to clone(), whose flags the rule above can read"),
    ("ptrace", 101, (), EPERM, "tracing another process"),
    ("process_vm_readv", 310, (), EPERM, "reading another process's memory"),
    ("process_vm_writev", 311, (), EPERM, "writing another process's memory"),
    (
        "kill",
        62,
        ((0, GT, 1, 0),),
        EPERM,
        "a signal to any pid but itself (pid 1 of its namespace; unsigned, so -1 too)",
    ),
    ("pidfd_open", 434, (), EPERM, "reaching other processes through pidfds"),
    ("pidfd_getfd", 438, (), EPERM, "taking another process's file descriptors"),
    ("pidfd_send_signal", 424, (), EPERM, "signals through pidfds"),
    ("process_madvise", 440, (), EPERM, "acting on another process's memory"),
    ("kcmp", 312, (), EPERM, "comparing other processes' kernel objects"),
    ("socket", 41, (), EPERM, "every family: no network, no pathname UNIX socket of a host daemon"),
    ("connect", 42, (), EPERM, "the same"),
    ("socketpair", 53, ((0, NE, 1, 0),), EPERM, "only AF_UNIX pairs (asyncio's self-pipe)"),
    ("socketpair", 53, ((1, MASKED_EQ, 0xF, 2),), EPERM, "no SOCK_DGRAM pair: sendto() could name a path"),
    ("sendto", 44, ((4, NE, 0, 0),), EPERM, "an explicit destination address"),
    ("mount", 165, (), EPERM, _KERNEL),
    ("umount2", 166, (), EPERM, _KERNEL),
    ("pivot_root", 155, (), EPERM, _KERNEL),
    ("chroot", 161, (), EPERM, _KERNEL),
    ("unshare", 272, (), EPERM, _KERNEL),
    ("setns", 308, (), EPERM, _KERNEL),
    ("move_mount", 429, (), EPERM, _KERNEL),
    ("open_tree", 428, (), EPERM, _KERNEL),
    ("fsopen", 430, (), EPERM, _KERNEL),
    ("fsconfig", 431, (), EPERM, _KERNEL),
    ("fsmount", 432, (), EPERM, _KERNEL),
    ("fspick", 433, (), EPERM, _KERNEL),
    ("mount_setattr", 442, (), EPERM, _KERNEL),
    ("open_tree_attr", 467, (), EPERM, _KERNEL),
    ("bpf", 321, (), EPERM, _KERNEL),
    ("io_uring_setup", 425, (), EPERM, _KERNEL + " (and io_uring bypasses this filter)"),
    ("io_uring_enter", 426, (), EPERM, _KERNEL),
    ("io_uring_register", 427, (), EPERM, _KERNEL),
    ("keyctl", 250, (), EPERM, _KERNEL),
    ("add_key", 248, (), EPERM, _KERNEL),
    ("request_key", 249, (), EPERM, _KERNEL),
    ("perf_event_open", 298, (), EPERM, _KERNEL),
    ("userfaultfd", 323, (), EPERM, _KERNEL),
    ("kexec_load", 246, (), EPERM, _KERNEL),
    ("kexec_file_load", 320, (), EPERM, _KERNEL),
    ("init_module", 175, (), EPERM, _KERNEL),
    ("finit_module", 313, (), EPERM, _KERNEL),
    ("delete_module", 176, (), EPERM, _KERNEL),
    ("reboot", 169, (), EPERM, _KERNEL),
    ("swapon", 167, (), EPERM, _KERNEL),
    ("swapoff", 168, (), EPERM, _KERNEL),
    ("open_by_handle_at", 304, (), EPERM, _KERNEL + " (opens any inode of a mount, past every path rule)"),
    ("name_to_handle_at", 303, (), EPERM, _KERNEL),
    ("personality", 135, (), EPERM, _KERNEL),
    ("fanotify_init", 300, (), EPERM, _KERNEL),
    ("memfd_create", 319, (), EPERM, _IPC),
    ("memfd_secret", 447, (), EPERM, _IPC),
    *(
        (name, nr, (), EPERM, _IPC)
        for name, nr in (
            ("shmget", 29),
            ("shmat", 30),
            ("shmctl", 31),
            ("shmdt", 67),
            ("msgget", 68),
            ("msgsnd", 69),
            ("msgrcv", 70),
            ("msgctl", 71),
            ("semget", 64),
            ("semop", 65),
            ("semctl", 66),
            ("semtimedop", 220),
            ("mq_open", 240),
            ("mq_unlink", 241),
            ("mq_timedsend", 242),
            ("mq_timedreceive", 243),
            ("mq_notify", 244),
            ("mq_getsetattr", 245),
        )
    ),
    # File metadata (issue 44): refused everywhere, in the sample's own workdir too. seccomp
    # cannot read a path, and an fd says nothing about where its file lives; an honest program
    # needs none of these to compute an answer (shutil.copy, copy2 and copytree, which copy modes
    # and times, raise PermissionError; shutil.copyfile and Path.touch still work).
    *(
        (name, nr, (), EPERM, _META)
        for name, nr in (
            ("chmod", 90),
            ("fchmod", 91),
            ("fchmodat", 268),
            ("fchmodat2", 452),
            ("chown", 92),
            ("fchown", 93),
            ("lchown", 94),
            ("fchownat", 260),
            ("utime", 132),
            ("utimes", 235),
            ("utimensat", 280),
            ("futimesat", 261),
            ("setxattr", 188),
            ("lsetxattr", 189),
            ("fsetxattr", 190),
            ("setxattrat", 463),
            ("removexattr", 197),
            ("lremovexattr", 198),
            ("fremovexattr", 199),
            ("removexattrat", 466),
            ("file_setattr", 469),
        )
    ),
    *(("ioctl", 16, ((1, MASKED_EQ, 0xFF00, t << 8),), EPERM, f"{_META}: {why}") for t, why in FS_IOCTL_TYPES.items()),
    (
        "fcntl",
        72,
        ((1, MASKED_EQ, 0xFFFFFFFF, 1024),),
        EPERM,
        "F_SETLEASE: a lease would stall the host's next open of the file",
    ),
    *(
        (name, nr, (), EPERM, _HOST)
        for name, nr in (
            ("sethostname", 170),
            ("setdomainname", 171),
            ("settimeofday", 164),
            ("clock_settime", 227),
            ("clock_adjtime", 305),
            ("adjtimex", 159),
            ("quotactl", 179),
            ("quotactl_fd", 443),
            ("acct", 163),
            ("syslog", 103),
            ("iopl", 172),
            ("ioperm", 173),
            ("vhangup", 153),
        )
    ),
)


def build_seccomp_bpf() -> bytes:
    """Compile ``SECCOMP_TABLE`` once per worker (libseccomp takes ~6 ms); children load the
    bytes. Every other call is allowed; a call of another architecture (i386, x32) kills."""
    if os.uname().machine != "x86_64":
        raise OSError("the seccomp table holds x86-64 system call numbers; not on " + os.uname().machine)
    lib = seccomp_lib()
    if not lib:
        raise OSError("libseccomp not found")
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    ctx = lib.seccomp_init(0x7FFF0000)  # SCMP_ACT_ALLOW
    if not ctx:
        raise OSError("seccomp_init failed")
    try:
        for name, nr, cmps, errno, _why in SECCOMP_TABLE:
            arr = (_ArgCmp * max(1, len(cmps)))(*[_ArgCmp(*c) for c in cmps])
            if lib.seccomp_rule_add_array(ctx, 0x00050000 | errno, nr, len(cmps), arr) != 0:
                raise OSError(f"seccomp rule {name} failed")
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
    # every mmap in a large process (LiveBench PR #536). The hard limit too: a soft limit alone
    # is one setrlimit() away from none.
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    want = lim["vmsize"] + lim["memory_bytes"]
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_AS, (want, want))


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
    if pid == 0:
        pylib.PyOS_AfterFork_Child()
        return 0
    errno = ctypes.get_errno() if pid < 0 else 0  # read first: the next foreign call may change it
    pylib.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(errno, "clone(CLONE_NEWPID): " + os.strerror(errno))
    return pid
