"""A run's settings, resolved in one place: every command that needs a value of a run (``rlvr
train``, ``plan``, ``probe``, ``inspect``, ``serve``, ``task check``) calls ``resolve`` and reads
the merged value, never a task's raw section or a restated default.

Which module holds what, bottom to top:

- ``recipe``: the reference recipe (every default, written once; ``rlvr sft``'s own in
  ``SFT_DEFAULTS``), the variants' overlays, rlvr's own run settings (``StopRules``,
  ``DynamicSampling``) and the check's inputs (``Target``, ``ModelFacts``, ``hardware``).
- ``file``: a run's config file, read and written in one place (``RunConfig``: a run's
  ``config.yaml`` and the flat plan form).
- ``layers``: ``resolve`` (recipe < hardware < variant < task < config file < a caller's layers)
  and ``merge``, the one place a value is taken from a layer, with the origin map (``Settings``).
- ``check``: the check of resolved values against the installed TRL, the target hardware and the
  model (every problem at once), and of values against GRPOConfig's types.
"""

from __future__ import annotations

from .file import RunConfig
from .layers import Layer, Settings, merge, resolve
from .recipe import RECIPE, DynamicSampling, ModelFacts, StopRules, Target, hardware

__all__ = [
    "RECIPE",
    "DynamicSampling",
    "Layer",
    "ModelFacts",
    "RunConfig",
    "Settings",
    "StopRules",
    "Target",
    "hardware",
    "merge",
    "resolve",
]
