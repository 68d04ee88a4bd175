"""The task file's ``environment:`` section: the tools a model may call and the episode's limits.

::

    environment:
      tools: [calculator, search, tools.lookup]   # built-ins by name; others module.function in the task folder
      documents: docs.jsonl        # the collection ``search`` reads (required with search)
      max_turns: 4                 # assistant turns per episode (the last one must answer)
      max_tool_calls: 6            # calls per episode; a call past it is answered with an error
      timeout: 5                   # seconds per call
      python_session: false        # true: the python tool keeps the names earlier calls defined (replayed)
      tool_error: message          # message: the error text; brief: "error"; end: the episode ends
      required: [search]           # tools every episode must use (the required_tools term), by name
                                   # (a task tool's name is its function's: tools.lookup is lookup;
                                   # the module.function form as listed under tools: is accepted too)
      call_budget: 2               # calls per episode before the call_budget term starts to cost
      terms: {valid_calls: 0.2, required_tools: 0.2, call_budget: 0.1}   # episode reward terms, by weight
      reference_calls: reference_calls   # the data column of calls that solve a row (rlvr sft; optional)

``read_environment`` checks every key and type, imports every task tool, reads every schema and
the collection, and returns all problems at once (one line each, naming the file and the field),
which ``load_task`` reports with the rest of the file's problems.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError, Problem
from .calculator import calculator
from .search import read_collection, search_tool
from .tools import Tool, ToolBox, import_tool, make_tool

KEYS = {
    "tools",
    "documents",
    "max_turns",
    "max_tool_calls",
    "timeout",
    "tool_error",
    "required",
    "call_budget",
    "terms",
    "python_session",
    "reference_calls",
}
TOOL_ERRORS = ("message", "brief", "end")
EPISODE_TERMS = ("valid_calls", "required_tools", "call_budget")
BUILTIN_TOOLS = ("calculator", "python", "search")

__all__ = ["BUILTIN_TOOLS", "EPISODE_TERMS", "EnvironmentSpec", "build_toolbox", "read_environment"]


@dataclass(frozen=True)
class EnvironmentSpec:
    """An episode's tools and limits (see the module docstring for each field's meaning)."""

    tools: tuple[str, ...]
    root: Path
    documents: str | None = None
    max_turns: int = 4
    max_tool_calls: int = 6
    timeout: float = 5.0
    tool_error: str = "message"
    required: tuple[str, ...] = ()
    call_budget: int | None = None
    terms: tuple[tuple[str, float], ...] = ()
    python_session: bool = False
    reference_calls: str | None = None  # the column named in the file; None: the default column

    @property
    def reference_column(self) -> str:
        """The data column of each row's reference calls (``rlvr.episodes.reference``)."""
        return self.reference_calls or "reference_calls"

    @property
    def budget(self) -> int:
        return self.max_tool_calls if self.call_budget is None else self.call_budget


