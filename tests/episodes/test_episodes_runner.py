"""The episode runner without TRL: turns, calls, results, limits, and the same chat text TRL builds."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from rlvr.episodes import Episode, EpisodeRunner, build_toolbox, from_messages, prepare_tokenizer, read_environment
from rlvr.episodes.template import tool_suffix
from rlvr.rewards import AnswerFormat, Sample, build_verifier
from rlvr.rewards.combine import Term
from support.fakes import FakeSampler
from support.grpo import episode_reward_set

CALL = '<tool_call>{"name": "calculator", "arguments": {"expression": "17*23"}}</tool_call>'
PROMPT = [{"role": "user", "content": "17*23?"}]


@pytest.fixture(scope="module")
def tok() -> Any:
    from rlvr.models import load_tokenizer

    return prepare_tokenizer(load_tokenizer("builtin:tiny"))


def runner(tok: Any, rule: Any, tmp_path: Path, finish: str = "stop", **raw: Any) -> EpisodeRunner:
    spec, problems = read_environment({"tools": ["calculator"], **raw}, tmp_path, "task.yaml")
    assert spec is not None, problems

    def ids(text: str, _max: int) -> tuple[int, ...]:
        return tuple(tok(text + ("</s>" if finish == "stop" else ""), add_special_tokens=False)["input_ids"])

    return EpisodeRunner(FakeSampler(rule, token_ids=ids, finish_reason=finish), tok, spec, build_toolbox(spec))


def calls_then_answers(prompt: str, rng: random.Random) -> str:
    if "<|tool|>" not in prompt:
        return "thinking " + CALL
    return f"<answer>{prompt.rsplit('<|tool|>', 1)[1].splitlines()[0]}</answer>"


def test_an_episode_calls_reads_the_result_and_answers(tok: Any, tmp_path: Path) -> None:
    r = runner(tok, calls_then_answers, tmp_path)
    (eps,) = r.run([PROMPT], [{}], n=3, temperature=0.7, max_completion_length=200, seed=1)
    ep = eps[0]
    assert len(eps) == 3 and not ep.cut_off
    assert [t.text for t in ep.turns] == ["thinking", "<answer>391</answer>"]
    assert ep.calls[0].name == "calculator" and ep.results == ("391",) and ep.errors == ()
    assert ep.final == "<answer>391</answer>"
    second_prompt = r.sampler.calls[1].prompts[0]
    assert second_prompt.endswith(
        "thinking " + CALL + "</s>" + tool_suffix(tok, [{"name": "calculator", "role": "tool", "content": "391"}])
    )
    assert ep.tool_tokens == len(
        tok(tool_suffix(tok, [{"role": "tool", "name": "calculator", "content": "391"}]))["input_ids"]
    )


def test_an_episode_that_keeps_calling_is_cut_off_at_max_turns(tok: Any, tmp_path: Path) -> None:
    r = runner(tok, lambda p, rng: CALL, tmp_path, max_turns=3)
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=1000)
    assert len(eps[0].turns) == 3 and eps[0].cut_off and eps[0].cut_reason == "turns"


def test_calls_past_max_tool_calls_are_not_run_and_say_so(tok: Any, tmp_path: Path) -> None:
    r = runner(tok, lambda p, rng: CALL + CALL, tmp_path, max_turns=2, max_tool_calls=3)
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=1000)
    kinds = [c.kind for c in eps[0].calls]
    assert kinds == [None, None, None, "budget"]
    assert eps[0].calls[-1].result.startswith("error: the episode's 3 tool calls are spent")


def test_tool_results_that_overflow_the_token_budget_end_the_episode(tok: Any, tmp_path: Path) -> None:
    r = runner(tok, calls_then_answers, tmp_path)
    first = len(tok("thinking " + CALL + "</s>")["input_ids"])
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=first + 5)
    assert eps[0].cut_off and eps[0].cut_reason == "tokens" and len(eps[0].turns) == 1


def test_a_malformed_call_ends_the_episode_with_that_turn(tok: Any, tmp_path: Path) -> None:
    r = runner(
        tok, lambda p, rng: '<tool_call>{"name": "calculator", "arguments": {"expression": 1</tool_call>', tmp_path
    )
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=500)
    assert len(eps[0].turns) == 1 and eps[0].calls[0].malformed and not eps[0].calls[0].valid


def test_tool_error_brief_hides_the_reason_from_the_model(tok: Any, tmp_path: Path) -> None:
    bad = '<tool_call>{"name": "calculator", "arguments": {"expression": "1/0"}}</tool_call>'
    r = runner(tok, lambda p, rng: bad if "<|tool|>" not in p else "done", tmp_path, tool_error="brief")
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=500)
    assert eps[0].calls[0].result == "error" and "division by zero" in (eps[0].calls[0].error or "")
    assert "\n<|tool|>error\n" in r.sampler.calls[1].prompts[0]


def test_the_runners_reading_of_a_turn_agrees_with_trls_parser(tok: Any) -> None:
    """Training parses calls with TRL's parse_response and the response template prepare_tokenizer
    set; the runner with parse_turn. On well-formed turns they read the same calls."""
    from trl.chat_template_utils import parse_response

    from rlvr.episodes import parse_turn

    prefix = tok.apply_chat_template(PROMPT, tokenize=True, add_generation_prompt=True, return_dict=False)
    for text in [
        CALL,
        CALL + CALL,
        "<answer>3</answer>",
        'x <tool_call>{"name": "f", "arguments": {"a": [1, {"b": null}]}}</tool_call>',
    ]:
        ids = tok(text + "</s>", add_special_tokens=False)["input_ids"]
        trl = parse_response(tok, ids, prefix=prefix)
        ours = parse_turn(text)
        trl_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in trl.get("tool_calls", [])]
        assert trl_calls == [(c.name, c.arguments) for c in ours.calls]
        if not ours.calls:
            assert trl["content"] == ours.text


def test_an_episode_rebuilt_from_trls_messages_is_the_runners_episode(tok: Any, tmp_path: Path) -> None:
    r = runner(tok, calls_then_answers, tmp_path)
    (eps,) = r.run([PROMPT], [{}], n=1, temperature=0.7, max_completion_length=300)
    ep = eps[0]
    again = from_messages(ep.messages(), ep.calls)
    assert [(t.text, t.calls) for t in again.turns] == [(t.text, t.calls) for t in ep.turns]
    assert Episode.from_json(ep.to_json()) == ep


def test_a_malformed_block_trl_left_in_the_text_counts_as_a_malformed_call() -> None:
    ep = from_messages([{"role": "assistant", "content": '<tool_call>{"name": x}</tool_call>'}])
    assert ep.calls[0].malformed and ep.final == ""


def test_episode_rewards_score_the_final_answer_and_the_episode_terms(tok: Any, tmp_path: Path) -> None:
    spec, _ = read_environment(
        {
            "tools": ["calculator"],
            "required": ["calculator"],
            "call_budget": 1,
            "terms": {"valid_calls": 0.1, "required_tools": 0.2, "call_budget": 0.5},
        },
        tmp_path,
        "task.yaml",
    )
    assert spec is not None
    rewards = episode_reward_set(spec, Term("correct", build_verifier("exact", {}, AnswerFormat(), search=tmp_path)))
    used = from_messages(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "17*23"}}}
                ],
            },
            {"role": "tool", "name": "calculator", "content": "391"},
            {"role": "assistant", "content": "<answer>391</answer>"},
        ]
    )
    skipped = from_messages([{"role": "assistant", "content": "<answer>391</answer>"}])
    looped = from_messages(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "calculator", "arguments": {"expression": "1"}}}
                ]
                * 3,
            },
            *[{"role": "tool", "name": "calculator", "content": "1"}] * 3,
            {"role": "assistant", "content": "<answer>391</answer>"},
        ]
    )
    a, b, c = rewards.score([Sample.of_episode(e, {"answer": "391"}, "q") for e in (used, skipped, looped)])
    assert rewards.total(a) == pytest.approx(1.3)
    assert b.verdicts["required_tools"].score == 0.0 and rewards.total(b) == pytest.approx(1.1)
    assert c.verdicts["call_budget"].score == pytest.approx(-1.0) and rewards.total(c) == pytest.approx(0.8)


def test_a_row_the_answer_terms_cannot_decide_is_masked_in_the_episode_terms_too(tmp_path: Path) -> None:
    spec, _ = read_environment({"tools": ["calculator"], "terms": {"valid_calls": 1}}, tmp_path, "task.yaml")
    assert spec is not None
    rewards = episode_reward_set(spec, Term("correct", build_verifier("exact", {}, AnswerFormat(), search=tmp_path)))
    (s,) = rewards.score(
        [Sample.of_episode(from_messages([{"role": "assistant", "content": "<answer>1</answer>"}]), {}, "q")]
    )
    assert s.masked and s.rewards() == {"correct": None, "valid_calls": None}


def test_a_call_to_a_tool_that_does_not_exist_keeps_the_other_records_in_line() -> None:
    """TRL answers such a call itself; the environment's records hold only the calls it ran."""
    from rlvr.episodes import Call

    def call(name: str) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "arguments": {}}}

    msgs = [
        {"role": "assistant", "content": "", "tool_calls": [call("nope"), call("calculator")]},
        {"role": "tool", "name": "nope", "content": '{"error": "Tool nope not found."}'},
        {"role": "tool", "name": "calculator", "content": "error: timed out"},
        {"role": "assistant", "content": "<answer>1</answer>"},
    ]
    records = [Call("calculator", {}, "error: timed out", "timed out", "timeout")]
    ep = from_messages(msgs, records)
    assert [(c.name, c.kind) for c in ep.calls] == [("nope", "invalid"), ("calculator", "timeout")]


@pytest.mark.parametrize(
    ("name", "start"),
    [
        ("tiny", "<|tools|>calculator(expression)\n<|user|>17*23?\n<|assistant|>"),
        ("small", "<|im_start|>system\nTools: calculator(expression)\nCall a tool as <tool_call>"),
    ],
)
def test_the_built_in_tool_templates_list_the_tools_and_read_back_a_call(name: str, start: str) -> None:
    from trl.chat_template_utils import parse_response

    from rlvr.episodes.template import render
    from rlvr.models import load_tokenizer

    tok = prepare_tokenizer(load_tokenizer(f"builtin:{name}"))
    schema = {"type": "function", "function": {"name": "calculator", "parameters": {"properties": {"expression": {}}}}}
    assert render(tok, PROMPT, [schema]).startswith(start)
    prefix = tok.apply_chat_template(PROMPT, tokenize=True, add_generation_prompt=True, return_dict=False)
    ids = tok(CALL + tok.eos_token, add_special_tokens=False)["input_ids"]
    (call,) = parse_response(tok, ids, prefix=prefix)["tool_calls"]
    assert call["function"] == {"name": "calculator", "arguments": {"expression": "17*23"}}
