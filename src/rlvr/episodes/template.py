"""The chat format of an episode: how tools, tool calls and tool results are rendered, and how a
turn's tool calls are read back.

Built-in models (``builtin:tiny`` and its kind, ``builtin:small``) ship chat templates without
tools; ``prepare_tokenizer`` swaps in a tool-aware variant of the same template, and sets the
``response_template`` TRL's ``parse_response`` reads calls with. Both render a call the
Hermes/Qwen way, ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; the tiny template
lists the tools in one short line (``<|tools|>calculator(expression)``), because its model has 256
positions. Other models keep their own template; it must pass TRL's ``supports_tool_calling``
and write calls in that same ``<tool_call>`` JSON form (Qwen2.5/Qwen3 do), which
``rlvr.episodes.parse`` reads.

Every variant renders an assistant turn followed by its end-of-turn token, so the text the model
generated (ending in EOS) plus ``tool_suffix`` (what TRL appends after a turn's tool results) is
what the template renders for the same conversation: a prompt-preserving template, as TRL's
multi-turn training requires (``is_chat_template_prefix_preserving``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError, Problem

_TOOL_CALLS = (
    "{%- for c in (m.tool_calls or []) %}{% set f = c.function if c.function is defined else c %}"
    "<tool_call>{{ {'name': f.name, 'arguments': f.arguments} | tojson }}</tool_call>{% endfor %}"
)
_SIGNATURES = (
    "{% for t in tools %}{% set f = t.function if t.function is defined else t %}"
    "{{ f.name }}({{ (f.parameters.properties or {}).keys() | join(',') }}){% if not loop.last %} {% endif %}"
    "{% endfor %}"
)
TINY_TOOL_TEMPLATE = (
    "{%- if tools %}<|tools|>" + _SIGNATURES + "{{ '\\n' }}{% endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'tool' %}<|tool|>{{ m.content }}{{ '\\n' }}"
    "{%- else %}<|{{ m.role }}|>{{ m.content if m.content else '' }}" + _TOOL_CALLS + ""
    "{%- if m.role == 'assistant' %}</s>{% endif %}{{ '\\n' }}{% endif %}"
    "{%- endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
CHATML_TOOL_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: " + _SIGNATURES + "{{ '\\n' }}"
    'Call a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call><|im_end|>\n{% endif %}'
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}{{ m.content if m.content else '' }}"
    "{%- if m.role == 'assistant' %}" + _TOOL_CALLS + "{% endif %}<|im_end|>{{ '\\n' }}"
    "{%- endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _response_template(anchor: str, end: str) -> dict[str, Any]:
    return {
        "defaults": {"role": "assistant"},
        "start_anchor": anchor,
        "fields": {
            "tool_calls": {
                "open": "<tool_call>",
                "close_pattern": r"</tool_call>\s*",
                "repeats": True,
                "content": "json",
                "transform": {"type": "function", "function": "{content}"},
            },
            "content": {"close_pattern": end, "content": "text"},
        },
    }


__all__ = ["CHATML_TOOL_TEMPLATE", "TINY_TOOL_TEMPLATE", "prepare_tokenizer", "render", "tool_suffix"]


def prepare_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` ready for episodes (changed in place and returned): a built-in's tool-aware
    template and response template, or, for another model, its own template checked with TRL's
    ``supports_tool_calling`` (``ConfigError`` when it cannot render tool calls)."""
    from ..bpe import chat_template
    from ..models import CHAT_TEMPLATE

    current = tokenizer.chat_template
    if current in (CHAT_TEMPLATE, TINY_TOOL_TEMPLATE):
        tokenizer.chat_template = TINY_TOOL_TEMPLATE
        tokenizer.response_template = _response_template("<|assistant|>", r"</s>\s*")
    elif current in (chat_template(False), CHATML_TOOL_TEMPLATE):
        tokenizer.chat_template = CHATML_TOOL_TEMPLATE
        tokenizer.response_template = _response_template("<|im_start|>assistant\n", r"<\|im_end\|>\s*")
    else:
        from trl.chat_template_utils import add_response_schema, supports_tool_calling

        if not supports_tool_calling(tokenizer):
            raise ConfigError(
                Problem(
                    "model",
                    "its chat template cannot render tool calls and tool results",
                    "use a model whose template supports tools (Qwen2.5/Qwen3), or builtin:tiny / builtin:small",
                )
            )
        if (
            getattr(tokenizer, "response_template", None) is None
            and getattr(tokenizer, "response_schema", None) is None
        ):
            try:
                add_response_schema(tokenizer)
            except ValueError as exc:
                raise ConfigError(Problem("model", f"tool calls cannot be read back: {exc}", "")) from None
    return tokenizer


def render(
    tokenizer: Any, messages: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]], generation: bool = True
) -> str:
    """The conversation as the (prepared) template renders it, tools listed."""
    text: str = tokenizer.apply_chat_template(
        list(messages), tools=tools or None, tokenize=False, add_generation_prompt=generation
    )
    return text


def tool_suffix(tokenizer: Any, tool_messages: Sequence[Mapping[str, Any]]) -> str:
    """The text appended after an assistant turn (which ended in EOS) that made tool calls: its
    tool results and the next generation prompt. Computed as TRL's ``_get_tool_suffix_ids`` does:
    a dummy call rendered with and without the results, the shorter cut after its last EOS."""
    call = {"type": "function", "function": {"name": tool_messages[0]["name"], "arguments": {}}}
    dummy = [{"role": "user", "content": "dummy"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    prefix: str = tokenizer.apply_chat_template(dummy, tokenize=False, add_generation_prompt=False)
    full: str = tokenizer.apply_chat_template(dummy + list(tool_messages), tokenize=False, add_generation_prompt=True)
    eos = tokenizer.eos_token
    if eos and eos in prefix:
        prefix = prefix[: prefix.rindex(eos) + len(eos)]
    if not full.startswith(prefix):
        raise ConfigError(Problem("model", "the chat template does not preserve prefixes", "use a tool template"))
    return full[len(prefix) :]
