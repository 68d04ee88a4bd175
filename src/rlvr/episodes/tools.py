"""An episode's tools: each a plain Python function whose JSON schema is read from its signature
and Google-style docstring with ``transformers.utils.get_json_schema``, the reader TRL's
``GRPOTrainer`` and ``apply_chat_template(tools=...)`` use, so the schema the model is shown in
the probe, the gate and training is one schema.

A call goes through ``ToolBox.call``, the one place a tool runs:

- the arguments are checked against the tool's parameter schema first (types, required keys, no
  keys the schema does not name: ``rewards.rules.jsonrules.forbid_extra``); a call that fails the check
  never reaches the function;
- the function runs in a daemon thread joined with the per-call ``timeout``: a call that takes
  longer is answered with a timeout error at once. Python cannot stop a thread, so a task tool that
  hangs keeps its thread until it returns -- task tools are the task author's trusted code, which
  must never run code the model wrote (that belongs in rlvr's sandbox);
- the result becomes text (a string as is, anything else as JSON), cut to ``max_result_chars``.
  An exception or a timeout becomes a ``ToolResult`` with ``error`` set; what the model then reads
  is decided by the environment's ``tool_error`` option (``rlvr.episodes.spec``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem

MAX_RESULT_CHARS = 2000

__all__ = ["Tool", "ToolBox", "ToolResult", "import_tool", "make_tool"]


@dataclass(frozen=True)
class ToolResult:
    """What one call returned: ``content`` (text) or ``error`` (a one-line reason)."""

    content: str = ""
    error: str | None = None
    kind: str | None = None  # invalid, failed or timeout (rlvr.episodes.episode.Call.kind)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Tool:
    """A callable tool: its name, the function and the OpenAI-style function schema."""

    name: str
    function: Callable[..., Any]
    schema: Mapping[str, Any]  # {"type": "function", "function": {"name", "description", "parameters"}}
    validator: Any = field(default=None, compare=False, repr=False)

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.schema["function"].get("parameters") or {"type": "object", "properties": {}}

    def check_arguments(self, arguments: Any) -> str | None:
        """Why ``arguments`` do not fit the schema (a sentence), or None when they do."""
        from ..rewards.rules.jsonrules import first_error

        if not isinstance(arguments, Mapping):
            return f"arguments must be a JSON object, got {type(arguments).__name__}"
        err: str | None = first_error(self.validator, dict(arguments))
        return err


def make_tool(function: Callable[..., Any], name: str | None = None) -> Tool:
    """A ``Tool`` from a function with type hints and a Google-style docstring (``ValueError``
    with the reader's reason when its schema cannot be read)."""
    from transformers.utils import get_json_schema

    from ..rewards.rules.jsonrules import build_validator, forbid_extra

    try:
        schema = get_json_schema(function)
    except Exception as exc:  # noqa: BLE001 - DocstringParsingException, TypeHintParsingException, ...
        raise ValueError(f"no JSON schema from its signature and docstring: {exc}") from None
    schema["function"].pop("return", None)
    if name is not None:
        schema["function"]["name"] = name
    params = schema["function"].get("parameters") or {"type": "object", "properties": {}}
    validator = build_validator(forbid_extra(params), f"tool {schema['function']['name']}")
    return Tool(schema["function"]["name"], function, schema, validator)


def import_tool(ref: str, root: Path) -> Callable[..., Any]:
    """The function ``ref`` names: ``module.function`` or ``package.module.function``, a file
    ``module.py`` (``package/module.py``) in the task folder ``root``. ``ValueError`` with the
    reason otherwise."""
    parts = ref.split(".")
    if len(parts) < 2 or not all(p.isidentifier() for p in parts):
        raise ValueError("not a dotted path module.function")
    path = root.joinpath(*parts[:-2], parts[-2] + ".py")
    if not path.is_file():
        raise ValueError(f"no file {path}")
    # A module name of our own (a hash of the path): importing never shadows or reuses a module
    # of the same name elsewhere on sys.path.
    mod_name = "rlvr_task_tools_" + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - any error in the author's module is reported, not raised
        raise ValueError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    fn = getattr(module, parts[-1], None)
    if fn is None:
        raise ValueError(f"{path} has no {parts[-1]!r}")
    if not callable(fn):
        raise ValueError(f"{path}: {parts[-1]!r} is not a function")
    return fn  # type: ignore[no-any-return]


class ToolBox:
    """The tools of one environment, called with a per-call timeout (see the module docstring)."""

    def __init__(self, tools: list[Tool], timeout: float = 5.0, max_result_chars: int = MAX_RESULT_CHARS) -> None:
        self.tools = {t.name: t for t in tools}
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self.watch: CallWatch | None = None  # progress over the calls (rlvr probe and rlvr sft set one)

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def schemas(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(t.schema)) for t in self.tools.values()]

    def call(self, name: Any, arguments: Any) -> ToolResult:
        """Call one tool (never raises: a failure is the result's ``error``); ``watch`` sees every call."""
        start = time.monotonic()
        result = self._call(name, arguments)
        if self.watch is not None:
            self.watch.saw(str(name), result, time.monotonic() - start)
        return result

    def _call(self, name: Any, arguments: Any) -> ToolResult:
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            return ToolResult(error=f"unknown tool {name!r}; tools: {', '.join(self.tools)}", kind="invalid")
        problem = tool.check_arguments(arguments)
        if problem:
            return ToolResult(error=f"bad arguments for {tool.name}: {problem}", kind="invalid")
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = tool.function(**arguments)
            except BaseException as exc:  # noqa: BLE001 - reported to the model as the tool's error
                box["error"] = f"{type(exc).__name__}: {exc}"

        thread = threading.Thread(target=run, name=f"rlvr-tool-{tool.name}", daemon=True)
        thread.start()
        thread.join(self.timeout + float(getattr(tool.function, "grace_seconds", 0.0)))
        if thread.is_alive():
            return ToolResult(error=f"{tool.name} timed out after {self.timeout:g} s", kind="timeout")
        if "error" in box:
            return ToolResult(error=str(box["error"])[:300], kind="failed")
        value = box.get("value")
        text = value if isinstance(value, str) else _as_json(value)
        return ToolResult(content=text[: self.max_result_chars])


