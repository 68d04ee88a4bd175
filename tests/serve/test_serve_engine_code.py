"""The adapters and the server driven by the engines' own code (opt-in: needs the folder that
``tests/serve/engine_code.py`` prepares, named by ``RLVR_ENGINE_CODE``; skipped otherwise).

- OpenRLHF 0.11.2 ``SingleTurnAgentExecutor.execute`` (openrlhf/utils/agent.py) with a fake
  tokenizer and a fake vLLM engine: its aiohttp client calls ``rlvr serve``'s ``/get_reward``, and
  its file loader loads the adapter ``--write-adapter openrlhf`` writes.
- verl 0.9.1's reward loop ``NaiveRewardManager.run_single`` (its default training path), its
  legacy ``BatchRewardManager`` and ``NaiveRewardManager`` (verl/workers/reward_manager/), on a
  small duck-typed ``DataProto`` calling the verl adapter, and verl's own
  ``compute_grpo_outcome_advantage`` (verl/trainer/ppo/core_algos.py) on the rewards they write.

Only the reward path is loaded: package ``__init__`` files and imports it does not use (Ray,
tensordict, omegaconf, the registry) are stubbed, and the function bodies run unchanged.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import os
import sys
import types
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from serve_helpers import ThreadServer, right, write_task

from rlvr.cli.main import main
from rlvr.serve import Scorer
from rlvr.serve.app import RewardServer

ROOT = Path(os.environ.get("RLVR_ENGINE_CODE", "/nonexistent"))
SRC, SITE = ROOT / "src", ROOT / "site"
pytestmark = pytest.mark.skipif(
    not (SRC / "openrlhf").is_dir() or not (SRC / "verl").is_dir(),
    reason="engine code not prepared: python tests/serve/engine_code.py DIR, then RLVR_ENGINE_CODE=DIR",
)


@pytest.fixture
def engine_modules() -> Any:
    """Load modules from the engines' folders under stub packages; remove them afterwards."""
    before = set(sys.modules)
    sys.path.append(str(SITE))  # after the venv's own packages: only aiohttp and its deps come from here

    def package(name: str, path: Path | None = None, **attrs: Any) -> types.ModuleType:
        mod = types.ModuleType(name)
        if path is not None:
            mod.__path__ = [str(path)]  # type: ignore[attr-defined]
        for k, v in attrs.items():
            setattr(mod, k, v)
        sys.modules[name] = mod
        return mod

    def load(name: str, path: Path) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    yield SimpleNamespace(package=package, load=load)
    sys.path.remove(str(SITE))
    for name in set(sys.modules) - before:
        if name.split(".")[0] in (
            "openrlhf",
            "verl",
            "aiohttp",
            "multidict",
            "yarl",
            "frozenlist",
            "aiosignal",
            "propcache",
            "aiohappyeyeballs",
        ):
            del sys.modules[name]


# -- OpenRLHF -------------------------------------------------------------------------------
class CharTokenizer:
    """One token per character: decode(encode(x)) == x, special tokens included."""

    class _Ids(list):
        def tolist(self) -> list[int]:
            return list(self)

    def __call__(
        self, text: str, add_special_tokens: bool = False, return_tensors: str | None = None
    ) -> dict[str, Any]:
        return {"input_ids": [self._Ids(ord(c) for c in text)]}

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        return "".join(chr(int(i)) for i in ids)


class FakeVLLM:
    """Answers every prompt with the next text of ``responses``."""

    def __init__(self, responses: list[str]) -> None:
        self.responses = list(responses)

    async def generate(self, prompt_token_ids: list[int], sampling_params: Any, multi_modal_data: Any = None) -> Any:
        text = self.responses.pop(0)
        return SimpleNamespace(
            outputs=[SimpleNamespace(token_ids=[ord(c) for c in text], finish_reason="stop", logprobs=None, text=text)]
        )


def _openrlhf_executor(engine_modules: Any, endpoint: str) -> Any:
    engine_modules.package("openrlhf", SRC / "openrlhf")
    engine_modules.package("openrlhf.utils", SRC / "openrlhf" / "utils")  # its __init__ pulls deepspeed
    engine_modules.load("openrlhf.utils.logging_utils", SRC / "openrlhf" / "utils" / "logging_utils.py")
    agent = engine_modules.load("openrlhf.utils.agent", SRC / "openrlhf" / "utils" / "agent.py")
    return agent.SingleTurnAgentExecutor(endpoint)


def _execute(executor: Any, prompt: str, label: str, response: str) -> dict[str, Any]:
    params = SimpleNamespace(max_tokens=64, logprobs=None)
    return asyncio.run(executor.execute(prompt, label, params, 256, CharTokenizer(), FakeVLLM([response])))


