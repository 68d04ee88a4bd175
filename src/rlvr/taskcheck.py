"""What ``rlvr task check`` checks beyond the task file itself.

``load_task`` checks what the file says (keys, types, files, columns, weights, the success term,
train/eval overlap) and stays light, since every command calls it. ``rlvr task check`` adds the
checks that import TRL or score the data, so a task that passes it does not fail later at
``rlvr sft`` or ``rlvr train`` for a reason the file already showed:

- ``grpo:`` -- the recipe validation ``rlvr train`` runs before any weights load (unknown
  GRPOConfig fields with the closest name, enumerations, batch arithmetic, the group-size floor
  without a written ``justify``), for a target of one GPU with bf16. Hardware rules (bf16 on
  this GPU, vLLM against the GPU count) depend on the machine and are checked by ``rlvr plan``
  and ``rlvr train`` where they run; a hub model's mixture-of-experts check needs its config and
  happens at ``rlvr plan``/``rlvr train`` too.
- the success term -- when the task does not name one unambiguously (several terms check the
  answer and none is declared, or only shaping terms such as ``format`` remain). ``load_task``
  keeps that as ``Task.success_problem`` so that ``rlvr audit`` and ``rlvr score`` still run;
  every command that counts successes refuses to start with the same message.
- weights -- a term with weight 0 (scored and logged, teaches nothing), a negative weight (the
  policy is pushed away from what the term rewards), every weight 0. ``rlvr audit`` reads such
  terms on purpose (it judges a negative-weight term by the reward it gives), so ``load_task``
  accepts them and task check reports them.
- ``sft:`` -- its keys against the installed TRL's ``SFTConfig``, with the closest name.
- JSON references -- each ``json_schema`` term (kind ``json``) scores every row whose answer
  column holds a JSON object or array, as a completion in the task's answer format; a reference
  its schema does not accept is reported (``json_reference_problems``).
- ground truths -- every row of each answer-checking term: ``math`` golds go through the math
  verifier's own gold check (``rewards.math.gold_problem``: the parse a comparison runs);
  other terms of kind ``answer`` (``exact``, custom ones) are run with the ground truth itself as
  the answer, and one they cannot read, cannot decide (a timeout or crash: such a row is where
  the fail-closed rule masks answers that fail the same way) or do not accept as equal to itself
  is reported. Each problem names the file and row.
- notes (``term_notes``, printed, never problems) -- a custom term's unknown score range, and
  for each term whose row gold cannot be re-scored, why, from what it declares it reads
  (``gold_note``: the completion only, a fixed or per-row schema, an empty column): its failures
  are then always charged to the answer.
- unit tests -- ``unit_tests`` rows whose tests the sandbox cannot run (an import outside the
  standard library), which score an error for every sample (``weaker_problems``).
- rows (``rlvr.task.rowchecks``) -- rows over a size limit, columns Arrow cannot store, every
  row's tests parsed, every reference solution scored by its own tests, custom terms tried on a
  right and a wrong answer, a hub model missing from the cache while offline (online, ``rlvr task
  check`` says the first command that loads it downloads it, and skips what would wait on the network).
- reference calls -- an episode task's ``reference_calls`` column (``rlvr.episodes.reference``):
  each row's calls read strictly and checked against the tools' schemas and the episode's limits.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, Problem
from .task import MAX_ROW_PROBLEMS, Task

if TYPE_CHECKING:
    from .settings import ModelFacts

# Keys of the sft: section that rlvr reads itself (not SFTConfig fields).
SFT_OWN_KEYS = {"target_pass_rate"}
# The target task check validates grpo: against (see the module docstring).
CHECK_HARDWARE = {"gpus": 1, "bf16": True, "vllm": False}
# Rows whose reference episode task check measures (each calls the task's tools once).
MAX_EPISODE_ROWS = 64


def grpo_problems(task: Task) -> list[Problem]:
    """The problems ``rlvr train`` would raise for the task's ``grpo:`` section (one GPU, bf16)."""
    from .settings import Target, check, resolve

    out: list[Problem] = []
    try:
        settings = resolve(task, hw=CHECK_HARDWARE)
    except ConfigError as exc:  # rlvr's own keys (stop, dynamic): the GRPOConfig values are checked still
        out = [dataclasses.replace(p, where=f"{task.path}: {p.where}") for p in exc.problems]
        own = {k: v for k, v in task.grpo.items() if k not in ("stop", "dynamic")}
        settings = resolve(dataclasses.replace(task, grpo=own), hw=CHECK_HARDWARE)
    cfg = {**settings.grpo, "reward_weights": [t.weight for t in task.rewards]}
    target = Target(gpus=1, bf16=True, processes=1)
    problems = check.validate(cfg, target=target, model=_task_model_facts(task), justified=settings.justified)
    return [dataclasses.replace(p, where=f"{task.path}: grpo.{p.where}") for p in problems] + out


