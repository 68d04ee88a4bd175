"""How one exploit's scored attempts on one term become a ``Finding``.

Per prompt an attempt scores the minimum over its orderings, and the prompt's best attempt is
compared with the correct and the wrong completion (or with the attempt's own reference
completion). An attempt that ends in ``error`` is masked in training, so it counts as a hit
unless the exploit says "could not decide" is the right answer (``Exploit.undecided_is_ok``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..rewards.base import Verdict
from .report import Example, Finding
from .tokens import TokenLengths
from .types import Attempt, Exploit, PromptCase

EPS = 1e-9


def finding_for(
    term: str,
    ex: Exploit,
    ei: int,
    prompt_ids: Sequence[int],
    base_scores: list[tuple[Verdict, Verdict] | None],
    attempts: Mapping[tuple[int, int], list[Attempt]],
    got: Mapping[tuple[int, int, int, int], Verdict],
    prompts: list[PromptCase],
    lengths: TokenLengths,
    budget: int,
) -> Finding:
    hits = leaks = ties = tested = undecided = applicable = masked = 0
    error_detail = ""
    rel: list[float] = []
    best: tuple[float, Example] | None = None
    masked_example: Example | None = None
    for pi in prompt_ids:
        built = attempts.get((ei, pi)) or []
        if not built:
            continue
        pair = base_scores[pi]
        assert pair is not None  # prompt_ids holds only prompts with both baselines scored
        c, w = pair
        assert c.score is not None
        applicable += 1
        # An attempt scores the minimum over its orderings. An undecided ordering is masked in
        # training: for most exploits that is a way out of a wrong answer's negative advantage.
        scored: list[tuple[float, float, Attempt, Verdict]] = []  # (score, what it is measured against, ...)
        for ai, att in enumerate(built):
            vs = [got[ei, pi, ai, oi] for oi in range(len(att.completions))]
            if any(v.score is None for v in vs):
                undecided += 1
                bad_i = next(i for i, v in enumerate(vs) if v.score is None)
                bad = vs[bad_i]
                error_detail = error_detail or f"{bad.error_kind}: {bad.detail}"
                if not ex.undecided_is_ok:
                    masked += 1
                    if masked_example is None:
                        masked_example = Example(
                            prompts[pi].prompt,
                            att.completions[bad_i],
                            None,
                            c.score,
                            w.score,
                            bad.outcome.value,
                            f"masked in training ({bad.error_kind}): {bad.detail}"[:300],
                        )
                continue
            against = c.score
            if att.reference is not None:
                ref = got[ei, pi, ai, -1]
                if ref.score is None:
                    continue
                against = ref.score
            scores = [v.score for v in vs if v.score is not None]  # every ordering decided (checked above)
            low = min(range(len(scores)), key=scores.__getitem__)
            scored.append((scores[low], against, replace(att, completions=(att.completions[low],)), vs[low]))
        if not scored:
            continue
        tested += 1
        e, against, att, v = max(scored, key=lambda t: t[0] - t[1])
        ws = w.score if w.score is not None else -math.inf
        tie = abs(e - against) <= EPS
        slack = ex.margin * abs(c.score - against) if att.reference is not None else 0.0
        hit = e > against + slack + EPS or (tie and not ex.strict)
        leak = att.reference is None and e > ws + EPS
        ties += tie
        hits += hit
        leaks += leak
        r = (e - ws) / (c.score - ws) if att.reference is None and c.score - ws > EPS else None
        if r is not None:
            rel.append(r)
        key = r if r is not None else e - against
        if best is None or key > best[0]:
            text = att.completions[0]
            detail = v.detail
            if att.reference is not None:
                detail = (
                    detail + "; " if detail else ""
                ) + f"measured against {_clip_ref(att.reference)} which scored {against:.3g}"
            if lengths.count(text) > budget:
                detail = (
                    detail + "; " if detail else ""
                ) + f"longer than the generation budget ({lengths.count(text)} > {budget} tokens)"
            best = (
                key,
                Example(
                    prompts[pi].prompt,
                    text,
                    e,
                    against if att.reference is not None else c.score,
                    w.score,
                    v.outcome.value,
                    detail,
                ),
            )
    if not tested and not masked:
        if applicable and ex.undecided_is_ok:
            return Finding(term, ex.name, ex.description, "ok", prompts=applicable, undecided=undecided)
        if applicable:
            why = f"the term could not decide any of its {undecided} attempt(s) ({error_detail[:120]})"
        elif prompt_ids:
            why = "nothing to build this exploit from on the sampled rows"
        else:
            why = "no sampled prompt where the term scored a correct answer above a wrong one"
        return Finding(term, ex.name, ex.description, "untested", prompts=applicable, undecided=undecided, reason=why)
    verdict = "exploitable" if hits or masked else "leaky" if leaks else "ok"
    example = best[1] if best else None
    if masked and (example is None or not hits):
        example = masked_example
    return Finding(
        term,
        ex.name,
        ex.description,
        verdict,
        prompts=max(tested, applicable if masked else tested),
        undecided=undecided,
        ties=ties,
        hits=hits,
        leaks=leaks,
        relative_mean=sum(rel) / len(rel) if rel else None,
        relative_max=max(rel) if rel else None,
        example=example,
        reason=f"{masked} attempt(s) ended in error and would be masked in training ({error_detail[:120]})"
        if masked
        else "",
        masked=masked,
    )


def _clip_ref(text: str, n: int = 40) -> str:
    text = text.replace("\n", "\\n")
    return repr(text if len(text) <= n else "..." + text[-n:])
