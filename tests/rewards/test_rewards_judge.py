"""The LLM judge against a fake OpenAI-compatible server on 127.0.0.1 (nothing leaves the host)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlvr.cli.main import main
from rlvr.errors import VerifierError
from rlvr.rewards import Outcome, Sample, build_verifier
from rlvr.rewards.judge import JudgeConfig, calibrate, check_record, write_record
from rlvr.rewards.kappa import pair_kappa
from support.judges import reference_of, response_of


class FakeJudge:
    """Answers CORRECT when the completion contains the reference answer; a mode switch makes it
    slow, flaky or nonsensical."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        self.fail_first = 0
        self.reply: str | None = None  # a fixed reply text
        self.status: int | None = None  # a fixed HTTP status
        self.choice: dict = {}  # extra fields of the choice (finish_reason, a refusal)
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                judge.requests.append(body)
                if judge.fail_first > 0:
                    judge.fail_first -= 1
                    self.send_response(503)
                    self.end_headers()
                    return
                if judge.status is not None:
                    self.send_response(judge.status)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")
                    return
                if judge.mode == "slow":
                    time.sleep(2)
                text = body["messages"][0]["content"]
                ref, resp = reference_of(text), response_of(text)
                word = "CORRECT" if ref in resp else "INCORRECT"
                if judge.mode == "nonsense":
                    word = "maybe?"
                if judge.reply is not None:
                    word = judge.reply
                # A pure function of the settings, never of how many requests came before: a retry
                # after a slow first request (a loaded CI machine) must see the same reply.
                extra = {k: v for k, v in judge.choice.items() if k != "message"}
                message = {"role": "assistant", "content": word, **judge.choice.get("message", {})}
                data = json.dumps({"choices": [{"message": message, **extra}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:  # the client gave up (the timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def fake():
    f = FakeJudge()
    yield f
    f.server.shutdown()


@pytest.fixture(autouse=True)
def reset(fake):
    fake.mode, fake.fail_first, fake.reply, fake.status, fake.choice = "ok", 0, None, None, {}
    fake.requests.clear()


def judge(fake, **kw):
    return build_verifier(
        "judge",
        {"model": "fake-judge", "base_url": fake.url, "require_calibration": False, "retries": 1, "timeout": 5.0, **kw},
    )


def labels(tmp_path, n=60, wrong_labels=0):
    rows = []
    for i in range(n):
        good = i % 2 == 0
        label = good if i >= wrong_labels else not good
        rows.append(
            {
                "prompt": f"q{i}",
                "completion": f"the answer is {i}" if good else "the answer is unknown",
                "answer": str(i),
                "label": label,
            }
        )
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_judge_scores_correct_and_incorrect(fake):
    v = judge(fake)
    assert v.verify(Sample("it is 42", {"answer": "42"}, prompt="q")).outcome is Outcome.CORRECT
    assert v.verify(Sample("it is 41", {"answer": "42"}, prompt="q")).outcome is Outcome.WRONG


def test_judge_request_is_pinned_at_temperature_zero(fake):
    judge(fake).verify(Sample("1", {"answer": "1"}))
    assert fake.requests[0]["temperature"] == 0 and fake.requests[0]["model"] == "fake-judge"


def test_judge_timeout_is_error_not_wrong(fake):
    fake.mode = "slow"
    v = judge(fake, timeout=0.3, retries=0).verify(Sample("1", {"answer": "1"}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "timeout" and v.score is None


def test_judge_retries_a_server_error(fake):
    fake.fail_first = 1
    assert judge(fake, retries=2).verify(Sample("1", {"answer": "1"})).outcome is Outcome.CORRECT
    assert len(fake.requests) == 2


def test_unreadable_judge_reply_is_unparseable_never_masked(fake):
    # A reply without a grade word is something the policy can provoke: masking it would let the
    # policy hide its wrong answers. It scores 0 and is counted as unparseable, apart from errors.
    fake.mode = "nonsense"
    v = judge(fake).verify(Sample("1", {"answer": "1"}))
    assert v.outcome is Outcome.UNPARSEABLE and v.score == 0.0


def test_judge_refuses_training_without_a_calibration_record(fake):
    with pytest.raises(VerifierError, match="calibration"):
        build_verifier("judge", {"model": "fake-judge", "base_url": fake.url})


def test_calibration_measures_agreement_and_licenses_the_judge(fake, tmp_path):
    cfg = JudgeConfig("fake-judge", fake.url)
    record = calibrate(labels(tmp_path), cfg)
    assert record.accuracy == 1.0 and record.kappa == 1.0 and record.passed
    assert record.confusion["judge_correct_human_correct"] == 30
    path = write_record(record, tmp_path / "cal.json")
    v = build_verifier("judge", {"model": "fake-judge", "base_url": fake.url, "calibration": str(path)})
    assert v.verify(Sample("7", {"answer": "7"})).outcome is Outcome.CORRECT


def test_record_below_threshold_is_refused(fake, tmp_path):
    record = calibrate(labels(tmp_path, wrong_labels=20), JudgeConfig("fake-judge", fake.url))
    assert record.kappa < 0.6 and not record.passed
    path = write_record(record, tmp_path / "cal.json")
    with pytest.raises(VerifierError, match="kappa"):
        build_verifier("judge", {"model": "fake-judge", "base_url": fake.url, "calibration": str(path)})


def test_record_for_another_prompt_is_refused(fake, tmp_path):
    path = write_record(calibrate(labels(tmp_path), JudgeConfig("fake-judge", fake.url)), tmp_path / "cal.json")
    problems = check_record(path, JudgeConfig("fake-judge", fake.url, prompt="Grade {completion}"), 0.6)
    assert any("prompt_sha256" in p for p in problems)


def test_cohen_kappa_known_values():
    assert pair_kappa([True, False] * 5, [True, False] * 5) == 1.0
    assert pair_kappa([True, True, False, False], [True, False, True, False]) == 0.0
    assert pair_kappa([True, True, True, False], [True, True, False, False]) == pytest.approx(0.5)


def test_cli_judge_calibrate_writes_the_record(fake, tmp_path, capsys):
    out = tmp_path / "cal.json"
    rc = main(
        [
            "judge",
            "calibrate",
            "--labels",
            str(labels(tmp_path)),
            "--model",
            "fake-judge",
            "--base-url",
            fake.url,
            "--out",
            str(out),
        ]
    )
    assert rc == 0 and json.loads(out.read_text())["kappa"] == 1.0
    assert "kappa 1.000" in capsys.readouterr().out


def test_cli_judge_without_model_is_one_line_error(tmp_path, capsys):
    assert main(["judge", "calibrate", "--labels", str(labels(tmp_path)), "--out", str(tmp_path / "c.json")]) == 2
    assert "--model" in capsys.readouterr().err


def test_cli_judge_help_works(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["judge", "calibrate", "--help"])
    assert exc.value.code == 0 and "--labels" in capsys.readouterr().out


def test_cli_calibrate_from_a_task_whose_judge_has_no_record_yet(fake, tmp_path, capsys):
    (tmp_path / "judge_prompt.txt").write_text(
        "Reference answer:\n{answer}\nResponse:\n{completion}\nCORRECT or INCORRECT?"
    )
    task = tmp_path / "task.yaml"
    task.write_text(
        "rewards:\n"
        f"  - {{name: graded, verifier: judge, options: {{model: fake-judge, base_url: '{fake.url}', "
        "prompt_file: judge_prompt.txt, version: '2', calibration: cal.json}}\n"
    )
    out = tmp_path / "cal.json"
    assert (
        main(
            ["judge", "calibrate", "--labels", str(labels(tmp_path)), "--task", str(task), "--out", str(out), "--json"]
        )
        == 0
    )
    record = json.loads(out.read_text())
    assert record["version"] == "2" and record["passed"]
    v = build_verifier(
        "judge",
        {
            "model": "fake-judge",
            "base_url": fake.url,
            "prompt_file": str(tmp_path / "judge_prompt.txt"),
            "version": "2",
            "calibration": str(out),
        },
    )
    assert v.verify(Sample("it is 3", {"answer": "3"})).outcome is Outcome.CORRECT


# -- issue 25: the verdict grammar, one-pass prompt, validated records, who caused a failure ------
@pytest.mark.parametrize(
    "reply",
    ["Not correct.", "NOT CORRECT", "INCORRECT? No: CORRECT", "The answer is CORRECT", "CORRECT, I think", "CORRECTLY"],
)
def test_a_reply_that_is_not_exactly_a_label_is_never_correct(fake, reply):
    fake.reply = reply
    v = judge(fake).verify(Sample("42", {"answer": "42"}))
    assert v.outcome is Outcome.UNPARSEABLE and v.score == 0.0


@pytest.mark.parametrize(
    ("reply", "outcome"),
    [("correct", Outcome.CORRECT), ("**CORRECT**", Outcome.CORRECT), (" CORRECT.\n", Outcome.CORRECT)]
    + [("Incorrect", Outcome.WRONG), ("`INCORRECT`", Outcome.WRONG)],
)
def test_a_bare_label_is_read_up_to_case_emphasis_and_a_full_stop(fake, reply, outcome):
    fake.reply = reply
    assert judge(fake).verify(Sample("42", {"answer": "42"})).outcome is outcome


def test_configured_labels_are_the_only_words_accepted(fake):
    fake.reply = "PASS"
    assert judge(fake, labels=["PASS", "FAIL"]).verify(Sample("x", {"answer": "1"})).outcome is Outcome.CORRECT
    fake.reply = "CORRECT"
    assert judge(fake, labels=["PASS", "FAIL"]).verify(Sample("x", {"answer": "1"})).outcome is Outcome.UNPARSEABLE


def test_placeholder_text_in_a_completion_is_not_substituted(fake):
    # The old render filled {completion} first and {answer} after it, splicing the reference into
    # the completion: the fake judge (CORRECT when the reference is in the response) agreed.
    v = judge(fake).verify(Sample("the answer is {answer}", {"answer": "42"}, prompt="q {completion}"))
    assert v.outcome is Outcome.WRONG
    sent = fake.requests[0]["messages"][0]["content"]
    assert "the answer is {answer}" in sent and "q {completion}" in sent


def test_render_fills_each_template_placeholder_once():
    from rlvr.rewards.judge import render

    assert render("{a}-{b}-{c}", {"a": "{b}", "b": "{a}"}) == "{b}-{a}-{c}"


def test_context_overflow_is_unparseable_and_an_outage_is_masked(fake):
    fake.status = 400
    assert judge(fake).verify(Sample("x", {"answer": "1"})).outcome is Outcome.UNPARSEABLE
    fake.status = 401
    v = judge(fake).verify(Sample("x", {"answer": "1"}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "judge"
    fake.status = 503
    v = judge(fake, retries=1).verify(Sample("x", {"answer": "1"}))
    assert v.outcome is Outcome.ERROR and v.error_kind == "judge" and len(fake.requests) == 4


def test_an_over_long_judge_prompt_is_unparseable_without_a_request(fake):
    v = judge(fake, max_input_chars=1000).verify(Sample("x" * 2000, {"answer": "1"}))
    assert v.outcome is Outcome.UNPARSEABLE and "max_input_chars" in v.detail and not fake.requests


@pytest.mark.parametrize("choice", [{"finish_reason": "content_filter"}, {"message": {"refusal": "I can't grade"}}])
def test_a_judge_refusal_is_unparseable(fake, choice):
    fake.choice = dict(choice)
    fake.reply = "CORRECT"
    assert judge(fake).verify(Sample("x", {"answer": "1"})).outcome is Outcome.UNPARSEABLE


@pytest.mark.parametrize("min_kappa", [float("nan"), -0.5, 0, 1.5, "0.6", True])
def test_min_kappa_is_validated(fake, tmp_path, min_kappa):
    path = write_record(calibrate(labels(tmp_path), JudgeConfig("fake-judge", fake.url)), tmp_path / "cal.json")
    with pytest.raises(VerifierError, match="min_kappa"):
        build_verifier(
            "judge", {"model": "fake-judge", "base_url": fake.url, "calibration": str(path), "min_kappa": min_kappa}
        )


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ('"kappa": NaN', "not a valid calibration record"),
        ('"kappa": "0.9"', "not a finite number"),
        ('"passed": false', "passed"),
        ('"labels": ["PASS", "FAIL"]', "labels"),
    ],
)
def test_a_record_that_does_not_license_the_judge_is_refused(fake, tmp_path, edit, problem):
    path = write_record(calibrate(labels(tmp_path), JudgeConfig("fake-judge", fake.url)), tmp_path / "cal.json")
    data = json.loads(path.read_text())
    key = edit.split(":")[0].strip('"')
    data.pop(key, None)
    text = json.dumps(data)[:-1] + ", " + edit + "}"
    path.write_text(text)
    problems = check_record(path, JudgeConfig("fake-judge", fake.url), 0.6)
    assert any(problem in p for p in problems), problems


PROMPT = 'Reference answer:\n1\n<response chars="1">\n1\n</response>'


@pytest.mark.parametrize("choice", [{"finish_reason": "content_filter"}, {"message": {"refusal": "I can't grade"}}])
def test_the_fake_judge_answers_a_repeated_request_as_it_answered_the_first(fake, choice):
    # A retry (after a first request that was slow on a loaded machine) must see the same reply:
    # a fake whose answer depends on how many requests came before makes a test flaky.
    fake.choice, fake.reply = dict(choice), "CORRECT"
    body = json.dumps({"model": "fake-judge", "messages": [{"role": "user", "content": PROMPT}]}).encode()
    replies = []
    for _ in range(3):
        request = urllib.request.Request(fake.url + "/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            replies.append(json.loads(response.read()))
    assert replies[0] == replies[1] == replies[2]
    assert set(choice) <= set(replies[0]["choices"][0]) | set(replies[0]["choices"][0]["message"])
