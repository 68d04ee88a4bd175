"""One episode's tool state (``ToolSession``) and the same state as a TRL environment
(``trl_environment``) for ``GRPOTrainer(environment_factory=...)``.

``ToolSession.call`` is the one place the environment's rules apply, for the runner and for TRL
alike: the call budget (``max_tool_calls``: a call past it is not run and is answered with an
error), the argument check and timeout (``ToolBox.call``), and what the model reads of an error
(``tool_error``: ``message`` gives ``error: <reason>``, ``brief`` gives ``error``). Every call is
recorded with its error, so the episode's reward terms read what really happened.

TRL turns every public method of an environment class into a tool, reads its schema from the
method's signature and docstring, calls it with the model's arguments and appends what it returns
as the tool message. ``trl_environment`` builds such a class from the toolbox: one method per tool,
with the tool's own signature and docstring, each calling ``ToolSession.call``; ``reset(**row)``
starts a new episode (TRL pools instances and resets them between episodes).

With ``python_session: true`` a session owns the episode's ``pytool.PythonSession`` (the cells
of the ``python`` tool that succeeded, replayed before each new one): its toolbox is the task's,
with ``python`` bound to that session under the same schema; ``reset`` empties it. The runner makes
one ``ToolSession`` per episode and TRL resets its pooled instances, so episodes never share it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, get_type_hints

from .episode import Call, Episode, from_messages
from .pytool import PythonSession
from .spec import EnvironmentSpec
from .tools import Tool, ToolBox

__all__ = ["ToolSession", "row_of", "session_of", "trl_environment", "trl_episodes"]


class ToolSession:
    """The calls of one episode (see the module docstring)."""

    def __init__(self, toolbox: ToolBox, spec: EnvironmentSpec) -> None:
        self.toolbox = toolbox
        self.spec = spec
        self.calls: list[Call] = []
        self.row: dict[str, Any] = {}
        self.python: PythonSession | None = None
        self._box = toolbox
        if spec.python_session and "python" in toolbox.tools:
            self.python = PythonSession(spec.timeout)
            tools = [
                dataclasses.replace(t, function=self.python) if t.name == "python" else t
                for t in toolbox.tools.values()
            ]
            self._box = ToolBox(tools, timeout=toolbox.timeout, max_result_chars=toolbox.max_result_chars)

    def reset(self, **row: Any) -> None:
        self.calls = []
        self.row = dict(row)
        if self.python is not None:
            self.python.reset()

    def call(self, name: Any, arguments: Any) -> Call:
        if len(self.calls) >= self.spec.max_tool_calls:
            error = f"the episode's {self.spec.max_tool_calls} tool calls are spent; answer now"
            call = Call(name, arguments, self._error_text(error), error, "budget")
        else:
            kept = len(self.python.cells) if self.python is not None else 0
            res = self._box.call(name, arguments)
            if self.python is not None and name == "python" and res.kind == "timeout":
                self.python.abandon(kept)  # the model reads a timeout: whatever the call still does is not kept
            text = res.content if res.ok else self._error_text(res.error or "")
            call = Call(name, arguments, text, res.error, res.kind)
        self.calls.append(call)
        return call

    def _error_text(self, error: str) -> str:
        return "error" if self.spec.tool_error == "brief" else f"error: {error}"


def _method(tool: Tool) -> Callable[..., str]:
    def method(self: Any, **arguments: Any) -> str:
        return str(self._rlvr_session.call(tool.name, arguments).result)

    sig = inspect.signature(tool.function)
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + list(sig.parameters.values())
    method.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    method.__annotations__ = {k: v for k, v in get_type_hints(tool.function).items() if k != "return"}
    method.__annotations__["return"] = str
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = tool.function.__doc__
    return method


def _reset(self: Any, **row: Any) -> None:
    self._rlvr_session.reset(**row)


def _init(self: Any, toolbox: ToolBox, spec: EnvironmentSpec) -> None:
    self._rlvr_session = ToolSession(toolbox, spec)


def trl_environment(toolbox: ToolBox, spec: EnvironmentSpec) -> Callable[[], Any]:
    """A zero-argument factory of environment instances for ``GRPOTrainer(environment_factory=)``.
    An instance's calls are ``instance._rlvr_session.calls`` (read by ``trl_episodes``)."""
    namespace: dict[str, Any] = {"__init__": _init, "reset": _reset}
    for tool in toolbox.tools.values():
        namespace[tool.name] = _method(tool)
    cls = type("TaskEnvironment", (), namespace)
    return functools.partial(cls, toolbox, spec)


def session_of(environment: Any) -> ToolSession | None:
    """The ``ToolSession`` of an instance ``trl_environment`` made (None for anything else)."""
    session = getattr(environment, "_rlvr_session", None)
    return session if isinstance(session, ToolSession) else None


def row_of(environment: Any) -> Mapping[str, Any]:
    session = session_of(environment)
    return session.row if session is not None else {}


def trl_episodes(completions: Sequence[Any], environments: Sequence[Any]) -> list[Episode]:
    """A TRL batch's episodes, rebuilt from its message lists and the environments' records of
    each call (the ``RewardSet``'s ``read_episodes`` on an episode task)."""
    out = []
    for c, env in zip(completions, environments, strict=True):
        session = session_of(env)
        msgs = (
            [m for m in c if isinstance(m, Mapping)]
            if isinstance(c, list)
            else [{"role": "assistant", "content": str(c)}]
        )
        out.append(from_messages(msgs, session.calls if session is not None else []))
    return out
