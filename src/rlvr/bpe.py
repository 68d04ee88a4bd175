"""The byte-level BPE tokenizer and chat template of ``builtin:small``, trained here, never downloaded.

A real chat model differs from ``builtin:tiny``'s character tokenizer exactly where RLVR tooling
breaks, so this tokenizer copies the shape of Qwen2.5's:

- byte-level BPE (every byte sequence encodes and decodes back), Qwen2's pre-tokenizer regex
  (digits split one by one, a punctuation run swallows the newlines after it), NFC normalisation;
- the special tokens ``<|endoftext|>`` (padding), ``<|im_start|>`` and ``<|im_end|>`` (EOS), and
  no BOS token;
- no added tokens for ``<answer>``, ``</answer>``, ``<think>``, ``</think>``: they tokenize into
  several pieces, and the pieces depend on the neighbours (``</answer>`` then a newline ends in
  the merged piece ``>\\n``, a tag after ``=`` starts with ``=<``);
- a ChatML chat template (system / user / assistant turns, each closed by ``<|im_end|>``) whose
  generation prompt opens a thinking block (``<think>\\n``) when ``enable_thinking`` is true,
  as DeepSeek-R1 distills and Qwen3 thinking models do.

The training text is generated from a seed (arithmetic, English prose from templates, Python
snippets, JSON objects, ChatML conversations with answer and think tags), so the tokenizer is a
pure function of ``BpeSpec`` (and of the ``tokenizers`` version that trains it): the same spec
gives the same ``tokenizer.json`` byte for byte. Once trained it is cached (``rlvr.models``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

# Qwen2's pre-tokenizer pattern (tokenizer.json of Qwen2.5), kept verbatim.
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]

# ChatML, as Qwen2.5 writes it, without its default system prompt. ``enable_thinking`` (a
# template keyword, default ``think_default`` of the built-in) opens ``<think>\n`` after the
# generation prompt; an assistant turn is then rendered after the same opening, so SFT's
# prompt + completion rendering starts with the generation prompt's text.
CHAT_TEMPLATE = (
    "{%- set thinking = enable_thinking if enable_thinking is defined else THINK_DEFAULT -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'assistant' and thinking and loop.last -%}"
    "{{- '<|im_start|>assistant\\n<think>\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- else -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{- '<|im_start|>assistant\\n' -}}"
    "{%- if thinking -%}{{- '<think>\\n' -}}{%- endif -%}"
    "{%- endif -%}"
)


@dataclass(frozen=True)
class BpeSpec:
    """What the tokenizer is a function of. Change ``corpus_version`` when the generator changes."""

    vocab_size: int = 2048
    corpus_docs: int = 6000
    seed: int = 0
    corpus_version: int = 1


def chat_template(think_default: bool) -> str:
    return CHAT_TEMPLATE.replace("THINK_DEFAULT", "true" if think_default else "false")


# -- the training text --------------------------------------------------------------------------
_NOUNS = [
    "model",
    "answer",
    "student",
    "teacher",
    "river",
    "garden",
    "number",
    "function",
    "record",
    "table",
    "city",
    "train",
    "window",
    "letter",
    "problem",
    "result",
    "reward",
    "policy",
    "sample",
    "group",
    "token",
    "value",
    "question",
    "system",
]
_VERBS = [
    "checks",
    "writes",
    "reads",
    "counts",
    "returns",
    "finds",
    "keeps",
    "builds",
    "opens",
    "closes",
    "moves",
    "takes",
    "adds",
    "explains",
    "computes",
    "verifies",
    "samples",
    "prints",
]
_ADJ = [
    "small",
    "large",
    "careful",
    "quick",
    "old",
    "new",
    "correct",
    "wrong",
    "short",
    "long",
    "bright",
    "quiet",
    "simple",
    "exact",
]
_NAMES = [
    "Ada",
    "Alan",
    "Grace",
    "Linus",
    "Marie",
    "Emmy",
    "Noether",
    "Turing",
    "Hopper",
    "Euler",
    "Gauss",
    "Ramanujan",
]
_OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def _sentence(rng: random.Random) -> str:
    subj = f"{rng.choice(['The', 'A', 'Every', 'This'])} {rng.choice(_ADJ)} {rng.choice(_NOUNS)}"
    if rng.random() < 0.3:
        subj = rng.choice(_NAMES)
    obj = f"{rng.choice(['the', 'a', 'one', 'each'])} {rng.choice(_NOUNS)}"
    tail = rng.choice(
        ["", f" in {rng.randint(2, 99)} steps", f" before the {rng.choice(_NOUNS)}", ", and it is done", " again"]
    )
    return f"{subj} {rng.choice(_VERBS)} {obj}{tail}{rng.choice(['.', '.', '.', '!', '?'])}"


_SYLLABLES = [
    "ka",
    "ro",
    "mi",
    "ten",
    "sul",
    "ba",
    "dor",
    "ve",
    "lin",
    "qu",
    "ar",
    "es",
    "om",
    "pri",
    "sta",
    "nel",
    "gu",
    "tor",
    "ish",
    "ent",
]


def _word(rng: random.Random) -> str:
    """A made-up word: without them a templated corpus runs out of merges long before the vocabulary is full."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4)))