class CallWatch:
    """Counts a stage's tool calls and their failures, and shows progress on stderr: a line at most
    every ``every`` seconds while calls run, so a tool that hangs (a timeout per call) is visible
    instead of a silent pause. ``commonest`` names the failure seen most, for the stage's advice."""

    def __init__(self, label: str, *, enabled: bool = True, every: float = 10.0) -> None:
        self.label = label
        self.enabled = enabled
        self.every = every
        self.calls = 0
        self.failures: dict[tuple[str, str], int] = {}
        self._last = time.monotonic()

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def saw(self, name: str, result: ToolResult, seconds: float) -> None:
        self.calls += 1
        if result.kind in ("failed", "timeout") and result.error:
            key = (name, result.error)
            self.failures[key] = self.failures.get(key, 0) + 1
        now = time.monotonic()
        if self.enabled and now - self._last >= self.every:
            self._last = now
            sys.stderr.write(f"{self.label}: {self.line()}\n")
            sys.stderr.flush()

    def commonest(self) -> tuple[str, str, int] | None:
        """(tool, error, count) of the failure seen most (None: none failed)."""
        if not self.failures:
            return None
        (name, error), n = max(self.failures.items(), key=lambda kv: kv[1])
        return name, error, n

    def line(self) -> str:
        text = f"{self.calls} tool calls, {self.failed} failed"
        top = self.commonest()
        return text + (f" (commonest: {top[0]}: {top[1]}, {top[2]} times)" if top else "")


def _as_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def problem(source: str, where: str, what: str, fix: str) -> Problem:
    return Problem(f"{source}: {where}", what, fix)