def _int(problems: list[Problem], where: str, value: Any, low: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        problems.append(Problem(where, f"must be an integer of at least {low}, got {value!r}", f"write {max(low, 1)}"))
        return None
    return value


def read_environment(raw: Any, root: Path, source: str) -> tuple[EnvironmentSpec | None, list[Problem]]:
    """The section as an ``EnvironmentSpec`` and every problem found (the spec is None when a
    problem makes it unusable)."""
    where = f"{source}: environment"
    problems: list[Problem] = []
    if not isinstance(raw, Mapping):
        return None, [Problem(where, f"must be a mapping, got {type(raw).__name__}", "write tools: [...] under it")]
    for key in raw:
        if key not in KEYS:
            problems.append(Problem(f"{where}.{key}", "unknown key", f"allowed keys: {', '.join(sorted(KEYS))}"))
    tools = raw.get("tools")
    if not isinstance(tools, list) or not tools or not all(isinstance(t, str) and t for t in tools):
        problems.append(
            Problem(f"{where}.tools", f"must be a non-empty list of tool names, got {tools!r}", "e.g. [calculator]")
        )
        return None, problems
    if len(set(tools)) != len(tools):
        problems.append(Problem(f"{where}.tools", "names a tool twice", "list each tool once"))
    kw: dict[str, Any] = {}
    for key, low in (("max_turns", 1), ("max_tool_calls", 0), ("call_budget", 0)):
        if key in raw:
            kw[key] = _int(problems, f"{where}.{key}", raw[key], low)
    if "timeout" in raw:
        t = raw["timeout"]
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= 600:
            problems.append(Problem(f"{where}.timeout", f"must be seconds above 0 and at most 600, got {t!r}", "5"))
        else:
            kw["timeout"] = float(t)
    if "tool_error" in raw and raw["tool_error"] not in TOOL_ERRORS:
        problems.append(
            Problem(f"{where}.tool_error", f"must be one of {', '.join(TOOL_ERRORS)}, got {raw['tool_error']!r}", "")
        )
    elif "tool_error" in raw:
        kw["tool_error"] = raw["tool_error"]
    if "python_session" in raw:
        if not isinstance(raw["python_session"], bool):
            problems.append(
                Problem(f"{where}.python_session", f"must be true or false, got {raw['python_session']!r}", "true")
            )
        elif raw["python_session"] and "python" not in tools:
            problems.append(Problem(f"{where}.python_session", "needs the python tool", "add python to tools"))
        else:
            kw["python_session"] = raw["python_session"]
    if "reference_calls" in raw:
        col = raw["reference_calls"]
        if not isinstance(col, str) or not col.strip():
            problems.append(
                Problem(f"{where}.reference_calls", f"must be a column name, got {col!r}", "reference_calls")
            )
        else:
            kw["reference_calls"] = col
    if "documents" in raw:
        if not isinstance(raw["documents"], str):
            problems.append(Problem(f"{where}.documents", "must be a path to a JSONL file", "documents: docs.jsonl"))
        else:
            kw["documents"] = raw["documents"]
    required = raw.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append(Problem(f"{where}.required", "must be a list of tool names", "e.g. [search]"))
        required = []
    kw["required"] = tuple(required)
    terms = raw.get("terms", {})
    if not isinstance(terms, Mapping):
        problems.append(Problem(f"{where}.terms", "must map term names to weights", "e.g. {valid_calls: 0.2}"))
        terms = {}
    term_list = []
    for name, weight in terms.items():
        if name not in EPISODE_TERMS:
            problems.append(
                Problem(f"{where}.terms.{name}", "unknown episode term", f"known: {', '.join(EPISODE_TERMS)}")
            )
        elif isinstance(weight, bool) or not isinstance(weight, (int, float)):
            problems.append(Problem(f"{where}.terms.{name}", f"the weight must be a number, got {weight!r}", "0.2"))
        else:
            term_list.append((str(name), float(weight)))
    kw["terms"] = tuple(term_list)
    names = tool_names(tuple(tools))
    resolved_required = []
    for name in kw["required"]:
        known = required_name(name, tuple(tools))
        if known is None:
            problems.append(
                Problem(
                    f"{where}.required",
                    f"{name!r} is not one of the tools (a tool is named by its function: {', '.join(names)})",
                    f"write one of {', '.join(names)}",
                )
            )
        else:
            resolved_required.append(known)
    kw["required"] = tuple(resolved_required)
    kw = {k: v for k, v in kw.items() if v is not None}
    spec = EnvironmentSpec(tools=tuple(tools), root=root, **kw)
    if dict(spec.terms).get("required_tools") is not None and not spec.required:
        problems.append(Problem(f"{where}.terms.required_tools", "no tools are required", "set required: [...]"))
    try:
        build_toolbox(spec, source)
    except ConfigError as exc:
        problems.extend(exc.problems)
    return (spec if not problems else None), problems


def tool_names(refs: tuple[str, ...]) -> list[str]:
    """The names the model calls the tools by: a built-in's name, a task tool's function name
    (``units.convert`` is ``convert``), in the order listed."""
    return [t.rsplit(".", 1)[-1] for t in refs]


def required_name(name: str, refs: tuple[str, ...]) -> str | None:
    """The tool a ``required:`` entry means (None: none). Either the tool's name or, for a task
    tool, the ``module.function`` reference as written under ``tools:``; that form is unambiguous
    because two tools may not share a name (``build_toolbox`` refuses it)."""
    if name in tool_names(refs):
        return name
    return name.rsplit(".", 1)[-1] if name in refs else None


def build_toolbox(spec: EnvironmentSpec, source: str = "task.yaml") -> ToolBox:
    """The environment's tools, built and checked (``ConfigError`` listing every problem)."""
    where = f"{source}: environment.tools"
    problems: list[Problem] = []
    built: list[Tool] = []
    for ref in spec.tools:
        try:
            fn = _builtin(ref, spec, source) if "." not in ref else import_tool(ref, spec.root)
            tool = make_tool(fn)
        except (ValueError, DataError) as exc:
            problems.append(Problem(f"{where}: {ref}", str(exc), _fix(ref)))
            continue
        if tool.name in ("reset", "get_reward") or tool.name.startswith("_"):
            problems.append(
                Problem(f"{where}: {ref}", f"{tool.name!r} is a name TRL's environments reserve", "rename it")
            )
            continue
        if tool.name in {t.name for t in built}:
            problems.append(Problem(f"{where}: {ref}", f"a second tool named {tool.name!r}", "rename one"))
        built.append(tool)
    if problems:
        raise ConfigError(problems)
    return ToolBox(built, timeout=spec.timeout)


def _builtin(ref: str, spec: EnvironmentSpec, source: str) -> Callable[..., Any]:
    if ref == "calculator":
        return calculator
    if ref == "search":
        if spec.documents is None:
            raise ValueError("search needs environment.documents: a JSONL collection in the task folder")
        path = Path(spec.documents)
        return search_tool(read_collection(path if path.is_absolute() else spec.root / path))
    if ref == "python":
        from .pytool import python_session_tool, python_tool

        return python_session_tool(spec.timeout) if spec.python_session else python_tool(spec.timeout)
    raise ValueError(f"unknown built-in tool {ref!r}")


def _fix(ref: str) -> str:
    if "." in ref:
        return "a function with type hints and a Google-style docstring (Args:) in a .py file of the task folder"
    return f"built-ins: {', '.join(BUILTIN_TOOLS)}; other tools as module.function in the task folder"
