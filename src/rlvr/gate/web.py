"""The review page: a small ASGI app (Starlette) served by uvicorn on 127.0.0.1 only.

Server-rendered HTML, one sample per page; plain forms that work without JavaScript, and a few
lines of JavaScript for the keyboard shortcuts. Each verdict is a POST that commits one row to the
SQLite store *before* the redirect to the next sample is sent, so a verdict the page moved past
is on disk; two tabs each add their own rows and cannot overwrite each other.

Local-only, and defended like a local service should be: it binds 127.0.0.1 (never another
interface), rejects requests whose ``Host`` is not ``127.0.0.1``/``localhost`` (DNS rebinding),
and every POST carries a per-server random token (another site open in the same browser cannot
post verdicts). It has no login: anyone with a shell on the machine can review.

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

import html
import secrets
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

from ..errors import GateError
from .agreement import agreement, format_agreement, statuses
from .review import SHOW, SHOW_HELP, Filter, answer_diff, answer_span, answer_text, bucket_help, segments, step
from .store import CLASSES, LABELS, StaleReward, Store, reward_fingerprint

HOST = "127.0.0.1"
MAX_FORM_BYTES = 64 * 1024

_CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:12px 20px;color:#111}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;padding:10px;border-radius:4px;margin:4px 0 10px}
mark{background:#ffe066;outline:1px solid #c90}
.ctl{background:#fdd;color:#900;font-size:12px;border:1px solid #e99;border-radius:3px}
table{border-collapse:collapse;margin:6px 0 10px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
.bar{height:8px;background:#eee;border-radius:4px;overflow:hidden}.bar>div{height:8px;background:#3a7}
button{font-size:15px;padding:6px 12px;margin-right:6px}kbd{border:1px solid #999;border-radius:3px;padding:0 4px;font-size:12px}
.state-open,.state-changed{color:#b00;font-weight:600}.state-agrees,.state-resolved,.state-accepted{color:#070}
textarea{width:100%;height:4em;font:inherit}nav a,#prev,#next{margin-right:14px}.muted{color:#666;font-size:13px}
#help{display:none;background:#fffbe6;border:1px solid #e6d37a;padding:8px;margin:6px 0}
#verdict{position:sticky;bottom:0;background:#fff;border-top:2px solid #bbb;padding:4px 0 2px;z-index:1}
#verdict textarea{height:2.6em}#verdict p{margin:4px 0}
#diff del{background:#fdd;color:#900;text-decoration:line-through}#diff ins{background:#dfd;color:#060;text-decoration:none}
#bucket{border-bottom:1px dotted #666;cursor:help}
"""

_JS = """
const form = document.getElementById('verdict');
const note = document.getElementById('note');
function submitLabel(label, accept) {
  if (!form) return;
  if (accept && !note.value.trim()) { note.focus(); note.placeholder = 'write why this disagreement is acceptable, then press Esc and a'; return; }
  form.querySelector('input[name=label]').value = label;
  form.querySelector('input[name=accept]').value = accept ? '1' : '';
  form.submit();
}
document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.tagName === 'TEXTAREA' || t.tagName === 'INPUT' || t.tagName === 'SELECT')) {
    if (e.key === 'Escape') { t.blur(); e.preventDefault(); }
    return;
  }
  const go = (sel) => { const a = document.querySelector(sel); if (a) { window.location = a.href; } };
  switch (e.key) {
    case 'r': submitLabel('right', false); break;
    case 'h': submitLabel('higher', false); break;
    case 'l': submitLabel('lower', false); break;
    case 'a': if (form && form.dataset.disagreement) submitLabel(form.dataset.disagreement, true); break;
    case 'n': if (note) { note.focus(); e.preventDefault(); } break;
    case 'j': case 'ArrowRight': go('#next'); break;
    case 'k': case 'ArrowLeft': go('#prev'); break;
    case '1': go('#show-todo'); break;
    case '2': go('#show-open'); break;
    case '3': go('#show-unreviewed'); break;
    case '4': go('#show-all'); break;
    case 's': go('#status'); break;
    case 'f': { const f = document.querySelector('#filter select'); if (f) { f.focus(); e.preventDefault(); } } break;
    case '?': { const h = document.getElementById('help'); h.style.display = h.style.display === 'block' ? 'none' : 'block'; } break;
    default: return;
  }
});
"""

