"""Host metadata out of reach with or without the uid layer (issue 44, item 1): the seccomp table
(``isolation.SECCOMP_TABLE``) refuses every call that changes a file's metadata, so a sample that
can read a file of the trainer's (its interpreter, its venv) cannot chmod, chown, utime, xattr or
chattr it, whoever the sample runs as. Run as root here: the layer set without ``uid`` is what a
non-root user gets (the children keep the caller's uid, which owns the files), simulated as the
other isolation tests do, by switching that layer off."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_sandbox_pool import Script, runs

from rlvr.sandbox.inside.isolation import SECCOMP_TABLE, seccomp_lib
from rlvr.sandbox.pool import LAYERS, Limits, SandboxPool

NO_UID = tuple(n for n in LAYERS if n != "uid")
ALL = LAYERS
# The calls issue 44 names, and those found beside them; each must be refused by the table.
METADATA_CALLS = (
    "chmod fchmod fchmodat fchmodat2 chown fchown lchown fchownat utime utimes utimensat futimesat "
    "setxattr lsetxattr fsetxattr setxattrat removexattr lremovexattr fremovexattr removexattrat file_setattr"
).split()

# Each attack is one line of Python run in the candidate against the decoy D (a file the trainer
# owns, readable by the sample) or its read-only fd F; "raw" ones call the kernel by number, past
# any wrapper. Every one must raise OSError.
ATTACKS = {
    "chmod": "os.chmod(D, 0)",
    "chmod the interpreter's os.py to its own mode": "os.chmod(os.__file__, os.stat(os.__file__).st_mode & 0o7777)",
    "fchmod": "os.fchmod(F, 0)",
    "chown": "os.chown(D, 4321, 4321)",
    "fchown": "os.fchown(F, 4321, 4321)",
    "lchown": "os.lchown(D, 4321, 4321)",
    "utime": "os.utime(D, (1, 1))",
    "utime now": "os.utime(D)",
    "futimens": "os.utime(F, (1, 1))",
    "setxattr": "os.setxattr(D, 'user.rlvr', b'1')",
    "lsetxattr": "os.setxattr(D, 'user.rlvr', b'1', follow_symlinks=False)",
    "fsetxattr": "os.setxattr(F, 'user.rlvr', b'1')",
    "removexattr": "os.removexattr(D, 'user.keep')",
    "fremovexattr": "os.removexattr(F, 'user.keep')",
    "chattr (FS_IOC_SETFLAGS)": "fcntl.ioctl(F, 0x40086602, struct.pack('l', 0x80))",
    "F_SETLEASE": "fcntl.fcntl(F, 1024, fcntl.F_RDLCK)",
    "raw fchmodat2": "raw(452, -100, D.encode(), 0, 0)",
    "raw chmod": "raw(90, D.encode(), 0)",
    "raw utimes": "raw(235, D.encode(), 0)",
    "raw setxattrat": "raw(463, -100, D.encode(), 0, 0, 0, 0)",
    "raw removexattrat": "raw(466, -100, D.encode(), 0, b'user.keep')",
    "raw file_setattr": "raw(469, -100, D.encode(), 0, 0, 0)",
    "rename (Landlock)": "os.rename(D, D + '.moved')",
    "link (Landlock)": "os.link(D, D + '.linked')",
    "truncate (Landlock)": "os.truncate(D, 0)",
    "append (Landlock)": "open(D, 'a').write('x')",
}
PRELUDE = (
    "import ctypes, fcntl, json, os, struct\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def raw(nr, *args):\n"
    "    if libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if type(a) is int else a for a in args]) != 0:\n"
    "        e = ctypes.get_errno()\n"
    "        raise OSError(e, os.strerror(e))\n"
    "D = {decoy!r}\n"
    "F = os.open(D, os.O_RDONLY)\n"
    "out = {{}}\n"
)


def program(decoy: str, attacks: dict[str, str]) -> str:
    lines = [PRELUDE.format(decoy=decoy)]
    for name, line in attacks.items():
        lines.append(
            f"try:\n    {line}\n    out[{name!r}] = 'allowed'\n"
            f"except OSError as exc:\n    out[{name!r}] = os.strerror(exc.errno) if exc.errno else 'refused'\n"
        )
    lines.append("print(json.dumps(out))\n")
    return "".join(lines)


def metadata(path: str) -> tuple[object, ...]:
    st_ = os.stat(path)
    xattrs = {n: os.getxattr(path, n) for n in sorted(os.listxattr(path))}
    return (st_.st_mode, st_.st_uid, st_.st_gid, st_.st_ctime_ns, st_.st_mtime_ns, st_.st_size, xattrs)


def _root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the decoy lives under /usr, which samples can read")


@pytest.fixture()
def decoy():
    """A file the trainer owns under /usr/local (samples may read /usr), with an xattr to remove."""
    _root()
    path = Path("/usr/local") / f"rlvr-decoy-{os.urandom(6).hex()}"
    path.write_text("decoy\n")
    try:
        os.setxattr(path, "user.keep", b"1")
    except OSError as exc:
        path.unlink()
        pytest.skip(f"/usr/local has no user xattrs here ({exc})")
    yield str(path)
    for p in (path, path.with_name(path.name + ".moved"), path.with_name(path.name + ".linked")):
        if p.exists():
            p.unlink()


def pool_with(enable: tuple[str, ...]) -> SandboxPool:
    p = SandboxPool(1, Limits(timeout=5.0), enable=enable)
    p.start()
    return p


@pytest.fixture(scope="module", params=[NO_UID, ALL], ids=["every layer but uid", "every layer"])
def layered(request):
    _root()
    p = pool_with(request.param)
    need = [n for n in request.param if not p.layers.active(n)]
    if need:
        p.close()
        pytest.skip(f"layers missing here: {need}")
    yield p
    p.close()


def attack(pool: SandboxPool, decoy: str, attacks: dict[str, str]) -> dict[str, str]:
    sc = Script(program(decoy, attacks), timeout=5.0)
    runs(pool, [sc])
    assert sc.reply is not None
    out = b"".join(body for kind, body in sc.reply.frames if kind == b"O")
    return json.loads(out)


def test_every_metadata_call_is_refused_and_the_host_file_is_unchanged(layered, decoy):
    interp = os.path.join(os.path.dirname(os.__file__), "os.py")
    before, before_os = metadata(decoy), os.stat(interp)
    got = attack(layered, decoy, ATTACKS)
    assert set(got) == set(ATTACKS)
    assert [name for name, how in got.items() if how == "allowed"] == []
    assert metadata(decoy) == before
    after_os = os.stat(interp)
    assert (after_os.st_mode, after_os.st_ctime_ns) == (before_os.st_mode, before_os.st_ctime_ns)


def test_the_raw_metadata_calls_are_refused_by_the_filter_itself(layered, decoy):
    # EPERM from the filter, not EINVAL or ENOSYS from the kernel (numbers libseccomp 2.5 does not
    # know: a name it cannot resolve would have left the call open).
    got = attack(layered, decoy, {k: v for k, v in ATTACKS.items() if k.startswith("raw")})
    assert set(got.values()) == {os.strerror(1)}, got


def test_chmod_in_the_samples_own_workdir_is_refused_too(layered):
    # The documented cost: seccomp cannot tell a path of the workdir from one of the host's.
    refused = [
        "os.chmod('mine', 0o600)",
        "os.utime('mine', (1, 1))",
        "os.setxattr('mine', 'user.x', b'1')",
        "shutil.copy('mine', 'copy')",
        "shutil.copy2('mine', 'copy2')",
        "shutil.copymode('mine', 'plain')",
        "shutil.copystat('mine', 'plain')",
    ]
    code = (
        "import os, json, shutil, pathlib\nopen('mine', 'w').write('x')\nshutil.copyfile('mine', 'plain')\n"
        "out = [open('plain').read()]\npathlib.Path('new').touch()\npathlib.Path('new').touch()\n"
        "out.append(os.path.exists('new'))\nos.umask(0o022)\n"
        + "".join(
            f"try:\n    {line}\n    out.append('ok')\nexcept PermissionError:\n    out.append('refused')\n"
            for line in refused
        )
        + "print(json.dumps(out))\n"
    )
    sc = Script(code, timeout=5.0)
    runs(layered, [sc])
    assert sc.reply is not None
    out = json.loads(b"".join(body for kind, body in sc.reply.frames if kind == b"O"))
    assert out == ["x", True] + ["refused"] * len(refused)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.sampled_from(["chmod", "fchmod", "chown", "fchown", "utime", "futime", "setxattr", "ioctl", "lease"]),
        min_size=1,
        max_size=6,
    ),
    mode=st.integers(0, 0o7777),
    ids=st.tuples(st.integers(0, 70000), st.integers(0, 70000)),
    times=st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)),
    high=st.integers(0, 2**32 - 1),
)
def test_generated_metadata_changes_never_reach_the_host_file(no_uid, decoy, ops, mode, ids, times, high):
    # ioctl and fcntl commands are 32-bit in the kernel: high bits set in the register must not
    # slip past the filter's comparison.
    lines = {
        "chmod": f"os.chmod(D, {mode})",
        "fchmod": f"os.fchmod(F, {mode})",
        "chown": f"os.chown(D, {ids[0]}, {ids[1]})",
        "fchown": f"os.fchown(F, {ids[0]}, {ids[1]})",
        "utime": f"os.utime(D, ns={times})",
        "futime": f"os.utime(F, ns={times})",
        "setxattr": f"os.setxattr(D, 'user.k{mode}', b'{mode}')",
        "ioctl": f"raw(16, F, {(high << 32) | 0x40086602}, ctypes.byref(ctypes.c_long(0x80)))",
        "lease": f"raw(72, F, {(high << 32) | 1024}, fcntl.F_RDLCK)",
    }
    before = metadata(decoy)
    got = attack(no_uid, decoy, {f"{i} {op}": lines[op] for i, op in enumerate(ops)})
    assert "allowed" not in got.values(), got
    assert metadata(decoy) == before


@pytest.fixture(scope="module")
def no_uid():
    _root()
    p = pool_with(NO_UID)
    if not p.layers.active("seccomp"):
        p.close()
        pytest.skip(f"seccomp is unavailable: {p.layers.status['seccomp']}")
    yield p
    p.close()


def test_without_seccomp_and_uid_the_metadata_attack_reaches_the_decoy_so_the_check_can_fail(decoy):
    p = pool_with(tuple(n for n in NO_UID if n != "seccomp"))
    try:
        assert p.layers.status["seccomp"] == "unavailable: disabled"
        before = metadata(decoy)
        got = attack(p, decoy, {"chmod": "os.chmod(D, 0)", "setxattr": ATTACKS["setxattr"]})
    finally:
        p.close()
    assert got == {"chmod": "allowed", "setxattr": "allowed"}
    assert metadata(decoy) != before


def test_strict_mode_refuses_a_pool_without_seccomp():
    from rlvr.errors import SandboxError

    with pytest.raises(SandboxError, match="seccomp"):
        SandboxPool(1, strict=True, enable=tuple(n for n in LAYERS if n != "seccomp")).start()


def test_the_table_refuses_every_metadata_call_and_agrees_with_libseccomp_on_each_number():
    lib = seccomp_lib()
    if lib is None:
        pytest.skip("libseccomp is not installed")
    always = {name for name, _, cmps, _, _ in SECCOMP_TABLE if not cmps}
    assert set(METADATA_CALLS) <= always
    for name, nr, _, _, why in SECCOMP_TABLE:
        assert why, name
        known = lib.seccomp_syscall_resolve_name(name.encode())
        assert known in (nr, -1), (name, nr, known)  # -1: newer than this libseccomp
    ioctl_types = {c[3] >> 8 for name, _, cmps, _, _ in SECCOMP_TABLE if name == "ioctl" for c in cmps}
    assert {0x66, 0x58} <= ioctl_types  # FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR
    assert struct.calcsize("l") == 8


def test_the_address_space_budget_cannot_be_raised_by_the_sample(full_pool):
    # The hard limit is the budget too (a soft limit alone is one setrlimit away from none).
    code = (
        "import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_AS)\n"
        "try:\n    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
        "    print('raised')\nexcept (ValueError, OSError):\n    print('kept', soft == hard)\n"
    )
    sc = Script(code, timeout=5.0)
    runs(full_pool, [sc])
    assert sc.reply is not None
    assert b"".join(body for kind, body in sc.reply.frames if kind == b"O") == b"kept True\n"
