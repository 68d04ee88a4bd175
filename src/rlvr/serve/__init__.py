"""A task's reward terms for other training engines: ``rlvr serve`` and the engine adapters.

- ``app``: the HTTP reward server (the rlvr JSON API and OpenRLHF's remote reward protocol), with
  admission control, size limits, a per-request deadline, ``/healthz`` and ``/metrics``.
- ``engines``: verl's ``compute_score`` (per sample and batched) and OpenRLHF's ``reward_func``,
  in process, and the adapter files ``rlvr serve --write-adapter`` writes.
- ``scoring``: what both share: the gated ``Scorer``, request parsing, stand-in rewards for masked
  rows (``Imputer``) and the metrics.
- ``launch``: the engine's data and launch command with rlvr's recipe (``--write-adapter --launch``).
- ``enginelogs``: verl's and OpenRLHF's offline logs under rlvr's metric names, for ``rlvr doctor``.

Every entry point checks the inspection gate the way ``rlvr train`` does. docs/serve.md is the
user's guide, with the wire formats and what a stand-in reward does to the GRPO advantage.
"""

from __future__ import annotations

from .scoring import Imputer, RequestError, Scorer

__all__ = ["Imputer", "RequestError", "Scorer"]
