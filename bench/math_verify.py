"""rlvr's math verifier vs math-verify, side by side, on one core.

    OMP_NUM_THREADS=1 .venv/bin/python bench/math_verify.py [--pairs 1200] [--seed 0] [--only rlvr]
    OMP_NUM_THREADS=1 .venv/bin/python bench/math_verify.py --external-only   # real completions only

Both verifiers get the same (gold, prediction) pairs:

- ``corpus``: the labelled corpus in ``tests/data/math/corpus.tsv`` (hand-written from the answer
  forms of MATH, NuminaMath, AIME, olympiad and GSM8K-style data, each case with a form tag and
  the reason for its label); agreement, false positives and false negatives are printed per form;

- ``generated``: >= 1,000 distinct pairs from templates (integers with separators and units,
  fractions and decimals, radicals, multiples of pi, factored vs expanded polynomials,
  intervals, tuples, sets, scientific notation, powers, equations), half equivalent and half
  perturbed, labelled by construction;
- ``long``: 440 long chain-of-thought completions as reasoning models write them (paragraphs,
  display math, second thoughts, intermediate boxes inside ``<think>``, the final box after
  ``</think>``; 2,600-11,800 characters), written by ``tests/data/math/make_long.py`` (seed 25) and
  labelled by construction: rlvr reads the last box after ``</think>``, math-verify parses the
  whole completion as its README shows; CPU seconds of both and the ratio;
- ``external``: real completions (``../shared/data/external_math3.jsonl``, 662 answers without
  labels: whole Omni-MATH completions, 40 models' MATH level-5 answers, OlympiadBench's scoring
  examples): how many each calls correct, the CPU of both in one run and their ratio, and how
  much of rlvr's CPU is spent in the LaTeX grammar;
- ``outside``: math-verify's own labelled pairs (``tests/data/math/outside.jsonl``),
  agreement on the rows where both sides are answers;
- ``labelled``: a hand-written subset with the label a careful grader would give, including the
  adversarial cases from issue 3 (1/2^99 vs 1/2^98, 1 - 1/e vs 1 + 1/e, "= 0" equations,
  4\\sqrt(2) vs 4, hedges, power towers, a ground truth that does not parse).

The process and its verifier worker are pinned to one CPU (``sched_setaffinity``), rlvr with a
single worker process. Wall-clock rates move with whatever else the machine runs; the CPU rates
(rlvr's comparison run in-process, math-verify's ``parse``+``verify``) are the steadier ratio.
Printed: verifications per second for both, the throughput ratio,
agreement with the labels on both sets, and every false positive on the adversarial list.
math-verify runs in the main thread, where its ``signal.alarm`` timeout works. Its ``verify``
is called as ``verify(gold, pred)``, the order its README prescribes.

To measure an older rlvr on the same pairs, put its source first on the path:
``git archive COMMIT src | tar -x -C /tmp/old && PYTHONPATH=/tmp/old/src python bench/math_verify.py --only rlvr``.

A benchmark, not a test: nothing here asserts timings.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "math"
CORPUS = DATA / "corpus.tsv"


def load_long() -> list[dict[str, object]]:
    """The long completions, generated in memory by ``tests/data/math/make_long.py``."""
    import contextlib
    import io
    import json
    import runpy

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(DATA / "make_long.py"), run_name="__main__")
    return [json.loads(line) for line in out.getvalue().splitlines()]


def load_outside() -> list[tuple[str, str, bool]]:
    """(gold, prediction, equal?) of the outside suite's ``form`` rows, each side's box taken."""
    import json

    from rlvr.rewards import AnswerFormat, extract

    def span(text: str) -> str:
        ex = extract(text, AnswerFormat(style="boxed")) if "\\boxed" in text else None
        return text if ex is None or not ex.ok or ex.answer is None else ex.answer

    rows = [json.loads(line) for line in (DATA / "outside.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(span(r["gold"]), span(r["pred"]), r["label"] == "equal") for r in rows if r["kind"] == "form"]


def long_cpu(rows: list[dict[str, object]], which: str) -> tuple[list[bool | None], float]:
    """Verdicts and CPU seconds on the long completions: rlvr's extraction and comparison in this
    process (what its verifier and worker do, without the pipe), or math-verify's parse+verify of
    the whole completion."""
    out: list[bool | None] = []
    if which == "rlvr":
        from rlvr.rewards import AnswerFormat, extract
        from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare, warm
        from rlvr.rewards.math.text import clean

        warm()
        _clear_caches()
        clean.cache_clear()
        fmt, policy = AnswerFormat(style="boxed", think="prefilled", boxed="last"), MathPolicy()
        start = time.process_time()
        for r in rows:
            ex = extract(str(r["completion"]), fmt)
            if not ex.ok or ex.answer is None:
                out.append(None)
                continue
            fast = fast_compare(str(r["gold"]), ex.answer, policy)
            out.append(fast if fast is not None else compare_texts(str(r["gold"]), ex.answer, policy)[0] == "equal")
        return out, time.process_time() - start
    _off_path()
    from math_verify import parse, verify

    verify(parse("$1$"), parse("$1$"))
    start = time.process_time()
    for r in rows:
        try:
            out.append(bool(verify(parse(f"${r['gold']}$"), parse(str(r["completion"])))))
        except Exception:  # noqa: BLE001
            out.append(None)
    return out, time.process_time() - start


# repo/../shared/data; a git worktree under repo/../wt/ sees it one level further up
_REPO = Path(__file__).resolve().parent.parent
EXTERNAL = next(
    (
        p
        for p in (
            _REPO.parent / "shared" / "data" / "external_math3.jsonl",
            _REPO.parent.parent / "shared" / "data" / "external_math3.jsonl",
        )
        if p.exists()
    ),
    _REPO.parent / "shared" / "data" / "external_math3.jsonl",
)


def external_cpu(rows: list[dict[str, str]], which: str) -> tuple[list[bool], float, float]:
    """Verdicts (correct or not) and CPU seconds on real completions (``external_math3.jsonl``):
    rlvr's extraction of the last box and its comparison in this process, or math-verify's
    parse+verify of the whole completion. The third value is rlvr's CPU inside the LaTeX grammar
    (``latex2sympy2_extended``), where its time goes."""
    out: list[bool] = []
    if which == "rlvr":
        import latex2sympy2_extended

        from rlvr.rewards import AnswerFormat, extract
        from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare, warm
        from rlvr.rewards.math.text import clean

        warm()
        _clear_caches()
        clean.cache_clear()
        grammar = [0.0]
        real = latex2sympy2_extended.latex2sympy

        def timed(*a: object, **k: object) -> object:
            t = time.process_time()
            try:
                return real(*a, **k)
            finally:
                grammar[0] += time.process_time() - t

        latex2sympy2_extended.latex2sympy = timed  # type: ignore[assignment]
        fmt, policy = AnswerFormat(style="boxed", boxed="last"), MathPolicy()
        start = time.process_time()
        for r in rows:
            ex = extract(r["completion"], fmt)
            if not ex.ok or ex.answer is None:
                out.append(False)
                continue
            fast = fast_compare(r["answer"], ex.answer, policy)
            out.append(fast if fast is not None else compare_texts(r["answer"], ex.answer, policy)[0] == "equal")
        seconds = time.process_time() - start
        latex2sympy2_extended.latex2sympy = real  # type: ignore[assignment]
        return out, seconds, grammar[0]
    _off_path()
    from math_verify import parse, verify

    verify(parse("$1$"), parse("$1$"))
    start = time.process_time()
    for r in rows:
        try:
            out.append(bool(verify(parse(f"${r['answer']}$"), parse(r["completion"]))))
        except Exception:  # noqa: BLE001
            out.append(False)
    return out, time.process_time() - start, 0.0


def external(path: Path, only: str | None) -> None:
    """Side by side on real completions, one core: answers each calls correct, CPU, the ratio."""
    import json

    if not path.exists():
        print(f"\nexternal: {path} not found (the shared data sits next to the repository); skipped")
        return
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]
    print(f"\nreal completions: {len(rows)} from {path.name}")
    cpu: dict[str, float] = {}
    for name in ("rlvr", "math-verify"):
        if only and name != only:
            continue
        got, seconds, grammar = external_cpu(rows, name)
        cpu[name] = seconds
        where = f" ({grammar:.2f} s of it in the LaTeX grammar)" if name == "rlvr" else ""
        print(f"  {name:<12} correct {sum(got)}/{len(rows)}  CPU {seconds:6.2f} s{where}")
    if len(cpu) == 2:
        print(f"  ratio math-verify CPU / rlvr CPU on real completions: {cpu['math-verify'] / cpu['rlvr']:.1f}x")


def long_wall(rows: list[dict[str, object]]) -> tuple[float, float]:
    """Wall and CPU seconds (this process and its worker) of the verifier itself on the long
    completions: extraction here, comparisons in one fresh worker (warmed, caches cold), the pipe
    included."""
    from rlvr.rewards import AnswerFormat, Sample
    from rlvr.rewards.math import PRELOAD, MathVerifier
    from rlvr.rewards.pool import WorkerPool

    pool = WorkerPool(1, PRELOAD)
    pool.warm()
    pool.call("rlvr.rewards.math.core:warm")
    fmt = AnswerFormat(style="boxed", think="prefilled", boxed="last")
    v = MathVerifier(answer_format=fmt, pool=pool, timeout=5.0)
    samples = [Sample(str(r["completion"]), {"answer": r["gold"]}) for r in rows]
    worker0 = pool.call("time:process_time").value
    start, cpu = time.perf_counter(), time.process_time()
    v.verify_batch(samples)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    cpu += pool.call("time:process_time").value - worker0
    pool.close()
    return seconds, cpu


def _clear_caches() -> None:
    from rlvr.rewards.math.core import parse_answer, parse_scalar

    parse_answer.cache_clear()  # cold, like math-verify's runs: every text is new to it
    parse_scalar.cache_clear()


def _off_path() -> None:
    # This file is named math_verify.py too: take its folder off the path to import the package.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.modules.pop("math_verify", None)


def load_corpus(path: Path = CORPUS) -> list[tuple[str, str, str, bool]]:
    """``(form, gold, prediction, equal?)`` for every case of the labelled corpus."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#") or line.startswith("form\t"):
            continue
        form, label, gold, pred, _source, _reason = line.split("\t")
        out.append((form, gold, pred, label == "equal"))
    return out