def sft_problems(settings: Mapping[str, Any], where: str = "sft.") -> list[Problem]:
    """Keys of an ``sft:`` section (or ``--set`` overrides) that SFTConfig does not have."""
    from .settings import check

    return check.unknown_keys(
        {k: v for k, v in settings.items() if k not in SFT_OWN_KEYS}, check.sft_fields(), what="SFTConfig", prefix=where
    )


def gold_problems(task: Task) -> list[Problem]:
    """Rows whose ground truth an answer-checking term cannot parse or does not accept."""
    from .rewards import Outcome, Sample

    problems: list[Problem] = []
    splits = [("train", task.data.train), *([("eval", task.data.eval)] if task.data.eval else [])]
    for t in task.rewards:
        verifier = task.term_verifier(t)
        column = getattr(verifier, "column", task.answer_column)
        if getattr(verifier, "kind", "") == "json":
            problems += json_reference_problems(task, t.name, verifier)
            continue
        if getattr(verifier, "kind", "") != "answer":
            continue
        for split, ref in splits:
            if ref.startswith("hf:"):
                continue
            rows = task.load_split(split)
            bad = []
            policy = getattr(verifier, "policy", None)
            if type(verifier).__module__ == "rlvr.rewards.math.verifier" and policy is not None:
                # The math verifier's own gold check (the parse a comparison runs), row by row.
                from .rewards.base import Verdict
                from .rewards.math import gold_problem

                for i, r in enumerate(rows, 1):
                    gold = r.get(column)
                    why = (
                        "no ground truth"
                        if gold is None or str(gold).strip() == ""
                        else gold_problem(str(gold), policy)
                    )
                    if why:
                        bad.append((i, gold, Verdict.error(why, kind="ground_truth")))
                rows = []
            samples = [Sample(task.answer.wrap(str(r.get(column, ""))), row=r, prompt=_prompt(task, r)) for r in rows]
            for i, v in enumerate(verifier.verify_batch(samples) if samples else [], 1):
                if v.outcome is Outcome.CORRECT:
                    continue
                # A gold that times out or crashes is the row's own failure: under the fail-closed
                # rule (rlvr.rewards.fault) every answer that fails the same way is masked there.
                bad.append((i, rows[i - 1].get(column), v))
            where = task.resolve(ref)
            for i, gold, v in bad:
                what = (
                    "cannot be parsed"
                    if v.outcome is Outcome.ERROR and v.error_kind == "ground_truth"
                    else f"cannot be decided ({v.error_kind}), so answers that fail the same way are masked"
                    if v.outcome is Outcome.ERROR
                    else f"is not accepted as an answer equal to itself ({v.outcome.value})"
                )
                problems.append(
                    Problem(
                        f"{where}:{i}",
                        f"row {i}: term {t.name!r}: the ground truth {gold!r} {what}: {v.detail}",
                        "rewrite the answer in a form the verifier reads, or drop the row; "
                        "an unreadable gold masks the row in training",
                    )
                )
            if len(bad) > MAX_ROW_PROBLEMS:
                problems.append(
                    Problem(
                        where,
                        f"term {t.name!r}: {len(bad)} unreadable ground truths in all (listed above)",
                        "check answer.column and the verifier's options",
                    )
                )
    return problems


def json_reference_problems(task: Task, name: str, verifier: Any) -> list[Problem]:
    """Rows whose reference answer (a JSON object or array in the answer column) a ``json_schema``
    term does not accept: a correct answer written like it would score 0 there. A row whose
    answer column holds no JSON record is not a reference for the schema and is left to the
    term's note (``gold_note``)."""
    import json

    from .rewards import Outcome, Sample

    problems: list[Problem] = []
    column = task.answer_column
    for split, ref in [("train", task.data.train), *([("eval", task.data.eval)] if task.data.eval else [])]:
        if ref.startswith("hf:"):
            continue
        rows, texts = [], []
        for i, r in enumerate(task.load_split(split), 1):
            value = r.get(column)
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    continue
            if isinstance(value, dict | list):
                rows.append((i, r))
                texts.append(json.dumps(value, ensure_ascii=False))
        pairs = zip(rows, texts, strict=True)
        samples = [Sample(task.answer.wrap(t), row=r, prompt=_prompt(task, r)) for (_, r), t in pairs]
        verdicts = verifier.verify_batch(samples) if samples else []
        scored = zip(rows, texts, verdicts, strict=True)
        bad = [(i, text, v) for (i, _), text, v in scored if v.outcome is not Outcome.CORRECT]
        where = task.resolve(ref)
        for i, text, v in bad[:MAX_ROW_PROBLEMS]:
            problems.append(
                Problem(
                    f"{where}:{i}",
                    f"row {i}: term {name!r}: the reference answer in column {column!r} ({text[:80]}) is not accepted "
                    f"by its schema ({v.outcome.value}): {v.detail}",
                    "fix the schema or the reference answer: an answer written like it scores 0 on this term",
                )
            )
        if len(bad) > MAX_ROW_PROBLEMS:
            problems.append(
                Problem(where, f"term {name!r}: {len(bad)} reference answers its schema refuses in all", "see above")
            )
    return problems


