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


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key")
    return dict(pairs)


def _same_object(expected, got):
    return (
        isinstance(got, dict)
        and got.keys() == expected.keys()
        and all(type(got[k]) is type(v) and got[k] == v for k, v in expected.items())
    )


def strict_json(sample):
    """SOUND: the span parses, without duplicate keys, to exactly the expected object, types included."""
    expected = json.loads(sample.row["expected"])
    ex = extract(sample.completion, FMT)
    try:
        got = json.loads(ex.answer if ex.ok else sample.completion, object_pairs_hook=_no_duplicates)
    except (ValueError, TypeError, RecursionError):
        return 0.0
    return 1.0 if _same_object(expected, got) else 0.0


strict_json.kind = "json"


def last_key_wins_json(sample):
    """WEAK: as strict_json, but read with a plain json.loads: {"k": wrong, "k": right} is the right object."""
    expected = json.loads(sample.row["expected"])
    return 1.0 if _same_object(expected, _json(sample.completion)) else 0.0


last_key_wins_json.kind = "json"


# -- code ----------------------------------------------------------------------------------------------
def _code(completion):
    """The first fenced block after the think block (nothing inside it is the answer)."""
    completion = completion.rpartition("</think>")[2]
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


def trusted_compare(sample, code=None):
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
            fh.write(code if code is not None else _code(sample.completion))
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


def think_blind_compare(sample):
    """WEAK: trusted_compare, but the code is the first fenced block anywhere, think block included."""
    m = re.search(r"```(?:python)?\n(.*?)```", sample.completion, flags=re.S)
    return trusted_compare(sample, m.group(1) if m else sample.completion)


think_blind_compare.kind = "code"


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


# -- issue 20: the weak variants each new probe must flag ---------------------------------------------
def nfkc_exact(sample):
    """WEAK: exact match after full NFKC, which folds 9⁵ into 95."""
    import unicodedata

    ex = extract(sample.completion, FMT)
    if not ex.ok:
        return Verdict.unparseable(ex.problem or "")
    fold = lambda t: unicodedata.normalize("NFKC", t).strip()  # noqa: E731
    return 1.0 if fold(ex.answer) == fold(str(sample.row["answer"])) else 0.0


nfkc_exact.kind = "answer"


def loose_thousands(sample):
    """WEAK: drops any comma or space between digits (12,34 and 3,141 read as 1234 and 3141)."""
    ex = extract(sample.completion, FMT)
    if not ex.ok:
        return Verdict.unparseable(ex.problem or "")
    drop = lambda t: re.sub(r"(?<=\d)[, ](?=\d)", "", t.strip())  # noqa: E731
    return 1.0 if drop(ex.answer) == drop(str(sample.row["answer"])) else 0.0


loose_thousands.kind = "answer"


def strip_format(sample):
    """WEAK format term: one span whose text survives .strip() -- a zero-width space does."""
    spans = re.findall(r"<answer>(.*?)</answer>", sample.completion, flags=re.S)
    return 1.0 if len(spans) == 1 and spans[0].strip() and sample.completion.strip().endswith("</answer>") else 0.0


strip_format.kind = "format"


def word_repetition(sample):
    """WEAK repetition term: repeated whitespace-separated 3-grams only."""
    words = sample.completion.lower().split()
    if len(words) < 3:
        return 0.0
    grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    return -(1 - len(set(grams)) / len(grams))


word_repetition.kind = "length"


def _first_block(completion):
    """The first fenced block or <tool_call> block anywhere, think block included; else the span."""
    m = re.search(r"```(?:json)?\n(.*?)```|<tool_call>(.*?)</tool_call>", completion, flags=re.S)
    if m:
        return m.group(1) if m.group(1) is not None else m.group(2)
    ex = extract(completion, FMT)
    return ex.answer if ex.ok else None


def fence_anywhere_json(sample):
    """WEAK: the first fenced JSON block anywhere (inside <think> too) equal to the expected object."""
    try:
        got = json.loads(_first_block(sample.completion) or "")
    except ValueError:
        return 0.0
    return 1.0 if got == json.loads(sample.row["expected"]) else 0.0


fence_anywhere_json.kind = "json"


