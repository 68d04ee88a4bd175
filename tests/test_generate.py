"""rlvr.generate: the transformers backend on the built-in tiny model (CPU), and argument errors."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from rlvr.errors import ConfigError
from rlvr.generate import Completion, TransformersSampler, cut_at_eos, make_sampler, prompt_ids

PROMPTS = ["37+58=", "1+1=", "123456789+987654321="]


@pytest.fixture(scope="module")
def sampler() -> TransformersSampler:
    s = make_sampler("builtin:tiny", backend="transformers", device="cpu")
    assert isinstance(s, TransformersSampler)
    return s


def test_returns_n_completions_per_prompt_in_prompt_order(sampler: TransformersSampler) -> None:
    groups = sampler.sample(PROMPTS, n=3, temperature=0.7, max_new_tokens=8, seed=1)
    assert [len(g) for g in groups] == [3, 3, 3]
    assert all(isinstance(c, Completion) for g in groups for c in g)
    alone = sampler.sample([PROMPTS[1]], n=3, temperature=0, max_new_tokens=8)
    batched = sampler.sample(PROMPTS, n=3, temperature=0, max_new_tokens=8)
    assert batched[1] == alone[0]


def test_same_seed_gives_same_completions(sampler: TransformersSampler) -> None:
    a = sampler.sample(PROMPTS, n=4, temperature=1.0, max_new_tokens=10, seed=7)
    b = sampler.sample(PROMPTS, n=4, temperature=1.0, max_new_tokens=10, seed=7)
    c = sampler.sample(PROMPTS, n=4, temperature=1.0, max_new_tokens=10, seed=8)
    assert a == b
    assert a != c


def test_seeded_sampling_does_not_reseed_the_callers_rng(sampler: TransformersSampler) -> None:
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    sampler.sample(PROMPTS, n=2, temperature=1.0, max_new_tokens=4, seed=0)
    assert torch.equal(torch.rand(3), expected)


def test_greedy_output_does_not_depend_on_left_padding(sampler: TransformersSampler) -> None:
    # The short prompt is padded by 16 tokens next to the long one; with a wrong mask or
    # right padding its greedy continuation would change.
    alone = sampler.sample(["1+1="], n=1, temperature=0, max_new_tokens=12)[0][0]
    padded = sampler.sample(["1+1=", "1234567890123456+1="], n=1, temperature=0, max_new_tokens=12)[0][0]
    assert padded == alone


def test_temperature_zero_repeats_the_greedy_completion(sampler: TransformersSampler) -> None:
    group = sampler.sample(["37+58="], n=4, temperature=0, max_new_tokens=6)[0]
    assert len(set(group)) == 1


def test_finish_reason_is_stop_exactly_when_the_last_token_is_eos(sampler: TransformersSampler) -> None:
    eos = sampler.tokenizer.eos_token_id
    groups = sampler.sample(PROMPTS * 4, n=16, temperature=1.5, max_new_tokens=12, seed=0)
    comps = [c for g in groups for c in g]
    reasons = {c.finish_reason for c in comps}
    assert reasons == {"stop", "length"}  # the random tiny model does emit EOS sometimes
    for c in comps:
        assert (c.finish_reason == "stop") == (c.token_ids[-1] == eos)
        assert eos not in c.token_ids[:-1]
        assert c.n_tokens <= 12
        assert (c.n_tokens == 12) or c.finish_reason == "stop"


def test_text_is_decoded_without_special_tokens(sampler: TransformersSampler) -> None:
    groups = sampler.sample(PROMPTS, n=16, temperature=1.5, max_new_tokens=12, seed=0)
    for c in (c for g in groups for c in g):
        assert "</s>" not in c.text and "<pad>" not in c.text
        assert c.text == sampler.tokenizer.decode(list(c.token_ids), skip_special_tokens=True)


def test_cut_keeps_the_first_eos_and_drops_what_follows() -> None:
    assert cut_at_eos([5, 6, 2, 0, 0], {2}, 0, 5) == ((5, 6, 2), "stop")
    assert cut_at_eos([5, 2, 2, 2], {2}, 2, 4) == ((5, 2), "stop")
    assert cut_at_eos([5, 6, 7], {2}, 0, 3) == ((5, 6, 7), "length")


def test_plain_prompt_is_tokenized_like_trl(sampler: TransformersSampler) -> None:
    tok = sampler.tokenizer
    assert prompt_ids(tok, "37+58=") == tok("37+58=")["input_ids"]


def test_chat_prompt_is_rendered_with_the_chat_template(sampler: TransformersSampler) -> None:
    tok = sampler.tokenizer
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+2"}]
    rendered = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert rendered.endswith("<|assistant|>")
    assert prompt_ids(tok, messages) == tok(rendered, add_special_tokens=False)["input_ids"]
    groups = sampler.sample([messages], n=2, temperature=0.7, max_new_tokens=4, seed=0)
    assert len(groups[0]) == 2


def test_sampling_restores_train_mode(sampler: TransformersSampler) -> None:
    sampler.model.train()
    try:
        sampler.sample(["1+1="], n=1, temperature=0.7, max_new_tokens=2, seed=0)
        assert sampler.model.training
    finally:
        sampler.model.eval()


def test_bad_sampling_arguments_list_every_problem(sampler: TransformersSampler) -> None:
    with pytest.raises(ConfigError) as err:
        sampler.sample(["1+1="], n=0, temperature=-1, max_new_tokens=0, top_p=1.5)
    assert len(err.value.problems) == 4


def test_unknown_backend_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown sampling backend"):
        make_sampler("builtin:tiny", backend="tgi")  # type: ignore[arg-type]


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_vllm_backend_without_vllm_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="vLLM is not installed"):
        make_sampler("builtin:tiny", backend="vllm")


def test_auto_backend_falls_back_to_transformers_without_a_gpu() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert make_sampler("builtin:tiny").backend == "transformers"


FAKE_VLLM = '''
"""A stand-in for vLLM's offline API, recording what rlvr passes to it."""
from types import SimpleNamespace

