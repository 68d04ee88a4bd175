"""What the gate record binds, as hashes: the reward code (every module that decides a verdict,
found by following imports), the data files the rewards are scored against, and the inspection
set with its scores and verdicts. ``rlvr.gate.record`` writes these into ``gate.json`` and checks
them before a run; its docstring states what they cover and what they do not."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import GateError
from ..rewards import BUILTINS, source_module
from .store import Store

if TYPE_CHECKING:
    from ..task import Task

# Every term's verdict passes through these: extraction, the Verdict type, masking and weights.
SHARED_MODULES = ("rlvr.rewards.base", "rlvr.rewards.format", "rlvr.rewards.combine")
# rlvr code followed through imports: the verifiers and the sandbox, whose trusted side compares a
# program's outputs with the expected ones (so it decides unit-test verdicts).
FOLLOWED_PACKAGES = ("rlvr.rewards", "rlvr.sandbox", "rlvr.episodes")  # episodes: only from an episode task
# Modules started in another interpreter rather than imported (the scan follows their imports).
LOADED_BY_PATH = {"rlvr.sandbox.worker": ("rlvr.sandbox.inside.harness",)}


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_json(value: Any) -> str:
    return hashlib.sha256(
        json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    ).hexdigest()


def _module_file(name: str, search: Path) -> Path | None:
    if str(search) not in sys.path:
        sys.path.insert(0, str(search))  # user reward modules live beside the task file
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.has_location:
        return None
    return Path(spec.origin)


def _imports(path: Path, module: str) -> set[str]:
    """Module names imported by the source at ``path`` (relative imports resolved)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                base_parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(base_parts)
            else:
                base = ""
            target = ".".join(p for p in (base, node.module or "") if p)
            if target and node.module:
                out.add(target)
            for a in node.names:  # `from . import pool` imports a submodule (or a name)
                if target:
                    out.add(f"{target}.{a.name}")
    return out


def reward_modules(task: Task) -> dict[str, Path]:
    """The modules whose source decides the reward (see the module doc), by name."""
    search = Path(task.path).parent.resolve()
    start = {source_module(t.verifier) for t in task.rewards} | set(SHARED_MODULES)
    if any(t.verifier not in BUILTINS for t in task.rewards):
        start.add("rlvr.rewards")  # wraps plain functions into verifiers
    start |= _checker_modules(task)
    environment = getattr(task, "environment", None)  # an episode's reward reads its calls (rlvr.episodes)
    if environment is not None:
        start.add("rlvr.episodes.spec")  # builds the tools whose results the model reads
        start |= {t.rsplit(".", 1)[0] for t in environment.tools if "." in t}
    found: dict[str, Path] = {}
    todo = sorted(start)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = _module_file(name, search)
        if path is None:
            if name in start:
                raise GateError(
                    f"cannot find the source of reward module {name!r} to hash it (searched {search} and sys.path)"
                )
            continue  # a name like `rlvr.rewards.base.Verdict`: an attribute, not a module
        found[name] = path
        for dep in [*_imports(path, name), *LOADED_BY_PATH.get(name, ())]:
            if dep in found:
                continue
            if dep.startswith(FOLLOWED_PACKAGES) or _is_local(dep, search):
                todo.append(dep)
    return dict(sorted(found.items()))


def _checker_modules(task: Task) -> set[str]:
    """The modules of custom stdout checkers (``unit_tests``' ``checker: {function: mod.fn}``, in the
    task file or in a row's checker column): a checker decides stdin/stdout verdicts, so its code
    is reward code."""
    from ..task.rowchecks import local_splits

    paths: list[str] = []
    for t in task.rewards:
        if t.verifier != "unit_tests":
            continue
        options = getattr(t, "options", None) or {}  # the record tests pass stand-in terms without options
        paths.append(_checker_function(options.get("checker")))
        column = str(options.get("checker_column", "checker"))
        if getattr(task, "data", None) is None:
            continue
        for _, _, rows in local_splits(task):
            paths.extend(_checker_function(row.get(column)) for row in rows)
    return {f.partition(":")[0] if ":" in f else f.rpartition(".")[0] for f in paths if f}


