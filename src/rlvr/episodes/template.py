"""The chat format of an episode: how tools, tool calls and tool results are rendered, and how a
turn's tool calls are read back.

Built-in models (``builtin:tiny`` and its kind, ``builtin:small``, ``builtin:small-think``,
``builtin:smollm2``) ship chat templates without tools; ``prepare_tokenizer`` swaps in a
tool-aware variant of the same template, and sets the ``response_template`` TRL's
``parse_response`` reads calls with. All render a call the Hermes/Qwen way,
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``; the tiny template lists the tools in
one short line (``<|tools|>calculator(expression)``), because its model has 256 positions; small
and small-think in a short system turn; smollm2 keeps its system message (the conversation's, else
its default one) and lists the tools after it, in the same turn, a line each (parameters, JSON
types, description). small-think keeps
its thinking: every assistant turn opens ``<think>`` and a newline (the generation prompt wrote them), the turn's
text is the thinking, ``</think>`` and the answer or calls, and earlier turns keep their thinking
(dropping it, as Qwen3's template does, would rewrite the prefix TRL concatenates onto). Other
models keep their own template; it must pass TRL's ``supports_tool_calling``
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
# builtin:small-think: ChatML whose assistant turns open ``<think>\n`` (``enable_thinking``,
# default on, as the model's own template). Every assistant turn is rendered after that opener,
# not only the last one: the text of a turn is what the model generated after the generation
# prompt (its thinking, ``</think>``, its answer or calls), so earlier turns keep their thinking
# and the rendering of a conversation never changes when a message is appended (prefix-preserving,
# as TRL's token-concatenating tool loop requires).
THINK_TOOL_TEMPLATE = (
    "{%- set thinking = enable_thinking if enable_thinking is defined else true %}"
    "{%- if tools %}<|im_start|>system\nTools: " + _SIGNATURES + "{{ '\\n' }}"
    'Call a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call><|im_end|>\n{% endif %}'
    "{%- for m in messages %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}{% if m.role == 'assistant' and thinking %}{{ '<think>\\n' }}{% endif %}"
    "{{- m.content if m.content else '' }}"
    "{%- if m.role == 'assistant' %}" + _TOOL_CALLS + "{% endif %}<|im_end|>{{ '\\n' }}"
    "{%- endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% if thinking %}<think>\n{% endif %}{% endif %}"
)
# builtin:smollm2 (SmolLM2-135M-Instruct) ships this ChatML template: no tools, and a default
# system message when the conversation has none.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Its tool variant keeps that behaviour (the conversation's system message, else the default one)
# and lists the tools in the same system turn, one line each: name, parameters with their JSON
# types (``?`` when optional) and the tool's description -- what a real model needs to call it, in
# about a third of the tokens of the full JSON schemas (every token of the prompt is paid again in
# each training step on a CPU). Parameter descriptions are left out.
SMOLLM2_TOOL_TEMPLATE = (
    "{%- if messages and messages[0].role == 'system' %}{% set system = messages[0].content %}"
    "{% set rest = messages[1:] %}"
    "{%- else %}{% set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' %}"
    "{% set rest = messages %}{% endif %}"
    "{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}{{ '\\n\\nTools:' }}"
    "{%- for t in tools %}{% set f = t.function if t.function is defined else t %}"
    "{% set p = f.parameters or {} %}{{ '\\n- ' + f.name + '(' }}"
    "{%- for k, v in (p.properties or {}).items() %}{{ k }}{% if k not in (p.required or []) %}?{% endif %}"
    "{% if v.type is defined %}: {{ v.type }}{% endif %}{% if not loop.last %}, {% endif %}{% endfor %})"
    "{%- if f.description %}: {{ f.description }}{% endif %}{% endfor %}"
    '{{- \'\\nCall a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call>\' }}{% endif %}'
    "{{- '<|im_end|>\\n' }}"
    "{%- for m in rest %}"
    "{{- '<|im_start|>' + m.role + '\\n' }}{{ m.content if m.content else '' }}"
    "{%- if m.role == 'assistant' %}" + _TOOL_CALLS + "{% endif %}<|im_end|>{{ '\\n' }}"
    "{%- endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _response_template(anchor: str, end: str) -> dict[str, Any]:
    """TRL's parser for our calls; ``anchor`` is a regular expression: the assistant header the
    prompt ends with, after which the model's text starts."""
    return {
        "defaults": {"role": "assistant"},
        "start_anchor_pattern": anchor,
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


__all__ = [
    "CHATML_TOOL_TEMPLATE",
    "SMOLLM2_TEMPLATE",
    "SMOLLM2_TOOL_TEMPLATE",
    "THINK_TOOL_TEMPLATE",
    "TINY_TOOL_TEMPLATE",
    "prepare_tokenizer",
    "render",
    "tool_suffix",
]


def prepare_tokenizer(tokenizer: Any) -> Any:
    """``tokenizer`` ready for episodes (changed in place and returned): a built-in's tool-aware
    template and response template, or, for another model, its own template checked with TRL's
    ``supports_tool_calling`` (``ConfigError`` when it cannot render tool calls)."""
    from ..bpe import chat_template
    from ..models import CHAT_TEMPLATE

    current = tokenizer.chat_template
    chatml = (r"<\|im_start\|>assistant\n", r"<\|im_end\|>\s*")
    if current in (CHAT_TEMPLATE, TINY_TOOL_TEMPLATE):
        tokenizer.chat_template = TINY_TOOL_TEMPLATE
        tokenizer.response_template = _response_template(r"<\|assistant\|>", r"</s>\s*")
    elif current in (chat_template(False), CHATML_TOOL_TEMPLATE):
        tokenizer.chat_template = CHATML_TOOL_TEMPLATE
        tokenizer.response_template = _response_template(*chatml)
    elif current in (chat_template(True), THINK_TOOL_TEMPLATE):
        tokenizer.chat_template = THINK_TOOL_TEMPLATE
        # The opener the generation prompt wrote is not part of the turn's text (thinking off: none).
        tokenizer.response_template = _response_template(r"<\|im_start\|>assistant\n(?:<think>\n)?", chatml[1])
    elif current in (SMOLLM2_TEMPLATE, SMOLLM2_TOOL_TEMPLATE):
        tokenizer.chat_template = SMOLLM2_TOOL_TEMPLATE
        tokenizer.response_template = _response_template(*chatml)
    else:
        from trl.chat_template_utils import add_response_schema, supports_tool_calling

        if not supports_tool_calling(tokenizer):
            raise ConfigError(
                Problem(
                    "model",
                    "its chat template cannot render tool calls and tool results",
                    "use a model whose template supports tools (Qwen2.5/Qwen3), or a built-in model",
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
