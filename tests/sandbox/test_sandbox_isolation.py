"""No state across samples (issue class 5) and a host the sample cannot touch (class 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_sandbox_pool import Script, call, runs, value

from rlvr.sandbox.inside.harness import remove_tree
from rlvr.sandbox.pool import LAYERS, Limits, SandboxPool


def _root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (the full layer set, and reading a worker's memory)")


@pytest.fixture(scope="module")
def one_worker():
    """One worker, every layer: consecutive samples share it, as they would in training."""
    _root()
    p = SandboxPool(1, Limits(timeout=3.0, memory_mb=512))
    if p.layers.missing():
        p.close()
        pytest.skip(f"missing layers: {p.layers.missing()}")
    yield p
    p.close()


def _worker_memory(pid: int) -> bytes:
    out = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            addr, perms = line.split()[:2]
            if "r" not in perms or "w" not in perms:
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            try:
                mem.seek(lo)
                out.append(mem.read(hi - lo))
            except (OSError, ValueError, OverflowError):
                continue
    return b"".join(out)


def test_the_worker_never_holds_a_job_or_an_answer_so_no_fork_can_find_one(one_worker):
    # The red-team route: the next child is forked from the worker, so anything the worker read
    # (a job, a reply) can be recovered from memory. Here the job's argument and the answer are
    # secrets; after the session neither is anywhere in the worker's writable memory.
    job_secret = "jobsecret-" + os.urandom(8).hex()
    answer_secret = "answersecret-" + os.urandom(8).hex()
    sc = Script(f"def f(x):\n    return x.replace('jobsecret-', '') + {answer_secret!r}\n", call("f", job_secret))
    runs(one_worker, [sc])
    assert answer_secret in value(sc)
    memory = _worker_memory(one_worker._workers[0].proc.pid)
    assert len(memory) > 1 << 20  # we did read the worker's heap
    assert job_secret.encode() not in memory and answer_secret.encode() not in memory


PLANT = """
import os, ctypes
SECRET = {secret!r}
def f():
    os.environ["RLVR_PLANTED"] = SECRET
    for path in ("planted.txt", "/tmp/planted.txt", "/dev/shm/planted.txt", "../planted.txt"):
        try:
            open(path, "w").write(SECRET)
        except OSError:
            pass
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        shm = libc.shmget(0x52564C57, 4096, 0o1666)
        if shm >= 0:
            libc.shmat.restype = ctypes.c_void_p
            addr = libc.shmat(shm, None, 0)
            if addr and addr != ctypes.c_void_p(-1).value:
                ctypes.memmove(addr, SECRET.encode(), len(SECRET))
    except Exception:
        pass
    return SECRET
"""

HUNT = """
import os, sys, gc, ctypes, re
def f(prefix):
    pattern = re.compile(prefix + "[0-9a-f]{16}")
    found = []
    for o in gc.get_objects():
        try:
            if pattern.search(repr(o)[:100000]):
                found.append("gc")
                break
        except Exception:
            pass
    fr = sys._getframe()
    while fr:
        if pattern.search(repr(fr.f_locals)[:100000]) or pattern.search(repr(fr.f_globals)[:100000]):
            found.append("frames")
        fr = fr.f_back
    if any(pattern.search(v) for v in os.environ.values()):
        found.append("env")
    for top in (".", "..", "/tmp", "/dev/shm", "/run", "/var/tmp"):
        try:
            for root, dirs, files in os.walk(top):
                for name in files:
                    try:
                        if pattern.search(open(os.path.join(root, name)).read()):
                            found.append("file " + os.path.join(root, name))
                    except Exception:
                        pass
        except Exception:
            pass
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shm = libc.shmget(0x52564C57, 0, 0)
        if shm >= 0:
            addr = libc.shmat(shm, None, 0)
            if addr and addr != ctypes.c_void_p(-1).value and \
pattern.search(ctypes.string_at(addr, 4096).decode("latin-1")):
                found.append("sysv")
    except Exception:
        pass
    return found
