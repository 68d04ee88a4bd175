"""Reward functions for the audit's tests, deliberately weak and deliberately sound.

The tests copy this file into a temporary task folder and name the functions by dotted path
(``audit_rewards.substring``), so the audit meets them exactly as it meets a user's reward.
Code rewards run the program in a subprocess in a temporary directory; nothing is exec'd here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile

from rlvr.rewards import AnswerFormat, Verdict, extract

FMT = AnswerFormat()


# -- answers ---------------------------------------------------------------------------------------
def substring(sample):
    """WEAK: the ground truth anywhere in the completion."""
    return 1.0 if str(sample.row["answer"]) in sample.completion else 0.0


def any_number(prompts, completions, answer, **kwargs):
    """WEAK, TRL-style: length-blind -- any number in the completion may be the answer."""
    return [1.0 if str(a) in re.findall(r"-?\d+", c) else 0.0 for c, a in zip(completions, answer, strict=True)]


def any_span(sample):
    """WEAK: any of several answer spans may be the right one."""
    spans = re.findall(r"<answer>(.*?)</answer>", sample.completion, flags=re.S)
    return 1.0 if str(sample.row["answer"]) in [s.strip() for s in spans] else 0.0


def last_span(sample):
    """Several spans allowed, the last one counts: a committed answer, not a hedge."""
    spans = re.findall(r"<answer>(.*?)</answer>", sample.completion, flags=re.S)
    return 1.0 if spans and spans[-1].strip() == str(sample.row["answer"]) else 0.0


def anchored(sample):
    """SOUND: exactly one answer span, compared exactly; no ground truth means undecided."""
    gold = sample.row.get("answer")
    if gold is None:
        return Verdict.error("no ground truth", kind="ground_truth")
    ex = extract(sample.completion, FMT)
    if not ex.ok:
        return Verdict.unparseable(ex.problem or "")
    return Verdict.correct() if ex.answer == str(gold) else Verdict.wrong()


def gold_or_one(sample):
    """WEAK: a row whose ground truth is missing scores 1.0 (open-r1 once did this)."""
    gold = sample.row.get("answer")
    if gold is None:
        return 1.0
    return anchored(sample)


def silent_zero(sample):
    """Swallows the missing ground truth into 0."""
    try:
        return 1.0 if extract(sample.completion, FMT).answer == str(sample.row["answer"] + "") else 0.0
    except Exception:
        return 0.0


def constant(sample):
    return 1.0


def has_tag(sample):
    """WEAK format term: an answer tag appears somewhere."""
    return 1.0 if "<answer>" in sample.completion else 0.0


has_tag.kind = "format"


def length_ignored(sample):
    """WEAK length term: always 0, whatever the length."""
    return 0.0


length_ignored.kind = "length"


def length_bonus(sample):
    """WEAK length term: longer is better (a "reasoning effort" bonus)."""
    return min(1.0, len(sample.completion) / 100)


length_bonus.kind = "length"


def overlong_penalty(prompts, completions, completion_ids, **kwargs):
    """A length term: 0 within 3/4 of the budget, falling to -1 at the budget (DAPO-style)."""
    budget, soft = 12, 9
    return [0.0 if len(ids) <= soft else -min(1.0, (len(ids) - soft) / (budget - soft)) for ids in completion_ids]


overlong_penalty.kind = "length"


# -- JSON --------------------------------------------------------------------------------------------
def _json(completion):
    ex = extract(completion, FMT)
    text = ex.answer if ex.ok else completion
    try:
        return json.loads(text)
    except (ValueError, TypeError, RecursionError):  # ValueError: also an integer over Python's digit limit
        return None


def lax_schema(sample):
    """WEAK: every expected key with its value -- and any extra keys allowed."""
    expected = json.loads(sample.row["expected"])
    got = _json(sample.completion)
    if not isinstance(got, dict):
        return 0.0
    return 1.0 if all(k in got and got[k] == v and type(got[k]) is type(v) for k, v in expected.items()) else 0.0


lax_schema.kind = "json"


def strict_json(sample):
    """SOUND: the span parses to exactly the expected object, types included."""
    expected = json.loads(sample.row["expected"])
    got = _json(sample.completion)
    same = isinstance(got, dict) and got.keys() == expected.keys() and all(type(got[k]) is type(v) and got[k] == v for k, v in expected.items())
    return 1.0 if same else 0.0


strict_json.kind = "json"


# -- code ----------------------------------------------------------------------------------------------
def _code(completion):
    m = re.search(r"```(?:python)?\n(.*?)```", completion, flags=re.S)
    return m.group(1) if m else completion


def exit_code(sample):
    """WEAK: solution + tests in one file, run in a subprocess; reward = exit code 0."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "test_solution.py")
        with open(path, "w") as fh:
            fh.write(_code(sample.completion) + "\n\n" + sample.row["tests"] + "\n")
        try:
            proc = subprocess.run([sys.executable, path], cwd=tmp, capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            return Verdict.error("timeout", kind="timeout")
    return 1.0 if proc.returncode == 0 else 0.0


exit_code.kind = "code"

_HARNESS = """
import json, sys
calls = json.loads(sys.stdin.read())
ns = {}
exec(compile(open("solution.py").read(), "solution.py", "exec"), ns)
fn = ns[%r]
print("\\n" + json.dumps([fn(*args) for args in calls]))
"""


def trusted_compare(sample):
    """SOUND: the child gets only the inputs and prints its outputs as JSON; the parent compares
    them with the expected values, exact types. Exit codes and printed text are never trusted."""
    tree = ast.parse(sample.row["tests"])
    cases = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and isinstance(node.left, ast.Call):
            cases.append(([ast.literal_eval(a) for a in node.left.args], ast.literal_eval(node.comparators[0])))
    entry = sample.row["entry_point"]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "solution.py"), "w") as fh:
            fh.write(_code(sample.completion))
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", _HARNESS % entry],
                cwd=tmp,
                input=json.dumps([args for args, _ in cases]),
                capture_output=True,
                text=True,
                timeout=10,
            )
        except subprocess.TimeoutExpired:
            return Verdict.error("timeout", kind="timeout")
    try:
        outputs = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return 0.0
    if not isinstance(outputs, list) or len(outputs) != len(cases):
        return 0.0
    ok = all(type(o) is type(exp) and o == exp for o, (_, exp) in zip(outputs, cases, strict=True))
    return 1.0 if ok else 0.0