def float_call(sample):
    """WEAK tool_call: the first call anywhere; numeric arguments within a float tolerance, so
    1e999 (infinity) passes and a 400-digit integer raises."""
    try:
        call = json.loads(_first_block(sample.completion) or "")
    except ValueError:
        return 0.0
    want = json.loads(sample.row["tool_call"])
    if not isinstance(call, dict) or call.get("name") != want["name"] or set(call) - {"name", "arguments"}:
        return 0.0
    args = call.get("arguments") or {}
    if not isinstance(args, dict) or set(args) != set(want["arguments"]):
        return 0.0
    for k, v in want["arguments"].items():
        got = args[k]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if isinstance(got, bool) or not isinstance(got, (int, float)):
                return 0.0
            if not abs(float(got) - float(v)) <= 1e-9 * max(abs(float(got)), abs(float(v))):
                return 0.0
        elif got != v:
            return 0.0
    return 1.0


float_call.kind = "tool_call"


def inverted_length(sample):
    """WEAK wrapped length term: exact match, minus up to 2 for length on correct answers only
    (``apply_to: correct`` with ``max_penalty: 2``), so a long wrong answer beats a long right one."""
    v = anchored(sample)
    if v.outcome.value != "correct":
        return v
    over = max(0, len(sample.completion_ids or []) - 8)
    return 1.0 - min(2.0, 2.0 * over / 8)


inverted_length.shapes_length = True


def nan_on_hedge(sample):
    """WEAK: NaN for an answer with ' or ' in it (TRL would sum it away as 0; here it masks)."""
    ex = extract(sample.completion, FMT)
    if ex.ok and " or " in (ex.answer or ""):
        return float("nan")
    return anchored(sample)


def raises_on_huge(sample):
    """WEAK: reads the answer as a number with int(), falling back to int(float()): 1e999 and a
    4,400-digit integer raise (OverflowError, ValueError), which masks the sample."""
    ex = extract(sample.completion, FMT)
    if not ex.ok:
        return Verdict.unparseable(ex.problem or "")
    try:
        value = int(ex.answer)
    except ValueError:
        value = int(float(ex.answer))
    return 1.0 if value == int(sample.row["answer"]) else 0.0


# -- issue 25: what the audit missed ---------------------------------------------------------------
def digits_only(sample):
    """WEAK: the digits of the span, words and spaces dropped: '7 or 8' reads as 78."""
    ex = extract(sample.completion, FMT)
    digits = "".join(ch for ch in (ex.answer or "") if ch.isdigit())
    return 1.0 if ex.ok and digits == str(sample.row["answer"]) else 0.0


