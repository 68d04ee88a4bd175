"""The review page: verdicts reach the database, the page shows what the reviewer must see, local
defences hold, a killed server loses nothing, two tabs lose nothing."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from rlvr import gate
from rlvr.errors import GateError
from rlvr.gate.store import InspectionSample, Store
from rlvr.gate.web import ReviewApp, form_fields
from rlvr.rewards.base import Verdict
from rlvr.rollouts import Rollout
from support.gate_fixtures import SMALL, arithmetic_sampler, review_server


def _client(store: Store, host: str = "127.0.0.1:8765") -> TestClient:
    return TestClient(ReviewApp(store, reviewer="alice"), base_url=f"http://{host}")


@pytest.fixture
def store(task: Any) -> Store:
    return gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)


def _post(client: Any, page: Any, label: str, **extra: str) -> Any:
    """Submit the verdict form of a rendered sample page, as the browser would."""
    fields = {**form_fields(page.text), "label": label, **extra}
    return client.post(page.url.path, data=fields, follow_redirects=False)


def test_unknown_sample_is_a_404_and_records_nothing(store: Store) -> None:
    c = _client(store)
    assert c.get("/sample/999").status_code == 404
    token = form_fields(c.get("/sample/1").text)["token"]
    assert c.post("/sample/999", data={"token": token, "label": "right"}, follow_redirects=False).status_code == 404
    assert store.reviews() == []


def test_verdict_posted_through_the_page_is_in_the_database(store: Store) -> None:
    c = _client(store)
    page = c.get("/", follow_redirects=True)
    assert page.url.path == "/sample/1"
    resp = _post(c, page, "lower", note="restates the question")
    assert resp.status_code == 303
    assert resp.headers["location"].startswith("/sample/2")
    (r,) = store.reviews()
    assert (r.sample_id, r.label, r.note, r.reviewer) == (1, "lower", "restates the question", "alice")


def test_page_shows_prompt_expected_answer_terms_and_the_highlighted_span(store: Store) -> None:
    s = next(x for x in store.samples() if x.reward_class == "pass")
    html = _client(store).get(f"/sample/{s.id}").text
    answer = s.rollout.row["answer"]
    assert f"<mark>{answer}</mark>" in html
    assert f"<code id=expected>{answer}</code>" in html
    assert s.rollout.prompt in html
    for term in ("format", "correct"):
        assert f"<td>{term}</td>" in html


def test_invisible_characters_in_a_completion_are_drawn_and_markup_is_escaped(tmp_path: Any) -> None:
    text = "<script>alert(1)</script><answer>4\u200b2</answer>"
    v = Verdict.wrong(answer="4\u200b2", span=(len(text) - 13, len(text) - 9))
    store = Store.create(
        tmp_path / "s.db",
        {"correctness_term": "correct", "terms": [{"name": "correct", "weight": 1.0}]},
        [
            InspectionSample(
                1, Rollout(0, "40+2=", {"answer": "42"}, text, (1,), "stop", None, {"correct": v}, 0.0), "low", "fail"
            )
        ],
    )
    html = _client(store).get("/sample/1").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>alert(1)" not in html
    assert "⟨U+200B⟩" in html


def test_request_with_a_foreign_host_header_is_refused(store: Store) -> None:
    resp = _client(store, host="attacker.example:8765").get("/")
    assert resp.status_code == 400
    assert resp.text == "Invalid host header"  # Starlette's TrustedHostMiddleware


def test_a_verdict_posted_under_a_foreign_host_is_refused_and_records_nothing(store: Store) -> None:
    # DNS rebinding: a page on attacker.example, resolved to 127.0.0.1, posting with a valid token.
    token = form_fields(_client(store).get("/sample/1").text)["token"]
    resp = _client(store, host="attacker.example:8765").post(
        "/sample/1", data={"token": token, "label": "right"}, follow_redirects=False
    )
    assert resp.status_code == 400
    assert store.reviews() == []


def test_model_text_with_markup_and_template_syntax_is_shown_escaped(tmp_path: Any) -> None:
    text = "<script>alert(1)</script>{{ 7*7 }}{% if 1 %}x{% endif %}<answer>42</answer>"
    prompt = "<img src=x onerror=alert(2)>{{ config }}"
    v = Verdict.correct(answer="<b>42</b>{{ 6*7 }}", detail="<i>{{ detail }}</i>")
    store = Store.create(
        tmp_path / "s.db",
        {"correctness_term": "correct", "terms": [{"name": "correct", "weight": 1.0}]},
        [
            InspectionSample(
                1,
                Rollout(0, prompt, {"answer": "{{ 42 }}<u>"}, text, (1,), "stop", None, {"correct": v}, 1.0),
                "low",
                "pass",
            )
        ],
    )
    store.add_review(1, "lower", reviewer="alice", note="<script>note()</script>{{ note }}")
    html = _client(store).get("/sample/1").text
    for shown in (  # the template syntax is still there, as text: nothing the model wrote was evaluated
        "&lt;script&gt;alert(1)&lt;/script&gt;{{ 7*7 }}{% if 1 %}x{% endif %}",
        "&lt;img src=x onerror=alert(2)&gt;{{ config }}",
        "&lt;b&gt;42&lt;/b&gt;{{ 6*7 }}",
        "&lt;i&gt;{{ detail }}&lt;/i&gt;",
        "<code id=expected>{{ 42 }}&lt;u&gt;</code>",
        "&lt;script&gt;note()&lt;/script&gt;{{ note }}",
    ):
        assert shown in html
    for raw in ("<script>alert", "<img src=x", "<b>42", "<i>{{", "<u>", "<script>note"):
        assert raw not in html


def test_post_without_the_page_token_is_refused_and_records_nothing(store: Store) -> None:
    resp = _client(store).post("/sample/1", data={"label": "right"}, follow_redirects=False)
    assert resp.status_code == 403
    assert store.reviews() == []


def test_accepting_a_disagreement_without_a_reason_is_refused(store: Store) -> None:
    c = _client(store)
    page = c.get("/sample/3")
    assert _post(c, page, "higher").status_code == 303
    page = c.get("/sample/3")
    assert "Accept as is" in page.text
    resp = _post(c, page, "higher", accept="1", note="")
    assert resp.status_code == 400
    assert _post(c, page, "higher", accept="1", note="close enough").status_code == 303
    assert store.reviews()[-1].accepted == "close enough"


def test_open_filter_steps_only_through_disagreements(store: Store) -> None:
    for s in store.samples():
        store.add_review(s.id, "lower" if s.id in (4, 9) else "right", reviewer="alice")
    c = _client(store)
    first = c.get("/?show=open", follow_redirects=True)
    assert first.url.path == "/sample/4"
    assert "id=next href='/sample/9?show=open'" in first.text


def test_term_outcome_filter_selects_matching_samples(store: Store) -> None:
    c = _client(store)
    page = c.get("/?show=all&term=correct&outcome=unparseable", follow_redirects=True)
    sid = int(page.url.path.rsplit("/", 1)[1])
    assert store.sample(sid).rollout.verdicts["correct"].outcome.value == "unparseable"


def test_status_page_shows_the_confusion_matrix_and_kappa(store: Store) -> None:
    for s in store.samples():
        store.add_review(s.id, "right", reviewer="alice")
    text = _client(store).get("/status").text
    assert "Cohen&#39;s kappa: 1.000" in text
    assert "gate: PASSES" in text


def test_killing_the_server_mid_review_loses_no_acknowledged_verdict(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    server = review_server(task.path)
    acked: list[int] = []
    stop = threading.Event()

    def review_fast() -> None:
        with httpx.Client(base_url=server.url, timeout=5.0) as c:
            page = c.get("/sample/1")
            token = form_fields(page.text)["token"]
            i = 0
            while not stop.is_set():
                sid = i % SMALL + 1
                try:
                    r = c.post(f"/sample/{sid}", data={"token": token, "label": "right", "note": f"n{i}"})
                except httpx.HTTPError:
                    return  # the server is gone
                if r.status_code == 303:
                    acked.append(i)
                i += 1

    try:
        t = threading.Thread(target=review_fast)
        t.start()
        deadline = time.monotonic() + 30
        while len(acked) < 15 and t.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()  # SIGKILL in the middle of a stream of verdicts
        stop.set()
        t.join(10)
    finally:
        server.kill()
    notes = {r.note for r in store.reviews()}
    assert {f"n{i}" for i in acked} <= notes
    assert len(acked) >= 15


def test_two_clients_posting_at_once_lose_no_update(task: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    server = review_server(task.path)
    failures: list[str] = []
    try:

        def tab(name: str) -> None:
            try:
                with httpx.Client(base_url=server.url, timeout=30.0) as c:
                    token = form_fields(c.get("/sample/1").text)["token"]
                    for i in range(10):
                        r = c.post(
                            f"/sample/{i % 3 + 1}", data={"token": token, "label": "right", "note": f"{name}{i}"}
                        )
                        if r.status_code != 303:
                            failures.append(f"{name}{i}: HTTP {r.status_code} {r.text[:200]}")
            except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                failures.append(f"{name}: {type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=tab, args=(n,)) for n in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        server.kill()
    assert failures == []
    assert sorted(r.note for r in store.reviews()) == sorted(
        [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)]
    )


def test_serving_a_set_that_was_never_built_is_a_clear_error(task: Any) -> None:
    with pytest.raises(GateError, match="no inspection set"):
        ReviewApp(Store(gate.db_path(task)), reviewer="alice")


def test_verdict_on_a_page_older_than_a_rescore_is_refused(user_task: Any) -> None:
    import importlib
    import sys

    store = gate.build_set(user_task, gate.db_path(user_task), sampler=arithmetic_sampler(), size=SMALL)
    sid = next(s.id for s in store.samples() if s.reward_class == "pass")
    c = _client(store)
    page = c.get(f"/sample/{sid}")  # the reviewer is looking at a passing sample...
    module = user_task.root / (user_task.rewards[1].verifier.partition(":")[0] + ".py")
    module.write_text(module.read_text().replace("ok = ex.answer.strip() == gold", "ok = False"))
    sys.modules.pop(module.stem, None)
    importlib.invalidate_caches()
    gate.rescore(user_task, store)  # ...while someone re-scores the set: it now fails
    resp = _post(c, page, "right")
    assert resp.status_code == 409
    assert "re-scored after it was shown" in resp.text
    assert store.reviews() == []
    assert _post(c, c.get(f"/sample/{sid}"), "right").status_code == 303


def _one_sample_store(
    tmp_path: Any, completion: str, verdict: Verdict, row: dict[str, Any] | None = None, bucket: str = "low"
) -> Store:
    return Store.create(
        tmp_path / "one.db",
        {"correctness_term": "correct", "terms": [{"name": "correct", "weight": 1.0}]},
        [
            InspectionSample(
                1,
                Rollout(0, "40+2=", row or {"answer": "42"}, completion, (1,), "stop", None, {"correct": verdict}, 0.0),
                bucket,
                "fail",
            )
        ],
    )


def test_the_all_bucket_label_says_what_it_means(tmp_path: Any) -> None:
    # Observed: the sample header said "all" with nothing to say what it was.
    from rlvr.gate.review import BUCKET_HELP

    text = "<answer>43</answer>"
    store = _one_sample_store(tmp_path, text, Verdict.wrong(answer="43", span=(8, 10)), bucket="all")
    html = _client(store).get("/sample/1").text
    assert f"<span id=bucket title='{BUCKET_HELP['all']}'>in the set as: all</span>" in html
    assert "every sampled completion: the pool was no larger than the set" in html


def test_every_bucket_the_set_builder_assigns_has_an_explanation() -> None:
    from rlvr.gate.build import select
    from rlvr.gate.review import BUCKET_HELP

    def pool(n: int) -> list[InspectionSample]:
        return [
            InspectionSample(
                0, Rollout(i, "p", {}, "c", (), "stop", total=None if i % 5 == 0 else float(i)), "", "fail"
            )
            for i in range(n)
        ]

    seen = {b for _, b in select(pool(100), 20, 0)} | {b for _, b in select(pool(10), 20, 0)}
    assert seen == set(BUCKET_HELP)


def test_page_shows_a_word_diff_between_the_expected_and_the_given_answer(tmp_path: Any) -> None:
    text = "<answer>43</answer>"
    html = _client(_one_sample_store(tmp_path, text, Verdict.wrong(answer="43", span=(8, 10)))).get("/sample/1").text
    assert "<code id=given>43</code>" in html
    assert (
        "<code id=diff><del title='expected, not given'>42</del><ins title='given, not expected'>43</ins></code>"
        in html
    )


def test_an_answer_equal_to_the_expected_one_is_marked_identical(tmp_path: Any) -> None:
    html = (
        _client(_one_sample_store(tmp_path, "<answer>42</answer>", Verdict.correct(answer="42", span=(8, 10))))
        .get("/sample/1")
        .text
    )
    assert "<code id=diff>42</code> <span class=muted>(identical to the expected answer)</span>" in html


def test_a_completion_without_an_answer_says_none_was_extracted_and_why(tmp_path: Any) -> None:
    html = _client(_one_sample_store(tmp_path, "42", Verdict.unparseable("no <answer> span"))).get("/sample/1").text
    assert "none extracted (unparseable: no &lt;answer&gt; span)" in html


def test_a_json_ground_truth_is_shown_and_diffed_as_json(tmp_path: Any) -> None:
    row = {"answer": {"name": "f", "arguments": {"x": 1}}}
    given = '{"arguments": {"x": 2}, "name": "f"}'  # the store keeps rows with sorted keys
    html = (
        _client(_one_sample_store(tmp_path, f"<answer>{given}</answer>", Verdict.wrong(answer=given), row=row))
        .get("/sample/1")
        .text
    )
    assert "<code id=expected>{&#34;arguments&#34;: {&#34;x&#34;: 1}, &#34;name&#34;: &#34;f&#34;}</code>" in html
    assert "<del title='expected, not given'>1</del><ins title='given, not expected'>2</ins>" in html


def test_the_verdict_form_is_sticky_at_the_bottom_of_the_window(store: Store) -> None:
    html = _client(store).get("/sample/1").text
    assert (
        "#verdict{position:sticky;bottom:0;" in html
    )  # the layout itself is checked in a real browser (test_gate_browser)