_HELP = (
    "<div id=help><b>Keys</b>: <kbd>r</kbd> reward is right · <kbd>h</kbd> should be higher · <kbd>l</kbd> should be lower · "
    "<kbd>a</kbd> accept this open disagreement (the note is the reason) · <kbd>n</kbd> note (<kbd>Esc</kbd> to leave it) · "
    "<kbd>j</kbd>/<kbd>k</kbd> next/previous · <kbd>1</kbd> to do · <kbd>2</kbd> open disagreements · <kbd>3</kbd> unreviewed · "
    "<kbd>4</kbd> all · <kbd>f</kbd> filter by term, outcome, total (<kbd>Tab</kbd> between fields, <kbd>Enter</kbd> in a total field applies) · "
    "<kbd>s</kbd> status · <kbd>?</kbd> this help</div>"
)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _page(title: str, body: str) -> str:
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{_e(title)}</title>"
        f"<meta name=viewport content='width=device-width'><style>{_CSS}</style></head>"
        f"<body>{body}<script>{_JS}</script></body></html>"
    )


def _completion_html(text: str, span: tuple[int, int] | None) -> str:
    out = []
    for kind, piece in segments(text, span):
        if kind == "span":
            out.append(f"<mark>{_e(piece)}</mark>")
        elif kind == "ctl":
            out.append(f"<span class=ctl>{_e(piece)}</span>")
        elif kind == "span-ctl":
            out.append(f"<mark><span class=ctl>{_e(piece)}</span></mark>")
        else:
            out.append(_e(piece))
    return "".join(out) or "<span class=muted>(empty completion)</span>"


def _diff_html(expected: str, given: str | None, verdict: Any) -> str:
    """The given answer against the expected one: what is missing struck through, what is extra
    underlined in green; invisible characters drawn as markers in both."""
    if given is None:
        why = f" ({_e(verdict.outcome.value)}: {_e(verdict.detail)})" if verdict is not None else ""
        return f"<p>Given answer: <span class=muted id=diff>none extracted{why}</span></p>"
    if given == expected:
        return f"<p>Given answer: <code id=diff>{_completion_html(given, None)}</code> <span class=muted>(identical to the expected answer)</span></p>"
    parts = []
    for op, piece in answer_diff(expected, given):
        body = _completion_html(piece, None)
        parts.append(
            f"<del title='expected, not given'>{body}</del>"
            if op == "missing"
            else f"<ins title='given, not expected'>{body}</ins>"
            if op == "extra"
            else body
        )
    return (
        f"<p>Given answer: <code id=given>{_completion_html(given, None)}</code></p>"
        f"<p>Diff, expected → given <span class=muted>(<del>missing</del> <ins>extra</ins>)</span>: <code id=diff>{''.join(parts)}</code></p>"
    )