def _prose(rng: random.Random) -> str:
    words = " ".join(_word(rng) for _ in range(rng.randint(3, 12)))
    return " ".join(_sentence(rng) for _ in range(rng.randint(1, 4))) + f" {words.capitalize()}."


def _arith(rng: random.Random) -> tuple[str, str]:
    op = rng.choice("+-*")
    a, b = rng.randint(0, 999), rng.randint(0, 99 if op == "*" else 999)
    return f"{a}{op}{b}", str(_OPS[op](a, b))


def _arith_text(rng: random.Random) -> str:
    q, a = _arith(rng)
    return rng.choice([f"{q}={a}", f"What is {q}? It is {a}.", f"{q} = {a}\n", f"Compute {q}. The result is {a}."])


def _code(rng: random.Random) -> str:
    name = rng.choice(["add", "count", "total", "check", "parse", "mean", "first", "last", "solve"])
    arg = rng.choice(["xs", "n", "text", "row", "items"])
    body = rng.choice(
        [
            f"    return sum({arg})",
            f"    if not {arg}:\n        return None\n    return {arg}[0]",
            f"    out = []\n    for x in {arg}:\n        out.append(x * {rng.randint(2, 9)})\n    return out",
            f"    return len({arg}) > {rng.randint(0, 9)}",
            f"    total = 0\n    for i in range({arg}):\n        total += i\n    return total",
        ]
    )
    test = f"assert {name}([{rng.randint(0, 9)}, {rng.randint(0, 9)}]) == {rng.randint(0, 20)}"
    html = f'<div class="{rng.choice(_NOUNS)}">{rng.choice(_NAMES)}</div>'
    return rng.choice(
        [f"def {name}({arg}):\n{body}\n\n{test}\n", f"```python\ndef {name}({arg}):\n{body}\n```\n", html + "\n"]
    )


def _json(rng: random.Random) -> str:
    obj: dict[str, Any] = {"name": rng.choice(_NAMES), "id": rng.randint(1, 9999), rng.choice(_NOUNS): rng.choice(_ADJ)}
    if rng.random() < 0.5:
        obj["items"] = [rng.randint(0, 99) for _ in range(rng.randint(0, 4))]
    if rng.random() < 0.3:
        obj["ok"] = rng.random() < 0.5
    return json.dumps(obj, indent=rng.choice([None, 2]))


def _chat(rng: random.Random) -> str:
    q, a = _arith(rng)
    think = rng.choice(["", f"<think>\nI add the digits of {q}.\n</think>\n", f"<think>{_sentence(rng)}</think>"])
    answer = rng.choice([f"<answer>{a}</answer>", f"The answer is <answer>{a}</answer>.", f"<answer>\n{a}\n</answer>"])
    system = f"{IM_START}system\n{_sentence(rng)}{IM_END}\n" if rng.random() < 0.5 else ""
    return f"{system}{IM_START}user\nWhat is {q}?{IM_END}\n{IM_START}assistant\n{think}{answer}{IM_END}\n"


def corpus(spec: BpeSpec = BpeSpec()) -> list[str]:
    """The generated training text: ``spec.corpus_docs`` documents, deterministic from the seed."""
    rng = random.Random(spec.seed)
    makers = [_prose, _prose, _arith_text, _code, _json, _chat]
    return [rng.choice(makers)(rng) for _ in range(spec.corpus_docs)]


# -- the tokenizer ------------------------------------------------------------------------------
def train_tokenizer(spec: BpeSpec = BpeSpec(), *, think_default: bool = False) -> Any:
    """Train the byte-level BPE on ``corpus(spec)`` and wrap it as a ``PreTrainedTokenizerFast``
    with ChatML special tokens and the chat template (no download, a second or two on a CPU)."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        min_frequency=2,
        show_progress=False,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus(spec), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        padding_side="left",
        pad_token=PAD,
        eos_token=IM_END,
        additional_special_tokens=[IM_START, IM_END],
    )
    fast.chat_template = chat_template(think_default)
    return fast