CALLS = []


class SamplingParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class LLM:
    def __init__(self, **kw):
        CALLS.append(("init", kw))

    def generate(self, inputs, params, use_tqdm=True):
        CALLS.append(("generate", inputs, params))
        out = []
        for inp, p in zip(inputs, params):
            outs = []
            for j in range(p.n):
                if (p.seed + j) % 2:  # stops at EOS, reported in token_ids
                    ids, reason = [45, 46, p.stop_token_ids[0]], "stop"
                else:  # runs out of budget
                    ids, reason = [45] * p.max_tokens, "length"
                outs.append(SimpleNamespace(token_ids=ids, finish_reason=reason, text=None))
            out.append(SimpleNamespace(outputs=outs))
        return out
'''


def test_vllm_adapter_passes_token_ids_seeds_each_request_and_decodes_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sampler: TransformersSampler
) -> None:
    import sys

    (tmp_path / "vllm.py").write_text(FAKE_VLLM)
    spec = importlib.util.spec_from_file_location("vllm", tmp_path / "vllm.py")
    assert spec is not None and spec.loader is not None
    vllm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(vllm)
    monkeypatch.setitem(sys.modules, "vllm", vllm)  # removed again after the test
    from rlvr.generate import VllmSampler

    tok = sampler.tokenizer
    vs = VllmSampler("/models/x", tok)

    groups = vs.sample(["1+1=", [{"role": "user", "content": "2+2"}]], n=2, temperature=0.7, max_new_tokens=5, seed=3)
    init, gen = vllm.CALLS[0], vllm.CALLS[1]
    assert init[1]["skip_tokenizer_init"] is True
    assert [i["prompt_token_ids"] for i in gen[1]] == [
        prompt_ids(tok, "1+1="),
        prompt_ids(tok, [{"role": "user", "content": "2+2"}]),
    ]
    assert len({p.seed for p in gen[2]}) == 2  # one seed per request, not one shared stream
    assert all(p.stop_token_ids == [tok.eos_token_id] for p in gen[2])
    stop = next(c for g in groups for c in g if c.finish_reason == "stop")
    assert stop.token_ids[-1] == tok.eos_token_id
    assert stop.text == tok.decode([45, 46], skip_special_tokens=True)
    length = next(c for g in groups for c in g if c.finish_reason == "length")
    assert length.n_tokens == 5


def test_the_fake_vllm_does_not_leak_into_other_tests() -> None:
    import sys

    assert not hasattr(sys.modules.get("vllm"), "CALLS")  # runs after the fake-vLLM test above