# (gold, prediction, equivalent?) -- labels follow rlvr's default policy where the corpora
# disagree (ordered bare lists, exact numbers, 45° is 45 unless the task says degrees).
LABELLED: list[tuple[str, str, bool]] = [
    (r"\frac{1}{2^{99}}", r"\frac{1}{2^{98}}", False),
    (r"1-\frac{1}{e}", r"1+\frac{1}{e}", False),
    (r"x^2+2x+1=0", r"x^2-1=0", False),
    (r"x^2-4=0", r"x^2+4=0", False),
    ("4", r"4\sqrt(2)", False),
    (r"\frac{1}{2004!}", r"\frac{1}{2006!}", False),
    ("5", r"3 \text{ or } 5", False),
    ("5", "3 or 5", False),
    ("5", r"10^{10^{10^{10}}}", False),
    (r"\frac{\pi}{4}", r"45^\circ", False),
    (r"\sqrt{2}/2", "0.7071", False),
    ("1, 2, 3", "3, 2, 1", False),
    ("(1,2]", "(1,2)", False),
    ("10", "100", False),
    (r"\frac{3}{4}", r"\frac{4}{3}", False),
    ("x+1", "x-1", False),
    (r"\{1,2\}", r"\{1,2,3\}", False),
    (r"2\sqrt{3}", r"3\sqrt{2}", False),
    ("(1,2)", "(2,1)", False),
    ("0.1", "0.01", False),
    (r"\pi", "3.14", False),
    (r"e^{2}", r"2e", False),
    ("1000000", "100000", False),
    ("-3", "3", False),
    (r"\frac{1}{2}", "0.5", True),
    (r"\frac12", "1/2", True),
    (r"\sqrt{2}/2", r"\frac{\sqrt2}{2}", True),
    (r"4\sqrt{2}", r"4\sqrt(2)", True),
    (r"x^2+2x+1=0", r"(x+1)^2=0", True),
    ("3", "x = 3", True),
    ("300000", r"3\times 10^{5}", True),
    ("1,000", "1000", True),
    ("10", r"10 \text{ cm}", True),
    (r"2\pi", r"2 \pi", True),
    ("x^2-1", "(x-1)(x+1)", True),
    (r"\{1,2\}", r"\{2,1\}", True),
    ("(1,2]", "(1, 2]", True),
    (r"[0,1) \cup (2,3]", r"(2,3] \cup [0,1)", True),
    (r"\begin{pmatrix}1&2\\3&4\end{pmatrix}", r"\begin{pmatrix}1 & 2\\ 3 & 4\end{pmatrix}", True),
    (r"\frac{\sqrt{3}}{3}", r"\frac{1}{\sqrt{3}}", True),
    (r"2^{10}", "1024", True),
    (r"\frac{7}{8}", "0.875", True),
    ("-0.5", r"-\frac{1}{2}", True),
    (r"\sin^2 x + \cos^2 x", "1", True),
    (r"\log_2 8", "3", True),
    (r"\binom{5}{2}", "10", True),
    ("y = 2x + 1", "1 + 2x", True),
    (r"\dfrac{5}{6}", r"\frac{5}{6}", True),
    (r"50\%", "50", True),
    (r"\infty", r"\infty", True),
    # Realistic forms ("2 \\le x \\le 5" as an interval, e^{i\\pi} and repeating decimals were
    # missed before issue 13).
    (r"\frac{3}{2}", r"1\frac{1}{2}", True),
    (r"\frac{\sqrt{2}}{2}", r"\frac{1}{\sqrt{2}}", True),
    ("12", r"12 \text{ inches}", True),
    ("12", r"\$12", True),
    ("12", r"\$12.00", True),
    ("0.25", r"25\%", False),
    ("(3, -2)", r"\left( 3, -2 \right)", True),
    ("(3,-2)", "(3,2)", False),
    (r"x \in [2, 5]", "[2,5]", True),
    (r"[2,5]", r"2 \le x \le 5", True),
    ("-2, 3", r"x = -2 \text{ or } x = 3", True),
    (r"\{-2, 3\}", "3, -2", True),
    ("5", r"5^\circ", True),
    (r"90^\circ", "90", True),
    (r"2\sqrt{2}", r"\sqrt{8}", True),
    (r"\sqrt{12}", r"2\sqrt{3}", True),
    (r"\frac{\pi}{3}", r"60^\circ", False),
    (r"e^{i\pi}", "-1", True),
    (r"\ln(e^2)", "2", True),
    (r"\cos(\pi)", "-1", True),
    ("1.5", r"\frac{3}{2}", True),
    (r"3.\overline{3}", r"\frac{10}{3}", True),
    ("1000", r"10^3", True),
    (r"6.02 \times 10^{23}", "6.02e23", True),
    ("2", r"\boxed{2}", True),
    ("-1", r"-1.", True),
    ("7", r"7.0", True),
    ("7", "7.01", False),
    ("x^2 + 2x + 1", "(x+1)^2", True),
    ("2x", "x2", True),
    (r"a^2 - b^2", "(a-b)(a+b)", True),
    ("y = 3x - 2", "y = -2 + 3x", True),
    ("y = 3x - 2", "3x - y = 2", True),
    ("x > 3", "3 < x", True),
    ("x > 3", "x \\geq 3", False),
    (r"(-\infty, 3)", r"(-\infty,3)", True),
    ("\\text{Monday}", "Monday", True),
    ("\\text{Monday}", "Tuesday", False),
    ("10", "10 or 12", False),
    ("10", "10, 12", False),
    ("5", "5 \\pm 1", False),
]
ADVERSARIAL = [(g, p) for g, p, ok in LABELLED[:13] if not ok]


