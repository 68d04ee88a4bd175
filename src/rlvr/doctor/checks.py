"""The symptom checks: each a pure function ``Run -> list[Finding | Note]``.

A ``Finding`` is a symptom with evidence (numbers and steps), a suggestion and, where the fix is a
config change, a ``Patch`` with exactly one change group. A ``Note`` is something that looks alarming
but the configuration explains (loss ~ 0 with ``num_iterations=1, beta=0``; clip ratios of zero
on-policy): said once, never counted as a symptom.

What is approximate, honestly:
- Trends compare the mean of an early window with the mean of a late window (each a fifth of the
  logged points, at least 3) with a Welch z-score; a run with fewer than ``MIN_POINTS`` logged
  steps is not judged for trends. Short noisy runs can miss a real trend or, rarely, show one.
- Thresholds are the heuristics of the prior-art note (verl's 0.1 truncation rule, "an order of
  magnitude" for entropy collapse, ...), not published constants. Entropy is judged only relative to
  the run's own early entropy, because absolute levels differ by an order of magnitude between runs.
- "Saturated" for a reward term assumes it scores in [0, 1], as the built-in terms do.

The checks live by symptom family: ``reward_checks`` (the reward itself), ``tripwire_checks``
(what the reward-hack tripwire found during training), ``variance_checks`` (the
learning signal), ``stability_checks`` (NaN, MoE, KL, entropy, off-policy, loss) and
``length_checks`` (length and truncation); what they read from a run is in ``readings``.
``CHECKS`` is the order the doctor runs them: a broken run before a misleading reward before a variant.
"""

from __future__ import annotations

from collections.abc import Callable

from .dip_checks import check_early_dip
from .episode_checks import check_tool_call_inflation, check_tool_failures
from .length_checks import check_length, check_truncation
from .readings import Result
from .reward_checks import check_collapse, check_reward_broken, check_reward_hacking, check_verifier_errors
from .stability_checks import check_entropy, check_kl, check_loss_explained, check_moe, check_nan, check_off_policy
from .table import Run
from .tripwire_checks import check_tripwire
from .variance_checks import check_dynamic_dropping_nearly_all, check_no_learning_signal

CHECKS: tuple[Callable[[Run], Result], ...] = (
    check_reward_broken,
    check_tripwire,  # a reward a probe caught paying for something else: before any hyperparameter
    check_nan,
    check_verifier_errors,
    check_reward_hacking,
    check_collapse,
    check_early_dip,
    check_moe,
    check_no_learning_signal,
    check_dynamic_dropping_nearly_all,
    check_kl,
    check_entropy,
    check_length,
    check_truncation,
    check_tool_call_inflation,
    check_tool_failures,
    check_off_policy,
    check_loss_explained,
)