def term_notes(task: Task) -> list[str]:
    """What ``rlvr task check`` prints about the terms, beyond problems: each term whose score
    range is unknown (a custom term that declares no ``score_range``: the weighted-total check
    leaves it out), and ``gold_note`` of each term."""
    from .rewards.ranking import weighting_check

    reward_set = task.reward_set()
    notes = list(weighting_check(reward_set.terms, task.success or None, f"{task.path}: rewards")[1])
    try:
        rows = task.load_split("train")[:1]
    except Exception:  # noqa: BLE001 - the data's problems are reported elsewhere
        rows = []
    row = rows[0] if rows else {task.answer_column: "0"}
    notes += [n for t in reward_set.terms if (n := gold_note(t.name, t.verifier, row, task)) is not None]
    return notes


def gold_note(name: str, verifier: Any, row: Mapping[str, Any], task: Task) -> str | None:
    """The one wording of what a term re-scores when it cannot decide (``rlvr.rewards.fault``):
    None when the row's gold can be scored through it (then a failure the gold shares is the
    task's); otherwise why not, said from what the verifier declares it reads (``reads()``) -- a
    per-row schema is a rule it checks against, not an answer it could re-score -- so the note is
    true of each term, never a blanket "no gold"."""
    from .rewards.base import Sample, reads_of
    from .rewards.fault import gold_sample

    if gold_sample(verifier, Sample("", row, ""), task.answer, task.answer_column) is not None:
        return None
    reads = reads_of(verifier)
    if reads is None:
        what = "declares nothing it reads (no reads()), so there is no gold answer to re-score"
    elif reads.references:
        what = f"has no reference solution in a column {', '.join(reads.references)} to re-score"
    elif reads.schema_column:
        what = (
            f"checks each answer against the row's own schema (column {reads.schema_column!r}): a rule, not an "
            "answer it could re-score"
        )
    elif reads.schema is not None:
        what = "checks each answer against one fixed schema: a rule, not an answer it could re-score"
    elif reads.expected_column or reads.answer:
        col = reads.expected_column or reads.answer
        what = f"found no value in column {col!r} of the first train row to re-score"
    elif not reads.columns:
        what = "reads the completion only (no row column): there is no answer to re-score"
    else:
        what = f"reads {', '.join(map(repr, reads.columns))} but no answer among them to re-score"
    return (
        f"term {name!r}: {what}, so every failure to decide (a timeout too) is charged to the answer (0), never masked"
    )


def weight_problems(task: Task) -> list[Problem]:
    """Weights of 0, negative weights, and all weights 0 (see the module docstring)."""
    terms = task.rewards
    listed = "reward_weights" in task.grpo

    def where(i: int) -> str:
        return f"{task.path}: " + ("grpo.reward_weights" if listed else f"rewards[{i}].weight")

    if terms and all(t.weight == 0 for t in terms):
        return [
            Problem(
                f"{task.path}: " + ("grpo.reward_weights" if listed else "rewards"),
                "every weight is 0: the reward is 0 for every completion and GRPO learns nothing",
                "give the success term weight 1.0 and the format term 0.1",
            )
        ]
    out = []
    for i, t in enumerate(terms):
        if t.weight == 0:
            out.append(
                Problem(
                    where(i),
                    f"term {t.name!r} has weight 0: it is scored and logged but teaches nothing",
                    f"remove {t.name!r}, or give it a positive weight",
                )
            )
        elif t.weight < 0:
            out.append(
                Problem(
                    where(i),
                    f"term {t.name!r} has a negative weight {t.weight:g}: "
                    "the policy is pushed away from what the term rewards",
                    "use a positive weight (penalty verifiers already return negative scores)",
                )
            )
    return out