def _score(value: float | None) -> str:
    return "masked (None)" if value is None else f"{value:g}"


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
        from starlette.routing import Route

        store.check()
        if not reviewer.strip():
            raise GateError("the review page needs a reviewer name (--reviewer)")
        self.store = store
        self.reviewer = reviewer
        self.token = token or secrets.token_urlsafe(24)
        self.allowed_hosts = allowed_hosts
        meta = store.meta()
        self.correctness_term = meta.get("correctness_term", "")
        self.answer_column = meta.get("answer_column", "answer")
        self.weights = {t["name"]: t.get("weight") for t in meta.get("terms", [])}
        self.app = Starlette(
            routes=[
                Route("/", self.index),
                Route("/sample/{sid:int}", self.show, methods=["GET"]),
                Route("/sample/{sid:int}", self.post, methods=["POST"]),
                Route("/status", self.status),
            ]
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if host.rsplit(":", 1)[0].strip("[]") not in self.allowed_hosts:
                from starlette.responses import PlainTextResponse

                await PlainTextResponse(f"refused: Host {host!r} is not local", status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    # -- helpers -------------------------------------------------------------------------------
    def _statuses(self) -> list[Any]:
        return statuses(self.store.samples(), self.store.latest_reviews())

    def _url(self, path: str, flt: Filter) -> str:
        return f"{path}?{urlencode(flt.query())}"

    def _nav(self, sts: list[Any], flt: Filter, current: int | None) -> str:
        a = agreement([st.sample for st in sts], {st.sample.id: st.review for st in sts if st.review})
        done = a.reviewed
        pct = 100 * done / a.n if a.n else 0
        matching = sum(flt.matches(st) for st in sts)
        links = " ".join(
            f"<a id=show-{s} href='{_e(self._url('/', Filter(show=s, term=flt.term, outcome=flt.outcome, min_total=flt.min_total, max_total=flt.max_total)))}'>"
            f"{'<b>' if s == flt.show else ''}{_e(SHOW_HELP[s])}{'</b>' if s == flt.show else ''}</a>"
            for s in SHOW
        )
        terms = "".join(
            f"<option value='{_e(t)}'{' selected' if t == flt.term else ''}>{_e(t)}</option>" for t in self.weights
        )
        outcomes = "".join(
            f"<option{' selected' if o == flt.outcome else ''}>{o}</option>"
            for o in ("correct", "wrong", "unparseable", "error")
        )
        prev_id = step(sts, current, flt, -1) if current is not None else None
        next_id = step(sts, current, flt, 1) if current is not None else None
        arrows = ""
        if prev_id is not None:
            arrows += f"<a id=prev href='{_e(self._url(f'/sample/{prev_id}', flt))}'>← previous <kbd>k</kbd></a>"
        if next_id is not None:
            arrows += f"<a id=next href='{_e(self._url(f'/sample/{next_id}', flt))}'>next <kbd>j</kbd> →</a>"
        return (
            f"<nav><b>Reviewed {done}/{a.n}</b> · open {len(a.disagreement_ids)} · agrees {a.states['agrees']} · "
            f"<a id=status href='{_e(self._url('/status', flt))}'>status <kbd>s</kbd></a> · <span class=muted>reviewing as {_e(self.reviewer)} · press <kbd>?</kbd> for keys</span></nav>"
            f"<div class=bar><div style='width:{pct:.1f}%'></div></div>"
            f"<p>Show: {links} <span class=muted>({matching} match)</span></p>"
            f"<form id=filter method=get action='/' class=muted>term <select name=term><option value=''>any</option>{terms}</select> "
            f"outcome <select name=outcome><option value=''>any</option>{outcomes}</select> "
            f"total from <input name=min size=4 value='{_e('' if flt.min_total is None else f'{flt.min_total:g}')}'> "
            f"to <input name=max size=4 value='{_e('' if flt.max_total is None else f'{flt.max_total:g}')}'>"
            f"<input type=hidden name=show value='{_e(flt.show)}'> <button>filter</button></form>"
            f"<p>{arrows}</p>{_HELP}"
        )

    # -- routes --------------------------------------------------------------------------------
    async def index(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse, RedirectResponse

        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        nxt = step(sts, None, flt)
        if nxt is not None:
            return RedirectResponse(self._url(f"/sample/{nxt}", flt), status_code=303)
        body = (
            self._nav(sts, flt, None)
            + f"<h2>Nothing left to show for “{_e(SHOW_HELP[flt.show])}”</h2><p><a href='{_e(self._url('/status', flt))}'>See the status</a></p>"
        )
        return HTMLResponse(_page("rlvr inspect", body))

    async def show(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        sid = int(request.path_params["sid"])
        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        st = next((x for x in sts if x.sample.id == sid), None)
        if st is None:
            return HTMLResponse(
                _page("not found", f"<p>No sample {sid} in this set. <a href='/'>Back</a></p>"), status_code=404
            )
        return HTMLResponse(_page(f"sample {sid}", self._nav(sts, flt, sid) + self._sample_html(st, flt)))

    def _sample_html(self, st: Any, flt: Filter) -> str:
        s = st.sample
        span = answer_span(s.verdicts, self.correctness_term)
        rows = "".join(
            f"<tr><td>{_e(name)}</td><td>{_e(self.weights.get(name))}</td><td>{_e(v.outcome.value)}</td><td>{_e(_score(v.score))}</td>"
            f"<td>{_e(v.answer)}</td><td>{_e(v.detail)}{(' (' + _e(v.error_kind) + ')') if v.error_kind else ''}</td></tr>"
            for name, v in s.verdicts.items()
        )
        history = "".join(
            f"<li>{_e(r.created)} {_e(r.reviewer)}: <b>{_e(r.label)}</b> (reward was {_e(_score(r.reward_total))}, {_e(r.reward_class)})"
            f"{' — accepted: ' + _e(r.accepted) if r.accepted else ''}{' — ' + _e(r.note) if r.note and not r.accepted else ''}</li>"
            for r in self.store.reviews(s.id)
        )
        disagreement = (
            st.review.label if st.is_disagreement and st.review is not None and st.review.label != "right" else ""
        )
        accept = (
            f"<button type=button onclick=\"submitLabel('{disagreement}', true)\">Accept as is <kbd>a</kbd></button>"
            if disagreement
            else ""
        )
        hidden = "".join(f"<input type=hidden name='f_{_e(k)}' value='{_e(v)}'>" for k, v in flt.query().items())
        expected = answer_text(s.row.get(self.answer_column))
        judged = s.verdicts.get(self.correctness_term)
        given = (
            judged.answer
            if judged is not None
            else next((v.answer for v in s.verdicts.values() if v.answer is not None), None)
        )
        return (
            f"<h2>Sample {s.id} <span class=muted>prompt #{s.prompt_index} · <span id=bucket title='{_e(bucket_help(s.bucket))}'>in the set as: {_e(s.bucket)}</span>"
            f" · {len(s.token_ids)} tokens, {_e(s.finish_reason)}</span></h2>"
            f"<p class=muted id=bucket-help>In the set as “{_e(s.bucket)}”: {_e(bucket_help(s.bucket))}.</p>"
            f"<p>State: <span class='state-{_e(st.state)}' id=state>{_e(st.state)}</span></p>"
            f"<h3>Prompt</h3><pre id=prompt>{_completion_html(s.prompt, None)}</pre>"
            f"<h3>Completion <span class=muted>(extracted answer highlighted)</span></h3><pre id=completion>{_completion_html(s.completion, span)}</pre>"
            f"<p>Expected answer: <code id=expected>{_e(expected)}</code></p>{_diff_html(expected, given, judged)}"
            f"<table><tr><th>term</th><th>weight</th><th>outcome</th><th>score</th><th>answer</th><th>detail</th></tr>{rows}</table>"
            f"<p>Total reward: <b id=total>{_e(_score(s.total))}</b> · class <b>{_e(s.reward_class)}</b></p>"
            f"<form id=verdict method=post action='/sample/{s.id}' data-disagreement='{_e(disagreement)}'>"
            f"<input type=hidden name=token value='{_e(self.token)}'><input type=hidden name=seen value='{reward_fingerprint(s.verdicts)}'>"
            f"<input type=hidden name=label value=''><input type=hidden name=accept value=''>{hidden}"
            f"<label>Note <kbd>n</kbd><textarea id=note name=note></textarea></label><p>"
            f"<button name=label value=right>Reward is right <kbd>r</kbd></button>"
            f"<button name=label value=higher>Should be higher <kbd>h</kbd></button>"
            f"<button name=label value=lower>Should be lower <kbd>l</kbd></button>{accept}</p></form>"
            f"<h3>Verdicts</h3><ul id=history>{history or '<li class=muted>none yet</li>'}</ul>"
        )

    async def post(self, request: Any) -> Any:
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

    async def status(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        flt = Filter.from_query(request.query_params)
        sts = self._statuses()
        a = agreement([st.sample for st in sts], {st.sample.id: st.review for st in sts if st.review})
        matrix = "".join(
            f"<tr><th>{c}</th>" + "".join(f"<td>{a.matrix[c][d]}</td>" for d in CLASSES) + "</tr>" for c in CLASSES
        )
        open_rows = "".join(
            f"<li><a href='{_e(self._url(f'/sample/{st.sample.id}', Filter(show='open')))}'>sample {st.sample.id}</a>: "
            f"{_e(st.state)} — reviewer said {_e(st.review.label)}, reward now {_e(_score(st.sample.total))} ({_e(st.sample.reward_class)})"
            f"{' — ' + _e(st.review.note) if st.review.note else ''}</li>"
            for st in sts
            if st.is_disagreement and st.review is not None
        )
        body = (
            self._nav(sts, flt, None)
            + f"<h2>Status</h2><pre id=summary>{_e(format_agreement(a))}</pre>"
            + f"<table><tr><th>reward \\ reviewer</th>{''.join(f'<th>{c}</th>' for c in CLASSES)}</tr>{matrix}</table>"
            + f"<h3>Open disagreements</h3><ul>{open_rows or '<li class=muted>none</li>'}</ul>"
        )
        return HTMLResponse(_page("rlvr inspect status", body))


def form_fields(page_html: str) -> Mapping[str, str]:
    """The hidden fields of a rendered sample page (for clients that post without a browser)."""
    import re

    return dict(re.findall(r"<input type=hidden name='?([\w]+)'? value='([^']*)'>", page_html))


def serve(store: Store, *, reviewer: str, port: int = 8765, log: bool = False) -> None:
    """Serve the review page on 127.0.0.1:``port`` until interrupted."""
    import uvicorn

    app = ReviewApp(store, reviewer=reviewer)
    uvicorn.run(app, host=HOST, port=port, log_level="info" if log else "warning", access_log=log)
