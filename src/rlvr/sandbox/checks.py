"""Jobs and judgements, on the trusted side: ``tests_job`` / ``stdio_job`` / ``script_job`` build
what a worker runs; ``judge_tests`` / ``judge_stdio`` turn what came back into a ``Judgement``;
``read_script`` into outputs (the Python tool of multi-turn tasks).

Assert-style samples are decided by the test child's records, read in order: a failed assert is
final whatever comes after it (the candidate blowing its memory, exiting, closing pipes,
flooding); the sample passes only when the test child says the whole test file ran. Stdin/stdout
samples are decided here: the raw output of each input, compared with the expected output
(``compare_output``); the expected outputs never leave the trainer. Nothing here costs more than
linear time in what came back, which is capped by the worker.
"""

from __future__ import annotations

import base64
import functools
import json
import marshal
import struct
from dataclasses import dataclass
from importlib.util import MAGIC_NUMBER
from typing import Any

from .checkers import EXACT, CheckerFailed, CheckerSpec, check_output
from .inside import testchild
from .plans import MAX_SHOWN, CheckPlan
from .worker import Job, Reply

MAX_STDOUT = 1 << 20  # one input's output, bytes: over it the case fails, decided when crossed


@dataclass(frozen=True)
class Judgement:
    """``status``: ``passed``, ``failed`` (decided: an assert or an input failed, or the test
    raised), ``unsupported`` (the test reached a construct the sandbox cannot keep exact: scored
    as wrong, never masked), ``incomplete`` (the candidate ended or ran out of time before the tests were
    decided: the session's end says why) or ``error`` (the infrastructure failed).
    ``memory``: the first failure was the candidate's ``MemoryError`` (a claim: it counts only
    when the worker measured the memory). ``peak``: stdin/stdout only, the peak memory the worker
    measured for the first input that failed (bytes). ``details``: one dict per assert statement (in source
    order) or per input, for the review page: ``kind`` (``assert`` with ``test``, its source
    text; ``stdio`` with ``input``), ``status`` (``passed``, ``failed`` or ``not run``) and, on
    the first failure only, ``got``, ``expected`` (short reprs the test child made, or the
    output) and ``error`` (the exception, or the end of stderr); at most 300 characters each,
    display only."""

    status: str
    passed: int
    total: int
    detail: str = ""
    memory: bool = False
    details: tuple[dict[str, Any], ...] = ()
    peak: int = 0


