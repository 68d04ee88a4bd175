"""``rlvr sandbox check``."""

from __future__ import annotations

import os

import pytest

from rlvr.cli.main import main


def test_sandbox_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sandbox", "check", "--help"])
    assert exc.value.code == 0 and "--strict" in capsys.readouterr().out


def test_bad_worker_count_is_one_line_and_non_zero(capsys):
    assert main(["sandbox", "check", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--workers" in err


def test_missing_action_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["sandbox"])
    assert exc.value.code == 2


def test_check_prints_the_layers_and_stops_every_attack(capsys):
    if os.geteuid() != 0:
        pytest.skip("the full layer set needs root")
    code = main(["sandbox", "check", "--strict", "--timeout", "1.5"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "+ seccomp" in out and "GOT THROUGH" not in out and "still serving after the attacks: yes" in out
    assert "pathname UNIX sockets: socket() and connect() denied by seccomp" in out
    assert "stopped      raise_memory_error" in out and "stopped      hash_collision_answer" in out
