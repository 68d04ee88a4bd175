"""Held-out verified accuracy: the only honest check for reward hacking.

The policy's completions on held-out prompts are judged by the task's *correctness* term alone
(not the weighted reward), so a run whose format reward climbs while answers do not improve
shows up here. Greedy by default (temperature 0), batched, with the RNG state saved and
restored around sampling so an eval in the middle of training does not reseed the trainer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import RunError
from .generate import Prompt, eos_ids
from .rewards.base import Outcome, Sample
from .task import Task


@dataclass(frozen=True)
class EvalResult:
    accuracy: float
    correct: int
    n: int
    masked: int
    mean_length: float
    mean_length_correct: float | None
    mean_length_incorrect: float | None
    temperature: float
    error: str = ""  # the most common error detail among masked samples

    def metrics(self) -> dict[str, Any]:
        return {
            "eval/accuracy": self.accuracy,
            "eval/correct": self.correct,
            "eval/n": self.n,
            "eval/masked": self.masked,
            "eval/mean_length": self.mean_length,
            "eval/mean_length_correct": self.mean_length_correct,
            "eval/mean_length_incorrect": self.mean_length_incorrect,
            "eval/prompts": self.n + self.masked,
        }

    def summary(self) -> str:
        """The one-line result, masked (undecided) samples beside the accuracy, e.g.
        ``41.7% (5 correct of 12 decided, 3 masked)``: an accuracy over few decided samples says so."""
        return f"{self.accuracy:.1%} ({self.correct} correct of {self.n} decided, {self.masked} masked)"

    def raise_if_undecided(self, what: str = "held-out eval") -> None:
        """``RunError`` when the eval decided no sample: an accuracy of 0/0 is not a result."""
        if self.n == 0 and self.masked:
            raise RunError(
                f"{what}: the success term could not decide any of the {self.masked} samples (all "
                f"masked{': ' + self.error if self.error else ''}); "
                "fix the reward (rlvr score on a few completions shows each verdict) before training on it"
            )


def generate_texts(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[Prompt],
    *,
    max_new_tokens: int,
    temperature: float = 0.0,
    top_p: float = 1.0,
    batch_size: int = 64,
    seed: int | None = None,
) -> list[tuple[str, list[int]]]:
    """One completion per prompt: (text decoded without special tokens, token ids up to EOS)."""
    import torch

    rng = torch.random.get_rng_state()
    if seed is not None:
        torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    stop = sorted(eos_ids(tokenizer, model))  # the tokenizer's EOS and the checkpoint's, as TRL stops on both
    out: list[tuple[str, list[int]]] = []
    try:
        for i in range(0, len(prompts), batch_size):
            batch = [
                p
                if isinstance(p, str)
                else tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                for p in prompts[i : i + batch_size]
            ]
            enc = tokenizer(batch, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
            kw: dict[str, Any] = {
                "max_new_tokens": max_new_tokens,
                "pad_token_id": tokenizer.pad_token_id,
                "eos_token_id": stop,
                "repetition_penalty": 1.0,
            }
            # Explicit top_k and repetition_penalty: a checkpoint's generation_config (Qwen2.5's top_k 20,
            # repetition_penalty 1.05) fills every value left unset, and would change what the eval measures.
            kw.update(
                {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}
                if temperature > 0
                else {"do_sample": False}
            )
            with torch.no_grad():
                gen = model.generate(**enc, **kw)
            for row in gen[:, enc["input_ids"].shape[1] :].tolist():
                end = next((i for i, t in enumerate(row) if t in stop), None)
                ids = row[: end + 1] if end is not None else row
                ids = [t for i, t in enumerate(ids) if t != tokenizer.pad_token_id or i == end]
                out.append((tokenizer.decode(ids, skip_special_tokens=True), ids))
    finally:
        torch.random.set_rng_state(rng)
        if was_training:
            model.train()
    return out


def evaluate(
    model: Any,
    tokenizer: Any,
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    *,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    seed: int | None = None,
) -> EvalResult:
    """Verified accuracy of ``model`` on ``rows`` under the task's success term."""
    temperature = task.eval.temperature if temperature is None else temperature
    max_new_tokens = max_new_tokens or task.generation.max_completion_length
    term = task.success_term
    rewards = task.reward_set()
    verifier = next(t.verifier for t in rewards.terms if t.name == term)
    prompts = [task.render_prompt(r) for r in rows]
    if task.environment is not None:  # a multi-turn task: each row is an episode, its final answer judged
        gens = _episode_generations(model, tokenizer, task, rows, prompts, max_new_tokens, temperature, seed)
    else:
        gens = generate_texts(
            model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed
        )
    samples = [
        Sample(completion=text, row=row, prompt=str(p), completion_ids=ids)
        for (text, ids), row, p in zip(gens, rows, prompts, strict=True)
    ]
    verdicts = verifier.verify_batch(samples)
    lengths = [len(ids) for _, ids in gens]
    ok = [v.outcome is Outcome.CORRECT for v in verdicts]
    masked = sum(v.outcome is Outcome.ERROR for v in verdicts)
    decided = len(rows) - masked
    lc = [n for n, o in zip(lengths, ok, strict=True) if o]
    li = [n for n, o, v in zip(lengths, ok, verdicts, strict=True) if not o and v.outcome is not Outcome.ERROR]
    return EvalResult(
        accuracy=sum(ok) / decided if decided else 0.0,
        correct=sum(ok),
        n=decided,
        masked=masked,
        mean_length=sum(lengths) / len(lengths) if lengths else 0.0,
        mean_length_correct=sum(lc) / len(lc) if lc else None,
        mean_length_incorrect=sum(li) / len(li) if li else None,
        temperature=temperature,
        error=_common_error(verdicts),
    )


def _episode_generations(
    model: Any,
    tokenizer: Any,
    task: Task,
    rows: Sequence[Mapping[str, Any]],
    prompts: Sequence[Any],
    max_new_tokens: int,
    temperature: float,
    seed: int | None,
) -> list[tuple[str, list[int]]]:
    """Each row's episode (``rlvr.episodes``: the task's tools, the budget over every turn) as
    (final answer, the final answer's token ids)."""
    from .episodes import EpisodeRunner, build_toolbox, prepare_tokenizer
    from .generate import TransformersSampler

    assert task.environment is not None
    prepare_tokenizer(tokenizer)
    toolbox = build_toolbox(task.environment, str(task.path))
    runner = EpisodeRunner(TransformersSampler(model, tokenizer), tokenizer, task.environment, toolbox)
    episodes = [g[0] for g in runner.run(prompts, rows, 1, temperature, max_new_tokens, seed=seed)]
    return [(e.final, list(tokenizer(e.final, add_special_tokens=False)["input_ids"])) for e in episodes]


def _common_error(verdicts: Sequence[Any]) -> str:
    from collections import Counter

    from .rollouts import error_text

    details = Counter(error_text(str(v.detail or v.error_kind or "")) for v in verdicts if v.outcome is Outcome.ERROR)
    return details.most_common(1)[0][0] if details else ""