def _framed(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


@functools.lru_cache(maxsize=1024)
def _prepared(tests: str, helpers: str, entry: str | None, tolerant: bool) -> dict[str, Any] | None:
    """A row's test file instrumented and compiled once, in the trainer (the G samples of a group
    and every later epoch share it), marshalled for a test child whose bytecode is this
    interpreter's (``testchild.prepared`` checks the magic number; otherwise it compiles the
    source itself). None when it does not compile here: the test child reports why."""
    try:
        code, helper_code, wanted = testchild.prepare(tests, helpers, entry, tolerant)
        return {
            "magic": MAGIC_NUMBER.hex(),
            "code": base64.b64encode(marshal.dumps(code)).decode(),
            "helpers": base64.b64encode(marshal.dumps(helper_code)).decode(),
            "wanted": sorted(wanted),
        }
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def tests_job(plan: CheckPlan, code: str, timeout: float, tolerance: float = 0.0, objects: bool = False) -> Job:
    """An assert-style sample: the program and the tests go to the test child only.
    ``tolerance``: floats within it are equal in an assert's ``==`` / ``!=``
    (``rlvr.sandbox.inside.tolerance``). ``objects``: the task's ``program_objects`` (the tests use the
    program's own objects; every operation dispatches to the program as CPython would)."""
    body = {
        "objects": objects,
        "code": code,
        "tests": plan.source,
        "helpers": plan.helpers,
        "check": plan.auto_check,
        "entry": plan.entry,
        "tol": tolerance,
        "pre": _prepared(plan.source, plan.helpers, plan.entry if plan.auto_check else None, bool(tolerance)),
    }
    payload = _framed(json.dumps(body).encode("utf-8", "surrogatepass"))
    return Job({"mode": "tests", "timeout": timeout}, (payload,))


def stdio_job(
    code: str,
    inputs: tuple[str, ...] | list[str],
    timeout: float,
    cap: int = MAX_STDOUT,
    plan: CheckPlan | None = None,
    checker: CheckerSpec = EXACT,
) -> Job:
    """A program run as a script once per input (fd 0 holds the input), ``timeout`` seconds for
    each input, the inputs' timeouts in all for the row. With ``plan`` (and its
    ``checker``) each input's output is compared the moment it has come back and only the small
    result is kept (``check_case``): the trainer holds at most one input's output per sample."""
    prog = code.encode("utf-8", "surrogatepass")
    frames = tuple(_framed(prog) + i.encode("utf-8", "surrogatepass") for i in inputs)
    fold = None
    if plan is not None:

        def fold(i: int, out: bytes, err: bytes, end: dict[str, Any]) -> dict[str, Any]:
            if i >= len(plan.outputs):
                return end
            return check_case(checker, plan.inputs[i], plan.outputs[i], out, err, end)

    control = {"mode": "stdio", "timeout": timeout, "total": timeout * max(1, len(frames)), "cases": len(frames)}
    return Job({**control, "cap": cap}, frames, fold)


def records(reply: Reply) -> list[dict[str, Any]]:
    """The test child's records, in order."""
    stream = b"".join(body for kind, body in reply.frames if kind == b"R")
    out: list[dict[str, Any]] = []
    pos = 0
    while pos + 4 <= len(stream):
        n = struct.unpack(">I", stream[pos : pos + 4])[0]
        if pos + 4 + n > len(stream):
            break
        try:
            rec = json.loads(stream[pos + 4 : pos + 4 + n].decode("utf-8", "replace"))
        except ValueError:
            rec = None
        if isinstance(rec, dict):
            out.append(rec)
        pos += 4 + n
    return out


def judge_tests(plan: CheckPlan, reply: Reply) -> Judgement:
    """An assert-style sample from its records. ``passed`` counts assert *statements* that
    passed and never failed (a loop over the program's output is one statement), out of the
    statements in the test file."""
    recs = records(reply)
    fails = [r for r in recs if r.get("ok") is False]
    end = next((r for r in recs if "end" in r), None)
    details = _assert_details(plan, recs)
    passed = sum(d["status"] == "passed" for d in details)
    total = max(plan.n_asserts, passed + sum(d["status"] == "failed" for d in details), 1)
    if fails:
        first = fails[0]
        what = first.get("exc") or f"got {first.get('got')}, expected {first.get('want')}"
        text = plan.asserts.get(_at(first), "an assert")
        memory = str(first.get("exc", "")).startswith("MemoryError")
        return Judgement("failed", passed, total, f"{passed}/{total} checks passed; {text}: {what}", memory, details)
    if end is None:
        if reply.end.why in ("timeout", "output_limit") or reply.end.why.startswith("sandbox"):
            return Judgement("incomplete", passed, total, "the tests were not decided", False, details)
        return Judgement("error", passed, total, f"the test child ended without a result ({reply.end.why})")
    if end["end"] == "passed":
        return Judgement("passed", total, total, f"{total}/{total} checks passed", False, details)
    if end["end"] == "raised":
        return Judgement("failed", passed, total, f"{passed}/{total} checks passed; {end.get('exc')}", False, details)
    if end["end"] == "unsupported":
        what = str(end.get("what", ""))[:MAX_SHOWN]
        return Judgement("unsupported", passed, total, f"unsupported: {what}", False, details)
    why = f"the program ended before the tests were decided: {end.get('why')}"
    return Judgement("incomplete", passed, total, why, False, details)


def _at(rec: dict[str, Any]) -> tuple[int, int]:
    at = rec.get("at")
    return (int(at[0]), int(at[1])) if isinstance(at, list) and len(at) == 2 else (0, 0)


def _assert_details(plan: CheckPlan, recs: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    seen: dict[tuple[int, int], dict[str, Any]] = {
        at: {"kind": "assert", "test": text, "status": "not run"} for at, text in sorted(plan.asserts.items())
    }
    first_failure = True
    for r in recs:
        if "ok" not in r:
            continue
        d = seen.get(_at(r))
        if d is None:
            continue
        if r["ok"] is True and d["status"] == "not run":
            d["status"] = "passed"
        elif r["ok"] is False:
            d["status"] = "failed"
            if first_failure:
                first_failure = False
                for key, name in (("got", "got"), ("want", "expected"), ("exc", "error")):
                    if isinstance(r.get(key), str):
                        d[name] = r[key][:MAX_SHOWN]
    return tuple(seen.values())


def split_cases(reply: Reply) -> list[tuple[bytes, bytes, dict[str, Any]]]:
    """(stdout, stderr, how it ended) per input that ran, in order."""
    cases: list[tuple[bytes, bytes, dict[str, Any]]] = []
    out: list[bytes] = []
    err: list[bytes] = []
    for kind, body in reply.frames:
        if kind == b"O":
            out.append(body)
        elif kind == b"E":
            err.append(body)
        elif kind == b"C":
            try:
                end = json.loads(body)
            except ValueError:
                end = {}
            cases.append((b"".join(out), b"".join(err), end if isinstance(end, dict) else {}))
            out, err = [], []
    return cases


def check_case(
    checker: CheckerSpec, inp: str, want: str, out_b: bytes, err_b: bytes, end: dict[str, Any]
) -> dict[str, Any]:
    """One input's result, small: ``problem`` (empty when accepted), ``why`` (how it ended), and
    what the review page shows of a failure (``got``, ``error``: at most ``MAX_SHOWN`` characters
    each) and the peak memory the worker measured. ``ground_truth``: the custom checker raised on
    the output *and* on the expected output (the task's problem). Called as each input's output
    arrives (``stdio_job``'s ``fold``), so the trainer never holds more than one input's output."""
    out = out_b.decode("utf-8", "replace")
    why, status = str(end.get("why", "")), str(end.get("status", ""))
    res: dict[str, Any] = {"checked": True, "why": why}
    if why == "output_limit":
        problem = f"its output went over {MAX_STDOUT} bytes"
    elif why != "exited":
        problem = why or "it did not finish"
    elif status != "exit:0":
        problem = f"it ended with {status}"
    else:
        try:
            problem = "" if check_output(checker, inp, want, out) else "wrong output"
        except CheckerFailed as exc:
            if _checker_fails_on_expected(checker, inp, want):
                res["ground_truth"] = str(exc)
            problem = f"the checker refused its output ({exc})"
    res["problem"] = problem
    if problem:
        res["got"] = out[:MAX_SHOWN]
        tail = err_b[-MAX_SHOWN:].decode("utf-8", "replace").strip()
        if tail:
            res["error"] = tail
        res["peak"] = int(end.get("maxrss", 0)) if type(end.get("maxrss", 0)) is int else 0
    return res


def judge_stdio(plan: CheckPlan, reply: Reply, checker: CheckerSpec = EXACT) -> Judgement:
    """A stdin/stdout sample: each input's raw output compared outside the candidate, by
    ``checker`` (``rlvr.sandbox.checkers``), as it arrived (a reply of ``stdio_job`` with
    ``plan``) or here. A custom checker that raises on the program's output is the program's
    failure, unless it also raises on the row's own expected output: then the judgement is
    ``ground_truth`` (the task's problem, masked). Nothing the program prints decides an outcome
    class: ``peak`` is what the worker measured."""
    total = len(plan.inputs)
    cases = split_cases(reply)
    details: list[dict[str, Any]] = []
    passed = 0
    first: str = ""
    peak = 0
    for i, (inp, want) in enumerate(zip(plan.inputs, plan.outputs, strict=True)):
        d: dict[str, Any] = {"kind": "stdio", "input": inp[:MAX_SHOWN], "status": "not run"}
        details.append(d)
        if i >= len(cases):
            continue
        out_b, err_b, end = cases[i]
        res = end if end.get("checked") is True else check_case(checker, inp, want, out_b, err_b, end)
        if isinstance(res.get("ground_truth"), str):
            return Judgement("ground_truth", passed, total, res["ground_truth"], False, tuple(details))
        problem = str(res.get("problem", "it did not finish"))
        d["status"] = "failed" if problem else "passed"
        passed += not problem
        if problem and res.get("why") != "timeout" and not first:
            first = f"input {i}: {problem}"
            d.update(got=str(res.get("got", ""))[:MAX_SHOWN], expected=want[:MAX_SHOWN])
            if isinstance(res.get("error"), str):
                d["error"] = res["error"][:MAX_SHOWN]
            peak = int(res.get("peak", 0)) if type(res.get("peak", 0)) is int else 0
    if first:
        detail = f"{passed}/{total} inputs passed; {first}"
        return Judgement("failed", passed, total, detail, False, tuple(details), peak)
    if passed < total:
        return Judgement("incomplete", passed, total, "the program did not finish every input", False, tuple(details))
    return Judgement("passed", passed, total, f"{passed}/{total} inputs passed", False, tuple(details))


def _checker_fails_on_expected(checker: CheckerSpec, stdin: str, expected: str) -> bool:
    try:
        check_output(checker, stdin, expected, expected)
    except CheckerFailed:
        return True
    return False


@dataclass(frozen=True)
class ScriptResult:
    """One run of a program as a script: its stdout and stderr (decoded, capped), its exit
    status (``exit:N`` or ``signal:NAME``) and how it ended (``exited``, ``timeout``,
    ``output_limit``)."""

    stdout: str
    stderr: str
    status: str
    why: str


def script_job(code: str, stdin: str = "", timeout: float = 5.0, cap: int = 64 << 10) -> Job:
    """The Python tool: run ``code`` as a script with ``stdin``; read it with ``read_script``."""
    return stdio_job(code, [stdin], timeout, cap)


def read_script(reply: Reply) -> ScriptResult:
    cases = split_cases(reply)
    if not cases:
        why = "timeout" if reply.end.why == "timeout" else reply.end.why
        return ScriptResult("", "", "", why)
    out, err, end = cases[0]
    return ScriptResult(
        out.decode("utf-8", "replace"),
        err.decode("utf-8", "replace"),
        str(end.get("status", "")),
        str(end.get("why", "")),
    )
