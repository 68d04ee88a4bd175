"""The review page: a small ASGI app (Starlette) served by uvicorn on 127.0.0.1 only.

Server-rendered HTML, one sample per page, from Jinja2 templates (``gate/templates/``) with
autoescaping on, so model text reaches the page as text (``<script>`` and ``{{ }}`` included);
plain forms that work without JavaScript, and a few lines of JavaScript for the keyboard
shortcuts (``gate/static/``, inlined into each page with the style sheet). Each verdict is a POST
that commits one row to the SQLite store *before* the redirect to the next sample is sent, so a
verdict the page moved past is on disk; two tabs each add their own rows and cannot overwrite
each other.

Local-only, and defended like a local service should be: it binds 127.0.0.1 (never another
interface), rejects requests whose ``Host`` is not ``127.0.0.1``/``localhost`` (DNS rebinding;
Starlette's ``TrustedHostMiddleware``), and every POST carries a per-server random token
(another site open in the same browser cannot post verdicts). It has no login: anyone with a
shell on the machine can review.

The verdict form (note and buttons) is sticky at the bottom of the window, so a long completion
never scrolls the buttons out of view. Beside the expected answer, the page shows the answer the
correctness term extracted and a word-level diff against the expected one, and it says why the
sample is in the set (its selection bucket, ``review.BUCKET_HELP``).

Keys: ``r`` reward is right, ``h`` should be higher, ``l`` should be lower, ``a`` accept an open
disagreement (the note is the reason), ``n`` write a note (``Esc`` leaves the note), ``j``/``k``
next/previous, ``1``-``4`` filters (to do, open disagreements, unreviewed, all), ``f`` the
term/outcome/total filter, ``s`` status, ``?`` help.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlencode

from ..errors import GateError
from .agreement import SampleStatus, agreement, format_agreement, statuses
from .codeview import code_view
from .review import (
    SHOW,
    SHOW_HELP,
    Filter,
    answer_diff,
    answer_span,
    answer_text,
    bucket_help,
    episode_view,
    plain,
    segments,
    step,
)
from .store import CLASSES, LABELS, StaleReward, Store, reward_fingerprint

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import Receive, Scope, Send

    from ..rewards.base import Verdict

HOST = "127.0.0.1"
MAX_FORM_BYTES = 64 * 1024
OUTCOMES = ("correct", "wrong", "unparseable", "error")


def score_text(value: float | None) -> str:
    """A reward as the page shows it: the number, or ``masked (None)``."""
    return "masked (None)" if value is None else f"{value:g}"


@cache
def templates() -> Environment:
    """The page templates, autoescaped; ``None`` renders as nothing (as an empty cell)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(
        loader=PackageLoader("rlvr.gate", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=lambda value: "" if value is None else value,
    )
    env.filters["score"] = score_text
    env.filters["plain"] = plain  # program text and output: invisible characters drawn as markers
    return env


@cache
def assets() -> dict[str, Any]:
    """The style sheet and the keyboard script, inlined into every page (one request per page,
    nothing for the Host check to miss)."""
    from importlib.resources import files

    from markupsafe import Markup

    static = files("rlvr.gate") / "static"
    return {name: Markup(static.joinpath(f"review.{name}").read_text(encoding="utf-8")) for name in ("css", "js")}


def render(template: str, title: str, **context: Any) -> str:
    return templates().get_template(template).render(title=title, **assets(), **context)


@dataclass(frozen=True)
class AnswerDiff:
    """The given answer against the expected one, as the page draws it: text segments (see
    ``review.segments``) for the given answer, and (op, segments) pieces of the word diff."""

    given: list[tuple[str, str]] | None
    why: str = ""  # when no answer was extracted: the verdict's outcome and detail
    identical: bool = False
    pieces: tuple[tuple[str, list[tuple[str, str]]], ...] = ()

    @classmethod
    def of(cls, expected: str, given: str | None, verdict: Verdict | None) -> AnswerDiff:
        if given is None:
            why = f"{verdict.outcome.value}: {verdict.detail}" if verdict is not None else ""
            return cls(None, why=why)
        if given == expected:
            return cls(segments(given, None), identical=True)
        pieces = tuple((op, segments(piece, None)) for op, piece in answer_diff(expected, given))
        return cls(segments(given, None), pieces=pieces)


class ReviewApp:
    """The ASGI app. ``reviewer`` is recorded with every verdict given through it."""

    def __init__(
        self,
        store: Store,
        *,
        reviewer: str,
        token: str | None = None,
        allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
    ) -> None:
        from starlette.applications import Starlette
        from starlette.middleware import Middleware
        from starlette.middleware.trustedhost import TrustedHostMiddleware
        from starlette.routing import Route

        store.check()
        if not reviewer.strip():
            raise GateError("the review page needs a reviewer name (--reviewer)")
        self.store = store
        self.reviewer = reviewer
        self.token = token or secrets.token_urlsafe(24)
        self.allowed_hosts = allowed_hosts
        meta = store.meta()
        self.meta = meta
        self.correctness_term = meta.get("correctness_term", "")
        self.answer_column = meta.get("answer_column", "answer")
        self.weights = {t["name"]: t.get("weight") for t in meta.get("terms", [])}
        self.app = Starlette(
            routes=[
                Route("/", self.index),
                Route("/sample/{sid:int}", self.show, methods=["GET"]),
                Route("/sample/{sid:int}", self.post, methods=["POST"]),
                Route("/status", self.status),
            ],
            # DNS rebinding: a page on another site whose name resolves to 127.0.0.1 sends its own Host.
            middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts), www_redirect=False)],
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    # -- helpers -------------------------------------------------------------------------------
    def _statuses(self) -> list[SampleStatus]:
        return statuses(self.store.samples(), self.store.latest_reviews())

    def _url(self, path: str, flt: Filter) -> str:
        return f"{path}?{urlencode(flt.query())}"

    def _nav(self, sts: Sequence[SampleStatus], flt: Filter, current: int | None) -> dict[str, Any]:
        a = agreement([st.sample for st in sts], {st.sample.id: st.review for st in sts if st.review})
        prev_id = step(sts, current, flt, -1) if current is not None else None
        next_id = step(sts, current, flt, 1) if current is not None else None
        shows = [
            {
                "show": show,
                "url": self._url("/", Filter(show, flt.term, flt.outcome, flt.min_total, flt.max_total)),
                "label": SHOW_HELP[show],
                "current": show == flt.show,
            }
            for show in SHOW
        ]
        return {
            "done": a.reviewed,
            "n": a.n,
            "pct": 100 * a.reviewed / a.n if a.n else 0,
            "open": len(a.disagreement_ids),
            "agrees": a.states["agrees"],
            "status_url": self._url("/status", flt),
            "reviewer": self.reviewer,
            "shows": shows,
            "matching": sum(flt.matches(st) for st in sts),
            "terms": list(self.weights),
            "term": flt.term,
            "outcomes": OUTCOMES,
            "outcome": flt.outcome,
            "min": "" if flt.min_total is None else f"{flt.min_total:g}",
            "max": "" if flt.max_total is None else f"{flt.max_total:g}",
            "show": flt.show,
            "prev_url": self._url(f"/sample/{prev_id}", flt) if prev_id is not None else None,
            "next_url": self._url(f"/sample/{next_id}", flt) if next_id is not None else None,
        }

    # -- routes --------------------------------------------------------------------------------
    async def index(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse, RedirectResponse

        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        nxt = step(sts, None, flt)
        if nxt is not None:
            return RedirectResponse(self._url(f"/sample/{nxt}", flt), status_code=303)
        page = render("empty.html", "rlvr inspect", nav=self._nav(sts, flt, None), show_help=SHOW_HELP[flt.show])
        return HTMLResponse(page)

    async def show(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        sid = int(request.path_params["sid"])
        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        st = next((x for x in sts if x.sample.id == sid), None)
        if st is None:
            return HTMLResponse(render("not_found.html", "not found", sid=sid), status_code=404)
        return HTMLResponse(
            render("sample.html", f"sample {sid}", nav=self._nav(sts, flt, sid), **self._sample(st, flt))
        )

    def _sample(self, st: SampleStatus, flt: Filter) -> dict[str, Any]:
        """What the sample page shows besides the navigation."""
        s = st.sample
        expected = answer_text(s.rollout.row.get(self.answer_column))
        judged = s.rollout.verdicts.get(self.correctness_term)
        given = (
            judged.answer
            if judged is not None
            else next((v.answer for v in s.rollout.verdicts.values() if v.answer is not None), None)
        )
        review = st.review
        open_label = review.label if st.is_disagreement and review is not None and review.label != "right" else ""
        return {
            "st": st,
            "bucket_help": bucket_help(s.bucket),
            "prompt": segments(s.rollout.prompt, None),
            "completion": segments(s.rollout.completion, answer_span(s.rollout.verdicts, self.correctness_term)),
            "expected": expected,
            "code": code_view(
                s.rollout.verdicts, s.rollout.row, self.meta
            ),  # a code sample: its tests instead (gate.codeview)
            "episode": episode_view(s.rollout.episode),  # an episode task: each turn, call and result
            "answer_diff": AnswerDiff.of(expected, given, judged),
            "weights": self.weights,
            "disagreement": open_label,  # the open verdict "accept as is" would keep
            "token": self.token,
            "seen": reward_fingerprint(s.rollout.verdicts),
            "hidden": list(flt.query().items()),
            "history": self.store.reviews(s.id),
        }

    async def post(self, request: Request) -> Response:
        from starlette.responses import PlainTextResponse, RedirectResponse

        sid = int(request.path_params["sid"])
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return PlainTextResponse("form too large", status_code=413)
        # The last non-empty value: a clicked button's label follows the hidden field keys set.
        form = {
            k: next((x for x in reversed(v) if x), "")
            for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()
        }
        if not secrets.compare_digest(form.get("token", ""), self.token):
            return PlainTextResponse("refused: stale or missing page token; reload the page", status_code=403)
        label = form.get("label", "")
        if label not in LABELS:
            return PlainTextResponse(f"unknown verdict {label!r}: one of {', '.join(LABELS)}", status_code=400)
        note = form.get("note", "").strip()
        accepted = note if form.get("accept") else None
        if form.get("accept") and not note:
            return PlainTextResponse("accepting a disagreement needs a reason: write it in the note", status_code=400)
        try:
            self.store.add_review(
                sid,
                label,
                reviewer=self.reviewer,
                note="" if accepted else note,
                accepted=accepted,
                seen=form.get("seen") or None,
            )
        except StaleReward as exc:
            return PlainTextResponse(f"{exc} (reload the page; nothing was recorded)", status_code=409)
        except GateError as exc:
            return PlainTextResponse(str(exc), status_code=404 if "no sample" in str(exc) else 400)
        flt = Filter.from_query({k[2:]: v for k, v in form.items() if k.startswith("f_")})
        nxt = step(self._statuses(), sid, flt)
        target = self._url(f"/sample/{nxt}", flt) if nxt is not None else self._url("/", flt)
        return RedirectResponse(target, status_code=303)

    async def status(self, request: Request) -> Response:
        from starlette.responses import HTMLResponse

        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        a = agreement([st.sample for st in sts], {st.sample.id: st.review for st in sts if st.review})
        open_items = [
            {"st": st, "url": self._url(f"/sample/{st.sample.id}", Filter(show="open"))}
            for st in sts
            if st.is_disagreement and st.review is not None
        ]
        page = render(
            "status.html",
            "rlvr inspect status",
            nav=self._nav(sts, flt, None),
            summary=format_agreement(a),
            classes=CLASSES,
            matrix=a.matrix,
            open=open_items,
        )
        return HTMLResponse(page)


def form_fields(page_html: str) -> Mapping[str, str]:
    """The hidden fields of a rendered sample page (for clients that post without a browser)."""
    import re

    return dict(re.findall(r"<input type=hidden name='?([\w]+)'? value='([^']*)'>", page_html))


def serve(store: Store, *, reviewer: str, port: int = 8765, log: bool = False) -> None:
    """Serve the review page on 127.0.0.1:``port`` until interrupted."""
    import uvicorn

    app = ReviewApp(store, reviewer=reviewer)
    uvicorn.run(app, host=HOST, port=port, log_level="info" if log else "warning", access_log=log)
