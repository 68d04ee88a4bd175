"""Dynamic sampling inside TRL's ``GRPOTrainer``: no step spent on groups that teach nothing.

A group whose rewards are all equal has zero advantage, so it contributes no gradient (TRL #3857),
yet it costs a full set of generations. DAPO (arXiv 2503.14476) over-samples and drops such groups;
TRL 1.16 has no dynamic sampling (#3708). Two modes (``grpo: {dynamic: {mode: ...}}``), both hooked
into TRL's ``_generate_and_score_completions``, which ``_prepare_inputs`` calls once per generation
batch (every ``steps_per_generation x num_iterations`` micro-steps; the batch is then buffered and
split as usual, so gradient accumulation and reuse are untouched).

A group is **flat** when its decided samples' total rewards (the weighted sum the advantage sees)
lie within ``epsilon`` of each other, or fewer than two samples were decided. Masked samples (every
term undecided) do not count as variance. Judged from the rewards TRL gathers from every process
(read back from ``_calculate_rewards``), so every process reaches the same decision.

**resample** (DAPO's): generate the batch, drop its flat groups, and generate fresh prompts for the
missing slots, at most ``max_rounds`` rounds in all. Each process trains whole groups of its own
(refused before the model loads when a process's generation batch is not whole groups); a round
asks every process for as many groups as the neediest process still lacks (TRL gathers rewards
across processes, which needs equal sizes), drawn with a generator seeded by (seed, step): the same
prompts on every process. The rounds' outputs are joined row by row, each tensor padded to the
longest round, so the batch keeps its shape. When the rounds run out, the remaining slots take the
dropped groups with the largest spread: ``short_batch: kept`` masks them out of the loss (the step
trains on the kept groups only), ``best`` trains them as generated.

**filter** (online, no extra generation): remember per prompt whether its recent groups were flat,
and give the slot of a prompt whose last ``visits`` groups were all flat to an eligible prompt
*before* generation; re-check a skipped prompt after ``recheck_after`` optimizer steps (unset: two
epochs' worth, resolved when training starts and recorded in the run's config). The drawn
prompts are gathered from every process (TRL's RepeatSampler gives each a contiguous slice of the
global batch), replaced with a generator seeded by (seed, step, generation count), and each process
takes its slice back: same plan everywhere, same after a resume, shapes unchanged. Never starving:
when no eligible prompt is left, the drawn prompt is trained as drawn (``dynamic/starved_groups``)
and judged again like any visit. Its state is written into every checkpoint (``rlvr_dynamic.json``)
and read back on resume.

Departures, stated: both judge the total reward, not "solved by every or by no completion" of the
success term (a group all correct but differing in its format term still has an advantage). DAPO
refills until the batch is full; resample stops after ``max_rounds`` and says how many slots it
could not fill. The filter predicts from a prompt's previous groups, so it needs revisits (a split
visited once is never filtered), misses a prompt that has just become learnable until its re-check,
and trains one that has just become flat once more. With ``loss_type`` grpo or dr_grpo (a mean over
sequences, or a fixed length per sequence) a masked slot still counts in the denominator, so a short
batch scales that step's gradient by the kept share, as TRL's ``mask_truncated_completions`` does;
dapo and bnpo normalise by the tokens in the loss and are unaffected.

Verified on CPU (tests/train/test_dynamic.py): one process with gradient accumulation,
``steps_per_generation > 1`` and ``num_iterations > 1``; two processes under ``accelerate launch``
(gloo); resume. Not run, for lack of hardware: vLLM (colocate or server; the extra rounds call the
same ``_generate`` TRL uses) and GPU DeepSpeed/FSDP. Resample refuses multimodal inputs (it cannot
join their outputs). Metrics: see docs/dynamic-sampling.md.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..settings.recipe import DynamicSampling
from .resample import assemble, pick_groups, refill

STATE_FILE = "rlvr_dynamic.json"


def spread(rewards: Sequence[float | None]) -> float:
    """max - min of the decided rewards (None or NaN: masked); 0 with fewer than two decided."""
    decided = [float(r) for r in rewards if r is not None and not math.isnan(float(r))]
    return max(decided) - min(decided) if len(decided) >= 2 else 0.0


def is_flat(rewards: Sequence[float | None], epsilon: float) -> bool:
    """Whether a group teaches nothing: its decided rewards (None or NaN: masked) lie within
    ``epsilon`` of each other, or fewer than two were decided."""
    return spread(rewards) <= epsilon


@dataclass(frozen=True)
class Plan:
    """One generation batch's decision: the prompt (dataset index) of each group, as drawn and as trained."""

    drawn: tuple[int, ...]
    trained: tuple[int, ...]
    replaced: int
    starved: int


