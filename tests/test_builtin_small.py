"""builtin:small: a Qwen2 decoder with a locally trained byte-level BPE and a ChatML template."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from rlvr.bpe import BpeSpec, corpus, train_tokenizer
from rlvr.models import BUILTIN_MODELS, build_builtin, build_tokenizer, load_model, load_tokenizer

MESSAGES = [{"role": "system", "content": "Be exact."}, {"role": "user", "content": "What is 2+2?"}]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("builtin:small")


def pieces(tok, text: str) -> list[str]:
    return tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])


def test_small_is_a_qwen2_of_a_few_million_parameters_saved_with_save_pretrained() -> None:
    path = build_builtin("small")
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model_type"] == "qwen2" and cfg["tie_word_embeddings"] is True
    n = sum(p.numel() for p in load_model("builtin:small").parameters())
    assert 2_000_000 <= n <= 6_000_000
    for name in (
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
        "chat_template.jinja",
    ):
        assert (path / name).exists(), name


def test_small_model_weights_are_deterministic_from_the_spec(tmp_path: Path) -> None:
    import torch

    a = load_model(str(build_builtin("small", tmp_path / "a")))
    b = load_model(str(build_builtin("small", tmp_path / "b")))
    for (na, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb), na


def test_bpe_training_is_deterministic_from_its_spec() -> None:
    assert train_tokenizer().backend_tokenizer.to_str() == train_tokenizer().backend_tokenizer.to_str()


def test_a_different_corpus_seed_gives_different_training_text() -> None:
    assert corpus(BpeSpec(seed=1))[:50] != corpus(BpeSpec())[:50]


def test_the_bpe_fills_its_vocabulary(tok) -> None:
    assert len(tok) == BpeSpec().vocab_size


def test_second_build_reuses_the_cached_folder() -> None:
    first = build_builtin("small")
    stamp = (first / "model.safetensors").stat().st_mtime_ns
    assert build_builtin("small") == first
    assert (first / "model.safetensors").stat().st_mtime_ns == stamp


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=60))
def test_any_nfc_text_round_trips_through_the_byte_level_bpe(text: str) -> None:
    assume(unicodedata.normalize("NFC", text) == text)  # the tokenizer normalises to NFC, as Qwen2's does
    tok = _TOK[0]
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"], skip_special_tokens=False) == text


_TOK: list = []


def setup_module() -> None:
    _TOK.append(load_tokenizer("builtin:small"))


@pytest.mark.parametrize("tag", ["<answer>", "</answer>", "<think>", "</think>"])
def test_answer_and_think_tags_tokenize_into_several_pieces(tok, tag: str) -> None:
    assert len(pieces(tok, tag)) >= 2


def test_tags_merge_with_their_neighbours_in_some_contexts(tok) -> None:
    # "</answer>" then a newline ends in the one piece ">\n"; after "=", "<answer>" starts with "<"
    # alone instead of the piece "<answer": the tag's pieces depend on the text around it.
    assert pieces(tok, "</answer>\n")[-1] == pieces(tok, ">\n")[0] == "".join(pieces(tok, ">") + pieces(tok, "\n"))
    assert pieces(tok, "</answer>\n") != pieces(tok, "</answer>") + pieces(tok, "\n")
    assert pieces(tok, "<answer>")[0] == "<answer"
    assert pieces(tok, "=<answer>")[:3] == ["=", "<", "answer"]


def test_tags_survive_decoding_with_skip_special_tokens(tok) -> None:
    text = "<think>\nadd\n</think>\n<answer>42</answer>"
    ids = tok(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == text


def test_eos_is_im_end_the_pad_token_is_distinct_and_there_is_no_bos(tok) -> None:
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<|endoftext|>"
    assert tok.pad_token_id != tok.eos_token_id
    assert tok.bos_token is None
    assert tok("12+7")["input_ids"] == tok("12+7", add_special_tokens=False)["input_ids"]  # nothing prepended


def test_chat_template_is_chatml_with_a_generation_prompt(tok) -> None:
    text = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    assert (
        text
        == "<|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
    )
    ids = tok.apply_chat_template(MESSAGES, tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert ids.count(tok.convert_tokens_to_ids("<|im_start|>")) == 3  # the markers are single special tokens


def test_small_think_generation_prompt_opens_a_thinking_block() -> None:
    think = load_tokenizer("builtin:small-think")
    assert think.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True).endswith(
        "<|im_start|>assistant\n<think>\n"
    )
    off = think.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert off.endswith("<|im_start|>assistant\n")


def test_enable_thinking_opens_the_block_on_builtin_small(tok) -> None:
    on = tok.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True, enable_thinking=True)
    assert on.endswith("assistant\n<think>\n")


@pytest.mark.parametrize("name", ["small", "small-think"])
def test_a_rendered_conversation_starts_with_its_generation_prompt(name: str) -> None:
    # SFT renders prompt + completion and cuts the prompt off: the prefix must match.
    t = load_tokenizer(f"builtin:{name}")
    prompt = t.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    full = t.apply_chat_template(
        [*MESSAGES, {"role": "assistant", "content": "</think><answer>4</answer>"}], tokenize=False
    )
    assert full.startswith(prompt) and full.endswith("<answer>4</answer><|im_end|>\n")


def test_generation_config_has_sampling_defaults_of_its_own_and_both_stop_tokens(tok) -> None:
    cfg = json.loads((build_builtin("small") / "generation_config.json").read_text())
    assert sorted(cfg["eos_token_id"]) == sorted([tok.eos_token_id, tok.pad_token_id])
    assert cfg["top_k"] == 20 and cfg["repetition_penalty"] == 1.05 and cfg["do_sample"] is True


def test_build_tokenizer_of_small_is_the_bpe_and_not_the_character_tokenizer(tok) -> None:
    assert build_tokenizer("small").get_vocab() == tok.get_vocab()
    assert len(build_tokenizer("tiny")) != len(tok)


def test_length_tools_measure_small_with_its_own_tokenizer(tok) -> None:
    from rlvr.lengths import load_length_tools

    lt, positions = load_length_tools("builtin:small")
    assert lt.get_vocab() == tok.get_vocab()
    assert positions == BUILTIN_MODELS["small"].max_position_embeddings


def test_the_audit_measures_a_small_task_with_the_bpe(tmp_path: Path, tok) -> None:
    from rlvr.audit.tokens import task_tokenizer
    from rlvr.task import load_task
    from support.tasks import make_task

    audit_tok, note = task_tokenizer(load_task(make_task(tmp_path, extra={"model": "builtin:small"})))
    assert note is None and audit_tok.get_vocab() == tok.get_vocab()
