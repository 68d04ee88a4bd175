"""The attack list: each attack is stopped, scored not-passed, touches nothing outside, and the
pool serves the next sample."""

from __future__ import annotations

import os

import pytest

from rlvr.rewards.base import Outcome, Sample
from rlvr.rewards.code import UnitTests
from rlvr.rewards.rules.codeattacks import ADD_TESTS, ATTACKS, run_attacks
from rlvr.sandbox.pool import Limits, SandboxPool

GOOD = Sample("```python\ndef add(a, b):\n    return a + b\n```", row={"tests": ADD_TESTS})


@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_is_stopped_scored_not_passed_and_the_pool_keeps_serving(full_pool, attack):
    verifier = UnitTests(timeout=2.0, memory_mb=512, pool=full_pool)
    (result,) = run_attacks(verifier, (attack,))
    assert result.harm is None, result.harm
    assert result.stopped, result
    assert verifier.verify(GOOD).outcome is Outcome.CORRECT


def test_escape_attacks_get_through_without_isolation_so_the_checks_can_fail():
    # The same attacks against a pool with every layer switched off: the host-side checks must
    # notice, or the test above could never fail. All targets are this test's own scratch files,
    # listeners and sleeping process.
    if os.geteuid() != 0:
        pytest.skip("compares against the root-run pool; needs root")
    names = {
        "tcp_connect",
        "udp_sendto",
        "unix_socket_connect",
        "read_etc_passwd",
        "write_outside_workdir",
        "os_system",
        "subprocess",
        "rmtree_decoy",
        "kill_outside_process",
        "read_test_file",
        "ctypes_system",
        "unix_connect_visible_dir",
        "unix_dgram_sendto",
        "unix_socketpair_sendto",
        "memfd_outside_the_budget",
        "stat_host_paths",
    }
    chosen = tuple(a for a in ATTACKS if a.name in names)
    bare = SandboxPool(1, Limits(timeout=2.0), enable=())
    try:
        results = run_attacks(UnitTests(timeout=2.0, pool=bare), chosen)
    finally:
        bare.close()
    assert [r.name for r in results if r.stopped] == []


def test_reward_hacks_are_not_passed_even_without_isolation():
    # Verdict integrity does not depend on the isolation layers: it is decided on the trusted side.
    names = {
        "sys_exit_0",
        "os_exit_0",
        "print_fake_passed",
        "always_equal_object",
        "int_subclass_equal",
        "monkeypatch_unittest",
        "write_result_channel",
        "patched_math_isclose",
        "always_equal_inside_all",
        "contains_always_true",
        "shadowed_isinstance",
        "bool_passes_not_equal",
        "read_caller_frames",
        "raise_memory_error",
        "exit_code_71",
        "close_pipes_and_sleep",
        "kill_itself",
        "fail_then_hang",
        "hash_collision_answer",
        "garbage_answer",
    }
    bare = SandboxPool(1, Limits(timeout=2.0), enable=())
    try:
        results = run_attacks(UnitTests(timeout=2.0, pool=bare), tuple(a for a in ATTACKS if a.name in names))
    finally:
        bare.close()
    assert len(results) == len(names) and all(r.stopped for r in results), results