@dataclass
class PromptFilter:
    """Per-prompt memory of recent groups and the skip decisions. Pure Python: the same inputs give
    the same plan in every process."""

    n_prompts: int
    settings: DynamicSampling
    seed: int = 0
    history: dict[int, list[bool]] = field(default_factory=dict)  # last `visits` groups: flat?
    solved: dict[int, float] = field(default_factory=dict)  # last group's mean success reward
    skipped_until: dict[int, int] = field(default_factory=dict)  # prompt -> first step it may be drawn again
    generations: int = 0  # generation batches planned so far (seeds the replacement draw)

    def is_skipped(self, prompt: int, step: int) -> bool:
        return self.skipped_until.get(prompt, -1) > step

    def skipped_at(self, step: int) -> list[int]:
        return sorted(p for p, until in self.skipped_until.items() if until > step)

    def plan(self, drawn: Sequence[int], step: int) -> Plan:
        """Keep each drawn prompt that is not skipped; give each skipped one's slot to an eligible
        prompt not already in the batch, or keep it (starved) when none is left."""
        rng = random.Random(f"rlvr-dynamic:{self.seed}:{step}:{self.generations}")
        self.generations += 1
        used = {p for p in drawn if not self.is_skipped(p, step)}
        trained, replaced, starved = [], 0, 0
        order: list[int] | None = None
        for p in drawn:
            if p < 0 or not self.is_skipped(p, step):
                trained.append(p)
                continue
            pick = None
            for _ in range(64):  # cheap random probes first; a full scan only when most prompts are skipped
                q = rng.randrange(self.n_prompts)
                if q not in used and not self.is_skipped(q, step):
                    pick = q
                    break
            if pick is None:
                if order is None:
                    order = list(range(self.n_prompts))
                    rng.shuffle(order)
                pick = next((q for q in order if q not in used and not self.is_skipped(q, step)), None)
            if pick is None:
                trained.append(p)
                starved += 1
            else:
                trained.append(pick)
                replaced += 1
            used.add(trained[-1])
        return Plan(tuple(drawn), tuple(trained), replaced, starved)

    def observe(
        self, prompt: int, rewards: Sequence[float | None], success: Sequence[float | None] | None, step: int
    ) -> bool:
        """Record one trained group; returns whether it was flat."""
        flat = is_flat(rewards, self.settings.epsilon)
        if prompt < 0:
            return flat
        h = self.history.setdefault(prompt, [])
        h.append(flat)
        del h[: -self.settings.visits]
        if success is not None:
            decided = [float(s) for s in success if s is not None and not math.isnan(float(s))]
            if decided:
                self.solved[prompt] = sum(decided) / len(decided)
        if len(h) == self.settings.visits and all(h):
            self.skipped_until[prompt] = step + (self.settings.recheck_after or 1)
        else:
            self.skipped_until.pop(prompt, None)
        return flat

    def counts(self, step: int) -> dict[str, int]:
        """Skipped prompts at ``step``, split by their last group: all solved (>= 0.5 mean success) or not."""
        skipped = self.skipped_at(step)
        solved = sum(1 for p in skipped if self.solved.get(p, 0.0) >= 0.5)
        return {"skipped_prompts": len(skipped), "skipped_solved": solved, "skipped_unsolved": len(skipped) - solved}

    def state_dict(self) -> dict[str, Any]:
        return {
            "n_prompts": self.n_prompts,
            "settings": self.settings.to_json(),
            "seed": self.seed,
            "generations": self.generations,
            "history": {str(k): v for k, v in self.history.items()},
            "solved": {str(k): v for k, v in self.solved.items()},
            "skipped_until": {str(k): v for k, v in self.skipped_until.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.generations = int(state.get("generations", 0))
        self.history = {int(k): [bool(x) for x in v] for k, v in (state.get("history") or {}).items()}
        self.solved = {int(k): float(v) for k, v in (state.get("solved") or {}).items()}
        self.skipped_until = {int(k): int(v) for k, v in (state.get("skipped_until") or {}).items()}

    def save(self, folder: Path) -> Path:
        path = Path(folder) / STATE_FILE
        path.write_text(json.dumps(self.state_dict()))
        return path

    def load(self, folder: Path) -> bool:
        """Read the state saved in a checkpoint folder; False when it has none (a run started
        without the filter)."""
        path = Path(folder) / STATE_FILE
        if not path.exists():
            return False
        self.load_state_dict(json.loads(path.read_text()))
        return True


def prompt_key(prompt: Any) -> str:
    """A prompt's identity (a string, or chat messages)."""
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def trainer_class(base: type) -> type:
    """``base`` (TRL's GRPOTrainer) with dynamic sampling. Before training the instance needs
    ``rlvr_dynamic`` (the settings), ``rlvr_success`` (the success term's name, or None) and, for
    the filter, ``rlvr_filter`` (a ``PromptFilter``)."""
    import torch
    from accelerate.utils import gather_object
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

    class DynamicGRPOTrainer(base):  # type: ignore[misc, valid-type]
        rlvr_dynamic: DynamicSampling
        rlvr_filter: PromptFilter | None = None
        rlvr_success: str | None = None
        _rlvr_rewards: Any = None
        _rlvr_index: dict[str, int] | None = None

        def _rlvr_prompt_index(self) -> dict[str, int]:
            if self._rlvr_index is None:
                index: dict[str, int] = {}
                for i, p in enumerate(self.train_dataset["prompt"]):
                    index.setdefault(prompt_key(p), i)  # a duplicated prompt shares the first one's memory
                self._rlvr_index = index
            return self._rlvr_index

        def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
            out = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            self._rlvr_rewards = out  # gathered from every process: the same tensor on every rank
            return out

        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            if not self.model.training:
                return super()._generate_and_score_completions(inputs)
            if self.rlvr_dynamic.mode == "resample":
                return self._rlvr_resample(inputs)
            assert self.rlvr_filter is not None
            g = self.num_generations
            index = self._rlvr_prompt_index()
            local = [index.get(prompt_key(x.get("prompt")), -1) for x in inputs]
            everyone = list(gather_object(local))
            groups = [everyone[i : i + g] for i in range(0, len(everyone), g)]
            step = int(self.state.global_step)
            if any(len(set(grp)) != 1 or len(grp) != g for grp in groups):
                # Not TRL's RepeatSampler layout (an iterable dataset, say): train as drawn, judge nothing.
                return super()._generate_and_score_completions(inputs)
            plan = self.rlvr_filter.plan([grp[0] for grp in groups], step)
            rank, n = self.accelerator.process_index, len(inputs)
            rows = [p for p in plan.trained for _ in range(g)][rank * n : (rank + 1) * n]
            keys = list(inputs[0].keys())
            new_inputs = []
            for x, old, new in zip(inputs, local, rows, strict=True):
                if new == old:
                    new_inputs.append(x)
                else:
                    row = self.train_dataset[new]
                    new_inputs.append({k: row[k] for k in keys if k in row})
            self._rlvr_rewards = None
            out = super()._generate_and_score_completions(new_inputs)
            self._rlvr_observe(plan, step)
            return out

        def _rlvr_spreads(self) -> list[float]:
            """Each global group's reward spread, from the rewards TRL gathered (masked: NaN)."""
            rewards = self._rlvr_rewards
            g = self.num_generations
            undecided = torch.isnan(rewards).all(dim=1)
            total = (rewards * self.reward_weights.to(rewards.device).unsqueeze(0)).nansum(dim=1)
            total[undecided] = torch.nan
            values = total.tolist()
            return [spread(values[k : k + g]) for k in range(0, len(values), g)]

        def _rlvr_resample(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            settings, g, n = self.rlvr_dynamic, self.num_generations, len(inputs)
            if n % g:
                from ..errors import RunError

                raise RunError(
                    f"dynamic sampling (resample) needs whole groups on every process: {n} rows per process is not "
                    f"a multiple of num_generations {g} (make per_device_train_batch_size x steps_per_generation a "
                    "multiple of it, or use mode: filter)"
                )
            per_rank, ranks, rank = n // g, self.accelerator.num_processes, self.accelerator.process_index
            step = int(self.state.global_step)
            index = self._rlvr_prompt_index()
            used = {i for i in gather_object([index.get(prompt_key(x.get("prompt")), -1) for x in inputs]) if i >= 0}
            rng = random.Random(f"rlvr-resample:{self.args.seed}:{step}")
            keys = list(inputs[0].keys())
            rounds, spreads = [], []
            batch = inputs
            while True:
                self._rlvr_rewards = None
                rounds.append(super()._generate_and_score_completions(batch))
                spreads.append(self._rlvr_spreads())
                picks, need = pick_groups(spreads, per_rank, ranks, settings.epsilon, settings.short_batch)
                if not need or len(rounds) >= settings.max_rounds:
                    break
                # As many fresh prompts per process as the neediest one lacks (equal sizes: TRL gathers
                # rewards across processes), the same on every process (same generator, same state).
                fresh = refill(len(self.train_dataset), used, need * ranks, rng)[rank * need : (rank + 1) * need]
                rows = [self.train_dataset[i] for i in fresh]
                batch = [{k: row[k] for k in keys if k in row} for row in rows for _ in range(g)]
            out = assemble(rounds, picks[rank], g, self._tokenizer.pad_token_id)
            mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
            out["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
            every = [p for q in picks for p in q]
            m = self._metrics["train"]
            total = len(every)
            short = sum(p.flat for p in every)
            m["dynamic/rounds"].append(float(len(rounds)))
            m["dynamic/extra_completions"].append(float(sum(len(row) for row in spreads[1:]) * g))
            m["dynamic/kept_groups"].append(float(total - short))
            m["dynamic/dropped_groups"].append(float(sum(s <= settings.epsilon for r in spreads for s in r) - short))
            m["dynamic/starved_groups"].append(float(short))
            m["dynamic/zero_std_before"].append(sum(s <= settings.epsilon for s in spreads[0]) / len(spreads[0]))
            m["dynamic/zero_std_after"].append(short / max(total, 1))
            return out

        def _rlvr_observe(self, plan: Plan, step: int) -> None:
            rewards, memory = self._rlvr_rewards, self.rlvr_filter
            if rewards is None or memory is None:
                return
            g = self.num_generations
            weights = self.reward_weights.to(rewards.device)
            undecided = torch.isnan(rewards).all(dim=1)
            total = (rewards * weights.unsqueeze(0)).nansum(dim=1)
            total[undecided] = torch.nan
            names = list(self.reward_func_names)
            succ = rewards[:, names.index(self.rlvr_success)] if self.rlvr_success in names else None
            flats = 0
            for i, prompt in enumerate(plan.trained):
                chunk = slice(i * g, (i + 1) * g)
                s = succ[chunk].tolist() if succ is not None else None
                flats += memory.observe(prompt, total[chunk].tolist(), s, step)
            m = self._metrics["train"]
            n = max(len(plan.trained), 1)
            m["dynamic/kept_groups"].append(float(len(plan.trained) - plan.replaced - plan.starved))
            m["dynamic/replaced_groups"].append(float(plan.replaced))
            m["dynamic/starved_groups"].append(float(plan.starved))
            m["dynamic/zero_std_before"].append((plan.replaced + plan.starved) / n)
            m["dynamic/zero_std_after"].append(flats / n)
            for k, v in memory.counts(step).items():
                m[f"dynamic/{k}"].append(float(v))

        def _save_checkpoint(self, model: Any, trial: Any) -> None:
            super()._save_checkpoint(model, trial)
            if self.args.should_save and self.rlvr_filter is not None:
                folder = Path(self._get_output_dir(trial=trial)) / f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}"
                if folder.is_dir():
                    self.rlvr_filter.save(folder)

        def _load_optimizer_and_scheduler(self, checkpoint: Any) -> None:
            super()._load_optimizer_and_scheduler(checkpoint)
            if checkpoint is not None and self.rlvr_filter is not None:
                self.rlvr_filter.load(Path(checkpoint))

    return DynamicGRPOTrainer
