"""The routing probe: the base model's success rate on a task, and where to go from there.

RL sharpens a capability the model already has; it does not install one. The probe samples
``k`` completions for each of up to ``max_prompts`` train prompts at the task's generation
temperature, scores them with the task's reward terms, and routes:

- ``sft``: no sample succeeded. Every GRPO group would score the same, the group-relative
  advantage would be zero everywhere, and nothing would be learned. Warm up with SFT first.
- ``grpo``: the rate is low to intermediate.
- ``too-easy``: the rate is at or above ``probe.too_easy`` (default 0.9): little is left to
  sharpen; spend the budget on harder prompts or on evals.
- ``fix-verifier``: the correctness term could not decide any sample (every verdict an
  ``error``). That is a broken reward, not a 0 % base rate, and it is reported as such.
- ``fix-tool`` (an episode task): most tool calls that reached a tool failed or timed out. The
  tool is broken, not the model; the reason names the tool and its commonest error
  (``report.broken_tool``). SFT would teach calls to a tool that cannot answer.

Before any weights load, the budget is checked against the task's answers and the model
(``rlvr.lengths``): a budget beyond the model's positions is refused, and reference answers
longer than the budget are warned about. The report counts the samples cut off at the budget
(``finish_reason`` ``length``); when they are the majority, the reason leads with that:
truncation, not capability, explains the rate (the route itself is still decided by the rate).

A model that records the rows it was trained on (``trained_rows.json``, written by ``rlvr sft``
and ``rlvr train``; ``rlvr.data.TrainedRows``) is probed on the others: a rate over rows SFT has
just learnt measures memory, not capability (a user's SFT model, issue 26: 98 % on its own rows, 12 % on
the rest). When fewer unseen rows than ``max_prompts`` are left, seen rows fill the rest and are
reported apart (``seen_*``), never in the rate; when none are left, the route says it could not
probe unseen prompts and the rate is over seen rows, with a warning. ``--filter`` keeps unseen
rows only.

A sample succeeds when the outcome of the task's correctness term (``task.success_term``) is
``correct``. Samples on which that term errs are *undecided*: left out of the rate and counted
separately, as training masks them out of their group's baseline.

What is approximate, stated honestly:

- The Wilson 95 % interval treats all samples as independent. For the fixed set of probed
  prompts that is conservative (per-prompt rates that differ make the total *less* variable
  than a binomial); as a statement about the whole prompt distribution it is too narrow when
  few prompts are probed, because prompts are clusters.
- The expected share of zero-variance groups at group size G is the mean over prompts of
  p^G + (1 - p)^G. With k >= G it is estimated without bias from each prompt's k samples (the
  chance that G of them, drawn without replacement, all agree); with k < G it plugs in the
  per-prompt estimate p = s/k, which overstates the share (a prompt with 0 of 4 successes
  counts as certainly zero-variance). The expected group std is estimated the same way; it is
  the std of the *success indicator* within a group (Bessel-corrected, as TRL computes it), not
  of the weighted total reward, which adds the format term.
- Seeds: a probe is reproducible for the same model, backend, device and settings; prompts are
  sampled in fixed chunks with one seed per chunk, so ``resume`` regenerates exactly what an
  uninterrupted run would have written. Which prompts are probed (a seeded subset when the split
  exceeds ``max_prompts``) depends on the task's seed only, not the sampling seed, so probes
  before SFT, after SFT and after GRPO compare the same prompts.

Files written under ``out_dir``: ``probe.json`` (a ``ProbeSettings``, checked on resume),
``samples.jsonl`` (one ``ProbeSample`` per completion with every term's verdict, reused by the
inspection gate), ``report.json`` (the ``ProbeReport``), and with ``filter`` ``filtered.jsonl``
(the probed rows with 0 < p < 1, for ``data.train``). Each is written through its type's
``to_json`` and read back through ``from_json``.

The modules: ``stats`` (the estimators), ``report`` (``ProbeReport``, the route, the text),
``samples`` (``ProbeSettings``, ``ProbeSample`` and reading them back), ``run`` (``run_probe``).
"""

from __future__ import annotations

from .report import ROUTES, ProbeReport, PromptStat, decide, format_report, summarize
from .run import choose_prompts, run_probe
from .samples import ProbeSample, ProbeSettings, read_samples, read_settings
from .stats import expected_group_std, wilson, zero_variance_share

__all__ = [
    "ROUTES",
    "ProbeReport",
    "ProbeSample",
    "ProbeSettings",
    "PromptStat",
    "choose_prompts",
    "decide",
    "expected_group_std",
    "format_report",
    "read_samples",
    "read_settings",
    "run_probe",
    "summarize",
    "wilson",
    "zero_variance_share",
]
