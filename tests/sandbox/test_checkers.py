"""rlvr.sandbox.checkers: the named stdout checkers of stdin/stdout rows, and their settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.sandbox.checkers import (
    CHECKERS,
    EXACT,
    CheckerFailed,
    CheckerSpec,
    CheckerSpecError,
    check_output,
    normalize_lines,
    parse_checker,
)

TOKENS = CheckerSpec("tokens")
FLOAT = CheckerSpec("float")
CASE = CheckerSpec("case_insensitive")


def ok(spec: CheckerSpec, expected: str, output: str) -> bool:
    return check_output(spec, "", expected, output)


# -- exact ----------------------------------------------------------------------------------


def test_exact_keeps_only_the_documented_normalisations() -> None:
    assert ok(EXACT, "1 2\n3\n", "1 2   \r\n3\n\n\n")  # trailing spaces, CRLF, trailing blank lines
    assert ok(EXACT, "a\n", "a")
    assert not ok(EXACT, "1 2\n3", " 1 2\n3")  # leading whitespace counts
    assert not ok(EXACT, "1\n3", "1\n\n3")  # blank lines inside count
    assert not ok(EXACT, "1 2", "1  2")  # inner whitespace counts
    assert not ok(EXACT, "YES", "yes")  # case counts
    assert not ok(EXACT, "1\n2\n3", "1\n2")  # the whole output, never a prefix
    assert not ok(EXACT, "1\n2", "1\n2\n3")
    assert not ok(EXACT, "", "x")
    assert ok(EXACT, "", "\n \n")


# -- tokens, case_insensitive -----------------------------------------------------------------


def test_tokens_ignores_whitespace_only() -> None:
    assert ok(TOKENS, "1 2\n3", "  1\t2 3\n\n")
    assert not ok(TOKENS, "1 2 3", "1 23")
    assert not ok(TOKENS, "1 2 3", "1 2 3 4")
    assert not ok(TOKENS, "YES", "yes")


def test_case_insensitive_is_exact_after_casefold() -> None:
    assert ok(CASE, "YES\nNO", "yes\nNo  \n")
    assert ok(CASE, "STRASSE", "straße")  # casefold, not lower
    assert not ok(CASE, "YES\nNO", "yes no")  # line structure still counts
    assert not ok(CASE, "YES", "YES!")


# -- float ------------------------------------------------------------------------------------


def test_float_tolerance_per_token() -> None:
    assert ok(FLOAT, "0.333333", "0.3333333333")
    assert ok(FLOAT, "1.0 2.0", "1.0000004\n2")
    assert ok(FLOAT, "1", "1.000001")  # exactly at 1e-6 absolute is accepted
    assert not ok(FLOAT, "1", "1.00001")
    assert ok(FLOAT, "1000000", "1000000.9")  # relative: 1e-6 of 1e6 is 1
    assert not ok(FLOAT, "1000000", "1000002")
    assert not ok(FLOAT, "1.0 2.0", "1.0")  # token count
    assert ok(FLOAT, "Case #1: 0.5", "Case #1: 0.5000001")  # non-numeric tokens exact
    assert not ok(FLOAT, "Case #1: 0.5", "case #1: 0.5")
    assert ok(CheckerSpec("float", abs_tol=1e-2, rel_tol=0), "3.14159", "3.14")
    assert not ok(CheckerSpec("float", abs_tol=1e-3, rel_tol=0), "3.14159", "3.14")
    assert ok(FLOAT, "1e3", "1000.0000001")
    assert ok(FLOAT, ".5", "0.5") and ok(FLOAT, "-0", "0.0000001")


def test_float_non_numeric_tokens_look_like_numbers_but_are_not() -> None:
    for token in ("1_000", "١٢٣", "0x10", "1e", "e5", ".", "+", "1.2.3", "1e+", "--1", "1e5.5", "²"):
        assert not ok(FLOAT, "1000", token), token
        assert ok(FLOAT, token, token), token  # equal text is always equal


def test_float_nan_and_infinity_are_explicit() -> None:
    assert ok(FLOAT, "inf", "Infinity") and ok(FLOAT, "-inf", "-INF")
    assert ok(FLOAT, "nan", "nan") and not ok(FLOAT, "nan", "NaN")  # NaN equals nothing; equal text is equal
    assert not ok(FLOAT, "inf", "-inf")
    assert not ok(FLOAT, "nan", "0") and not ok(FLOAT, "0", "nan") and not ok(FLOAT, "nan", "inf")
    assert not ok(FLOAT, "inf", "1e308") and not ok(FLOAT, "1.7976931348623157e308", "inf")
    big = CheckerSpec("float", abs_tol=1e300, rel_tol=1.0)
    assert not ok(big, "inf", "1e308") and not ok(big, "1", "nan")


def test_float_huge_literals_compare_exactly_not_as_infinity() -> None:
    assert not ok(FLOAT, "inf", "1e400") and not ok(FLOAT, "1e400", "inf")
    assert ok(FLOAT, "1e400", "1.0000000001e400")  # relative tolerance still applies
    assert not ok(FLOAT, "1e400", "2e400")
    assert not ok(FLOAT, "1e400", "-1e400")
    digits = "9" * 5000
    assert ok(FLOAT, digits, digits + ".0")
    assert not ok(FLOAT, digits, "1" + digits)
    assert ok(FLOAT, "1e99999999999999999", "1.0e99999999999999999")
    assert not ok(FLOAT, "1", "1e" + "9" * 40)  # an absurd exponent is just a word


def test_adversarial_mebibyte_outputs() -> None:
    """Shapes that make a backtracking pattern or a quadratic conversion slow, at the sandbox's
    1 MiB cap: each is decided (the time it takes is measured by ``bench/sandbox.py --checkers``,
    not asserted here)."""
    mib = 1 << 20
    shapes = ["1" * mib, "1." + "1" * mib, "1e" + "1" * mib, "9" * mib + "x", "1 " * (mib // 2), " \n" * (mib // 2)]
    # The last character changed: huge numbers within the relative tolerance are still accepted.
    float_accepts = [True, True, False, False, False, False]
    for out, close in zip(shapes, float_accepts, strict=True):
        differs = out[:-1] + "2"
        for name in ("exact", "tokens", "float", "case_insensitive"):
            assert check_output(CheckerSpec(name), "", out, out)
            assert check_output(CheckerSpec(name), "", differs, out) is (name == "float" and close)


# -- custom -----------------------------------------------------------------------------------


def any_order(stdin: str, expected: str, output: str) -> bool:
    return sorted(output.split()) == sorted(expected.split())


def test_custom_callable_and_dotted_path(tmp_path: Path) -> None:
    spec = CheckerSpec("custom", function=any_order)
    assert ok(spec, "1 2 3", "3 1 2") and not ok(spec, "1 2 3", "3 1 1")
    (tmp_path / "mychecks_a.py").write_text("def same_sum(i, e, o):\n    return sum(map(int, o.split())) == int(i)\n")
    spec = parse_checker({"function": "mychecks_a.same_sum"}, search=tmp_path)
    assert spec.name == "custom" and callable(spec.function)
    assert check_output(spec, "5", "2 3", "1 4") and not check_output(spec, "5", "2 3", "1 3")


def test_custom_failure_is_the_tasks_not_the_samples() -> None:
    def boom(i: str, e: str, o: str) -> bool:
        raise ZeroDivisionError("gold checker bug")

    with pytest.raises(CheckerFailed, match="ZeroDivisionError"):
        check_output(CheckerSpec("custom", function=boom), "", "1", "1")
    for bad in (None, 1, "yes", 1.0):
        with pytest.raises(CheckerFailed, match="not True or False"):
            check_output(CheckerSpec("custom", function=lambda i, e, o, bad=bad: bad), "", "1", "1")


def test_custom_dotted_path_resolves_lazily_without_search() -> None:
    spec = CheckerSpec("custom", function=f"{__name__}.any_order")
    if __name__ not in sys.modules:
        pytest.skip("test module not importable by name")
    assert ok(spec, "a b", "b a")
    with pytest.raises(CheckerFailed, match="cannot import"):
        ok(CheckerSpec("custom", function="no_such_module_xyz.fn"), "a", "a")


# -- parsing the task-file and row forms ------------------------------------------------------


def test_parse_checker_forms() -> None:
    assert parse_checker(None) == EXACT and parse_checker("tokens") == TOKENS
    assert parse_checker({"name": "float", "abs_tol": 1e-4, "rel_tol": 0}) == CheckerSpec("float", 1e-4, 0)
    assert parse_checker({"name": "float", "abs_tol": "1e-4"}).abs_tol == 1e-4  # YAML 1.1 reads 1e-4 as text
    assert parse_checker(FLOAT) is FLOAT


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("fuzzy", "unknown checker 'fuzzy'"),
        ("custom", "needs a mapping"),
        ({"name": "float", "abs_tol": -1}, "abs_tol must be a finite number >= 0"),
        ({"name": "float", "rel_tol": float("nan")}, "rel_tol must be"),
        ({"name": "float", "abs_tol": "tiny"}, "abs_tol must be"),
        ({"name": "tokens", "abs_tol": 0.1}, "float checker only"),
        ({"name": "float", "tol": 0.1}, "unknown checker key"),
        ({"name": "custom"}, "needs function"),
        ({"name": "exact", "function": "a.b"}, "only for the custom checker"),
        ({"function": "not a path"}, "dotted path"),
        ({"function": "nosuchmodule_q.fn"}, "cannot import"),
        ({"function": "math.no_such_fn"}, "no function 'no_such_fn'"),
        (3, "a name or a mapping"),
        ({"name": 3}, "must be a string"),
    ],
)
def test_parse_checker_rejects_with_one_line(raw: object, message: str, tmp_path: Path) -> None:
    with pytest.raises(CheckerSpecError, match=message) as info:
        parse_checker(raw, search=tmp_path)
    assert "\n" not in str(info.value)


# -- properties -------------------------------------------------------------------------------

WS = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", " \n ", "\x0b", "\u3000"])
WORD = st.text(st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs")), min_size=1, max_size=8)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.lists(WORD, max_size=12), st.data())
def test_tokens_invariant_under_whitespace_rewrites(words: list[str], data: st.DataObject) -> None:
    original = " ".join(words)
    seps = [data.draw(WS) for _ in range(len(words) + 1)]
    rewritten = seps[0] + "".join(w + s for w, s in zip(words, seps[1:], strict=True))
    assert check_output(TOKENS, "", original, rewritten)
    assert check_output(FLOAT, "", original, rewritten)
    if words:
        assert not check_output(TOKENS, "", original, rewritten + " extra")


FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
TOL = st.floats(min_value=0, max_value=1, allow_nan=False)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(FINITE, FINITE, TOL, TOL)
def test_float_checker_is_symmetric_and_follows_its_formula(a: float, b: float, abs_tol: float, rel_tol: float) -> None:
    spec = CheckerSpec("float", abs_tol=abs_tol, rel_tol=rel_tol)
    there, back = check_output(spec, "", repr(a), repr(b)), check_output(spec, "", repr(b), repr(a))
    assert there == back
    assert there == (a == b or abs(a - b) <= max(rel_tol * max(abs(a), abs(b)), abs_tol))


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.floats(min_value=-1e12, max_value=1e12, allow_nan=False), st.floats(min_value=1e-9, max_value=1e-2))
def test_float_accepts_within_and_rejects_beyond(x: float, tol: float) -> None:
    spec = CheckerSpec("float", abs_tol=tol, rel_tol=0)
    assert check_output(spec, "", repr(x), repr(x + tol * 0.5))
    assert not check_output(spec, "", repr(x), repr(x + max(tol * 2, abs(x) * 1e-12 + tol * 2)))


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.sampled_from(["nan", "inf", "-inf"]), FINITE)
def test_float_non_finite_never_matches_finite(word: str, x: float) -> None:
    huge = CheckerSpec("float", abs_tol=1e308, rel_tol=1.0)
    assert not check_output(huge, "", word, repr(x)) and not check_output(huge, "", repr(x), word)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(CHECKERS[:-1]), st.text(max_size=200), st.text(max_size=200))
def test_builtin_checkers_never_raise(name: str, expected: str, output: str) -> None:
    assert isinstance(check_output(CheckerSpec(name), "", expected, output), bool)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.text(alphabet="0123456789.eE+-naif \n", max_size=60), st.text(alphabet="0123456789.eE+-naif \n", max_size=60))
def test_float_checker_never_raises_on_number_like_text(expected: str, output: str) -> None:
    for spec in (FLOAT, CheckerSpec("float", abs_tol=0, rel_tol=0), CheckerSpec("float", abs_tol=1e300, rel_tol=1)):
        assert isinstance(check_output(spec, "", expected, output), bool)
        assert check_output(spec, "", expected, output) == check_output(spec, "", output, expected)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.text(max_size=100))
def test_every_checker_accepts_the_expected_output_itself(text: str) -> None:
    for name in CHECKERS[:-1]:
        assert check_output(CheckerSpec(name), "", text, text)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.text(max_size=100))
def test_exact_normalisation_is_idempotent(text: str) -> None:
    once = "\n".join(normalize_lines(text))
    assert normalize_lines(once) == normalize_lines(text)


LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=10)


@settings(deadline=None)  # a loaded CI machine must not fail a property on time
@given(st.lists(LINE, min_size=1, max_size=8), st.data())
def test_a_truncated_output_never_passes(lines: list[str], data: st.DataObject) -> None:
    """The whole output is compared, never a prefix (open-r1's zip() let truncated output pass)."""
    expected = "\n".join(lines)
    kept = data.draw(st.integers(0, len(lines) - 1))
    if not any(line.strip() for line in lines[kept:]):
        return  # only blank lines were cut: no output line is missing
    truncated = "\n".join(lines[:kept])
    for name in ("exact", "case_insensitive"):
        assert not check_output(CheckerSpec(name), "", expected, truncated)
    if any(token for line in lines[kept:] for token in line.split()):
        assert not check_output(TOKENS, "", expected, truncated)
        assert not check_output(FLOAT, "", expected, truncated)
