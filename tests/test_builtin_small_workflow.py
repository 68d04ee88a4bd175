"""The workflow in chat format on builtin:small (byte-level BPE, ChatML, multi-token tags).

The default run covers task check, probe, a GRPO step (full and LoRA) and the held-out eval on the
random-weight model, with ``think: required`` and ``think: prefilled``; the slow test adds SFT,
the inspection gate, the audit, gated training, doctor and report. Beside them, the fixes this
model forced: generation settings of a checkpoint that leaked into rlvr's own sampling, and stop
ids that rlvr's eval and vLLM sampler did not share with TRL.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rlvr.cli.main import main  # noqa: E402
from support.tasks import make_task

MESSAGES = [{"role": "user", "content": "What is 2+2?"}]


def chat_task(
    folder: Path, *, think: str, model: str, rows: int = 16, budget: int = 16, extra: dict[str, Any] | None = None
) -> Path:
    train_rows = [{"question": f"{i}+{i}", "answer": str(2 * i)} for i in range(10, 10 + rows)]
    return make_task(
        folder,
        train_rows=train_rows,
        extra={
            "model": model,
            "prompt": {
                "system": "Reason in <think> tags, then answer in <answer> tags.",
                "user": "What is {question}?",
            },
            "answer": {"column": "answer", "format": "tags", "think": think},
            "generation": {"temperature": 1.0, "max_completion_length": budget},
            "probe": {"k": 2, "max_prompts": 4},
            **(extra or {}),
        },
    )


def metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize(("think", "model"), [("required", "builtin:small"), ("prefilled", "builtin:small-think")])
def test_chat_task_on_small_is_checked_probed_trained_and_evaluated(tmp_path: Path, think: str, model: str) -> None:
    task = chat_task(tmp_path / "task", think=think, model=model)
    assert main(["task", "check", str(task)]) == 0
    assert (
        main(["probe", str(task), "--out", str(tmp_path / "probe"), "--no-progress", "--backend", "transformers"]) == 0
    )
    report = json.loads((tmp_path / "probe" / "report.json").read_text())
    # Random weights never end an answer: the probe must say the samples were cut off.
    assert report["n_truncated"] == report["n_samples"] == 8 and "cut off" in report["reason"]
    for peft in ("none", "lora"):
        run = tmp_path / f"run-{peft}"
        assert (
            main(
                [
                    "train",
                    str(task),
                    "--run-dir",
                    str(run),
                    "--max-steps",
                    "1",
                    "--no-gate",
                    "smoke",
                    "--no-progress",
                    "--peft",
                    peft,
                    "--eval-every",
                    "1",
                ]
            )
            == 0
        )
        lines = metrics(run)
        assert any("eval/accuracy" in x for x in lines) and any("rewards/correct/mean" in x for x in lines)
        rollout = json.loads((run / "rollouts" / "rollouts.jsonl").read_text().splitlines()[0])
        assert rollout["prompt"][0]["role"] == "system"  # TRL got the chat prompt, rendered by the ChatML template


def test_prefilled_prompts_end_inside_the_opened_think_block() -> None:
    from rlvr.generate import prompt_ids
    from rlvr.models import load_tokenizer

    tok = load_tokenizer("builtin:small-think")
    assert tok.decode(prompt_ids(tok, MESSAGES)).endswith("<|im_start|>assistant\n<think>\n")


@pytest.mark.parametrize(
    ("think", "model", "starts"),
    [
        ("required", "builtin:small", "<think></think><answer>"),
        ("prefilled", "builtin:small-think", "</think><answer>"),
    ],
)
def test_sft_targets_render_after_the_generation_prompt(tmp_path: Path, think: str, model: str, starts: str) -> None:
    from rlvr.models import load_tokenizer
    from rlvr.task import load_task
    from rlvr.train.sft import sft_rows

    task = load_task(chat_task(tmp_path, think=think, model=model))
    tok = load_tokenizer(model)
    row = sft_rows(task, task.load_split("train")[:1])[0]
    prompt = tok.apply_chat_template(row["prompt"], tokenize=False, add_generation_prompt=True)
    full = tok.apply_chat_template(row["prompt"] + row["completion"], tokenize=False)
    assert full.startswith(prompt) and full[len(prompt) :].startswith(starts)


# -- what broke on a model with a generation config of its own -----------------------------------
@pytest.fixture(scope="module")
def penalised(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    """builtin:small whose saved generation config carries an exaggerated repetition penalty
    (Qwen2.5-Instruct ships 1.05): a decoder that leaves it in force samples something else."""
    from rlvr.models import load_model, load_tokenizer

    model = load_model("builtin:small")
    model.generation_config.repetition_penalty = 5.0
    return model, load_tokenizer("builtin:small")


def _argmax_decode(model: Any, tok: Any, n: int) -> list[int]:
    import torch

    x = torch.tensor(
        [tok.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]]
    )
    out: list[int] = []
    with torch.no_grad():
        for _ in range(n):
            nxt = int(model(x).logits[0, -1].argmax())
            out.append(nxt)
            x = torch.cat([x, torch.tensor([[nxt]])], 1)
    return out


def test_probe_sampler_decodes_greedily_whatever_the_checkpoints_repetition_penalty(penalised) -> None:
    from rlvr.generate import TransformersSampler

    model, tok = penalised
    want = _argmax_decode(model, tok, 10)
    assert len(set(want)) < len(want)  # the greedy path repeats a token: a penalty would change it
    got = TransformersSampler(model, tok).sample([MESSAGES], n=1, temperature=0, max_new_tokens=10)[0][0].token_ids
    assert list(got) == want


def test_eval_decodes_greedily_whatever_the_checkpoints_repetition_penalty(penalised) -> None:
    model, tok = penalised
    assert _eval_ids(model, tok, 10) == _argmax_decode(model, tok, 10)


def test_eval_stops_at_every_stop_id_of_the_checkpoint_as_trl_does() -> None:
    from rlvr.models import load_model, load_tokenizer

    model, tok = load_model("builtin:small"), load_tokenizer("builtin:small")
    first = _argmax_decode(model, tok, 1)[0]
    model.generation_config.eos_token_id = [tok.eos_token_id, first]  # the checkpoint's second stop id
    assert _eval_ids(model, tok, 10) == [first]


def _eval_ids(model: Any, tok: Any, max_new_tokens: int) -> list[int]:
    """The token ids of a greedy completion of MESSAGES as every evaluation samples it (``eval_sampler``)."""
    from types import SimpleNamespace

    from rlvr.evaluate import eval_sampler

    task: Any = SimpleNamespace(environment=None)  # a single-turn task: the sampler itself
    return list(eval_sampler(model, tok, task).sample([MESSAGES], 1, 0.0, max_new_tokens)[0][0].token_ids)


def test_vllm_sampler_reads_the_saved_stop_ids_beside_the_tokenizers_eos() -> None:
    from rlvr.generate import eos_ids, saved_generation_config
    from rlvr.models import build_builtin, load_tokenizer

    tok = load_tokenizer("builtin:small")
    assert eos_ids(tok, saved_generation_config(str(build_builtin("small")))) == {tok.eos_token_id, tok.pad_token_id}


# -- the whole workflow, slow ---------------------------------------------------------------------
def _checker(think: str):
    """An independent reader of completions: recomputes the sum from the question and judges the
    verdicts by a whole-completion pattern of the format (not by rlvr's extraction)."""
    head = r"\s*<think>.*?</think>" if think == "required" else r"(?:(?!<think>).)*?</think>"
    pattern = re.compile(head + r"\s*<answer>([^<]*)</answer>\s*", re.S)

    def check(row: dict[str, Any], completion: str, verdicts: dict[str, Any]) -> str:
        m = pattern.fullmatch(completion)
        a, b = row["question"].split("+")
        deserved = {"format": bool(m), "correct": bool(m) and m.group(1).strip() == str(int(a) + int(b))}
        for term, verdict in verdicts.items():
            if term in deserved and verdict.score is not None and (verdict.score > 0) != deserved[term]:
                return "higher" if deserved[term] else "lower"
        return "right"

    return check


@pytest.mark.slow
@pytest.mark.parametrize(("think", "model"), [("required", "builtin:small"), ("prefilled", "builtin:small-think")])
def test_whole_workflow_on_small_in_chat_format(
    tmp_path: Path, think: str, model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from rlvr.gate import reference_gate
    from rlvr.task import load_task

    task_path = chat_task(
        tmp_path / "task",
        think=think,
        model=model,
        rows=160,
        budget=24,
        extra={
            "eval": {"every": 2, "max_prompts": 8},
            "sft": {"per_device_train_batch_size": 16, "learning_rate": 3e-3, "warmup_steps": 5},
        },
    )
    sft = tmp_path / "sft"
    assert main(["sft", str(task_path), "--out", str(sft), "--max-steps", "40", "--no-progress"]) == 0
    assert main(["probe", str(task_path), "--model", str(sft), "--out", str(tmp_path / "probe"), "--no-progress"]) == 0
    probe = json.loads((tmp_path / "probe" / "report.json").read_text())
    assert probe["n_truncated"] < probe["n_samples"]  # SFT taught the model to end its answers with <|im_end|>
    task = load_task(task_path)
    from rlvr.audit import gate_audit

    gate = reference_gate(
        task,
        model=str(sft),
        out_dir=task_path.parent / "gate",
        checker=_checker(think),
        size=24,
        min_samples=24,
        audit=gate_audit,
    )
    assert json.loads(Path(gate).read_text())["counts"]["samples"] == 24
    capsys.readouterr()
    assert main(["audit", str(task_path)]) == 0, capsys.readouterr().out
    for peft in ("none", "lora"):
        run = tmp_path / f"run-{peft}"
        assert (
            main(
                [
                    "train",
                    str(task_path),
                    "--model",
                    str(sft),
                    "--run-dir",
                    str(run),
                    "--max-steps",
                    "4",
                    "--gate",
                    str(gate),
                    "--no-progress",
                    "--peft",
                    peft,
                ]
            )
            == 0
        )
        assert sum("eval/accuracy" in x for x in metrics(run)) >= 2
        config = yaml.safe_load((run / "config.yaml").read_text())
        assert config["trl_resolved"]["max_completion_length"] == 24
        assert main(["doctor", str(run)]) in (0, 1)
        assert main(["report", str(run), "--out", str(tmp_path / f"report-{peft}")]) == 0
        assert (tmp_path / f"report-{peft}" / "report.html").exists()


# -- the think policy against the chat template ----------------------------------------------------
def _think_warnings(tmp_path: Path, think: str, model: str) -> list[str]:
    from rlvr.lengths import check_lengths
    from rlvr.task import load_task

    return [
        w
        for w in check_lengths(load_task(chat_task(tmp_path, think=think, model=model))).warnings()
        if "ends with <think>" in w or "does not end with <think>" in w
    ]


def test_prefilled_on_a_template_that_does_not_open_think_is_warned(tmp_path: Path) -> None:
    assert _think_warnings(tmp_path, "prefilled", "builtin:small")


@pytest.mark.parametrize("think", ["required", "none"])
def test_a_template_that_opens_think_is_warned_for_a_policy_that_expects_an_opening_tag(
    tmp_path: Path, think: str
) -> None:
    assert _think_warnings(tmp_path, think, "builtin:small-think")


@pytest.mark.parametrize(
    ("think", "model"),
    [("required", "builtin:small"), ("prefilled", "builtin:small-think"), ("optional", "builtin:small-think")],
)
def test_a_think_policy_that_matches_the_template_is_not_warned(tmp_path: Path, think: str, model: str) -> None:
    assert _think_warnings(tmp_path, think, model) == []


def test_task_check_prints_the_think_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["task", "check", str(chat_task(tmp_path, think="required", model="builtin:small-think"))]) == 0
    assert "think: required fails every one of them" in capsys.readouterr().out


def test_chat_template_kwargs_that_change_the_prompt_only_for_training_are_warned(tmp_path: Path) -> None:
    from rlvr.lengths import check_lengths
    from rlvr.task import load_task

    task = load_task(
        chat_task(
            tmp_path,
            think="prefilled",
            model="builtin:small",
            extra={"grpo": {"chat_template_kwargs": {"enable_thinking": True}}},
        )
    )
    assert any("only TRL's training reads it" in w for w in check_lengths(task).warnings())


def test_eval_tokenizes_a_chat_prompt_as_the_probe_and_trl_do() -> None:
    from rlvr.generate import prompt_ids
    from rlvr.models import load_tokenizer

    tok = load_tokenizer("builtin:small")
    messages = [{"role": "system", "content": "Answer in <answer> tags."}, *MESSAGES]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)  # what the template renders
    assert tok(text, add_special_tokens=False)["input_ids"] == prompt_ids(tok, messages)


