"""The README's tutorial, run from the README itself, so it cannot drift from the CLI.

Commands are the ``$ rlvr ...`` lines of the ``console`` blocks in the "Tutorial" section, run in
order in a fresh folder. Each output line the README shows must appear in the real output (paths
relative to that folder); ``...`` inside a line stands for any text (a duration), a line ``...``
for lines left out. ``rlvr inspect review`` gets the reader's keys on stdin: ``r`` (the reward is right) for
every sample, which is true of the built-in task's exact-match reward.

The default run covers the commands that load no model weights for sampling or training (task
example and check, audit, plan), the task file shown, the verifier example and the verifier
options table in docs/reference.md; ``-m slow`` runs the whole tutorial.
"""

from __future__ import annotations

import io
import re
import shlex
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import pytest

from rlvr.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
REFERENCE = ROOT / "docs" / "reference.md"
FAST = ("task example", "task check", "audit", "plan")


@dataclass(frozen=True)
class Step:
    command: str
    expected: tuple[str, ...]

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.command)[1:]


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def tutorial_steps() -> list[Step]:
    text = section(README.read_text(encoding="utf-8"), "Tutorial")
    steps: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        command, lines = None, []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command:
                    steps.append(Step(command, tuple(lines)))
                command, lines = line[2:].strip(), []
            else:
                lines.append(line)
        if command:
            steps.append(Step(command, tuple(lines)))
    return [s for s in steps if s.command.startswith("rlvr ")]


def marked_block(text: str, marker: str) -> str:
    return re.search(rf"<!-- {marker} -->\n```\w*\n(.*?)```", text, re.S).group(1)


class Keyboard(io.StringIO):
    """The reader's keystrokes, as a terminal gives them (review refuses a pipe without --no-tty)."""

    def isatty(self) -> bool:
        return True


