"""Checks of the learning signal: groups whose completions all got the same reward carry no
advantage (``frac_reward_zero_std``, ``reward_std``, ``grad_norm`` at zero), and rlvr's dynamic
sampling dropping nearly every group it draws. Both say the data, not a hyperparameter, is the cause.
"""

from __future__ import annotations

from .findings import Finding, Patch
from .readings import TINY, Result, correctness_term, dynamic_mode
from .reward_checks import reward_broken_evidence
from .stats import MIN_POINTS, late_mean, mean
from .table import Run

ZERO_STD_ERROR = 0.9  # "near 1": most groups carry no advantage at all (1.0 means grad = 0)
ZERO_STD_WARN = 0.5  # "over 0.5 sustained is wasteful" (prior-art note, one report at 0.63)
DROPPED_NEAR_ALL = 0.9  # rlvr's filter skipped at least this share of the drawn groups: "near 100 %" (heuristic)


def check_no_learning_signal(run: Run) -> Result:
    if reward_broken_evidence(run)[0]:
        return []  # explained: a broken reward gives every group the same (no) reward
    zs, rs, gn = run.series("frac_reward_zero_std"), run.series("reward_std"), run.series("grad_norm")
    parts, severity = [], None
    numbers: dict[str, float | int | None] = {}
    if (lm := late_mean(zs)) is not None and len(zs) >= 3:
        v, (a, b) = lm
        numbers["frac_reward_zero_std"] = v
        if v >= ZERO_STD_WARN:
            parts.append(f"frac_reward_zero_std averaged {v:.2f} over steps {a}-{b}")
            severity = "error" if v >= ZERO_STD_ERROR else "warning"
    for s, name in ((rs, "reward_std"), (gn, "grad_norm")):
        lm = late_mean(s)
        if lm is not None and len(s) >= 3 and lm[0] <= TINY:
            parts.append(f"{name} was {lm[0]:.2g} over steps {lm[1][0]}-{lm[1][1]}")
            numbers[name] = lm[0]
            severity = "error"
    if severity is None:
        return []
    correct = correctness_term(run)
    cseries = run.series(f"rewards/{correct}/mean") if correct else None
    cm = late_mean(cseries) if cseries is not None else None
    early = mean(cseries.slice(0, 3).values) if cseries is not None and len(cseries) >= MIN_POINTS else None
    # rlvr's dynamic sampling (rlvr.train.dynamic) keeps flat groups out of the batch: the config change
    # for prompts that are too easy or mixed. Not for all-wrong prompts (every group would be
    # dropped and the batch starves: SFT first), nor when training itself removed the signal.
    filter_on = dynamic_mode(run) in ("filter", "resample")
    patch = (
        None
        if filter_on
        else Patch(
            "dynamic sampling (online filter)",
            {"dynamic": {"mode": "filter"}},
            why="skip prompts whose last groups all had the same reward; rlvr train reads grpo: {dynamic: ...}",
        )
    )
    if cm is not None and early is not None and abs(early - cm[0]) >= 0.1:
        fix = (
            f"The groups were not uniform at the start ({correct!r} averaged {early:.2f} over the first steps, "
            f"{cm[0]:.2f} at the end): training itself removed the signal. Read the other findings first; the prompts "
            "are not the cause."
        )
        patch = None
    elif cm is not None and cm[0] >= 0.9:
        fix = (
            f"Groups are all correct ({correct!r} averages {cm[0]:.2f}): the prompts are too easy. Filter the train "
            "split to mid-difficulty prompts with `rlvr probe` (it emits a difficulty-filtered prompt set) or add "
            "harder ones."
        )
        fix += (
            " The online filter (dynamic: {mode: filter}) skips the solved prompts during training meanwhile."
            if patch
            else ""
        )
    elif cm is not None and cm[0] <= 0.1:
        fix = (
            f"Groups are all wrong ({correct!r} averages {cm[0]:.2f}): the model cannot solve these prompts yet. "
            "Route through `rlvr probe`: a 0 % base rate means SFT first; otherwise keep only prompts with a nonzero "
            "pass rate."
        )
        patch = None
    else:
        fix = (
            "Filter the train split to prompts whose base pass rate is neither 0 nor 1 (`rlvr probe` emits that set); "
            "more generations per prompt or temperature 1.0 also widen the spread."
        )
        fix += (
            " The online filter (dynamic: {mode: filter}) skips prompts whose groups stay flat during training."
            if patch
            else ""
        )
    if filter_on:
        fix += (
            f" Dynamic sampling ({dynamic_mode(run)}) was already on: the groups it could not replace are the data's "
            "problem (see dynamic/* in the metrics)."
        )
    return [
        Finding(
            "no_learning_signal",
            severity,
            "frac_reward_zero_std" if "frac_reward_zero_std" in numbers else next(iter(numbers)),
            "; ".join(parts) + " (a zero-variance group has zero advantage: no gradient, whatever the scaling)",
            fix,
            patch,
            numbers,
        )
    ]


def check_dynamic_dropping_nearly_all(run: Run) -> Result:
    """rlvr's dynamic sampling drops (nearly) every group the sampler draws: the filter trains on the
    few prompts left, over and over; resample spends its rounds; either ends up training flat
    groups once nothing is left (``dynamic/starved_groups``)."""
    before = run.series("dynamic/zero_std_before")
    lm = late_mean(before)
    if lm is None or len(before) < 3 or lm[0] < DROPPED_NEAR_ALL:
        return []
    v, (a, b) = lm
    numbers: dict[str, float | int | None] = {"zero_std_before": v}
    mode = dynamic_mode(run)
    what = "skipped" if mode == "filter" else "found flat"
    parts = [f"dynamic sampling ({mode}) {what} {v:.0%} of the groups the sampler drew over steps {a}-{b}"]
    rounds = late_mean(run.series("dynamic/rounds"))
    if rounds is not None:
        numbers["rounds"] = rounds[0]
        parts.append(f"{rounds[0]:.2g} generation rounds per batch")
    starved = late_mean(run.series("dynamic/starved_groups"))
    if starved is not None and starved[0] > 0:
        numbers["starved_groups"] = starved[0]
        parts.append(f"{starved[0]:.2g} groups per generation had no replacement (trained flat, or masked)")
    solved, unsolved = (
        late_mean(run.series("dynamic/skipped_solved")),
        late_mean(run.series("dynamic/skipped_unsolved")),
    )
    if solved is not None and unsolved is not None:
        numbers.update(skipped_solved=solved[0], skipped_unsolved=unsolved[0])
        parts.append(f"skipped prompts: {solved[0]:.0f} last solved by every completion, {unsolved[0]:.0f} by none")
        if solved[0] >= unsolved[0]:
            fix = (
                "Most prompts are solved every time: the task is too easy for this model now. Add harder prompts (or "
                "stop: the run has learnt what these prompts teach)."
            )
        else:
            fix = (
                "Most prompts are failed every time: the model cannot solve them. Route through `rlvr probe` (SFT "
                "first at a 0 % base rate) or keep prompts with a nonzero pass rate."
            )
    else:
        fix = (
            "Nearly every prompt's groups are flat: change the data (`rlvr probe` emits a difficulty-filtered prompt "
            "set); no sampling setting can make a flat group teach."
        )
    return [
        Finding(
            "dynamic_sampling_drops_nearly_all",
            "error" if "starved_groups" in numbers else "warning",
            "dynamic/zero_std_before",
            "; ".join(parts),
            fix,
            None,
            numbers,
        )
    ]