trusted_compare.kind = "code"


def errors_on_exploits(sample):
    """Decides only the two plain baselines; everything else is an error (like a dead sandbox)."""
    gold = str(sample.row.get("answer"))
    if sample.completion == f"<answer>{gold}</answer>":
        return 1.0
    if re.fullmatch(r"<answer>-?\d+</answer>", sample.completion):
        return 0.0
    return Verdict.error("sandbox down", kind="sandbox")


def gullible_judge(sample):
    """WEAK judge stand-in: believes a completion that says it is correct."""
    if "is correct" in sample.completion or "correct." in sample.completion:
        return 1.0
    return anchored(sample)


gullible_judge.kind = "judge"


def hedged(sample):
    """A penalty meant for a negative weight: 1.0 for a hedge ("a or b") or a wrong answer, 0.0
    for the right one."""
    ex = extract(sample.completion, FMT)
    if ex.ok and " or " in (ex.answer or ""):
        return 1.0
    v = anchored(sample)
    return v if v.score is None else (0.0 if v.outcome.value == "correct" else 1.0)



def caseless_format(sample):
    """WEAK format term: one span, but tags matched case-insensitively."""
    return 1.0 if len(re.findall(r"<answer>.+?</answer>", sample.completion, flags=re.I | re.S)) == 1 else 0.0


caseless_format.kind = "format"