def generate(n: int, seed: int) -> list[tuple[str, str, bool]]:
    rng = random.Random(seed)
    seen: set[tuple[str, str]] = set()
    out: list[tuple[str, str, bool]] = []

    def add(g: str, p: str, ok: bool) -> None:
        if (g, p) not in seen:
            seen.add((g, p))
            out.append((g, p, ok))

    while len(out) < n:
        kind = rng.randrange(11)
        same = rng.random() < 0.5
        if kind == 0:
            a = rng.randrange(1000, 10**7)
            b = a if same else a + rng.choice([-1, 1]) * rng.randrange(1, 100)
            p = rng.choice([f"{b:,}", str(b), f"x = {b}", f"{b} \\text{{ apples}}"])
            add(str(a), p, same)
        elif kind == 1:
            a, b = rng.randrange(1, 200), rng.randrange(2, 200)
            q = Fraction(a, b)
            r = q if same else q + Fraction(1, rng.randrange(2, 50))
            add(
                f"\\frac{{{q.numerator}}}{{{q.denominator}}}",
                rng.choice([f"{r.numerator}/{r.denominator}", f"\\frac{{{r.numerator * 3}}}{{{r.denominator * 3}}}"]),
                same,
            )
        elif kind == 2:
            k, m = rng.randrange(2, 12), rng.choice([2, 3, 5, 6, 7, 10, 11])
            p = f"\\sqrt{{{k * k * m}}}" if same else f"\\sqrt{{{k * k * m + rng.randrange(1, 5)}}}"
            add(f"{k}\\sqrt{{{m}}}", p, same)
        elif kind == 3:
            a, b = rng.randrange(1, 30), rng.randrange(2, 30)
            c = a if same else a + 1
            add(f"\\frac{{{a}\\pi}}{{{b}}}", f"\\frac{{{c}}}{{{b}}}\\pi", same)
        elif kind == 4:
            a, b = rng.randrange(-9, 10), rng.randrange(-9, 10)
            c = a * b if same else a * b + rng.choice([-1, 1])
            add(f"(x{a:+d})(x{b:+d})", f"x^2{a + b:+d}x{c:+d}", same)
        elif kind == 5:
            a = rng.randrange(-50, 50)
            b = a + rng.randrange(1, 50)
            lo, hi = rng.choice("[("), rng.choice("])")
            hi2 = hi if same else {"]": ")", ")": "]"}[hi]
            add(f"{lo}{a},{b}{hi}", f"{lo}{a}, {b}{hi2}", same)
        elif kind == 6:
            a, b = rng.randrange(-99, 99), rng.randrange(-99, 99)
            if a == b:
                continue
            add(f"({a},{b})", f"({a}, {b})" if same else f"({b}, {a})", same)
        elif kind == 7:
            xs = rng.sample(range(-30, 30), 3)
            ys = xs[:]
            rng.shuffle(ys)
            if not same:
                ys[0] += 100
            add("\\{" + ",".join(map(str, xs)) + "\\}", "\\{" + ", ".join(map(str, ys)) + "\\}", same)
        elif kind == 8:
            m, e = rng.randrange(11, 99), rng.randrange(3, 9)
            v = m * 10 ** (e - 1)
            add(f"{m / 10}\\times 10^{{{e}}}", str(v if same else v * 10), same)
        elif kind == 9:
            base, e = rng.randrange(2, 9), rng.randrange(2, 12)
            v = base**e
            add(f"{base}^{{{e}}}", str(v if same else v + base), same)
        else:
            a, b = rng.randrange(1, 20), rng.randrange(1, 40)
            c = b if same else b + 1
            add(f"{a}x + {b} = 0", f"{2 * a}x + {2 * c} = 0", same)
    return out