def test_openrlhf_http_client_gets_rewards_scores_and_logs_from_rlvr_serve(engine_modules: Any, tmp_path: Path) -> None:
    scorer = Scorer.from_task(write_task(tmp_path / "t"), no_gate_reason="engine contract test")
    server = ThreadServer(RewardServer(scorer))
    try:
        executor = _openrlhf_executor(engine_modules, server.url + "/get_reward")
        right_out = _execute(executor, "2+2=", "4", right("4") + "<|im_end|>")
        wrong_out = _execute(executor, "2+2=", "4", right("5") + "<|im_end|>")
        masked_out = _execute(executor, "2+2=", "4", "CRASH " + right("4"))
    finally:
        server.stop()
    assert right_out["reward"] == pytest.approx([1.1]) and right_out["scores"] == [1.0]
    assert wrong_out["reward"] == pytest.approx([0.1]) and wrong_out["scores"] == [0.0]
    assert right_out["extra_logs"]["rlvr/masked"] == [0.0]
    # one-sample calls: the masked row gets the mean of its prompt's earlier rows
    assert masked_out["reward"] == pytest.approx([0.6]) and masked_out["extra_logs"]["rlvr/masked"] == [1.0]


def test_openrlhf_loads_the_written_adapter_file_and_scores_with_it(engine_modules: Any, tmp_path: Path) -> None:
    out = tmp_path / "reward_func.py"
    assert (
        main(
            [
                "serve",
                str(write_task(tmp_path / "t")),
                "--no-gate",
                "engine contract test",
                "--write-adapter",
                "openrlhf",
                str(out),
            ]
        )
        == 0
    )
    executor = _openrlhf_executor(engine_modules, str(out))
    got = _execute(executor, "7+1=", "8", right("8") + "</s>")
    assert got["reward"] == pytest.approx([1.1]) and got["scores"] == [1.0]
    assert got["extra_logs"]["rlvr/correct/score"] == [1.0]


# -- verl -----------------------------------------------------------------------------------
class Item(SimpleNamespace):
    pass


class FakeDataProto:
    """The parts of verl's DataProto the reward managers read: ``batch`` (tensors: prompts,
    responses, attention_mask), ``non_tensor_batch`` (numpy object arrays), indexing, len."""

    def __init__(self, prompts: list[str], responses: list[str], truths: list[str], index: list[int]) -> None:
        import numpy as np
        import torch

        plen = max(len(p) for p in prompts)
        rlen = max(len(r) for r in responses)
        p = torch.zeros(len(prompts), plen, dtype=torch.long)
        r = torch.zeros(len(prompts), rlen, dtype=torch.long)
        mask = torch.zeros(len(prompts), plen + rlen, dtype=torch.long)
        for i, (ps, rs) in enumerate(zip(prompts, responses, strict=True)):
            p[i, plen - len(ps) :] = torch.tensor([ord(c) for c in ps])  # left-padded prompt
            r[i, : len(rs)] = torch.tensor([ord(c) for c in rs])  # right-padded response
            mask[i, plen - len(ps) : plen + len(rs)] = 1
        self.batch = {"prompts": p, "responses": r, "attention_mask": mask}
        self.non_tensor_batch = {
            "data_source": np.array(["arith"] * len(prompts), dtype=object),
            "reward_model": np.array([{"ground_truth": t} for t in truths], dtype=object),
            "extra_info": np.array([{"index": i} for i in index], dtype=object),
        }
        self.meta_info: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.batch["prompts"])

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):  # verl's reward loop takes data[-1:] of a one-sample DataProto
            out = object.__new__(FakeDataProto)
            out.batch = {k: v[i] for k, v in self.batch.items()}
            out.non_tensor_batch = {k: v[i] for k, v in self.non_tensor_batch.items()}
            out.meta_info = {}
            return out
        return Item(
            batch={k: v[i] for k, v in self.batch.items()},
            non_tensor_batch={k: v[i] for k, v in self.non_tensor_batch.items()},
        )

    def __iter__(self) -> Any:
        return (self[i] for i in range(len(self)))


def _verl_managers(engine_modules: Any) -> Any:
    root = SRC / "verl"
    engine_modules.package("verl", root, DataProto=FakeDataProto)
    engine_modules.package("verl.protocol", DataProto=FakeDataProto)  # its real import pulls Ray and tensordict
    engine_modules.package("verl.utils", root / "utils")
    engine_modules.package("verl.utils.reward_score", default_compute_score=None)
    engine_modules.package("verl.workers", root / "workers")
    engine_modules.package(
        "verl.workers.reward_manager", root / "workers" / "reward_manager", register=lambda name: lambda cls: cls
    )
    rm = root / "workers" / "reward_manager"
    engine_modules.load("verl.workers.reward_manager.abstract", rm / "abstract.py")
    batch = engine_modules.load("verl.workers.reward_manager.batch", rm / "batch.py")
    naive = engine_modules.load("verl.workers.reward_manager.naive", rm / "naive.py")
    return batch.BatchRewardManager, naive.NaiveRewardManager