@pytest.mark.parametrize(
    ("think", "model", "target", "prompt_end"),
    [
        ("required", "builtin:small", "<think></think><answer>20</answer><|im_end|>\n", "<|im_start|>assistant\n"),
        (
            "prefilled",
            "builtin:small-think",
            "</think><answer>20</answer><|im_end|>\n",
            "<|im_start|>assistant\n<think>\n",
        ),
    ],
)
def test_sft_loss_covers_exactly_the_completion_after_the_generation_prompt(
    tmp_path: Path, think: str, model: str, target: str, prompt_end: str
) -> None:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from rlvr.models import load_model, load_tokenizer
    from rlvr.task import load_task
    from rlvr.train.sft import sft_rows

    task = load_task(chat_task(tmp_path / "task", think=think, model=model))
    tok = load_tokenizer(model)
    config = SFTConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, report_to="none", max_steps=1)
    trainer = SFTTrainer(
        model=load_model(model),
        args=config,
        train_dataset=Dataset.from_list(sft_rows(task, task.load_split("train")[:1])),
        processing_class=tok,
    )
    example = trainer.train_dataset[0]
    trained = [i for i, label in zip(example["input_ids"], example["labels"], strict=True) if label != -100]
    prompt = [i for i, label in zip(example["input_ids"], example["labels"], strict=True) if label == -100]
    assert tok.decode(trained) == target  # the EOS is learned, the generation prompt is not
    assert tok.decode(prompt).endswith(prompt_end)
