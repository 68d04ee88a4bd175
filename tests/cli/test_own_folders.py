"""Commands never delete what they did not create: ``rlvr demo --out`` replaces only a folder an
earlier demo made (it holds the demo's marker) and refuses any other non-empty folder, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rlvr.demo
from rlvr.cli.demo import MARKER
from rlvr.cli.main import main


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The demo's stages replaced by a stub that records the folder it was given."""
    seen: list[Path] = []

    def stub(out: Path, **kw: Any) -> list[Any]:
        seen.append(out)
        (out / "demo.json").write_text("{}\n")
        return []

    monkeypatch.setattr(rlvr.demo, "run_demo", stub)
    return seen


def test_demo_refuses_a_folder_of_the_users_files_and_leaves_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ran: list[Path]
) -> None:
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine\n")
    assert main(["demo", "--out", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"--out {mine}" in err and MARKER in err
    assert (mine / "notes.txt").read_text() == "mine\n" and not ran


def test_demo_replaces_a_folder_an_earlier_demo_made(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ran: list[Path]
) -> None:
    out = tmp_path / "demo"
    main(["demo", "--out", str(out)])
    (out / "stale.txt").write_text("from the earlier demo\n")
    main(["demo", "--out", str(out)])
    assert ran == [out, out] and not (out / "stale.txt").exists() and (out / MARKER).is_file()


def test_demo_writes_into_an_empty_folder(tmp_path: Path, ran: list[Path]) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    main(["demo", "--out", str(out)])
    assert ran == [out] and (out / MARKER).is_file()