def run_ours(pairs: list[tuple[str, str, bool]]) -> tuple[list[bool | None], float]:
    from rlvr.rewards import AnswerFormat, Outcome, Sample
    from rlvr.rewards.math import PRELOAD, MathVerifier
    from rlvr.rewards.pool import WorkerPool

    pool = WorkerPool(1, PRELOAD)
    pool.warm()
    pool.call("rlvr.rewards.math.core:warm")
    v = MathVerifier(answer_format=AnswerFormat(style="boxed"), pool=pool, timeout=5.0)
    samples = [Sample(f"\\boxed{{{p}}}", {"answer": g}) for g, p, _ in pairs]
    start = time.perf_counter()
    verdicts = v.verify_batch(samples)
    seconds = time.perf_counter() - start
    pool.close()
    return [None if x.outcome is Outcome.ERROR else x.outcome is Outcome.CORRECT for x in verdicts], seconds


def cpu_ours(pairs: list[tuple[str, str, bool]]) -> float:
    """CPU seconds of rlvr's comparison work for ``pairs``, run in this process (what its worker
    does, without the pipe): steadier than wall time on a shared machine."""
    from rlvr.rewards.math.core import MathPolicy, compare_texts, fast_compare, warm

    warm()
    _clear_caches()
    policy = MathPolicy()
    start = time.process_time()
    for g, p, _ in pairs:
        if fast_compare(g, p, policy) is None:
            compare_texts(g, p, policy)
    return time.process_time() - start


