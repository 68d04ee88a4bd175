"""The package's shape: dependencies point down a fixed order of layers, no import cycles, modules
short enough to read, no private names borrowed across modules, and a public API equal to
``__all__``. Each test reads the source (``ast``), so a violation is found without importing it."""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import rlvr

SRC = Path(rlvr.__file__).parent

# Bottom to top, in the order a user works (DESIGN.md, Layout): a module may import from its own
# layer or any layer below it, never from a layer above. Names are the first part after ``rlvr.``.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "yamlio", "data", "atomic"),
    ("sandbox",),  # a leaf: it imports nothing above the errors
    ("engines",),  # adapters for generation/training engines (vLLM, verl) on platforms they lack
    ("models", "bpe"),
    ("rewards",),
    ("episodes",),  # tools and multi-turn episodes: the task's environment: section reads them
    ("settings",),  # a run's settings: recipe, config file, merge, check (resolve reads a task by shape)
    ("task",),
    ("generate", "lengths", "rollouts", "keptrollouts", "evaluate"),
    ("probe",),
    ("gate",),  # `rlvr inspect`
    ("audit",),
    ("plan",),
    ("train", "taskcheck"),
    ("doctor", "report"),
    ("serve",),
    ("demo",),
    ("cli",),
)
RANK = {name: i for i, layer in enumerate(LAYERS) for name in layer}
MAX_LINES = 500


@dataclass(frozen=True)
class Edge:
    source: str  # importing module, dotted
    target: str  # imported module, dotted
    line: int
    names: tuple[str, ...]  # names taken from the target (empty for `import x`)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def edges() -> Iterator[Edge]:
    """Every import of one rlvr module by another, at any depth (imports inside functions and
    under ``if TYPE_CHECKING`` count too: a lazy upward import is still an upward dependency)."""
    for name, path in MODULES.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in MODULES and alias.name != name:
                        yield Edge(name, alias.name, node.lineno, ())
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("rlvr"):
                    continue
                plain = []
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in MODULES:  # `from . import pool` takes a module
                        if sub != name:
                            yield Edge(name, sub, node.lineno, ())
                    else:
                        plain.append(alias.name)
                if plain and target in MODULES and target != name:
                    yield Edge(name, target, node.lineno, tuple(plain))


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_module_belongs_to_a_layer():
    unplaced = sorted({layer(m) for m in MODULES if m != "rlvr" and layer(m) not in RANK})
    assert not unplaced, f"add these to LAYERS (and to DESIGN.md's layout): {unplaced}"


def test_no_module_imports_from_a_layer_above_its_own():
    upward = [
        f"{MODULES[e.source].relative_to(SRC.parent)}:{e.line}: {e.source} ({layer(e.source)}) imports "
        f"{e.target} ({layer(e.target)})"
        for e in edges()
        if e.source != "rlvr" and RANK[layer(e.target)] > RANK[layer(e.source)]
    ]
    assert not upward, "\n".join(upward)


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_find_cycles_finds_a_cycle_and_passes_a_chain():
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_the_package_has_no_import_cycle():
    graph: dict[str, set[str]] = defaultdict(set)
    for m in MODULES:
        graph[m]
    for e in edges():
        if e.source != "rlvr":
            graph[e.source].add(e.target)
    assert find_cycles(graph) == []