def _checker_function(raw: Any) -> str:
    """The dotted ``function`` of a checker setting (a mapping, or a row's JSON text of one), else ''."""
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            raw = json.loads(raw)
        except ValueError:
            return ""
    fn = raw.get("function") if isinstance(raw, dict) else None
    return fn if isinstance(fn, str) else ""


def _is_local(name: str, search: Path) -> bool:
    """Whether ``name`` is a module of the task's folder. Looks up only the top-level name, which
    imports nothing (``find_spec("a.b")`` would import package ``a``)."""
    try:
        spec = importlib.util.find_spec(name.split(".")[0])
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    locations = [spec.origin] if spec.origin else list(spec.submodule_search_locations or [])
    # A task folder that contains a virtual environment must not pull installed packages in.
    installed = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return any(
        loc
        and under(Path(loc), search)
        and "site-packages" not in Path(loc).parts
        and not any(under(Path(loc), p) for p in installed)
        for loc in locations
    )


def under(path: Path | None, root: Path) -> bool:
    """Whether ``path`` lies inside ``root`` (both resolved)."""
    if path is None:
        return False
    try:
        path.resolve().relative_to(root)
        return True
    except ValueError:
        return False


def reward_code(task: Task) -> dict[str, dict[str, str]]:
    return {name: {"path": str(path), "sha256": sha256_file(path)} for name, path in reward_modules(task).items()}


def sha256_tree(root: Path) -> str:
    """One hash over a folder: every file's relative path and bytes, in sorted order."""
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return h.hexdigest()


def data_files(task: Task) -> dict[str, dict[str, Any]]:
    """The data the rewards are scored against, by role (``data.train``, ``data.eval``,
    ``rewards.<term>.options.<key>``): path and SHA-256 (``None`` for a hub reference)."""
    refs: list[tuple[str, str]] = [("data.train", task.data.train)]
    if task.data.eval:
        refs.append(("data.eval", task.data.eval))
    environment = getattr(task, "environment", None)
    if environment is not None and environment.documents:  # what the search tool answers from
        refs.append(("environment.documents", environment.documents))
    root = Path(task.path).parent.resolve()
    for t in task.rewards:
        for key, value in sorted(t.options.items()):
            if (
                not isinstance(value, str)
                or not value
                or "\n" in value
                or len(value) > 1000
                or value.startswith(("hf:", "builtin:"))
            ):
                continue
            p = Path(task.resolve(value))
            try:
                exists = p.is_file() or (p.is_dir() and not under(root, p.resolve()))  # never the task folder itself
            except OSError:
                exists = False
            if exists:
                refs.append((f"rewards.{t.name}.options.{key}", value))
    out: dict[str, dict[str, Any]] = {}
    for role, ref in refs:
        p = Path(task.resolve(ref))
        if p.is_file():
            out[role] = {"path": str(ref), "sha256": sha256_file(p)}
        elif p.is_dir():
            out[role] = {"path": str(ref), "sha256": sha256_tree(p)}
        else:
            out[role] = {"path": str(ref), "sha256": None}  # a hub dataset: recorded, not hashed
    return out


def set_hashes(store: Store) -> dict[str, str]:
    """Hashes of the sampled side of the set, the reward's scores on it, and every verdict."""
    samples = store.samples()
    meta = store.meta()
    sampled = [
        [s.id, r.prompt_index, r.prompt, dict(r.row), r.completion, list(r.token_ids), r.finish_reason, s.bucket]
        + ([r.episode.to_json()] if r.episode is not None else [])  # a set without episodes hashes as before
        for s in samples
        for r in (s.rollout,)
    ]
    scores = [
        [s.id, {k: v.to_json() for k, v in s.rollout.verdicts.items()}, s.rollout.total, s.reward_class]
        for s in samples
    ]
    return {
        "inspection_set": sha256_json({"meta": meta, "samples": sampled}),
        "scores": sha256_json(scores),
        "verdicts": sha256_json([r.to_json() for r in store.reviews()]),
    }
