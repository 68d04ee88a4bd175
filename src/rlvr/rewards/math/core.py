"""Math answer equivalence: text clean-up, structure, parsing and comparison.

This module is what the worker processes of ``rlvr.rewards.math`` run; the parent process only
uses the cheap part (``clean`` and ``fast_compare``, pure string and ``Fraction`` work with
linear-time regexes), so sympy is imported lazily, inside the functions that need it.

Pipeline for one (gold, prediction) pair:

1. ``clean``: strip ``$``/``\\(\\)``, inline ``$…$`` pairs, ``\\$`` and a lone currency ``$``,
   ``\\left``/``\\right``, spacing commands, a wrapping ``\\boxed{}``, trailing periods; join
   MATH's thousands (``32,\\!349``) and plain separators (``1,000``, ``1\\,000``); note and strip
   degree marks (``^\\circ``, ``°``) and percent signs; drop a trailing unit (``5 \\text{ cm}``,
   ``12 dollars``) but remember it: two answers with different units are unequal; flag hedges
   (``3 \\text{ or } 5``, ``3 or 5``).
2. ``structure`` (``math.text``, rules in ``math.forms``): split at the top level into a matrix, a
   set ``\\{…\\}``, a union of intervals, a bracketed sequence (tuple or interval: the brackets
   are kept and must match), a list (``;`` separates when present, else ``,``), or a scalar.
   ``name = value`` carries its label (``a_{37} = 19``, ``f(2) = 6``, ``|AB| = 1``,
   ``(p,q) = (3,2)``); an inequality in one label is an interval (``2 \\le x \\le 5`` is
   ``[2, 5]``); an item with ``\\pm`` is its two readings, spliced into the collection around
   it, which then has no order. Structures of different kinds are never equal.
3. Scalars: plain rationals (``-12``, ``3.25``, ``1e-3``, ``7/8``, ``\\frac{7}{8}``,
   ``0.1\\overline{6}``) become ``Fraction`` and compare exactly; numerals in a base
   (``1011_2``) compare digit by digit; everything else, after a few plain-text rewrites
   (``sqrt(2)``, ``pi``, ``**``, ``3e5``), is read by ``math.fast``, a strict hand-written
   recursive-descent parser (nothing is ever ``eval``-ed; its docstring lists the forms it
   reads). What it does not read is not math to this verifier: an answer that fails is not equal,
   a gold that fails is the task's, unless the two are written alike (spaces aside). There is
   no second, looser reading: the ANTLR grammar ``latex2sympy2_extended`` is not on the scoring
   path (a test oracle only). A standalone ``i`` is the imaginary unit unless something binds it
   as an index (``\\sum_{i=1}``, ``a_i``); matrix arithmetic (``2\\begin{pmatrix}…\\end{pmatrix}``, a
   product of two) is evaluated.
4. Comparison of two sympy values (``math.sym``): rational values (after sympy's own evaluation,
   so ``2^{10}`` is 1024) compare exactly; other numbers are evaluated to 30 significant digits
   and compared *relatively* (``|a-b| <= max(abs_tol, rel_tol*max(|a|,|b|))``, default
   ``rel_tol=1e-9``), so 1/2^99 and 1/2^98 differ however small both are. Expressions with
   symbols are evaluated at five fixed sample points at 30 digits: any difference rejects;
   ``expand(a - b) == 0`` accepts; otherwise agreement at every point to 1e-12 accepts (a
   numerical identity test: the one approximate step, chosen over ``simplify`` because
   simplify costs 100 ms and more per call); ``simplify`` decides only when no sample point is
   defined. Equations are equal when ``(lhs1 - rhs1) / (lhs2 - rhs2)`` is the same nonzero
   constant at every sample point -- not because both end in ``= 0``.

Collections: a set answers in any order, and so does a bare list for a set; a set for a bare
list is compared in the order it is written; a bare list is ordered (``ordered_lists``) unless
it lists points (``(1,2), (3,4)``), came from ``\\pm`` or is a ground truth joined by ``or``
(``(11,7) or (7,11)``: every alternative must be given). When both sides give labels they
match label by label in any order; when one side does, the values compare in the gold's order.

Policies: every field of ``MathPolicy`` (``math.policy``, each one documented there).

Hedges: ``3 or 5`` against a scalar ground truth is ``unequal``; against a list or set, ``or``
separates solutions (``x = -2 or x = 3`` answers ``-2, 3``). ``x \\in S`` is ``S``.

Closed lists (issue 34): a unit is one of ``forms.UNITS`` (SI and common units, currency,
degrees); any other word after a number is not a unit, and a word (three or more letters that are
not a function or constant name) is not math, so ``42 squared`` does not parse. An answer written
only in letters compares as text, letter by letter (``on`` is not ``no``). An inequality answer
never equals a gold ``(a, b)`` that may be a point (only one with a square bracket or an infinite
end). Every comparison of a chain runs inside the guarded comparison: a crash there is charged
to the answer.

Known limits: text units are compared by name, never converted (``1 km`` is not ``1000 m``;
an answer without a unit matches a gold with one);
``lowercase_symbols`` is on in the LaTeX parser, so ``X`` and ``x`` are the same symbol; several
``\\pm`` in one item take the same sign (``(\\pm 1, \\pm 2)`` is two points, not four); no
chemistry, no multiple-choice letters beyond exact text.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..rules import untrusted
from . import chains, decimals, forms, nodes, prose, readings
from .policy import MathPolicy
from .scalar import OUTSIDE, imaginary, parse_scalar, text_answer  # noqa: F401 - re-exported
from .sym import expr_equal, renamed_equal, sym
from .text import (  # noqa: F401 - re-exported: callers import the whole pipeline from here
    CLOCK_TIME,
    MAX_ANSWER_CHARS,
    OR_WORD,
    Cleaned,
    Node,
    ParseFailure,
    as_written,
    clean,
    fast_rational,
    split_top,
    structure,
    to_latex,
    unsimplified,
)


def _apply_flags(value: Any, c: Cleaned, percent_mode: str, angle_mode: str) -> Any:
    if c.degrees and angle_mode == "degrees":
        import sympy

        value = sym(value) * sympy.pi / 180
    if c.percent and percent_mode == "fraction":
        value = value / 100 if isinstance(value, Fraction) else sym(value) / 100
    return value


def _scalar_text(s: str, policy: MathPolicy) -> str:
    """The value of a labelled scalar (``f(2) = 6`` -> ``6``) under the ``assignment`` policy."""
    if policy.assignment:
        lab = forms.split_label(s)
        if lab:
            return lab[1]
    return s


def _labels_differ(g: str, p: str, policy: MathPolicy) -> bool:
    """Both sides name the value and the names differ (``x = 3`` does not answer ``y = 3``)."""
    if not policy.assignment:
        return False
    lg, lp = forms.split_label(g), forms.split_label(p)
    if not (lg and lp):
        return False
    a, b = forms.norm_label(lg[0]), forms.norm_label(lp[0])
    return a != b and not readings.same_function(a, b, lg[1])


def _scalar_equal(g: str, p: str, policy: MathPolicy) -> bool:
    cg, cp = clean(g, policy.decimal_comma), clean(p, policy.decimal_comma)
    if cp.hedged or _units_differ(cg, cp) or _labels_differ(cg.text, cp.text, policy):
        return False
    wg, wp = text_answer(_scalar_text(cg.text, policy)), text_answer(_scalar_text(cp.text, policy))
    if wg is not None or wp is not None:  # words compare as text, never as symbols: "on" is not "no"
        return wg == wp
    bg, bp = _numeral(cg.text), _numeral(cp.text)
    if bg or bp:  # 1011_2 is digits in a base, not 1011 with a subscript
        return bg == bp
    tg, tp = CLOCK_TIME.match(cg.text), CLOCK_TIME.match(cp.text)
    if tg or tp:  # 12:00 is a time, not 12/0; 8:34 p.m. is 20:34
        return bool(tg and tp and readings.clock_24h(tg.groups(), cg.unit) == readings.clock_24h(tp.groups(), cp.unit))
    if policy.form == "structural" and unsimplified(cp.text) and not unsimplified(cg.text):
        return False
    gv = parse_scalar(_scalar_text(cg.text, policy))
    pv = parse_scalar(_scalar_text(cp.text, policy))
    modes = ("strip", "fraction") if policy.percent == "either" else (policy.percent,)
    angle_modes = ("plain", "degrees") if policy.angles == "either" else (policy.angles,)
    for mode in modes:
        for angle in angle_modes:
            if expr_equal(_apply_flags(gv, cg, mode, angle), _apply_flags(pv, cp, mode, angle), policy):
                return True
    if decimals.expansion_of(cg.text, pv) or decimals.expansion_of(cp.text, gv):
        return True  # 0.0833333333333333 is \frac{1}{12} written out to its 16th digit
    if decimals.rounds_to(cg.text, pv, policy):
        return True  # 3.14 is \pi to the gold's own precision
    if policy.rename and renamed_equal(gv, pv, policy):
        return True  # k(k+1)/2 for n(n+1)/2: the same function of a renamed variable
    if "=" in cg.text and "=" in cp.text and (gv is not parse_scalar(cg.text) or pv is not parse_scalar(cp.text)):
        # "y = 3x - 2" against "3x - y = 2": the same line, written as two equations.
        return expr_equal(parse_scalar(cg.text), parse_scalar(cp.text), policy)
    return False


def _units_differ(cg: Cleaned, cp: Cleaned) -> bool:
    """12 cm is not 12 m; a.m. and p.m. are read into a clock time, not compared as units."""
    if readings.is_meridiem(cg.unit) or readings.is_meridiem(cp.unit):
        return False
    return bool(cg.unit and cp.unit and cg.unit != cp.unit)


def _numeral(s: str) -> tuple[str, int] | None:
    """A numeral written in a base other than ten (``1011_2``, ``2A_{12}``); ``123_{10}`` is
    plain 123. Letters alone (``a_3``) are a name, not a numeral."""
    b = forms.based_numeral(s)
    if not b or not (any(ch.isdigit() for ch in b[0]) or b[0] == s.split("_")[0]):
        return None
    if b[1] == 10 and b[0].isdigit():
        return None
    return b


# A column written as a tuple: in parentheses, or in square brackets for a bmatrix (or a plain
# matrix, which has no brackets of its own); [1, 2] for a pmatrix reads as a closed interval.
_VECTOR_BRACKETS = {"pmatrix": ("()",), "bmatrix": ("[]",), "matrix": ("()", "[]")}


_REL = re.compile(r"[<>]|\\[lg]eq?(?![a-zA-Z])|\\[lg]eqslant")


def _record(n: Node) -> bool:
    """A list or tuple whose items all carry distinct labels (``x = 2, y = 3``)."""
    return (
        n.kind in ("list", "seq")
        and len(n.items) > 1
        and all(c.label for c in n.items)
        and len({c.label for c in n.items}) == len(n.items)
    )


def _tuple_like(g: Node, p: Node) -> bool:
    """A record answers a bare list or a ``( )`` tuple; two tuples need the same brackets."""
    if g.kind == p.kind == "seq":
        return g.brackets == p.brackets
    return {g.kind, p.kind} <= {"list", "seq"} and (g.brackets or "()") == "()" and (p.brackets or "()") == "()"


def _unlabelled(n: Node) -> Node:
    return replace(n, label="") if n.label else n


def _node_equal(g: Node, p: Node, policy: MathPolicy) -> bool:
    if g.kind == p.kind == "seq" and nodes.inequality(p) and not nodes.inequality(g) and not nodes.plainly_interval(g):
        # intervals and points never compare equal: a gold (0, 1) may be a point, and 0 < x < 1
        # is not one (a gold inequality says the answer is an interval: (0, 1) answers it)
        return False
    if g.label and p.label and g.label != p.label and not readings.same_function(g.label, p.label, g.value):
        return False  # restated labels must match: "a_{38} = 19" does not answer a_{37}
    if _record(g) and _record(p):  # both give labels: match label by label, in any order
        by_label = {c.label: c for c in p.items}
        return (
            _tuple_like(g, p)
            and set(by_label) == {c.label for c in g.items}
            and all(_node_equal(_unlabelled(c), _unlabelled(by_label[c.label]), policy) for c in g.items)
        )
    if (_record(g) or _record(p)) and _tuple_like(g, p):
        # labels on one side only: the values in the gold's order (a label both sides give
        # must still match)
        return len(g.items) == len(p.items) and all(
            _node_equal(x, y, policy) for x, y in zip(g.items, p.items, strict=True)
        )
    if g.kind == "set" and p.kind == "list":
        return nodes.match_unordered(
            g.items, p.items, lambda x, y: _node_equal(x, y, policy)
        )  # "3, -2" answers {-2, 3}
    if g.kind == "list" and p.kind == "set" and p.brackets != "±" and not nodes.unordered_gold(g):
        p = replace(p, kind="list")  # a set for a list: compared in the order it is written
    if g.kind == "list" and p.kind == "set":
        return nodes.match_unordered(
            g.items, p.items, lambda x, y: _node_equal(x, y, policy)
        )  # \\pm readings have no written order
    if {g.kind, p.kind} == {"matrix", "seq"}:
        # a column vector written as a tuple: (1, 2) for \\begin{pmatrix}1\\\\2\\end{pmatrix}
        m, t = (g, p) if g.kind == "matrix" else (p, g)
        if (
            t.brackets not in _VECTOR_BRACKETS.get(m.value[7:14].partition("}")[0], ("()",))
            or len(m.items) != len(t.items)
            or any(len(row.items) != 1 for row in m.items)
        ):
            return False
        return all(
            _node_equal(x, y, policy)
            for x, y in zip(
                [r.items[0] for r in g.items] if g is m else g.items,
                [r.items[0] for r in p.items] if p is m else p.items,
                strict=True,
            )
        )
    if {g.kind, p.kind} == {"matrix", "scalar"} and "\\begin" in (g.value + p.value):
        # matrix arithmetic (2\\begin{pmatrix}...\\end{pmatrix}, a product): evaluate both
        return expr_equal(parse_scalar(to_latex(g.value)), parse_scalar(to_latex(p.value)), policy)
    if (
        {g.kind, p.kind} == {"seq", "scalar"}
        and (g.value if g.kind == "seq" else p.value)
        and _REL.search(g.value + p.value)
    ):
        # an inequality read as an interval against one that is not (-x > -1 for x < 1)
        return _scalar_equal(g.value, p.value, policy)
    if g.kind == "seq" and p.kind in ("union", "seq") and g.label.startswith("|") and len(g.items) == 2:
        # 1 \le |z| \le 2 is also the values of z: [-2, -1] \cup [1, 2]
        union = readings.abs_union(g.label, g.brackets, g.items[0].value, g.items[1].value)
        if union is not None and _node_equal(structure(union), p, policy):
            return True
    if p.kind == "seq" and g.kind in ("union", "seq") and p.label.startswith("|") and len(p.items) == 2:
        union = readings.abs_union(p.label, p.brackets, p.items[0].value, p.items[1].value)
        if union is not None and _node_equal(g, structure(union), policy):
            return True  # |x| \ge 1 answers (-\infty, -1] \cup [1, \infty)
    if g.kind != p.kind:
        return False
    if g.kind == "scalar":
        return _scalar_equal(g.value, p.value, policy)
    if len(g.items) != len(p.items) and not (g.kind in ("set", "union", "list") and p.kind == g.kind):
        return False
    points = g.kind == "list" and all(c.kind == "seq" and c.brackets == "()" for c in g.items)
    if g.kind in ("set", "union") or points:
        # a list of points or solution pairs has no order either: (1,2), (3,4) is (3,4), (1,2);
        # a solution written twice is one solution
        return nodes.cover(g.items, p.items, lambda x, y: _node_equal(x, y, policy))
    if g.kind == "list" and (not policy.ordered_lists or (g.label and not _record(g))):
        return nodes.match_unordered(
            g.items, p.items, lambda x, y: _node_equal(x, y, policy)
        )  # a = 4, -8, -10: the values of a
    if g.kind == "seq" and g.brackets != p.brackets or len(g.items) != len(p.items):
        return False
    return all(_node_equal(x, y, policy) for x, y in zip(g.items, p.items, strict=True))


@lru_cache(maxsize=8192)
def parse_answer(text: str, assignment: bool = True, decimal_comma: bool = False, alternatives: bool = False) -> Node:
    """Clean and structure an answer, parsing every scalar (so a bad ground truth fails here,
    once, and is cached). With ``assignment``, ``n = 1, 2, 3`` and ``D = (0, 1)`` are their
    right-hand sides. With ``alternatives`` (a ground truth), ``(11,7) or (7,11)`` lists every
    solution: a set, all of which an answer must give."""
    c = clean(text, decimal_comma)
    if c.degrees or c.percent:
        node = Node("scalar", value=untrusted.strip(text))
    else:
        body = c.text
        if alternatives and c.hedged:
            body = OR_WORD.sub(", ", body)
        node = structure(body, assignment)
        if alternatives and c.hedged and node.kind == "list":
            # "x < -1 or x > 1" is a union of intervals; "(11,7) or (7,11)" a set of solutions
            intervals = all(n.kind == "seq" and n.label and len(n.items) == 2 for n in node.items)
            node = replace(node, kind="union" if intervals else "set")
    _parse_leaves(node)
    return node


def _undefined(node: Node, policy: MathPolicy) -> bool:
    if node.kind != "scalar":
        return any(_undefined(c, policy) for c in node.items)
    text = _scalar_text(clean(node.value).text, policy)
    if CLOCK_TIME.match(text) or _numeral(text) or text_answer(text) is not None:
        return False
    value = parse_scalar(text)
    return bool(getattr(value, "has", None) and value.has(_sympy().zoo, _sympy().nan))


def _sympy() -> Any:
    import sympy

    return sympy


def _parse_leaves(node: Node) -> None:
    if node.kind == "scalar":
        c = clean(node.value)
        if CLOCK_TIME.match(c.text) or _numeral(c.text) or text_answer(_scalar_text(c.text, MathPolicy())) is not None:
            return
        parse_scalar(_scalar_text(c.text, MathPolicy()))
        if text_answer(c.text) is None:
            parse_scalar(c.text)
        return
    if node.kind == "matrix" and node.value:
        parse_scalar(to_latex(node.value))
    for child in node.items:
        _parse_leaves(child)


def compare_texts(gold: str, pred: str, policy: MathPolicy) -> tuple[str, str]:
    """``(status, detail)`` with status ``equal``, ``unequal``, ``gold_unparseable`` or
    ``pred_unparseable``. Runs in a worker process (see ``rlvr.rewards.math``).

    A side that does not parse because it is written in words is compared as text
    (``math.prose``): a text gold is decided, never left undecided."""
    if prose.ellipsis(gold) or prose.ellipsis(pred):
        return prose.as_written(gold, pred)
    status = _compare_math(gold, pred, policy)
    if status[0] == "gold_unparseable" and prose.wordy(gold):
        return prose.as_text(gold, pred)
    written = as_written(gold, policy.decimal_comma) if status[0] == "gold_unparseable" else None
    if written is not None and OUTSIDE in status[1] and written == as_written(pred, policy.decimal_comma):
        return "equal", "written as the gold"  # \frac{a+b}{\gcd(a,b)}: a form no parser here reads
    if status[0] == "pred_unparseable" and prose.wordy(pred) and prose.normal(gold) == prose.normal(pred):
        return "equal", ""
    return status


def _compare_math(gold: str, pred: str, policy: MathPolicy) -> tuple[str, str]:
    if not policy.decimal_comma:
        gold, pred = readings.decimal_comma_pair(gold, pred)
    if policy.chained:
        gold, pred = chains.last_sides(gold, pred, policy)
    else:
        gold = chains.settled_gold(gold, policy)
        try:
            pred = chains.settled(pred, policy)
        except (MemoryError, RecursionError):
            raise
        except Exception as exc:  # noqa: BLE001 - a chain the answer wrote: charged, never masked
            return "unequal", f"could not compare the chain: {type(exc).__name__}: {str(exc)[:120]}"
    problem = gold_problem(gold, policy)
    if problem:
        return "gold_unparseable", problem
    try:
        g = parse_answer(gold, policy.assignment, policy.decimal_comma, True)
    except ParseFailure as exc:  # a gold in words (gold_problem passed it): compare_texts reads it as text
        return "gold_unparseable", str(exc)
    try:
        cg, cp = clean(gold, policy.decimal_comma), clean(pred, policy.decimal_comma)
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    tg, tp = CLOCK_TIME.match(cg.text), CLOCK_TIME.match(cp.text)
    if tg and tp:  # 8:34 p.m. is 20:34
        same = readings.clock_24h(tg.groups(), cg.unit) == readings.clock_24h(tp.groups(), cp.unit)
        return ("equal", "") if same else ("unequal", "another time")
    if _units_differ(cg, cp):
        return "unequal", f"another unit ({' '.join(cp.unit)}, expected {' '.join(cg.unit)})"
    if cp.hedged:
        if g.kind not in ("list", "set", "union"):
            return "unequal", "hedged answer (several alternatives)"
        # "x = -2 or x = 3" answers "find all solutions" as a list, not as a hedge; "x < -1 or
        # x > 1" answers a union of intervals.
        joiner = " \\cup " if g.kind == "union" else ", "
        pred = OR_WORD.sub(lambda _: joiner, pred)
    try:
        p = parse_answer(pred, policy.assignment, policy.decimal_comma)
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    try:
        equal = _node_equal(g, p, policy)
        if not equal and policy.assignment and "=" in gold and "=" in pred:
            # "y = 3x - 2" against "3x - y = 2": the same line, written as two equations.
            try:
                equal = _node_equal(
                    parse_answer(gold, False, policy.decimal_comma),
                    parse_answer(pred, False, policy.decimal_comma),
                    policy,
                )
            except ParseFailure:  # without labels one side is no math ("Maximum = 2"): the labelled reading decided
                equal = False
    except ParseFailure as exc:
        return "pred_unparseable", str(exc)
    except (MemoryError, RecursionError):
        raise
    except Exception as exc:  # noqa: BLE001
        # sympy refusing an operation (a set minus a symbol...). The prediction's form caused
        # it, so it is unequal, not an error: masking it would let a policy escape the
        # correctness term by writing unreadable math. Timeouts stay errors (the pool).
        return "unequal", f"could not compare: {type(exc).__name__}: {str(exc)[:120]}"
    if equal:
        return "equal", ""
    if g.kind != p.kind:
        return "unequal", f"expected a {g.kind}, got a {p.kind}"
    return "unequal", ""


def gold_problem(gold: str, policy: MathPolicy | None = None) -> str | None:
    """Why a ground truth cannot be compared (it does not parse, or it is undefined), or None.
    Runs the same parse as a comparison, so a gold that passes here never turns every sample
    of its prompt into an ``error`` at training time."""
    policy = policy or MathPolicy()
    if prose.ellipsis(gold):
        return None  # a pattern, compared as written (math.prose)
    try:
        g = parse_answer(gold, policy.assignment, policy.decimal_comma, True)
    except ParseFailure as exc:
        if prose.wordy(gold):
            return None  # an answer in words: compared as text (math.prose)
        return str(exc)
    if _undefined(g, policy):
        return "the ground truth is undefined (a division by zero)"
    return None


def fast_compare(gold: str, pred: str, policy: MathPolicy) -> bool | None:
    """Decide cheaply in the calling process when both sides are plain rationals (integers,
    decimals, ``a/b``, ``\\frac{a}{b}``); None means "ask a worker". Bounded: linear regexes on
    at most ``MAX_ANSWER_CHARS`` characters and ``Fraction`` arithmetic on at most 200 digits."""
    if not policy.decimal_comma:
        gold, pred = readings.decimal_comma_pair(gold, pred)
    try:
        cg, cp = clean(gold, policy.decimal_comma), clean(pred, policy.decimal_comma)
    except ParseFailure:
        return None
    if cg.degrees or cp.degrees or cg.percent or cp.percent or cp.hedged or policy.form == "structural":
        return None
    g, p = fast_rational(_scalar_text(cg.text, policy)), fast_rational(_scalar_text(cp.text, policy))
    if g is None or p is None:
        return None
    if _units_differ(cg, cp) or _labels_differ(cg.text, cp.text, policy):
        return False  # 12 cm is not 12 m; x = 3 is not y = 3
    if policy.rel_tol > 1e-9 or policy.abs_tol > 0:
        return abs(g - p) <= max(Fraction(policy.abs_tol), Fraction(policy.rel_tol) * max(abs(g), abs(p)))
    return (
        g == p
        or decimals.expansion_of(cg.text, p)
        or decimals.expansion_of(cp.text, g)
        or decimals.rounds_to(cg.text, p, policy)
    )


def probe_gold(gold: str, policy: MathPolicy) -> bool:
    """Compare ``gold`` with itself and with ``0``: what any comparison with it costs at least. The
    verifier runs it after a timeout to tell a costly answer (wrong) from a costly gold (masked)."""
    compare_texts(gold, gold, policy)
    compare_texts(gold, "0", policy)
    return True


def warm() -> None:
    """Import sympy and parse once, so the first real call is fast."""
    compare_texts("\\frac{1}{2}", "0.5", MathPolicy())
    compare_texts("x^2", "x \\cdot x", MathPolicy())
    compare_texts("\\sin x", "\\sin(x)", MathPolicy())