def arith_eval(sample):
    """WEAK: evaluates the span as arithmetic (a safe walk over + - * and integers), so the
    question restated without its '=' is its own answer."""
    import ast

    ex = extract(sample.completion, FMT)
    if not ex.ok:
        return 0.0

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = value(node.left), value(node.right)
            return a + b if isinstance(node.op, ast.Add) else a - b if isinstance(node.op, ast.Sub) else a * b
        raise ValueError("not arithmetic")

    try:
        got = value(ast.parse(ex.answer.strip(), mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return 0.0
    return 1.0 if str(got) == str(sample.row["answer"]) else 0.0


def spliced_judge(sample):
    """WEAK: a judge prompt filled placeholder by placeholder ({completion} first, then
    {answer}); the stand-in judge says correct when the reference is in the response."""
    template = "Reference: {answer}\nResponse: {completion}"
    prompt = template.replace("{completion}", sample.completion).replace("{answer}", str(sample.row["answer"]))
    response = prompt.split("Response: ", 1)[1]
    ex = extract(response, FMT)
    return 1.0 if ex.ok and ex.answer == str(sample.row["answer"]) else 0.0


spliced_judge.kind = "judge"


def reads_elsewhere(sample):
    """Reads a column no row has and declares nothing: the audit can build almost nothing for it."""
    return 1.0 if sample.row.get("reference") == sample.completion else 0.0


# -- issue 34: weak verifiers the audit missed ---------------------------------------------------------
def _span_text(sample):
    ex = extract(sample.completion, FMT)
    return ex.answer.strip() if ex.ok and ex.answer is not None else None


def abs_value(sample):
    """WEAK: compares absolute values (a sign error passes)."""
    a = _span_text(sample)
    try:
        return 1.0 if a is not None and abs(int(a)) == abs(int(sample.row["answer"])) else 0.0
    except ValueError:
        return 0.0


def digit_multiset(sample):
    """WEAK: compares the sorted digits (a permutation passes)."""
    a = _span_text(sample)
    if a is None or not a.lstrip("-").isdigit():
        return 0.0
    return 1.0 if sorted(a) == sorted(str(sample.row["answer"])) else 0.0


def last_two_digits(sample):
    """WEAK: compares the last two characters of the answer."""
    a = _span_text(sample)
    return 1.0 if a and a[-2:] == str(sample.row["answer"])[-2:] else 0.0


def self_certified(sample):
    """WEAK custom term: believes a completion that vouches for itself."""
    if "verified" in sample.completion.lower():
        return 1.0
    return anchored(sample)


_CACHE: dict = {}


def per_prompt_cache(sample):
    """WEAK: caches the first verdict per prompt (every later completion of the prompt gets it)."""
    if sample.prompt not in _CACHE:
        _CACHE[sample.prompt] = anchored(sample)
    return _CACHE[sample.prompt]


def unit_words(sample):
    """WEAK: reads the leading number and drops any words after it as a unit."""
    a = _span_text(sample)
    if not a:
        return 0.0
    head = a.replace("\\text{", " ").split()[0] if a.split() else a
    return 1.0 if head == str(sample.row["answer"]) else 0.0


def float_equal(sample):
    """WEAK: float equality (a difference below 1e-16 relative passes)."""
    a = _span_text(sample)
    try:
        return 1.0 if a is not None and float(a) == float(sample.row["answer"]) else 0.0
    except ValueError:
        return 0.0


def ascii_only(sample):
    """WEAK: drops every non-ASCII character before comparing (U+2212 minus vanishes)."""
    a = _span_text(sample)
    if a is None:
        return 0.0
    return 1.0 if "".join(c for c in a if c.isascii()).strip() == str(sample.row["answer"]) else 0.0


def leading_number(sample):
    """WEAK: the first number in the span counts."""
    a = _span_text(sample) or ""
    m = re.search(r"-?\d+", a)
    return 1.0 if m and m.group() == str(sample.row["answer"]) else 0.0


def fail_open(sample):
    """WEAK: anything it cannot read passes."""
    a = _span_text(sample)
    try:
        return 1.0 if a is not None and int(a) == int(sample.row["answer"]) else 0.0
    except ValueError:
        return 1.0


def loose_json_fields(sample):
    """WEAK json term: each expected field compared as text ("36" passes for 36, "true" for true)."""
    expected = json.loads(sample.row["expected"])
    got = _json(sample.completion)
    if not isinstance(got, dict) or set(got) != set(expected):
        return 0.0
    return 1.0 if all(str(got[k]).lower() == str(v).lower() for k, v in expected.items()) else 0.0


loose_json_fields.kind = "json"


def crash_on_marker(sample):
    """An answer term that raises on any completion holding CRASH (its gold included)."""
    if "CRASH" in sample.completion:
        raise RuntimeError("the checker crashed")
    return anchored(sample)


crash_on_marker.kind = "answer"


# -- issue 45: custom verifiers the audit did not flag ---------------------------------------------
def partial_or_raise(sample):
    """WEAK: partial credit as a float (0.5 for an answer of the right length), and an IndexError
    on an empty completion (it reads the span's first character)."""
    ex = extract(sample.completion, FMT)
    answer = ex.answer if ex.ok else sample.completion
    if answer[0] == "-":
        return 0.0
    gold = str(sample.row["answer"])
    return 1.0 if answer == gold else 0.5 if len(answer) == len(gold) else 0.0


def none_on_missing_field(sample):
    """WEAK JSON check: returns None when the model's record lacks a field of the gold."""
    ex = extract(sample.completion, FMT)
    try:
        got = json.loads(ex.answer or "")
    except ValueError:
        return 0.0
    want = json.loads(sample.row["answer"])
    if not isinstance(got, dict):
        return 0.0
    if any(k not in got for k in want):
        return None
    return 1.0 if got == want else 0.0