def _verl_grpo_advantage() -> Any:
    """verl's ``compute_grpo_outcome_advantage``, its source taken verbatim from core_algos.py
    (the module's own imports pull omegaconf and verl's config classes)."""
    import numpy as np
    import torch

    source = (SRC / "verl" / "trainer" / "ppo" / "core_algos.py").read_text()
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "compute_grpo_outcome_advantage")
    fn.decorator_list = []
    namespace: dict[str, Any] = {
        "torch": torch,
        "np": np,
        "defaultdict": defaultdict,
        "Optional": Any,
        "AlgoConfig": Any,
    }
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "core_algos.py", "exec"), namespace)  # noqa: S102 - the engine's own code
    return namespace["compute_grpo_outcome_advantage"]


RESPONSES = [right("4"), right("5"), right("4"), "CRASH " + right("4"), right("9"), right("9")]
TRUTHS = ["4", "4", "4", "4", "9", "9"]
INDEX = [0, 0, 0, 0, 1, 1]


def test_verl_batch_reward_manager_writes_group_mean_for_the_masked_row_and_one_extra_value_per_sample(
    engine_modules: Any, tmp_path: Path
) -> None:
    from rlvr.serve.engines import VerlAdapter

    batch_cls, _ = _verl_managers(engine_modules)
    adapter = VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="engine contract test")
    manager = batch_cls(tokenizer=CharTokenizer(), num_examine=0, compute_score=adapter.compute_score_batch)
    data = FakeDataProto(["2+2="] * 4 + ["3*3="] * 2, RESPONSES, TRUTHS, INDEX)
    out = manager(data, return_dict=True)
    rewards = out["reward_tensor"].sum(-1).tolist()
    assert rewards == pytest.approx([1.1, 0.1, 1.1, (1.1 + 0.1 + 1.1) / 3, 1.1, 1.1])
    assert all(len(v) == 6 for v in out["reward_extra_info"].values())
    assert out["reward_extra_info"]["rlvr_masked"] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]

    # verl's own GRPO advantage on those rewards: the masked row gets 0, the group mean is kept
    import numpy as np
    import torch

    adv, _ = _verl_grpo_advantage()(out["reward_tensor"], torch.ones_like(out["reward_tensor"]), np.array(INDEX))
    per_row = adv[:, 0].tolist()
    assert per_row[3] == pytest.approx(0.0, abs=1e-6)
    assert sum(per_row[:4]) == pytest.approx(0.0, abs=1e-5)
    assert per_row[0] > 0 > per_row[1]


def test_verl_naive_reward_manager_calls_the_per_sample_function(engine_modules: Any, tmp_path: Path) -> None:
    from rlvr.serve.engines import VerlAdapter

    _, naive_cls = _verl_managers(engine_modules)
    adapter = VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="engine contract test")
    manager = naive_cls(tokenizer=CharTokenizer(), num_examine=0, compute_score=adapter.compute_score)
    out = manager(FakeDataProto(["2+2="] * 4 + ["3*3="] * 2, RESPONSES, TRUTHS, INDEX), return_dict=True)
    rewards = out["reward_tensor"].sum(-1).tolist()
    # per sample, the masked row sees only the earlier rows of its group
    assert rewards == pytest.approx([1.1, 0.1, 1.1, (1.1 + 0.1 + 1.1) / 3, 1.1, 1.1])
    assert out["reward_extra_info"]["rlvr_imputed_other"] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def _verl_reward_loop_manager(engine_modules: Any) -> Any:
    """verl 0.9.1's default path: the reward loop's NaiveRewardManager (verl/experimental/
    reward_loop/reward_manager/naive.py), which calls ``compute_score`` once per sample in an
    executor thread. ``reward.reward_manager.name=batch`` has no reward-loop counterpart there."""
    import asyncio as _asyncio

    root = SRC / "verl"
    engine_modules.package("verl", root, DataProto=FakeDataProto)
    engine_modules.package("omegaconf", DictConfig=dict)
    engine_modules.package("verl.utils", root / "utils")
    engine_modules.package("verl.utils.ray_utils", get_event_loop=_asyncio.get_event_loop)
    engine_modules.package("verl.utils.reward_score", default_compute_score=None)
    engine_modules.package("verl.experimental", root / "experimental")
    engine_modules.package("verl.experimental.reward_loop", root / "experimental" / "reward_loop")
    rl = root / "experimental" / "reward_loop" / "reward_manager"
    engine_modules.package("verl.experimental.reward_loop.reward_manager", rl, register=lambda name: lambda cls: cls)
    engine_modules.load("verl.experimental.reward_loop.reward_manager.base", rl / "base.py")
    return engine_modules.load("verl.experimental.reward_loop.reward_manager.naive", rl / "naive.py").NaiveRewardManager


