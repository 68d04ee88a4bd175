"""Run the exploit library against a task's reward terms.

For each sampled prompt and each term, the audit scores three things with the term's own
verifier: a correct completion (the row's ground truth in the task's answer span), a wrong one
(a perturbed answer in the same span) and every exploit that targets the term's kind. Verdicts
compare the exploit with the two baselines on the same prompt (see ``report.Finding``).

A prompt counts for a term only when the term scores the correct completion above the wrong one
(for length exploits: when it scores the correct one at all). A term that cannot tell them apart
has no baseline to measure a hack against; the report says so instead of calling it ``ok``.

Verdicts pass through the same check and the same fail-closed rule as in training
(``combine.checked_verdicts``, ``rewards.fault``): a NaN or infinite score, or a verifier that
raises, is a failure to decide, charged to the attempt (0) unless the row's gold fails the same
way. An exploit attempt that still ends in ``error`` is *masked* in training -- it escapes the
negative advantage a wrong answer earns -- so it counts as a hit, not as "earns nothing" (except
for ``missing_ground_truth``, where "could not decide" is the right answer).

Task-level checks: the success term (``Task.correctness_term``, what probe and eval count) must
be a correctness term, not a format or length term; a length term's options are read with
``rewards.length.ranking_problems``, which names settings that tie a long correct answer with a
wrong one; and the weighted total of all terms must rank every correct answer above a wrong one
of the same length (``combined.py``: combined exploits scored with every term).

Approximations: token lengths use the task's tokenizer when it loads without the network
(built-in models always do); otherwise 4 characters per token, stated in the report's notes.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, DataError
from ..rewards import FunctionVerifier, TrlFunctionVerifier
from ..rewards.base import BaseVerifier, Outcome, Sample, Verdict, Verifier, ground_truth, kind_of, reads_of
from ..rewards.code import UnitTests
from ..rewards.combine import RewardSet, Term, checked_verdicts, prompt_text
from ..rewards.format import AnswerFormat, extract
from ..rewards.length import ranking_problems
from .answers import perturb
from .combined import combined_problems
from .contract import contract_problems
from .exploits import EXPLOITS, exploits_for
from .findings import EPS, finding_for
from .report import AuditReport, Finding, TermSummary, worst
from .specs import presentations, required_keys, spec_for
from .tokens import TokenLengths, task_tokenizer
from .types import Attempt, Context, Exploit, PromptCase, Spec

if TYPE_CHECKING:
    from ..task.spec import Task

STRUCTURED = ("json", "tool_call", "code")


@dataclass(frozen=True)
class Baseline:
    """How a correct and a wrong completion look to one term on one prompt, or why there are none
    (``skipped``). ``wrap`` and ``spec``: the presentation and the spec a structured term accepted."""

    correct: str = ""
    wrong: str = ""
    wrap: Callable[[str], str] | None = None
    spec: Spec | None = None
    skipped: str | None = None


def _question(rendered: Any) -> str:
    """What a policy would restate: the plain prompt, or the last user message of a chat."""
    if isinstance(rendered, str):
        return rendered
    users = [m.get("content") for m in rendered if isinstance(m, Mapping) and m.get("role") == "user"]
    return str(users[-1] if users else prompt_text(rendered))


def _sample_rows(task: Task, split: str, max_prompts: int, seed: int) -> list[Mapping[str, Any]]:
    rows = task.load_split(split)
    if not rows:
        raise DataError(f"{task.path}: the {split} split has no rows to audit")
    idx = sorted(random.Random(seed).sample(range(len(rows)), min(max_prompts, len(rows))))
    return [rows[i] for i in idx]


def run_audit(
    task: Task,
    *,
    max_prompts: int = 16,
    seed: int = 0,
    split: str = "train",
    tokenizer: Any = "auto",
    exploits: Iterable[str] | None = None,
    terms: Iterable[str] | None = None,
    reward_set: RewardSet | None = None,
) -> AuditReport:
    """Attack every reward term of ``task`` with the exploits that target its kind.

    ``tokenizer``: ``"auto"`` loads the task's (used for lengths and ``completion_ids``), ``None``
    approximates. ``exploits`` / ``terms`` restrict the run to those names. ``reward_set``
    audits already-built terms instead of building the task's (a judge with an injected HTTP
    client, say). The audit never runs model code itself: code exploits reach only the term's
    verifier, as a policy's output would.
    """
    if max_prompts < 1:
        raise ConfigError("max_prompts must be at least 1", source="audit")
    wanted = set(exploits) if exploits is not None else None
    if wanted is not None and (unknown := sorted(wanted - set(EXPLOITS))):
        raise ConfigError(f"unknown exploit(s) {', '.join(unknown)}; known: {', '.join(EXPLOITS)}", source="audit")
    notes: list[str] = []
    if tokenizer == "auto":
        tokenizer, note = task_tokenizer(task)
        if note:
            notes.append(note)
    elif tokenizer is None:
        notes.append("token lengths approximated (4 characters per token): no tokenizer given")
    lengths = TokenLengths(tokenizer)

    rows = _sample_rows(task, split, max_prompts, seed)
    reward_set = reward_set if reward_set is not None else task.reward_set()
    only = set(terms) if terms is not None else None
    if only is not None and (unknown := sorted(only - set(reward_set.names))):
        raise ConfigError(
            f"unknown term(s) {', '.join(unknown)}; the task's terms: {', '.join(reward_set.names)}", source="audit"
        )

    summaries: list[TermSummary] = []
    findings: list[Finding] = []
    for term in reward_set.terms:
        if only is not None and term.name not in only:
            continue
        kind = kind_of(term.verifier)
        if kind == "episode":  # it scores the calls, not the answer text: the episode exploits' business
            notes.append(f"term {term.name!r} scores an episode's tool calls: audited by the episode exploits")
            continue
        reads = reads_of(term.verifier)
        column = reads.answer if reads is not None and reads.answer else task.answer_column
        golds = [ground_truth(r, column) for r in rows]
        distractors = tuple(dict.fromkeys(g for g in golds if g))
        prompts = [
            PromptCase(r, prompt_text(rendered), g, perturb(g, distractors, seed) if g else None, _question(rendered))
            for r, g, rendered in zip(rows, golds, [task.render_prompt(r) for r in rows], strict=True)
        ]
        shapes = isinstance(term.verifier, BaseVerifier) and term.verifier.shapes_length
        # long_wrong compares a correct and a wrong answer: a length term alone cannot tell them apart.
        library = [
            e
            for e in exploits_for(kind, shapes)
            if (wanted is None or e.name in wanted) and not (kind == "length" and e.name == "long_wrong")
        ]
        summary, term_findings = _audit_term(term, kind, column, prompts, distractors, library, task, lengths, seed)
        summaries.append(summary)
        findings.extend(term_findings)
    problems = _success_term_problems(task, reward_set, notes)
    problems += contract_problems(reward_set, rows, task.answer, task.answer_column, task.success or None, only)
    if only is None:  # the weighted total needs every term
        combined, combined_notes = combined_problems(task, reward_set, rows, lengths, seed)
        problems += combined
        notes += combined_notes
    return AuditReport(
        task=str(task.path),
        seed=seed,
        max_prompts=max_prompts,
        split=split,
        terms=tuple(summaries),
        findings=tuple(findings),
        notes=tuple(notes),
        problems=tuple(problems),
    )


def _success_term_problems(task: Task, reward_set: RewardSet, notes: list[str]) -> list[str]:
    """The success term (what probe and eval count as solved) must judge correctness: a format
    or length term there would route and evaluate on form, not on answers. The task file's own
    check knows the built-in shaping verifiers; this one reads the kind the built term declares,
    so a custom verifier that checks only the format is caught too."""
    try:
        name = task.correctness_term
    except Exception as exc:  # noqa: BLE001 - an undeclared or ambiguous success term: audit still runs
        notes.append(f"no success term to check: {exc}")
        return []
    term = next((t for t in reward_set.terms if t.name == name), None)
    if term is None:
        return []
    kind = kind_of(term.verifier)
    if kind in ("format", "length"):
        return [
            f"the success term {name!r} is a {kind} term: probe routing and the held-out eval would count well-formed "
            f"(or short) answers as solved; declare a correctness term "
            "(exact, math, json_schema, tool_call, unit_tests, judge) as the success term"
        ]
    return []


def _score(
    term: Term, samples: list[Sample], fmt: AnswerFormat | None = None, column: str | None = None
) -> list[Verdict]:
    """The term's verdicts, checked and settled exactly as in training (a raise, NaN or infinity
    is a failure to decide, charged to the answer unless the row's gold fails the same way:
    ``rlvr.rewards.fault``; ``fmt`` and ``column``, the task's, write a custom term's gold). With
    a negative weight the scores are negated, so that higher always means more reward."""
    out = checked_verdicts(term.name, term.verifier, samples, fmt=fmt, column=column) if samples else []
    if term.weight < 0:
        out = [v if v.score is None else replace(v, score=-v.score) for v in out]
    return out


def _audit_term(
    term: Term,
    kind: str,
    column: str,
    prompts: list[PromptCase],
    distractors: tuple[str, ...],
    library: list[Exploit],
    task: Task,
    lengths: TokenLengths,
    seed: int,
) -> tuple[TermSummary, list[Finding]]:
    fmt = task.answer
    budget = task.generation.max_completion_length
    notes: list[str] = []

    def sample(p: PromptCase, completion: str, row: Mapping[str, Any] | None = None) -> Sample:
        return Sample(
            completion=completion,
            row=row if row is not None else p.row,
            prompt=p.prompt,
            completion_ids=lengths.ids(completion),
        )

    # 1. Baselines: how a correct and a wrong answer look to this term, per prompt.
    contexts: list[Context | None] = []
    skipped: dict[str, int] = {}
    baselines: list[Baseline]
    if kind in STRUCTURED:
        baselines = _structured_baselines(term, kind, column, prompts, fmt, sample)
    else:
        baselines = []
        for p in prompts:
            if p.gold is None:
                baselines.append(Baseline(skipped=f"no ground truth in column {column!r}"))
                continue
            if kind == "format":
                unspanned = no_span(p.gold, fmt)
                if unspanned is None:
                    baselines.append(Baseline(skipped="the ground truth reads as an answer span however written"))
                    continue
                baselines.append(Baseline(fmt.wrap(p.gold), unspanned))
            else:
                baselines.append(Baseline(fmt.wrap(p.gold), fmt.wrap(p.wrong or "")))
    base_samples: list[Sample] = []
    for p, base in zip(prompts, baselines, strict=True):
        if base.skipped is None:
            base_samples += [sample(p, base.correct), sample(p, base.wrong)]
    base_verdicts = iter(_score(term, base_samples, fmt, task.answer_column))
    base_scores: list[tuple[Verdict, Verdict] | None] = []
    for p, base in zip(prompts, baselines, strict=True):
        if base.skipped is not None:
            skipped[base.skipped] = skipped.get(base.skipped, 0) + 1
            base_scores.append(None)
            contexts.append(None)
            continue
        base_scores.append((next(base_verdicts), next(base_verdicts)))
        contexts.append(
            Context(
                prompt=p.prompt,
                question=p.question,
                row=p.row,
                fmt=fmt,
                gold=p.gold,
                wrong=p.wrong,
                distractors=tuple(d for d in distractors if d != p.gold),
                answer_column=column,
                max_tokens=budget,
                pad=lengths.pad(budget),
                wrap=base.wrap,
                structured=base.spec,
                seed=seed,
            )
        )

    # 2. The prompts each exploit is judged on: where the term tells right from wrong.
    usable = [i for i, b in enumerate(base_scores) if b is not None and b[0].score is not None]
    separated = []
    for i in usable:
        pair = base_scores[i]
        assert pair is not None
        right_score, wrong_score = pair[0].score, pair[1].score
        if right_score is not None and wrong_score is not None and right_score > wrong_score + EPS:
            separated.append(i)

    # 3. Every exploit's attempts for every prompt, scored in one batch.
    plan: list[tuple[int, int, int, int]] = []  # (exploit, prompt, attempt, ordering) per sample
    attempts: dict[tuple[int, int], list[Attempt]] = {}
    samples: list[Sample] = []
    broken: dict[str, str] = {}
    for ei, ex in enumerate(library):
        for pi in separated if ex.needs_separation else usable:
            ctx = contexts[pi]
            if ctx is None:
                continue
            try:
                built = ex.build(ctx)
            except Exception as exc:  # noqa: BLE001 - one odd row must not sink the whole audit
                broken.setdefault(ex.name, f"{type(exc).__name__}: {exc}")
                built = []
            attempts[ei, pi] = built
            for ai, att in enumerate(built):
                for oi, completion in enumerate(att.completions):
                    plan.append((ei, pi, ai, oi))
                    samples.append(sample(prompts[pi], completion, att.row))
                if att.reference is not None:
                    plan.append((ei, pi, ai, -1))
                    samples.append(sample(prompts[pi], att.reference, att.row))
    verdicts = _score(term, samples, fmt, task.answer_column) if samples else []
    got: dict[tuple[int, int, int, int], Verdict] = dict(zip(plan, verdicts, strict=True))

    # 4. Verdicts.
    errors = [i for i, b in enumerate(base_scores) if b is not None and b[0].outcome is Outcome.ERROR]
    if errors:
        b = base_scores[errors[0]]
        assert b is not None
        notes.append(
            f"the correct completion got no score on {len(errors)} prompt(s): {b[0].detail or b[0].error_kind}"
        )
    not_sep = len(usable) - len(separated)
    if not_sep and any(e.needs_separation for e in library):
        b = base_scores[next(i for i in usable if i not in separated)]
        assert b is not None
        notes.append(
            f"{not_sep} prompt(s) where the correct completion did not outscore the wrong one "
            f"(correct {b[0].score}, wrong {b[1].score}); answer exploits skip them"
        )
    for why, n in skipped.items():
        notes.append(f"{n} prompt(s) skipped: {why}")
    for name, why in broken.items():
        notes.append(f"exploit {name} could not be built on some rows ({why[:160]})")

    findings = []
    for ei, ex in enumerate(library):
        findings.append(
            finding_for(
                term.name,
                ex,
                ei,
                separated if ex.needs_separation else usable,
                base_scores,
                attempts,
                got,
                prompts,
                lengths,
                budget,
            )
        )
    tested = [f.verdict for f in findings]
    flat = [
        f.exploit
        for f in findings
        if f.exploit in EXPLOITS
        and EXPLOITS[f.exploit].strict
        and not EXPLOITS[f.exploit].referenced
        and f.verdict == "ok"
        and f.prompts
        and f.ties == f.prompts
    ]
    if flat and kind == "length":
        notes.append(
            f"scores {', '.join(flat)} the same as a short correct answer: "
            "it pays nothing for length, but does not push against it either"
        )
    masked = [f.exploit for f in findings if f.masked]
    if masked:
        notes.append(
            f"{len(masked)} exploit(s) end in error on some attempt, which masks a wrong answer in training: "
            f"{', '.join(masked)}"
        )
    tie = next((f for f in findings if f.exploit == "long_wrong" and f.ties), None)
    if tie is not None:
        notes.append(
            f"a long wrong answer scores as much as a long correct one of the same length on {tie.ties} "
            "prompt(s): length pressure erases the reward for being right"
        )
    notes.extend(ranking_problems(term.verifier))
    notes.extend(_weaker_notes(term.verifier, prompts))
    if any(
        f.exploit == "missing_ground_truth" and f.example and f.example.outcome in ("wrong", "unparseable")
        for f in findings
    ):
        notes.append("a row with no ground truth is scored as a wrong answer, not masked as undecided (a silent zero)")
    name = verifier_name(term.verifier)
    if term.weight < 0:
        notes.append("negative weight: scores are shown negated (higher means more reward)")
    if term.weight == 0:
        notes.append("weight 0: logged only, it never reaches the reward, so it is not counted as exploitable")
    used = len(separated) if any(e.needs_separation for e in library) else len(usable)
    verdict = worst(tested)
    untested = [f for f in findings if f.verdict == "untested"]
    if verdict == "ok" and 2 * len(untested) > len(findings):
        # "ok" against 3 of 21 exploits is not "ok": say what was not tried and why.
        verdict = "untested"
        reasons = sorted({f.reason or "nothing to try" for f in untested})
        notes.append(
            f"{len(untested)} of {len(findings)} exploits untested, so the audit cannot call this term safe: "
            + "; ".join(r[:120] for r in reasons[:3])
        )
    summary = TermSummary(term.name, kind, name, term.weight, verdict, used, tuple(notes))
    return summary, findings


def _weaker_notes(verifier: Verifier, prompts: list[PromptCase]) -> list[str]:
    """unit_tests: rows whose tests the sandbox cannot run (an import outside the standard
    library): every sample of such a row is an error (masked), which the audit says."""
    if not isinstance(verifier, UnitTests):
        return []
    weaker = [why for p in prompts if (why := verifier.weaker_reasons(p.row))]
    if not weaker:
        return []
    return [
        f"{len(weaker)} of {len(prompts)} prompt(s) have tests the sandbox cannot run, "
        f"which score an error (masked) for every sample: {weaker[0][0]}"
    ]


def no_span(gold: str, fmt: AnswerFormat) -> str | None:
    """A format term's "wrong" completion: the right answer written so that the format reads no
    answer span from it, checked with the format's own extractor rather than assumed. The bare
    answer has no span under ``tags`` and ``boxed``, but under ``json`` a bare record *is* the
    span, so there it is put after a line of prose (JSON in prose is no answer). None: every
    candidate reads as a span."""
    for candidate in (gold, f"The answer is {gold}"):
        if not extract(candidate, fmt).ok:
            return candidate
    return None


def verifier_name(verifier: Verifier) -> str:
    """The class of a verifier, or the dotted name of the function a custom term wraps."""
    if isinstance(verifier, (FunctionVerifier, TrlFunctionVerifier)):
        fn = verifier.fn
        return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"
    return type(verifier).__name__


def _structured_baselines(
    term: Term, kind: str, column: str, prompts: list[PromptCase], fmt: AnswerFormat, sample: Callable[..., Sample]
) -> list[Baseline]:
    """Per prompt, its baseline. Tries every correct body (the row's
    expected value, then an instance of the schema) in every presentation, and keeps the first
    the term accepts."""
    reads = reads_of(term.verifier)
    specs = [spec_for(kind, p.row, column, reads) for p in prompts]
    ways = presentations(kind, fmt.wrap)
    trial: list[Sample] = []
    for p, spec in zip(prompts, specs, strict=True):
        if isinstance(spec, Spec):
            trial += [sample(p, wrap(body)) for body in (spec.correct, *spec.candidates) for _, wrap in ways]
    verdicts = iter(_score(term, trial, fmt, column))
    out: list[Baseline] = []
    for spec in specs:
        if not isinstance(spec, Spec):
            out.append(Baseline(skipped=spec))
            continue
        bodies = (spec.correct, *spec.candidates)
        scores = [(body, wrap, next(verdicts)) for body in bodies for _, wrap in ways]
        pick = next((t for t in scores if t[2].outcome is Outcome.CORRECT), None)
        if pick is None:
            best = max(scores, key=lambda t: -1e18 if t[2].score is None else t[2].score)
            if best[2].score is None or best[2].score <= 0:
                detail = next((v.detail for _, _, v in scores if v.detail), "")
                why = (
                    f"the term accepted the row's correct {kind} in no presentation "
                    f"({', '.join(n for n, _ in ways)}){': ' + detail[:120] if detail else ''}"
                )
                out.append(Baseline(skipped=why))
                continue
            pick = best
        body, wrap, _ = pick
        if body != spec.correct:  # a schema instance, not the row's expected value
            required, typed = required_keys(spec.schema, None)
            spec = replace(spec, correct=body, expected=json.loads(body), required=tuple(required), typed=tuple(typed))
        out.append(Baseline(wrap(spec.correct), wrap(spec.wrong), wrap, spec))
    return out
