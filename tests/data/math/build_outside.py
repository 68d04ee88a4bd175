"""Write ``outside.jsonl``: the (gold, prediction, label) pairs of an outside test suite, as their
authors labelled them, for measuring the ``math`` verifier against graders it was not written with.

    python tests/data/math/build_outside.py MATH_VERIFY_CHECKOUT > tests/data/math/outside.jsonl

Source (read, not run; MARIO_EVAL's pairs were left out: that repository states no licence):

- huggingface/Math-Verify ``tests/`` at 5d148cf (MIT License, Copyright (c) 2024 The HuggingFace
  Team): every ``pytest.mark.parametrize`` list of ``gold, pred, expected`` in test_all,
  test_numina_cases, test_open_thoughts, test_yujianll, test_strict and test_boxed;

Each row gets a ``kind``:

- ``form``: both sides are an answer (bare, in ``$…$`` or one ``\\boxed{}``): agreement is measured here;
- ``extraction``: a side is prose, or several boxes: rlvr reads one answer span and leaves prose
  to the format term (docs/math.md, "Where the answer is read"), so these say nothing about forms;
- ``policy``: the outside label follows a convention rlvr's default deliberately does not (the
  option that flips it is in ``note``);
- ``mislabel``: the outside label is wrong (the reason is in ``note``).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys

FILES = ("test_all", "test_numina_cases", "test_open_thoughts", "test_yujianll", "test_strict", "test_boxed")


# Outside labels that follow a convention rlvr's default does not, with the option that flips them.
POLICY = {
    ("1, 2, 3", "1, 3, 2"): "bare lists are ordered by default (ordered_lists: false)",
    ("10\\%", "0.1"): "a percent sign is dropped by default (percent: either)",
    ("\\frac13, \\sqrt3, \\pi", "1/3, 1.732, 3.1416"): "rounded decimals (rel_tol: 1e-3)",
    ("40\\pi", "125.663"): "rounded decimal (rel_tol: 1e-5)",
    ("x + \\sqrt2I", "x + 1.414I"): "rounded decimal (rel_tol: 1e-3)",
    ("\\begin{cases} a+b=\\frac12 \\\\ a-b=\\sqrt3 \\end{cases}", "\\begin{cases} a+b=0.5\\\\ a-b=1.732\\end{cases}"): (
        "rounded decimal (rel_tol: 1e-3); systems of equations are not read"
    ),
    ("$(\\frac{3}{5},\\frac{8}{3}]$", "$(0.6,2.6667]$"): "rounded to 2 places by math-verify's precision=2 (rel_tol)",
    (
        "$(\\begin{pmatrix}\\frac{1}{3}\\\\ \\frac{1}{5} \\end{pmatrix})$",
        "$\\begin{pmatrix}0.33\\\\0.2 \\end{pmatrix}$",
    ): ("rounded to 2 places by math-verify's precision=2 (rel_tol)"),
    (
        "$f(x)$",
        "$f(y)$",
    ): "math-verify's strict=False ignores variable names; a different variable is a different answer",
    ("$z = 1 + 1 = 2$", "$z = 3+3 = 2$"): "a false chain (3+3 = 2) is not accepted by default (chained: true)",
    ("$x = 11$", "$x = 5+5+1 = 7 =11$"): "a false chain (11 = 7) is not accepted by default (chained: true)",
    (
        "$x = 1/3$",
        "$x = 5+5+1 = 1/3 \\approx 11$",
    ): "a false chain (11 = 1/3) is not accepted by default (chained: true)",
    ("$1 = \\zzz = x = 0$", "$0$"): "the gold holds an unknown command and a false chain: it does not parse",
    ("$(1,3)$", "${1,3}$"): "a gold (1,3) may be an interval or a point; a bare list of two numbers is neither",
    ("7, -2, \\text{ and } -5", "-5,-2,7"): "bare lists are ordered by default (ordered_lists: false)",
}
# Pairs whose prose or broken markup the prose test above does not catch.
EXTRACTION = {
    ("2.74", "Soucis : 2,74 $ a.."): "the answer is a number inside French prose",
    ("\\\\boxed{W(n) = 1 \\\\text{ and } W(n) = -1", "W(x)=1orW(x)=-1"): "the gold's box is never closed",
}
MISLABEL = {
    ("[1,+\\infty)", "[2^{\\frac{1}{2^{1000}}}, \\infty)"): "2^(1/2^1000) is not 1 (it exceeds 1 by about 1e-301); "
    "the label records a float comparison",
    ("$1 - \\frac{1}{\\mathrm{e}}$", "$1 + \\frac{1}{\\mathrm{e}}$"): "1 - 1/e and 1 + 1/e differ; the label records a "
    "math-verify quirk",
}

_TEXT = re.compile(r"\\(?:text|textbf|mathrm|mbox|textnormal|operatorname|begin|end)\{[^{}]*\}")
_CMD = re.compile(r"\\[a-zA-Z]+")


def _prose(s: str) -> bool:
    t = _CMD.sub(" ", _TEXT.sub(" ", s))
    return len(re.findall(r"[A-Za-z]{2,}", t)) >= 3 or bool(re.match(r"\s*(?:Answer|The|So|We|Here)\b", s))


def _boxes(s: str) -> int:
    return s.count("\\boxed")


def kind(gold: str, pred: str) -> tuple[str, str]:
    if (gold, pred) in MISLABEL:
        return "mislabel", MISLABEL[gold, pred]
    if (gold, pred) in POLICY:
        return "policy", POLICY[gold, pred]
    if (gold, pred) in EXTRACTION:
        return "extraction", EXTRACTION[gold, pred]
    if _prose(gold) or _prose(pred):
        return "extraction", "a side is prose: rlvr reads the answer span only"
    if _boxes(gold) > 1 or _boxes(pred) > 1:
        return "extraction", "several boxes: a hedge under rlvr's default (answer.boxed: only)"
    return "form", ""


def math_verify_rows(checkout: str) -> list[tuple[str, str, str, int]]:
    rows = []
    for name in FILES:
        src = subprocess.run(
            ["git", "--git-dir", checkout, "show", f"HEAD:tests/{name}.py"], capture_output=True, text=True, check=True
        ).stdout
        for fn in ast.parse(src).body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            for dec in fn.decorator_list:
                if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
                    continue
                names = [n.strip() for n in ast.literal_eval(dec.args[0]).split(",")]
                try:
                    values = ast.literal_eval(dec.args[1])
                except ValueError:
                    continue  # test_float_precision builds its cases with f-strings
                for v in values:
                    d = dict(zip(names, v, strict=True))
                    extra = {k: d[k] for k in d if k not in ("gold", "pred", "expected", "result")}
                    if extra.get("strict") is True or extra.get("allow_set_relation_comp") is True:
                        continue  # the same pair again under a non-default option
                    if extra.get("allow_set_relation_comp") is False:
                        POLICY[d["gold"], d["pred"]] = (
                            "math-verify's allow_set_relation_comp=False keeps a relation apart from a set; rlvr "
                            "reads an inequality in one variable as its interval"
                        )
                    label = d.get("expected", d.get("result"))
                    rows.append((f"math-verify/{name}.py:{fn.name}", d["gold"], d["pred"], int(bool(label))))
    return rows


def main(checkout: str) -> None:
    rows = math_verify_rows(checkout)
    seen = set()
    for source, gold, pred, label in rows:
        if (gold, pred, label) in seen:
            continue
        seen.add((gold, pred, label))
        k, note = kind(gold, pred)
        row = {"source": source, "label": "equal" if label else "unequal", "kind": k, "gold": gold, "pred": pred}
        print(json.dumps(row | ({"note": note} if note else {}), ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1])
