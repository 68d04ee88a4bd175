"""Importing the ``math`` verifier must not change how other verdicts are checked.

Observed while adding the math example: once ``rlvr.rewards.math`` was imported, Python bound the
submodule to the package attribute ``math``, shadowing the standard library module that
``rlvr.rewards`` imported under that name, and every custom reward's number became an
``AttributeError`` verdict (``module 'rlvr.rewards.math' has no attribute 'isfinite'``)."""

from __future__ import annotations

import importlib

from rlvr.rewards import Outcome, as_verdict


def test_numbers_are_still_checked_after_the_math_verifier_is_imported() -> None:
    importlib.import_module("rlvr.rewards.math")
    assert as_verdict(1.0).outcome is Outcome.CORRECT
    assert as_verdict(0.0).outcome is Outcome.WRONG
    assert as_verdict(float("inf")).outcome is Outcome.ERROR
