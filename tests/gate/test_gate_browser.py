"""A real browser drives the review page by keyboard only; the verdicts are checked in the database.

Playwright (the Python package) launches Debian's chromium by executable path, headless; it never
downloads a browser. ``scripts/install-system-deps.sh`` installs chromium.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from rlvr import gate
from support.fakes import FakeSampler
from support.gate_fixtures import SMALL, arithmetic_sampler, review_server

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing: run scripts/install-system-deps.sh as root"
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def _press(page: Any, key: str) -> None:
    """Press a key that submits or navigates, and wait for the next page."""
    with page.expect_navigation():
        page.keyboard.press(key)


def test_keyboard_only_review_records_verdicts_notes_and_an_acceptance(task: Any, browser: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    server = review_server(task.path, reviewer="kb-reviewer")
    try:
        page = browser.new_page()
        page.goto(server.url + "/")
        assert page.url.endswith("/sample/1?show=todo")
        # n: focus the note, type, Esc leaves it, l: "should be lower".
        page.keyboard.press("n")
        page.keyboard.type("accepts the wrong sum")
        page.keyboard.press("Escape")
        _press(page, "l")
        assert "/sample/2" in page.url
        _press(page, "r")
        _press(page, "h")
        _press(page, "j")  # skip sample 4 without a verdict
        assert "/sample/5" in page.url
        _press(page, "k")
        assert "/sample/4" in page.url
        _press(page, "r")
        # 2: the open-disagreement filter; sample 1 (lower) comes first.
        _press(page, "2")
        assert "/sample/1" in page.url and "show=open" in page.url
        page.keyboard.press("n")
        page.keyboard.type("one-off; the reward is fixed in the next task")
        page.keyboard.press("Escape")
        _press(page, "a")
        # 4: every sample; f: the term/outcome filter by keyboard (type-ahead, Tab, Enter).
        _press(page, "4")
        page.keyboard.press("f")
        page.keyboard.type("correct")
        page.keyboard.press("Tab")
        page.keyboard.type("unparseable")
        page.keyboard.press("Tab")
        _press(page, "Enter")
        assert "term=correct" in page.url and "outcome=unparseable" in page.url
        shown = int(page.url.split("/sample/")[1].split("?")[0])
        page.close()
    finally:
        server.kill()
    got = [(r.sample_id, r.label, r.note, r.accepted, r.reviewer) for r in store.reviews()]
    assert got == [
        (1, "lower", "accepts the wrong sum", None, "kb-reviewer"),
        (2, "right", "", None, "kb-reviewer"),
        (3, "higher", "", None, "kb-reviewer"),
        (4, "right", "", None, "kb-reviewer"),
        (1, "lower", "", "one-off; the reward is fixed in the next task", "kb-reviewer"),
    ]
    assert store.sample(shown).rollout.verdicts["correct"].outcome.value == "unparseable"


def test_two_tabs_on_the_same_sample_lose_no_update(task: Any, browser: Any) -> None:
    store = gate.build_set(task, gate.db_path(task), sampler=arithmetic_sampler(), size=SMALL)
    server = review_server(task.path)
    try:
        ctx = browser.new_context()
        a, b = ctx.new_page(), ctx.new_page()
        a.goto(server.url + "/")
        b.goto(server.url + "/")  # both tabs show sample 1
        _press(a, "l")
        _press(b, "r")  # b's page is stale: its verdict is added, not lost, and a's is kept
        _press(a, "r")  # a is on sample 2
        _press(b, "h")  # b moved on to sample 2 as well
        ctx.close()
    finally:
        server.kill()
    assert [(r.sample_id, r.label) for r in store.reviews()] == [
        (1, "lower"),
        (1, "right"),
        (2, "right"),
        (2, "higher"),
    ]
    assert {sid: r.label for sid, r in store.latest_reviews().items()} == {1: "right", 2: "higher"}


def long_sampler() -> FakeSampler:
    """Completions of 300 lines of working before the answer: far taller than the window."""
    from rlvr.demo.arithmetic import reference_answer

    working = "".join(f"step {i}: carry the one\n" for i in range(300))
    return FakeSampler(lambda prompt, rng: working + f"<answer>{reference_answer(prompt) or '0'}</answer>")


def _in_view(page: Any, selector: str) -> bool:
    return bool(
        page.eval_on_selector(
            selector,
            "e => { const r = e.getBoundingClientRect(); "
            "return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0; }",
        )
    )


def test_verdict_buttons_stay_in_view_on_a_long_completion_and_a_click_records_the_verdict(
    task: Any, browser: Any
) -> None:
    # Observed: with a long completion the verdict buttons were below the fold; the reviewer had
    # to scroll to the end of every sample to give a verdict.
    store = gate.build_set(task, gate.db_path(task), sampler=long_sampler(), size=SMALL)
    server = review_server(task.path, reviewer="scroller")
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server.url + "/sample/1")
        assert page.eval_on_selector("#completion", "e => e.getBoundingClientRect().height") > 3 * 720
        for fraction in (0.0, 0.5):
            page.evaluate(f"window.scrollTo(0, document.body.scrollHeight * {fraction})")
            for label in ("right", "higher", "lower"):
                assert _in_view(page, f"button[value={label}]"), (label, fraction)
        with page.expect_navigation():
            page.click("button[value=higher]")
        assert "/sample/2" in page.url
        assert page.locator("#bucket").get_attribute("title")  # the selection bucket says what it is
        page.close()
    finally:
        server.kill()
    assert [(r.sample_id, r.label, r.reviewer) for r in store.reviews()] == [(1, "higher", "scroller")]
