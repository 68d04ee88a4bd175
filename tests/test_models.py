"""The built-in tiny model and its character-level tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.models import CHARS, build_builtin, load_model, load_tokenizer, model_config


def test_tokenizer_round_trip_after_save_and_reload_keeps_spaces(tmp_path: Path) -> None:
    path = build_builtin("tiny", tmp_path / "m")
    tok = load_tokenizer(str(path))
    text = "  12 + 34 =\t<answer> 46 </answer>\nok  "
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids, skip_special_tokens=True) == text
    assert type(tok).__name__ in ("PreTrainedTokenizerFast", "TokenizersBackend")


def test_answer_tags_are_single_non_special_tokens(tmp_path: Path) -> None:
    tok = load_tokenizer(str(build_builtin("tiny", tmp_path / "m")))
    ids = tok("<answer>7</answer>", add_special_tokens=False)["input_ids"]
    assert len(ids) == 3
    # TRL decodes completions with skip_special_tokens=True: the tags must survive it.
    assert tok.decode(ids, skip_special_tokens=True) == "<answer>7</answer>"


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(CHARS), max_size=40))
def test_any_printable_text_round_trips(text: str) -> None:
    tok = _TOK[0]
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"], skip_special_tokens=True) == text


_TOK = []


def setup_module() -> None:
    _TOK.append(load_tokenizer("builtin:tiny"))


def test_builtin_is_a_small_qwen2_saved_with_save_pretrained(tmp_path: Path) -> None:
    path = build_builtin("tiny", tmp_path / "m")
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model_type"] == "qwen2"
    model = load_model(str(path))
    n = sum(p.numel() for p in model.parameters())
    assert 300_000 <= n <= 3_000_000
    assert model_config(str(path))["hidden_size"] == 128


def test_builtin_is_deterministic(tmp_path: Path) -> None:
    import torch

    a = load_model(str(build_builtin("tiny", tmp_path / "a")))
    b = load_model(str(build_builtin("tiny", tmp_path / "b")))
    for (na, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters(), strict=True):
        assert torch.equal(pa, pb), na


def test_builtin_reference_resolves_to_a_cached_folder() -> None:
    first = load_tokenizer("builtin:tiny")
    second = load_tokenizer("builtin:tiny")
    assert first.get_vocab() == second.get_vocab()


def test_consecutive_newlines_round_trip_and_are_not_unknown() -> None:
    tok = _TOK[0] if _TOK else load_tokenizer("builtin:tiny")
    ids = tok("a\n\n\tb", add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id not in ids
    assert tok.decode(ids, skip_special_tokens=True) == "a\n\n\tb"


def _build_in_cache(cache: str) -> str:
    import os

    os.environ["RLVR_CACHE"] = cache
    from rlvr.models import build_builtin

    return str(build_builtin("tiny"))


def test_two_processes_building_the_same_builtin_at_once_both_get_a_complete_model(tmp_path: Path) -> None:
    # accelerate starts every rank at once on a cold cache: they used to share one ".tmp" folder,
    # and one rank's save_pretrained found it renamed away by the other.
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(2) as pool:
        outs = pool.map(_build_in_cache, [str(tmp_path)] * 2)
    assert outs[0] == outs[1]
    assert (Path(outs[0]) / "config.json").exists() and (Path(outs[0]) / "tokenizer.json").exists()
    assert not [p for p in Path(outs[0]).parent.iterdir() if ".tmp" in p.name]
