"""``unit_tests``'s options are one typed object (``CodeOptions``): read from a task term's
``options:`` through ``build_verifier`` with the same checks as every verifier's options, each
field with a default and a help text, every bad value named at once."""

from __future__ import annotations

from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.errors import VerifierError
from rlvr.rewards import build_verifier, option_params
from rlvr.rewards.code import UnitTests
from rlvr.rewards.codeoptions import CodeOptions


def test_every_option_has_a_default_and_a_help_text_stating_its_consequence() -> None:
    for f in fields(CodeOptions):
        assert len(f.metadata.get("help", "")) > 20, f.name
    assert set(option_params(UnitTests)) == {"answer_format", "pool"} | {f.name for f in fields(CodeOptions)}


def test_a_term_s_options_become_the_options_object() -> None:
    v = build_verifier("unit_tests", {"timeout": 3, "partial_credit": True}, answer_column="tests")
    assert isinstance(v, UnitTests)
    assert v.options == CodeOptions(timeout=3.0, partial_credit=True) and isinstance(v.options.timeout, float)


def test_an_unknown_option_is_refused_with_the_closest_name() -> None:
    with pytest.raises(VerifierError, match="unknown option 'timout'.*did you mean 'timeout'"):
        build_verifier("unit_tests", {"timout": 3})


def test_options_come_as_one_object_or_as_fields_never_both() -> None:
    assert UnitTests(timeout=2.0).options == UnitTests(options=CodeOptions(timeout=2.0)).options
    with pytest.raises(TypeError, match="not both"):
        UnitTests(options=CodeOptions(), timeout=2.0)


@given(timeout=st.one_of(st.floats(allow_nan=True), st.integers(-5, 700), st.booleans(), st.text(max_size=3)))
def test_a_timeout_is_accepted_exactly_when_it_is_seconds_in_0_to_600(timeout: object) -> None:
    ok = isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and 0 < timeout <= 600
    try:
        CodeOptions(timeout=timeout)  # type: ignore[arg-type]
    except VerifierError as exc:
        assert not ok and "unit_tests.timeout" in str(exc)
    else:
        assert ok