def run_step(step: Step, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(folder)
    if step.argv[:2] == ["inspect", "review"]:
        monkeypatch.setattr(sys, "stdin", Keyboard("r\n" * 200 + "q\n"))
    capsys.readouterr()
    code = main(step.argv)
    out = capsys.readouterr().out.replace(f"{folder}/", "")
    assert code == 0, f"{step.command} exited {code}:\n{out}"
    return out


NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def loose(text: str) -> str:
    """``text`` with every number as ``#``: what a step that trains or samples a model prints is
    the same text on every machine, but its numbers (and the bars and padding drawn from them)
    follow the machine's float kernels (the same 325 SFT steps read a 27 % dev rate on one 2-core
    machine and 34 % on another)."""
    return re.sub(
        r"[ \t]+", " ", re.sub(r"#+", "#", NUMBER.sub("#", text))
    ).strip()  # bars and padding follow the numbers


def assert_shown(step: Step, out: str) -> None:
    """Every line the README shows for ``step`` is in ``out``: exactly for the steps that load no
    weights (``FAST``), with numbers free (``loose``) for the steps whose numbers a model decides."""
    if not any(step.command.startswith(f"rlvr {f}") for f in FAST):
        step = Step(step.command, tuple(loose(line) for line in step.expected))
        out = "\n".join(loose(line) for line in out.splitlines())
    actual = out.splitlines()
    for line in step.expected:
        if not line.strip() or line.strip() == "...":
            continue
        if "..." in line:  # each ... stands for any text (a duration, a long reason)
            pattern = re.compile(
                ".*?".join(re.escape(part) for part in line.split("...")) + ("" if line.endswith("...") else "$")
            )
            assert any(pattern.match(a) for a in actual), f"{step.command}: no line matches {line!r}:\n{out}"
        else:
            assert line in actual, f"{step.command}: the README shows {line!r}, the command printed:\n{out}"


def test_a_model_steps_numbers_are_free_and_its_text_is_not() -> None:
    step = Step(
        "rlvr sft mytask", ("SFT: 325 steps on 1900 rows in ... s; dev pass rate 27.0% on 100 rows (target reached)",)
    )
    assert_shown(step, "SFT: 325 steps on 1900 rows in 12 s; dev pass rate 34.0% on 100 rows (target reached)\n")
    with pytest.raises(AssertionError):
        assert_shown(step, "SFT: 325 steps on 1900 rows in 12 s; dev pass rate 34.0% on 100 rows (target missed)\n")
    exact = Step("rlvr plan mytask", ("learning_rate 0.0001",))
    with pytest.raises(AssertionError):
        assert_shown(exact, "learning_rate 0.0002\n")


def test_the_tutorial_has_every_step_of_the_workflow() -> None:
    shown = [" ".join(s.argv[:2]) if s.argv[0] in ("task", "inspect") else s.argv[0] for s in tutorial_steps()]
    for step in (
        "task example",
        "task check",
        "probe",
        "sft",
        "inspect build",
        "inspect review",
        "inspect sign",
        "audit",
        "plan",
        "train",
        "doctor",
        "report",
    ):
        assert step in shown, step


def test_the_tutorial_steps_that_load_no_weights_run_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from rlvr.models import resolve_model

    # The plan step plans for the SFT model (the one the gate is signed on): a copy of the
    # untrained built-in stands in for it, so no training runs here.
    shutil.copytree(resolve_model("builtin:tiny"), tmp_path / "runs" / "mytask-sft")
    ran = []
    for step in tutorial_steps():
        if any(step.command.startswith(f"rlvr {f}") for f in FAST):
            assert_shown(step, run_step(step, tmp_path, capsys, monkeypatch))
            ran.append(step.command)
    assert len(ran) == len(FAST)


@pytest.mark.slow
def test_the_whole_tutorial_runs_as_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for step in tutorial_steps():
        assert_shown(step, run_step(step, tmp_path, capsys, monkeypatch))
    assert (tmp_path / "runs" / "mytask" / "final" / "config.json").exists()
    assert (tmp_path / "runs" / "mytask" / "report" / "report.html").exists()


def test_the_task_file_shown_is_the_one_task_example_writes(tmp_path: Path) -> None:
    from rlvr.demo.arithmetic import write_task

    shown = marked_block(README.read_text(encoding="utf-8"), "tutorial:task-yaml")
    assert write_task(tmp_path / "mytask").read_text() == shown


def test_the_verifier_example_works_as_the_success_term(tmp_path: Path) -> None:
    import yaml

    from rlvr.demo.arithmetic import write_task
    from rlvr.rewards import Sample
    from rlvr.task import load_task
    from rlvr.taskcheck import check_task

    code = marked_block(README.read_text(encoding="utf-8"), "tutorial:verifier")
    path = write_task(tmp_path / "mytask")
    (tmp_path / "mytask" / "myverifiers.py").write_text(code)
    spec = yaml.safe_load(path.read_text())
    spec["rewards"][1] = {"name": "correct", "verifier": "myverifiers.close_enough"}
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    task = load_task(path)
    assert task.success_term == "correct" and check_task(task) == []
    term = task.reward_set().terms[1].verifier
    outcomes = [
        term.verify(Sample(c, row={"answer": "78"})).outcome.value
        for c in ("<answer>79</answer>", "<answer>80</answer>", "79")
    ]
    assert outcomes == ["correct", "wrong", "unparseable"]


def verifier_option_rows() -> dict[str, str]:
    """What the verifier-options table in docs/reference.md must say, from the constructors."""
    from rlvr.rewards import BUILTINS, import_object, option_params
    from rlvr.rewards.math import MathPolicy

    rows = {}
    for name, target in BUILTINS.items():
        params = option_params(import_object(target)).values()
        parts = [
            f"`{p.name}` ({'required' if p.default is p.empty else repr(p.default)})"
            for p in params
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        text = ", ".join(parts)
        if name == "math":  # the policy options arrive as keyword arguments
            text += "; policy: " + ", ".join(f"`{f.name}` ({f.default!r})" for f in fields(MathPolicy))
        rows[name] = text
    return rows


def test_the_reference_lists_every_verifier_option_with_its_default() -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    table = text.split("<!-- verifier-options:begin -->")[1].split("<!-- verifier-options:end -->")[0]
    shown = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", table, re.M))
    assert shown == verifier_option_rows()


@pytest.mark.parametrize("doc", [README, REFERENCE])
def test_every_relative_link_resolves(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    broken = []
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            slugs = {
                re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
                for h in re.findall(r"^#+ (.*)$", file.read_text(encoding="utf-8"), re.M)
            }
            if anchor not in slugs:
                broken.append(target)
    assert broken == []


def test_the_readme_shows_every_example_task_file_as_it_is() -> None:
    text = README.read_text(encoding="utf-8")
    examples = sorted(p.parent for p in (ROOT / "examples").glob("*/task.yaml") if p.parent.name != "arithmetic")
    assert examples
    for folder in examples:
        assert marked_block(text, f"example:{folder.name}") == (folder / "task.yaml").read_text(encoding="utf-8"), (
            folder.name
        )


def test_the_reference_lists_every_task_file_key() -> None:
    from rlvr.task.checker import MOVED_KEYS, SECTION_KEYS, TERM_KEYS, TOP_KEYS

    table = section(REFERENCE.read_text(encoding="utf-8"), "The task file")
    listed = set(re.findall(r"^\| `([\w.\[\]]+)`", table, re.M)) | {
        k for row in re.findall(r"^\| (`[^|]*`) \|", table, re.M) for k in re.findall(r"`([\w.\[\]]+)`", row)
    }
    keys = {k for k in TOP_KEYS if k not in SECTION_KEYS} | {
        f"{s}.{k}" for s, ks in SECTION_KEYS.items() for k in ks if (s, k) not in MOVED_KEYS
    }
    keys |= {f"rewards[].{k}" for k in TERM_KEYS} | {"grpo", "sft"}
    assert sorted(keys - listed) == []


def test_the_layout_lists_every_top_level_package_and_module() -> None:
    block = README.read_text(encoding="utf-8").split("src/rlvr/\n", 1)[1].split("```", 1)[0]
    listed = {word.rstrip("/") for line in block.splitlines() for word in line.split()[:8]}
    src = ROOT / "src" / "rlvr"
    packages = {p.name for p in src.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
    missing = sorted(name for name in packages | modules if name not in listed and f"{name}.py" not in listed)
    assert not missing, f"README's layout block does not list: {missing}"