def run_math_verify(pairs: list[tuple[str, str, bool]]) -> tuple[list[bool | None], float]:
    _off_path()
    from math_verify import parse, verify

    verify(parse("$1$"), parse("$1$"))  # warm the grammar
    out: list[bool | None] = []
    start, cpu = time.perf_counter(), time.process_time()
    for g, p, _ in pairs:
        try:
            out.append(bool(verify(parse(f"${g}$"), parse(f"${p}$"))))
        except Exception:  # noqa: BLE001
            out.append(None)
    MV_CPU.append(time.process_time() - cpu)
    return out, time.perf_counter() - start


MV_CPU: list[float] = []  # CPU seconds of each math-verify run, in call order


def agreement(results: list[bool | None], pairs: list[tuple[str, str, bool]]) -> tuple[int, int, int, int]:
    agree = sum(r is not None and r == ok for r, (_, _, ok) in zip(results, pairs, strict=True))
    fp = sum(r is True and not ok for r, (_, _, ok) in zip(results, pairs, strict=True))
    fn = sum(r is False and ok for r, (_, _, ok) in zip(results, pairs, strict=True))
    err = sum(r is None for r in results)
    return agree, fp, fn, err


def per_form(cases: list[tuple[str, str, str, bool]], results: dict[str, list[bool | None]]) -> None:
    names = list(results)
    header = f"{'form':<11} {'n':>4} {'neg':>4}" + "".join(
        f" | {n[:11]:>11} {'FP':>3} {'FN':>3} {'err':>3}" for n in names
    )
    print(header)
    forms = list(dict.fromkeys(c[0] for c in cases)) + ["ALL"]
    for form in forms:
        idx = [i for i, c in enumerate(cases) if form in ("ALL", c[0])]
        sub = [(cases[i][1], cases[i][2], cases[i][3]) for i in idx]
        line = f"{form:<11} {len(idx):>4} {sum(not s[2] for s in sub):>4}"
        for n in names:
            a, fp, fn_, err = agreement([results[n][i] for i in idx], sub)
            line += f" | {a:>5}/{len(idx):<5} {fp:>3} {fn_:>3} {err:>3}"
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--only", choices=("rlvr", "math-verify"), help="run one verifier (e.g. an older rlvr via PYTHONPATH)"
    )
    ap.add_argument("--external", type=Path, default=EXTERNAL, help="real completions (external_math3.jsonl)")
    ap.add_argument("--external-only", action="store_true", help="run only the real-completions comparison")
    args = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # the worker inherits it
    if args.external_only:
        external(args.external, args.only)
        return 0
    corpus = load_corpus()
    corpus_pairs = [(g, p, ok) for _, g, p, ok in corpus]
    generated = generate(args.pairs, args.seed)
    print(
        f"{len(corpus)} corpus cases ({sum(not c[3] for c in corpus)} negatives), "
        f"{len(generated)} distinct generated pairs, {len(LABELLED)} hand-labelled pairs, one core"
    )
    from rlvr.rewards.math.core import MathPolicy, fast_compare

    inproc = sum(fast_compare(g, p, MathPolicy()) is not None for g, p, _ in generated)
    print(f"rlvr decides {inproc} of the generated pairs in-process (plain rationals); the rest go to its worker")
    rows = []
    corpus_results: dict[str, list[bool | None]] = {}
    for name, fn in (("rlvr", run_ours), ("math-verify", run_math_verify)):
        if args.only and name != args.only:
            continue
        gen, gen_s = fn(generated)
        lab, _ = fn(LABELLED)
        cor, cor_s = fn(corpus_pairs)
        corpus_results[name] = cor
        rows.append((name, gen, gen_s, lab, cor, cor_s))
    print(
        f"\n{'verifier':<12} {'verif/s':>9} {'generated agree':>16} {'FP':>4} {'FN':>4} {'err':>4} "
        f"{'labelled agree':>15} {'FP':>4} {'FN':>4} {'err':>4} "
        f"{'corpus agree':>13} {'FP':>4} {'FN':>4} {'err':>4} {'corpus/s':>9}"
    )
    for name, gen, gen_s, lab, cor, cor_s in rows:
        a, fp, fn_, err = agreement(gen, generated)
        la, lfp, lfn, lerr = agreement(lab, LABELLED)
        ca, cfp, cfn, cerr = agreement(cor, corpus_pairs)
        print(
            f"{name:<12} {len(generated) / gen_s:>9.1f} {a:>7}/{len(generated):<8} {fp:>4} {fn_:>4} {err:>4} "
            f"{la:>7}/{len(LABELLED):<7} {lfp:>4} {lfn:>4} {lerr:>4} "
            f"{ca:>6}/{len(corpus):<6} {cfp:>4} {cfn:>4} {cerr:>4} {len(corpus) / cor_s:>9.1f}"
        )
    if len(rows) == 2:
        ratio = (len(generated) / rows[0][2]) / (len(generated) / rows[1][2])
        print(
            f"\nthroughput ratio rlvr / math-verify (wall): {ratio:.2f}x on the generated pairs, "
            f"{(len(corpus) / rows[0][5]) / (len(corpus) / rows[1][5]):.2f}x on the corpus"
        )
    if args.only != "math-verify":
        gen_cpu, cor_cpu = cpu_ours(generated), cpu_ours(corpus_pairs)
        line = (
            f"rlvr CPU: {len(generated) / gen_cpu:.0f} verif/s generated, "
            f"{len(corpus) / cor_cpu:.0f} verif/s corpus (in-process comparison, no pipe)"
        )
        if len(MV_CPU) == 3:
            mv_gen, mv_cor = MV_CPU[0], MV_CPU[2]
            line += (
                f"; math-verify CPU: {len(generated) / mv_gen:.0f} and {len(corpus) / mv_cor:.0f} verif/s; "
                f"CPU ratio {mv_gen / gen_cpu:.1f}x generated, {mv_cor / cor_cpu:.1f}x corpus"
            )
        print(line)
    external(args.external, args.only)
    long_rows = load_long()
    chars = sorted(len(str(r["completion"])) for r in long_rows)
    print(
        f"\nlong completions: {len(long_rows)} ({chars[0]}-{chars[-1]} characters, median {chars[len(chars) // 2]}),"
        f" {sum(bool(r['label']) for r in long_rows)} correct by construction"
    )
    long_labels = [("", "", bool(r["label"])) for r in long_rows]
    long_cpu_s: dict[str, float] = {}
    for name in ("rlvr", "math-verify"):
        if args.only and name != args.only:
            continue
        got, cpu = long_cpu(long_rows, name)
        long_cpu_s[name] = cpu
        a, fp, fn_, err = agreement(got, long_labels)
        print(f"  {name:<12} CPU {cpu:6.2f} s  agree {a}/{len(long_rows)}  FP {fp}  FN {fn_}  undecided {err}")
    if args.only != "math-verify":
        wall, e2e = long_wall(long_rows)
        print(
            f"  rlvr end to end (MathVerifier.verify_batch, one worker process, cold caches): "
            f"CPU {e2e:.2f} s (parent + worker), wall {wall:.2f} s"
        )
        long_cpu_s["rlvr e2e"] = e2e
    if "math-verify" in long_cpu_s and "rlvr" in long_cpu_s:
        mv = long_cpu_s["math-verify"]
        print(
            f"  ratio math-verify CPU / rlvr on long completions: {mv / long_cpu_s['rlvr']:.1f}x CPU (in-process), "
            f"{mv / long_cpu_s['rlvr e2e']:.1f}x against rlvr's end-to-end CPU"
        )
    outside = load_outside()
    print(f"\noutside suite (math-verify's labelled pairs, {len(outside)} answer-form rows):")
    for name, fn in (("rlvr", run_ours), ("math-verify", run_math_verify)):
        if args.only and name != args.only:
            continue
        got, _ = fn(outside)
        a, fp, fn_, err = agreement(got, outside)
        print(f"  {name:<12} agree {a}/{len(outside)} ({a / len(outside):.3f})  FP {fp}  FN {fn_}  undecided {err}")
    print("\nper form on the corpus (agree/n, false positives, false negatives, undecided):")
    per_form(corpus, corpus_results)
    for name, _, _, lab, _, _ in rows:
        fps = [(g, p) for (g, p, ok), r in zip(LABELLED, lab, strict=True) if r is True and (g, p) in ADVERSARIAL]
        print(
            f"{name}: false positives on the issue's adversarial cases: {len(fps)}"
            + "".join(f"\n    {g!r} vs {p!r}" for g, p in fps)
        )
    for name, gen, _, _, _, _ in rows:
        bad = [(g, p, ok, r) for (g, p, ok), r in zip(generated, gen, strict=True) if r != ok]
        if bad:
            print(
                f"{name}: {len(bad)} generated disagreements, first 8 (gold, pred, label, got):"
                + "".join(f"\n    {g!r} vs {p!r}: {ok} / {r}" for g, p, ok, r in bad[:8])
            )
    for name, _, _, lab, _, _ in rows:
        bad = [(g, p, ok, r) for (g, p, ok), r in zip(LABELLED, lab, strict=True) if r != ok]
        if bad:
            print(
                f"{name}: labelled disagreements (gold, pred, label, got):"
                + "".join(f"\n    {g!r} vs {p!r}: {ok} / {r}" for g, p, ok, r in bad)
            )
    for name, cor in corpus_results.items():
        bad = [(f, g, p, ok, r) for (f, g, p, ok), r in zip(corpus, cor, strict=True) if r != ok]
        if bad:
            print(
                f"{name}: corpus disagreements (form, gold, pred, label, got):"
                + "".join(f"\n    [{f}] {g!r} vs {p!r}: {ok} / {r}" for f, g, p, ok, r in bad)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
