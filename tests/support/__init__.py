"""Helpers shared by the whole suite (``tests/`` is on ``sys.path``, see pyproject.toml): a task
written to a folder (``tasks``), the one fake sampler (``fakes``), and an ``rlvr`` command serving
HTTP in a subprocess (``servers``)."""