def test_no_module_is_over_500_lines():
    long = {
        str(p.relative_to(SRC.parent)): n
        for p in MODULES.values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not long, f"split these modules (DESIGN.md, house style 1): {long}"


def test_no_private_name_is_imported_from_another_module():
    borrowed = [
        f"{MODULES[e.source].relative_to(SRC.parent)}:{e.line}: {', '.join(private)} from {e.target}"
        for e in edges()
        if (private := [n for n in e.names if n.startswith("_") and not n.startswith("__")])
    ]
    assert not borrowed, "\n".join(borrowed)


def test_the_public_api_is_exactly_all_and_all_is_sorted():
    public = {
        n
        for n, v in vars(rlvr).items()
        if not n.startswith("_") and not inspect.ismodule(v) and n not in ("annotations",)
    }
    assert public | {"__version__"} == set(rlvr.__all__)
    assert list(rlvr.__all__) == sorted(rlvr.__all__)


@pytest.mark.parametrize("name", sorted(m for m in MODULES if MODULES[m].name == "__init__.py"))
def test_every_name_in_a_packages_all_exists(name: str):
    module = importlib.import_module(name)
    missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert not missing


def test_importing_rlvr_loads_no_torch_trl_or_transformers():
    import subprocess

    code = "import rlvr, sys; print(sorted(m for m in ('torch', 'trl', 'transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def public_functions() -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Top-level public functions and public methods of public classes, with their module."""
    for name, path in MODULES.items():
        if layer(name) == "cli" or path.name == "child.py":  # child.py runs inside the sandbox, alone
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
                yield name, node
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and not item.name.startswith("_"):
                        yield f"{name}.{node.name}", item


def test_every_public_function_is_fully_annotated():
    bare = []
    for where, fn in public_functions():
        args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
        args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
        missing = [a.arg for a in args if a.annotation is None and a.arg not in ("self", "cls")]
        if missing or fn.returns is None:
            bare.append(f"{where}.{fn.name}:{fn.lineno}: " + (f"no type on {missing}" if missing else "no return type"))
    assert not bare, "\n".join(bare)


def test_no_function_takes_a_task_typed_as_any():
    untyped = [
        f"{where}.{fn.name}:{fn.lineno}"
        for where, fn in public_functions()
        for a in [*fn.args.args, *fn.args.kwonlyargs]
        if a.arg == "task" and isinstance(a.annotation, ast.Name) and a.annotation.id == "Any"
    ]
    assert not untyped, "type these as Task (rlvr.task.Task): " + ", ".join(untyped)


def test_no_two_test_files_share_a_basename():
    # tests/ folders are not packages (rootdir-relative imports by basename): two test_x.py in
    # different folders make pytest stop at collection with "import file mismatch".
    seen: dict[str, list[str]] = defaultdict(list)
    for path in (Path(__file__).parent).rglob("test_*.py"):
        seen[path.name].append(str(path.parent.name))
    assert {name: dirs for name, dirs in seen.items() if len(dirs) > 1} == {}


# The sandbox's trust zones (rlvr/sandbox/inside/__init__.py): what runs in a worker's interpreter
# and the children it forks is loaded there alone, from its folder, so it may import only itself
# and the standard library. The trainer side may import inside, never the reverse.
INSIDE = "rlvr.sandbox.inside"


def imports_outside_inside(module: str, source: str) -> list[str]:
    """``line: target`` for each import in ``source`` (the module ``module`` of the inside package,
    relative imports resolved) that is neither the inside package, imported relatively (the
    worker loads it under another name), nor the standard library."""
    package = module.split(".") if module == INSIDE else module.split(".")[:-1]
    bad = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(a.name, False) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = ".".join(package[: len(package) - node.level + 1])
            targets = [(".".join(p for p in (base, node.module) if p), True)]
        elif isinstance(node, ast.ImportFrom):
            targets = [(node.module or "", False)]
        else:
            continue
        for target, relative in targets:
            if relative and (target == INSIDE or target.startswith(INSIDE + ".")):
                continue
            if relative or target.split(".")[0] not in sys.stdlib_module_names:
                bad.append(f"{node.lineno}: {target}")
    return bad


def test_the_inside_import_check_finds_the_trainer_side_and_third_party_packages():
    source = (
        "import os\nfrom . import wire\nfrom .. import pool\nfrom ...errors import X\nimport torch\n"
        "from rlvr.sandbox.inside import wire\n"
    )
    found = imports_outside_inside(f"{INSIDE}.child", source)
    assert found == ["3: rlvr.sandbox", "4: rlvr.errors", "5: torch", "6: rlvr.sandbox.inside"]


def test_the_sandbox_inside_imports_only_itself_and_the_standard_library():
    inside = {name: path for name, path in MODULES.items() if name == INSIDE or name.startswith(INSIDE + ".")}
    assert f"{INSIDE}.harness" in inside and f"{INSIDE}.child" in inside
    bad = [
        f"{path.relative_to(SRC.parent)}:{where}"
        for name, path in inside.items()
        for where in imports_outside_inside(name, path.read_text(encoding="utf-8"))
    ]
    assert not bad, "the inside package imports only itself and the standard library:\n" + "\n".join(bad)
    # The worker's interpreter runs the package's __init__ first: nothing in it but its docstring.
    init = ast.parse(inside[INSIDE].read_text(encoding="utf-8")).body
    assert len(init) == 1 and isinstance(init[0], ast.Expr) and isinstance(init[0].value, ast.Constant)


def test_the_trainer_side_imports_inside_and_inside_never_imports_it():
    arrows = {(e.source.startswith(INSIDE), e.target.startswith(INSIDE)) for e in edges()}
    assert (False, True) in arrows  # the trainer side reaches inside through ordinary imports
    assert (True, False) not in arrows


def test_the_one_rule_modules_import_only_each_other() -> None:
    """``rlvr.rewards.rules`` (DESIGN.md, Layout): a rule depends on no verifier it constrains;
    the attack list may name the verifier types it runs through."""
    allowed = {"rlvr.errors", "rlvr.rewards.rules"}
    bad = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in edges()
        if e.source.startswith("rlvr.rewards.rules")
        and not any(e.target == a or e.target.startswith(a + ".") for a in allowed)
        and not (e.source == "rlvr.rewards.rules.codeattacks" and e.target == "rlvr.rewards.base")
    ]
    assert bad == []


# Who may ask whether a task has tools (issue 35: one rollout type). The runner (rlvr.rollouts,
# which samples every stage's episodes) and the task file's reader may; the rest is what is left
# to fold into them, each at most its count here, so the number only goes down.
ENVIRONMENT_ASKERS = {"rlvr.rollouts": 1, "rlvr.task": 1, "rlvr.task.spec": 1}
ENVIRONMENT_LEFT = {
    "rlvr.gate.hashes": 2,  # what the record binds: the tool modules and the search collection
    "rlvr.probe.run": 1,  # the SFT advice names the reference-calls column
    "rlvr.serve.launch": 1,  # an engine runs the tools itself: a warning
    "rlvr.serve.scoring": 1,  # the server's reward set reads texts back into episodes (serve.episodes)
    "rlvr.train.launch": 2,  # TRL's environment_factory and max_tool_calling_iterations
    "rlvr.train.sft": 2,  # reference episodes and their completion mask
    "rlvr.taskcheck": 2,
    "rlvr.evaluate": 1,
    "rlvr.lengths": 1,
}


def test_only_the_runner_and_the_task_reader_ask_whether_a_task_has_tools():
    import re

    asks = re.compile(r"environment is (not )?None")
    counts = {m: n for m, p in MODULES.items() if (n := len(asks.findall(p.read_text(encoding="utf-8"))))}
    allowed = {**ENVIRONMENT_ASKERS, **ENVIRONMENT_LEFT}
    over = {m: n for m, n in counts.items() if n > allowed.get(m, 0)}
    assert not over, f"sample through rlvr.rollouts.rollout_sampler instead of asking task.environment: {over}"
    assert sum(counts.values()) <= 16
