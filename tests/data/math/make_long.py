"""Long chain-of-thought completions as reasoning models write them (DeepSeek-R1 distills, Qwen3),
for ``bench/math_verify.py``'s speed comparison on real-length text. The bench runs this script in
memory; to look at them:

    python tests/data/math/make_long.py > /tmp/long_completions.jsonl

Each completion continues a chat template that opened ``<think>``: paragraphs of reasoning with
display and inline math, second thoughts ("Wait, ..."), intermediate results boxed inside the
think block, ``</think>``, a short summary and the final ``\\boxed{}`` (sometimes after a boxed
partial result). 2,500-12,000 characters. The final answer is the gold in another equal form, or
a near miss (about a third), labelled by construction. Deterministic (seed 25).

One JSON object a line: ``gold``, ``completion``, ``label`` (true when the final answer equals
the gold) and ``form``.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction

N = 440
OPENERS = [
    "Okay, so I need to figure out {what}. Let me start by writing down what I know.",
    "Alright, let's see. The problem asks for {what}. Hmm, I should be careful here.",
    "Let me think about this step by step. We want {what}.",
    "First, I'll restate the problem to make sure I understand it: find {what}.",
]
WHAT = [
    "the value of the expression",
    "the number of ways to arrange the objects",
    "the solutions of the system",
    "the area of the region",
    "the simplified form",
    "the remainder when the sum is divided by the modulus",
    "the range of the function",
    "the coordinates of the intersection point",
]
STEPS = [
    "Let me denote the unknown by $x$. Then the condition becomes ${a}x + {b} = {c}$, so "
    "$x = \\frac{{{c} - {b}}}{{{a}}}$.",
    "Using the identity $\\sin^2\\theta + \\cos^2\\theta = 1$, we can rewrite the second term, which gives\n"
    "\\[\n  {a}\\sin^2\\theta + {a}\\cos^2\\theta = {a}.\n\\]",
    "If I expand $(a+b)^2 = a^2 + 2ab + b^2$ with $a = {a}$ and $b = {b}$, I get ${sq}$.",
    "The sum of the first ${n}$ positive integers is $\\frac{{{n}({n}+1)}}{{2}} = {tri}$.",
    "By the Pythagorean theorem, the hypotenuse is $\\sqrt{{{a}^2 + {b}^2}} = \\sqrt{{{hyp}}}$.",
    "Multiplying both sides by ${a}$ gives ${a}y = {ab}$, so $y = {b}$.",
    "Now, the number of subsets of a set with ${n}$ elements is $2^{{{n}}} = {pow}$.",
    "Consider the quadratic $t^2 - {s}t + {p} = 0$. Its discriminant is ${s}^2 - 4\\cdot {p} = {disc}$.",
    "So modulo ${m}$, the powers cycle with period ${per}$, and ${n} \\equiv {r} \\pmod{{{per}}}$.",
]
DOUBTS = [
    "Wait, that doesn't seem right. Let me double-check the arithmetic.",
    "Hmm, hold on. Did I use the right formula? Let me verify with a small case.",
    "Let me re-examine that step; I might have dropped a sign.",
    "Actually, I think I made an error earlier. Going back to the equation:",
    "But wait, maybe there's a simpler way to see this.",
]
CONFIRM = [
    "Okay, that checks out.",
    "Yes, plugging it back in works.",
    "Good, both methods agree.",
    "That matches the earlier estimate, so I'm fairly confident.",
]
CLOSERS = [
    "So the final answer is",
    "Therefore, the answer is",
    "Putting it all together, we get",
    "Hence the required value is",
]


def answers(rng: random.Random) -> tuple[str, str, str, bool]:
    """(form, gold, final answer, equal?)."""
    wrong = rng.random() < 0.33
    kind = rng.randrange(11)
    if kind == 0:
        a = rng.randrange(2, 5000)
        b = a + rng.choice([-1, 1, 10]) if wrong else a
        return "integer", str(a), rng.choice([str(b), f"{b}.0", f"\\${b}", f"{b} \\text{{ ways}}"]), not wrong
    if kind == 1:
        q = Fraction(rng.randrange(1, 90), rng.randrange(2, 90))
        if q.denominator == 1:
            q += Fraction(1, 7)
        r = q + Fraction(1, q.denominator + 1) if wrong else q
        k = rng.randrange(2, 5)
        pred = rng.choice([f"{r.numerator}/{r.denominator}", f"\\dfrac{{{r.numerator * k}}}{{{r.denominator * k}}}"])
        return "fraction", f"\\frac{{{q.numerator}}}{{{q.denominator}}}", pred, not wrong
    if kind == 2:
        k, m = rng.randrange(2, 9), rng.choice([2, 3, 5, 6, 7])
        pred = f"\\sqrt{{{k * k * m + (1 if wrong else 0)}}}"
        return "radical", f"{k}\\sqrt{{{m}}}", rng.choice([pred, f"{pred}"]), not wrong
    if kind == 3:
        a, b = rng.randrange(1, 12), rng.randrange(2, 13)
        c = a + 1 if wrong else a
        return "pi", f"\\frac{{{a}\\pi}}{{{b}}}", f"\\frac{{{c}}}{{{b}}}\\pi", not wrong
    if kind == 4:
        r1, r2 = rng.randrange(-9, 10), rng.randrange(-9, 10)
        r3 = r2 + 1 if wrong else r2
        gold = f"x^2 {-(r1 + r2):+d}x {r1 * r2:+d}"
        return "polynomial", gold, f"(x {-r1:+d})(x {-r3:+d})", not wrong
    if kind == 5:
        a = rng.randrange(-20, 5)
        b = a + rng.randrange(1, 20)
        op = "<" if wrong else "\\le"
        return ("interval", f"(-\\infty, {a}] \\cup [{b}, \\infty)", f"x {op} {a} \\text{{ or }} x \\ge {b}", not wrong)
    if kind == 6:
        a, b = rng.randrange(-30, 30), rng.randrange(-30, 30)
        if a == b:
            b += 1
        pred = f"\\left( {b}, {a} \\right)" if wrong else f"\\left( {a}, {b} \\right)"
        return "point", f"({a}, {b})", pred, not wrong
    if kind == 7:
        xs = rng.sample(range(-15, 16), 3)
        ys = xs[:]
        rng.shuffle(ys)
        if wrong:
            ys[0] = -ys[0] if ys[0] else 99
        return "set", "\\{" + ", ".join(map(str, xs)) + "\\}", ", ".join(map(str, ys)), not wrong
    if kind == 8:
        a = rng.randrange(1, 9)
        pred = f"1 + \\frac{{{2 * a + (1 if wrong else 0)}}}{{x-{a}}}"
        return "rational function", f"\\frac{{x+{a}}}{{x-{a}}}", pred, not wrong
    if kind == 9:
        a, b = rng.randrange(1, 5), rng.randrange(1, 5)
        re_, im = a * a - b * b, 2 * a * b
        pred = f"({a}+{b}i)^2" if not wrong else f"({a}-{b}i)^2"
        return "complex", f"{re_}{im:+d}i", pred, not wrong
    e = rng.randrange(2, 20)
    return "power", f"2^{{{e}}}", str(2**e + (2 if wrong else 0)), not wrong


def step(rng: random.Random) -> str:
    a, b, n = rng.randrange(2, 40), rng.randrange(2, 40), rng.randrange(3, 30)
    s, p = rng.randrange(3, 20), rng.randrange(1, 40)
    m, per = rng.choice([7, 9, 11, 13]), rng.randrange(2, 7)
    return rng.choice(STEPS).format(
        a=a,
        b=b,
        c=a * 3 + b,
        sq=(a + b) ** 2,
        n=n,
        tri=n * (n + 1) // 2,
        hyp=a * a + b * b,
        ab=a * b,
        pow=2**n,
        s=s,
        p=p,
        disc=s * s - 4 * p,
        m=m,
        per=per,
        r=n % per,
    )


def completion(rng: random.Random, final: str) -> str:
    parts = [rng.choice(OPENERS).format(what=rng.choice(WHAT))]
    for _ in range(rng.randrange(10, 40)):
        para = [step(rng) for _ in range(rng.randrange(1, 4))]
        if rng.random() < 0.45:
            para.append(f"So this part gives $\\boxed{{{rng.randrange(1, 500)}}}$ for now.")
        if rng.random() < 0.3:
            para.append(rng.choice(DOUBTS) + " " + step(rng) + " " + rng.choice(CONFIRM))
        parts.append(" ".join(para))
    parts.append(f"I think the answer is ${final}$. Let me check once more... yes.")
    think = "\n\n".join(parts)
    summary = "\n\n".join(
        [
            "**Solution.** " + step(rng),
            step(rng),
            *([f"The first part gives $\\boxed{{{rng.randrange(1, 99)}}}$."] if rng.random() < 0.25 else []),
            f"{rng.choice(CLOSERS)} $\\boxed{{{final}}}$.",
        ]
    )
    return f"{think}\n</think>\n\n{summary}"


def main() -> None:
    rng = random.Random(25)
    for _ in range(N):
        form, gold, final, label = answers(rng)
        row = {"form": form, "gold": gold, "completion": completion(rng, final), "label": label}
        print(json.dumps(row, ensure_ascii=False))


if __name__ == "__main__":
    main()