"""


def _plant_then_hunt(pool: SandboxPool) -> list[str]:
    secret = "planted-" + os.urandom(8).hex()
    plant = Script(PLANT.format(secret=secret), call("f"))
    runs(pool, [plant])
    assert value(plant) == secret
    hunt = Script(HUNT, call("f", "planted-"))
    runs(pool, [hunt])
    return value(hunt)


def test_a_secret_planted_by_one_sample_is_not_found_by_the_next_by_any_route(one_worker):
    assert _plant_then_hunt(one_worker) == []


def test_the_hunt_finds_what_is_left_where_nothing_is_isolated(tmp_path):
    # The same plant and hunt with every layer off and the old workdir kept: the hunt must be
    # able to succeed, or the test above proves nothing. It walks only a folder of its own: a
    # walk over the host's /tmp reads whatever is there (a virtualenv, other tests' models) and
    # can run past the deadline.
    drop = tmp_path / "drop"
    drop.mkdir()
    p = SandboxPool(1, Limits(timeout=10.0), enable=())
    try:
        secret = "planted-" + os.urandom(8).hex()
        plant = Script(
            PLANT.format(secret=secret).replace('"../planted.txt"', repr(str(drop / "planted.txt"))), call("f")
        )
        runs(p, [plant])
        tops = '(".", "..", "/tmp", "/dev/shm", "/run", "/var/tmp")'
        assert tops in HUNT
        hunt = Script(HUNT.replace(tops, repr((str(drop),))), call("f", "planted-"))
        runs(p, [hunt])
        found = value(hunt)
    finally:
        p.close()
        for path in ("/tmp/planted.txt", "/dev/shm/planted.txt"):
            if os.path.exists(path):
                os.unlink(path)
        os.environ.pop("RLVR_PLANTED", None)
        _remove_shm(0x52564C57)
    assert any(f.startswith("file") for f in found), found


def _remove_shm(key: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    shm = libc.shmget(key, 0, 0)
    if shm >= 0:
        libc.shmctl(shm, 0, None)  # IPC_RMID


def test_sysv_objects_die_with_their_sample_and_never_reach_the_host():
    _root()
    # seccomp off, so the per-sample IPC namespace is what is tested.
    p = SandboxPool(1, Limits(timeout=3.0), enable=tuple(n for n in LAYERS if n != "seccomp"))
    try:
        if not p.layers.active("ipcns"):
            pytest.skip("no per-sample IPC namespace here")
        make = Script(
            "import ctypes\ndef f():\n    return ctypes.CDLL(None).shmget(0x52564C58, 4096, 0o1666)\n", call("f")
        )
        runs(p, [make])
        host = Path("/proc/sysvipc/shm").read_text()
        find = Script("import ctypes\ndef f():\n    return ctypes.CDLL(None).shmget(0x52564C58, 0, 0)\n", call("f"))
        runs(p, [find])
    finally:
        p.close()
    assert value(make) >= 0  # it was created, inside the sample's namespace
    assert value(find) == -1
    assert str(0x52564C58) not in host


def test_a_deep_directory_tree_and_a_full_workdir_do_not_reach_the_next_sample(one_worker):
    fill = (
        "import os\n"
        "def f():\n"
        "    for i in range(1500):\n"
        "        os.mkdir('d')\n"
        "        os.chdir('d')\n"
        "    n = 0\n"
        "    try:\n"
        "        while True:\n"
        "            open(f'big{n}', 'wb').write(b'x' * (8 << 20))\n"
        "            n += 1\n"
        "    except OSError:\n"
        "        return n\n"
    )
    sc = Script(fill, call("f"), timeout=3.0)
    runs(one_worker, [sc])
    scratch = Script(
        "import os\ndef f():\n    open('s.txt', 'w').write('ok' * 1000)\n"
        "    return [os.listdir('.'), open('s.txt').read()[:2]]\n",
        call("f"),
    )
    runs(one_worker, [scratch])
    assert value(scratch) == [["s.txt"], "ok"]


def test_tree_removal_has_no_recursion_limit(tmp_path):
    d = tmp_path / "top"
    d.mkdir()
    fd = os.open(d, os.O_RDONLY)
    for _ in range(3000):  # deeper than PATH_MAX allows as one path
        os.mkdir("d", dir_fd=fd)
        nfd = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nfd
    os.close(os.open("leaf.txt", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    remove_tree(str(d))
    assert not d.exists()


def test_sockets_memfd_and_sysv_are_refused_and_socketpair_still_works(one_worker):
    code = (
        "import os, socket, ctypes, asyncio\n"
        "def f():\n"
        "    out = []\n"
        "    for make in (lambda: socket.socket(socket.AF_UNIX), lambda: os.memfd_create('x')):\n"
        "        try:\n"
        "            make()\n"
        "            out.append('allowed')\n"
        "        except PermissionError:\n"
        "            out.append('refused')\n"
        "    out.append('refused' if ctypes.CDLL(None).shmget(0x1234, 4096, 0o1666) < 0 else 'allowed')\n"
        "    async def main():\n"
        "        return 'asyncio ok'\n"
        "    out.append(asyncio.run(main()))\n"
        "    return out\n"
    )
    sc = Script(code, call("f"))
    runs(one_worker, [sc])
    assert value(sc) == ["refused", "refused", "refused", "asyncio ok"]


def test_host_paths_are_not_visible_even_to_stat(one_worker):
    paths = [
        "/etc/passwd",
        "/proc/1/status",
        "/proc/self/status",
        "/sys/kernel",
        "/var/log",
        str(Path(__file__).resolve()),
        str(Path.home() / ".bashrc"),
    ]
    code = f"import os\ndef f():\n    return [p for p in {paths!r} if os.path.exists(p)]\n"
    sc = Script(code, call("f"))
    runs(one_worker, [sc])
    assert value(sc) == []


def test_a_host_unix_socket_is_reached_when_seccomp_is_off_so_the_check_can_fail():
    # Landlock on this kernel does not cover pathname UNIX sockets: seccomp is what stops them.
    _root()
    from rlvr.rewards.code import UnitTests
    from rlvr.rewards.rules.codeattacks import ATTACKS, run_attacks

    p = SandboxPool(1, Limits(timeout=2.0), enable=tuple(n for n in LAYERS if n != "seccomp"))
    try:
        results = run_attacks(
            UnitTests(timeout=2.0, pool=p), tuple(a for a in ATTACKS if a.name == "unix_connect_visible_dir")
        )
    finally:
        p.close()
    assert results[0].harm is not None