def check_task(task: Task) -> list[Problem]:
    """Every problem ``rlvr task check`` reports beyond ``load_task``'s (``row_problems``: sizes,
    column types, tests, reference solutions, custom terms, an offline hub model; see
    ``rlvr.task.rowchecks``)."""
    from .rewards.ranking import weighting_check
    from .task.rowchecks import row_problems

    success = [task.success_problem] if task.success_problem else []
    return [
        *success,
        *weight_problems(task),
        # No weighting lets a wrong answer outscore a correct one of the same length.
        *weighting_check(task.reward_set().terms, task.success or None, f"{task.path}: rewards")[0],
        *grpo_problems(task),
        *sft_problems(task.sft, f"{task.path}: sft."),
        *gold_problems(task),
        *weaker_problems(task),
        *row_problems(task),
        *episode_problems(task),
    ]


def episode_problems(task: Task) -> list[Problem]:
    """An episode task: the longest reference episode over the train rows must fit the budget and
    the model's positions (``rlvr.episodes.check``)."""
    if task.environment is None:
        return []
    from .task.rowchecks import model_download_note

    if model_download_note(task) is not None:  # its tokenizer would be fetched: measured once it is cached
        return reference_call_problems(task)
    from .episodes import build_toolbox
    from .episodes.check import reference_episode_problems
    from .lengths import answer_text, load_length_tools

    tokenizer, positions = load_length_tools(task.resolve(task.model))
    rows = task.load_split("train")[:MAX_EPISODE_ROWS]
    prompts = [task.render_prompt(r) for r in rows]
    answers = [task.answer.wrap(answer_text(r.get(task.answer_column))) for r in rows]
    toolbox = build_toolbox(task.environment, str(task.path))
    budget = task.generation.max_completion_length
    return [
        *reference_episode_problems(
            task.environment, toolbox, tokenizer, prompts, answers, budget, positions, str(task.path)
        ),
        *reference_call_problems(task),
    ]


def reference_call_problems(task: Task) -> list[Problem]:
    """Each local split's reference calls (``rlvr.episodes.reference``): every row of a split that
    has the column, read and checked against the tools; a column the task file names must be in
    the train split. The calls are not run here (``rlvr sft`` runs them), and no tokenizer is needed:
    they are checked even when the model is not downloaded yet."""
    if task.environment is None:
        return []
    from .episodes import build_toolbox
    from .episodes.reference import column_problems
    from .task.rowchecks import local_splits

    toolbox = build_toolbox(task.environment, str(task.path))
    named = task.environment.reference_calls is not None
    return [
        p
        for split, file, rows in local_splits(task)
        for p in column_problems(task.environment, toolbox, rows, file, required=named and split == "train")
    ]


def _prompt(task: Task, row: Mapping[str, Any]) -> str:
    try:
        return str(task.render_prompt(row))
    except (KeyError, ValueError, IndexError):
        return ""


def _task_model_facts(task: Task) -> ModelFacts | None:
    """Whether the model is a mixture of experts and rebuildable, for local models and built-ins;
    None for a hub id (its config may need the network: rlvr plan and rlvr train check it)."""
    from .plan.architecture import load_architecture, model_facts
    from .settings import ModelFacts

    ref = task.model
    if ref.startswith("builtin:"):
        return ModelFacts(ref, False, True)
    local = task.resolve(ref)
    if not Path(local).exists():
        return None
    try:
        moe = load_architecture(local).moe
    except Exception:  # noqa: BLE001 - an unreadable config is reported when the model loads
        moe = False
    return model_facts(local, False, moe)


def weaker_problems(task: Task) -> list[Problem]:
    """``rlvr task check``: rows of a ``unit_tests`` term whose tests the sandbox's test child
    cannot run (an import outside the standard library, which the workers' interpreter does not
    have). Every sample of such a row is an error (masked, never rewarded); the task says so
    here, row by row, before any training."""
    from .task.rowchecks import local_splits, unit_tests_terms

    problems: list[Problem] = []
    for name, verifier in unit_tests_terms(task):
        for _, where, rows in local_splits(task):
            bad = [(i, why) for i, row in enumerate(rows, 1) if (why := verifier.weaker_reasons(row))]
            for i, why in bad[:MAX_ROW_PROBLEMS]:
                problems.append(
                    Problem(
                        f"{where}:{i}",
                        f"row {i}: term {name!r}: the sandbox cannot run these tests and every sample will be "
                        f"an error (masked, never rewarded): {'; '.join(why[:2])}",
                        "use only the standard library in the tests (see docs/sandbox.md)",
                    )
                )
            if len(bad) > MAX_ROW_PROBLEMS:
                problems.append(
                    Problem(
                        where,
                        f"term {name!r}: {len(bad)} rows whose tests cannot run in all (listed above)",
                        "see docs/sandbox.md",
                    )
                )
    return problems
