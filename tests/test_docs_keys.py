"""The docs name only what the CLI accepts: every task-file key in docs/ and the README (the
reference's key table, each YAML task block, each ``key: value`` in a section's prose) is one the
task checker allows, and every built-in model is named in the reference and resolves."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.episodes.spec import KEYS as ENVIRONMENT_KEYS
from rlvr.models import BUILTIN_MODELS
from rlvr.task.checker import SECTION_KEYS, TERM_KEYS, TOP_KEYS, Checker

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
REFERENCE = ROOT / "docs" / "reference.md"
# grpo: takes any GRPOConfig field (checked by the recipe validation); these are rlvr's own.
GRPO_OWN = {"justify", "reward_weights", "stop", "dynamic", "tripwire"}


def key_problem(dotted: str) -> str | None:
    """Why ``dotted`` (``answer.format``, ``rewards[].weight``) is not a task-file key (None: it is)."""
    head, _, tail = dotted.partition(".")
    if not tail:
        return None if head in TOP_KEYS else f"{head!r} is not a top-level key"
    if head in SECTION_KEYS:
        return None if tail in SECTION_KEYS[head] else f"{tail!r} is not a key of {head}:"
    if head == "rewards[]":
        return None if tail in TERM_KEYS else f"{tail!r} is not a key of a reward term"
    if head == "environment":
        return None if tail in ENVIRONMENT_KEYS else f"{tail!r} is not a key of environment:"
    if head == "grpo":
        from trl import GRPOConfig

        return None if tail in GRPO_OWN or tail in GRPOConfig.__dataclass_fields__ else f"{tail!r}: not in grpo:"
    return f"{head!r} is not a section"


def reference_keys() -> list[str]:
    text = REFERENCE.read_text()
    table = text.split("## The task file", 1)[1].split("\n## ", 1)[0]
    out = []
    for row in re.findall(r"^\| (`[^|]+) \|", table, re.M):
        out += re.findall(r"`([^`]+)`", row)
    return out


@pytest.mark.parametrize("key", reference_keys())
def test_every_key_in_the_reference_table_is_accepted(key: str) -> None:
    assert key_problem(key) is None, key_problem(key)


def task_blocks() -> list[tuple[str, dict[str, Any]]]:
    """The YAML blocks of the docs that are (parts of) task files."""
    out = []
    for path in DOCS:
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", path.read_text(), re.S)):
            try:
                raw = yaml.safe_load(block)
            except yaml.YAMLError:
                continue
            if isinstance(raw, dict) and {"prompt", "answer", "rewards", "environment"} & set(raw):
                out.append((f"{path.name} block {i + 1}", raw))
    return out


@pytest.mark.parametrize(("where", "raw"), task_blocks(), ids=[w for w, _ in task_blocks()])
def test_every_key_of_a_task_file_shown_in_the_docs_is_accepted(where: str, raw: dict[str, Any]) -> None:
    c = Checker(where)
    c.keys("", raw, TOP_KEYS)
    for key in SECTION_KEYS:
        c.section(raw, key)
    if isinstance(raw.get("environment"), dict):
        c.keys("environment.", raw["environment"], ENVIRONMENT_KEYS)
    for term in raw.get("rewards") or []:
        if isinstance(term, dict):
            c.keys("rewards[].", term, TERM_KEYS)
    assert not c.problems, [str(p) for p in c.problems]


def section_prose() -> list[tuple[str, str, str]]:
    """(file, section, key) for each ``key: value`` span under a heading that says it documents a
    section of the task file: ``## Where the answer is (`answer:` in the task file)``."""
    out = []
    for path in DOCS:
        parts = re.split(r"^(#+ .*)$", path.read_text(), flags=re.M)
        for heading, body in zip(parts[1::2], parts[2::2], strict=True):
            named = re.search(r"`(\w+):` in the task file", heading)
            if named:
                out += [(path.name, named.group(1), k) for k in re.findall(r"`(\w+): [^`]+`", body)]
    return out


def test_some_prose_documents_a_section() -> None:
    assert any(section == "answer" for _, section, _ in section_prose())


@pytest.mark.parametrize(("file", "section", "key"), section_prose())
def test_every_key_written_in_a_sections_prose_is_accepted(file: str, section: str, key: str) -> None:
    assert key_problem(f"{section}.{key}") is None, f"{file}: {key_problem(f'{section}.{key}')}"


def test_every_builtin_model_is_named_in_the_reference_and_every_named_one_resolves() -> None:
    from rlvr.task.sections import read_model

    text = REFERENCE.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `model` |"))
    named = set(re.findall(r"builtin:([\w-]+)", text))
    assert set(BUILTIN_MODELS) <= set(re.findall(r"builtin:([\w-]+)", row)), row
    for name in sorted(named):
        c = Checker("reference")
        read_model(c, {"model": f"builtin:{name}"}, ROOT)
        assert not c.problems, [str(p) for p in c.problems]