def test_verl_reward_loop_scores_each_sample_and_masks_with_the_groups_earlier_rows(
    engine_modules: Any, tmp_path: Path
) -> None:
    from rlvr.serve.engines import VerlAdapter

    manager_cls = _verl_reward_loop_manager(engine_modules)
    adapter = VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="engine contract test")
    data = FakeDataProto(["2+2="] * 4 + ["3*3="] * 2, RESPONSES, TRUTHS, INDEX)

    async def run() -> list[dict[str, Any]]:
        manager = manager_cls(config={}, tokenizer=CharTokenizer(), compute_score=adapter.compute_score)
        return [await manager.run_single(data[i : i + 1]) for i in range(len(data))]  # in order

    out = asyncio.run(run())
    assert [o["reward_score"] for o in out] == pytest.approx([1.1, 0.1, 1.1, (1.1 + 0.1 + 1.1) / 3, 1.1, 1.1])
    assert [o["reward_extra_info"]["rlvr_masked"] for o in out] == [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def test_verl_reward_loop_run_concurrently_still_gives_every_sample_one_finite_reward(
    engine_modules: Any, tmp_path: Path
) -> None:
    import math

    from rlvr.serve.engines import VerlAdapter

    manager_cls = _verl_reward_loop_manager(engine_modules)
    adapter = VerlAdapter(write_task(tmp_path / "t"), no_gate_reason="engine contract test")
    data = FakeDataProto(["2+2="] * 4 + ["3*3="] * 2, RESPONSES, TRUTHS, INDEX)

    async def run() -> list[dict[str, Any]]:
        manager = manager_cls(config={}, tokenizer=CharTokenizer(), compute_score=adapter.compute_score)
        return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))

    out = asyncio.run(run())
    decided = [o["reward_score"] for i, o in enumerate(out) if i != 3]
    assert decided == pytest.approx([1.1, 0.1, 1.1, 1.1, 1.1])
    assert math.isfinite(out[3]["reward_score"]) and out[3]["reward_extra_info"]["rlvr_masked"] == 1.0


# -- launch plans against the engines' option definitions -----------------------------------
def _flatten(d: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(d, dict):
        for k, v in d.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            out.add(key)
            out |= _flatten(v, key)
    return out


def test_every_verl_key_the_launch_plan_sets_exists_in_verls_config() -> None:
    import yaml

    from rlvr.serve.launch import VERL_KEYS

    config = yaml.safe_load((SRC / "verl" / "trainer" / "config" / "_generated_ppo_trainer.yaml").read_text())
    assert sorted(set(VERL_KEYS) - _flatten(config)) == []


def test_every_openrlhf_flag_and_choice_the_launch_plan_uses_exists_in_train_ppo_ray() -> None:
    from rlvr.serve.launch import _OPENRLHF_AGG, OPENRLHF_FLAGS

    source = (SRC / "openrlhf" / "cli" / "train_ppo_ray.py").read_text()
    defined: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args:
            first = node.args[0]
            # per-role flags are written f"--{prefix}.name" in a loop over ("actor", "critic")
            name = (
                first.value
                if isinstance(first, ast.Constant)
                else ast.unparse(first)
                .replace("f'--{prefix}.", "--actor.")
                .replace('f"--{prefix}.', "--actor.")
                .strip("'\"")
            )
            choices = next((ast.literal_eval(k.value) for k in node.keywords if k.arg == "choices"), None)
            defined[name] = list(choices) if choices else []
    assert sorted(set(OPENRLHF_FLAGS) - set(defined)) == []
    assert set(_OPENRLHF_AGG.values()) <= set(defined["--actor.loss_agg_mode"])
    assert {"group_norm", "dr_grpo"} <= set(defined["--algo.advantage.estimator"])
    assert "k3" in defined["--algo.kl.estimator"] and "gspo" in defined["--actor.policy_loss_type"]


def test_every_verl_value_the_launch_plan_uses_is_one_verl_handles() -> None:
    from rlvr.serve.launch import _VERL_AGG

    source = (SRC / "verl" / "trainer" / "ppo" / "core_algos.py").read_text()
    for mode in {*_VERL_AGG.values(), "seq-mean-token-sum-norm"}:
        assert f'"{mode}"' in source, mode
    assert '@register_policy_loss("gspo")' in source and '"low_var_kl"' in source
