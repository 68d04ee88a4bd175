"""The reward server: a Starlette app served by uvicorn.

Endpoints (docs/serve.md has the request and response shapes):

- ``POST /v1/score``: the rlvr API, every term's verdict, the weighted reward (``null`` when
  masked), the mask, and a stand-in ``engine_reward`` for clients that cannot mask.
- ``POST /get_reward``: OpenRLHF's remote reward protocol (``--remote_rm_url``); on an episode
  task each response is read back into an episode (``rlvr.serve.episodes``).
- ``GET /healthz``: ``{"status": "ok"}`` while the server accepts work (no token needed).
- ``GET /metrics``: Prometheus text, per-term error, timeout, unparseable and masked rates, and
  the tripwire's rounds, findings and trip (``rlvr.train.tripwire``: every scored batch is a step;
  once it trips, every scoring request gets ``409`` with the report until the server restarts).

Limits, each answered with a JSON error and never with a stopped server:

- Admission: at most ``workers + max_queue`` batches are admitted (scoring or waiting for a
  worker); one more gets ``503`` with ``Retry-After``. A batch keeps its place until its rows are
  actually finished, also when its response already went out at the deadline, so the bound holds
  for the work on the CPU and not only for the open connections.
- Size: a body over ``max_body_bytes`` gets ``413`` (checked on ``Content-Length`` and while
  reading a chunked body), more than ``max_rows`` samples ``413``, a body that is not JSON, or
  not ``application/json``, ``400`` / ``415``. The body is read by the strict JSON reader
  (``rlvr.rewards.rules.strictjson``): duplicate keys, ``NaN``/``Infinity``, a number of more than
  4,300 digits and nesting deeper than ``BODY_MAX_DEPTH`` are ``400`` with a JSON error.
- Deadline: rows not scored within ``deadline`` seconds are settled by the fail-closed rule
  (``rlvr.rewards.fault``): each such row's gold is scored through the same terms within a
  deadline of its own; a gold decided in time charges the slow answer (every term ``wrong``,
  0, ``error_kind`` ``timeout``), a gold as slow leaves the row masked (every term an ``error``
  of kind ``timeout``). A response so comes within twice the deadline. Chunks of late rows
  that have not started are dropped. Python cannot stop a running thread, so a chunk being
  scored keeps its worker until its verifier returns (every built-in verifier has its own
  timeout) and the batch keeps its place until then.
- Off the event loop: reading a body (the strict JSON reader), building the samples and
  writing the response run on a pool of ``parsers`` threads, never on the loop, so a slow
  body delays other clients by little more than their own parse (``bench/serve.py --big``);
  more than ``capacity + parsers`` requests waiting to be read get ``503``.
- Shutdown: on SIGTERM or SIGINT uvicorn stops accepting connections and waits for the requests
  in flight, which wait for their batches (up to the deadline), then the worker pool is joined.

Binding: 127.0.0.1 unless the caller passes another host, which ``check_bind`` allows only with
``allow_remote`` and a token of at least ``MIN_TOKEN_CHARS`` (16) characters. With a token every
endpoint but ``/healthz`` needs
``Authorization: Bearer TOKEN`` or ``?token=TOKEN`` (OpenRLHF sends no headers, so its URL carries
the token; keep access logs off). On a loopback bind without a token, requests whose ``Host`` is
not local are refused (DNS rebinding) and only ``application/json`` bodies are read, which a web
page cannot send cross-origin without a preflight this server never answers.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import secrets
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ConfigError, Problem
from ..rewards.base import Sample, Verdict
from ..rewards.combine import Scored
from ..rewards.rules.strictjson import JsonError, read_json
from .engines import openrlhf_response
from .scoring import RequestError, Scorer, gold_row_key, gold_verdicts, openrlhf_samples, past_deadline, rlvr_samples

LOOPBACK = "127.0.0.1"
MIN_TOKEN_CHARS = 16  # a token for a remote bind: `python -c "import secrets; print(secrets.token_urlsafe())"`
BODY_MAX_DEPTH = 128  # a request's nesting: samples, chat messages, tool calls and their arguments
T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """What one server accepts. Each default states its consequence in ``rlvr serve --help``."""

    workers: int = 2  # chunks scored at once (threads; math and code fan out to their own processes)
    max_queue: int = 8  # batches admitted beyond ``workers``; more get 503 + Retry-After
    max_body_bytes: int = 16 * 1024 * 1024
    max_rows: int = 4096
    deadline: float = 300.0  # seconds; rows not scored by then are charged, or masked if their gold is as slow
    chunk: int = 32  # rows per unit of work
    parsers: int = 2  # threads that read request bodies and write responses, off the event loop
    retry_after: int = 2  # seconds, sent with 503


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None, allow_remote: bool) -> None:
    """Refuse a non-loopback bind without ``allow_remote`` and a token (``ConfigError``)."""
    if is_loopback(host):
        return
    problems = []
    if not allow_remote:
        problems.append(
            Problem(
                f"--host {host}",
                "binding another address than 127.0.0.1 exposes the reward server to the network",
                "add --allow-remote, and set a token",
            )
        )
    if not token:
        problems.append(
            Problem(
                f"--host {host}",
                "a server reachable from the network needs a token",
                "set RLVR_SERVE_TOKEN or --token-file PATH; clients send Authorization: Bearer TOKEN or ?token=TOKEN",
            )
        )
    elif len(token.strip()) < MIN_TOKEN_CHARS:
        problems.append(
            Problem(
                f"--host {host}",
                f"the token is {len(token.strip())} characters; a server reachable from the network needs at least "
                f"{MIN_TOKEN_CHARS} (a short token can be guessed)",
                'make one with: python -c "import secrets; print(secrets.token_urlsafe())"',
            )
        )
    if problems:
        raise ConfigError(problems)


class RewardServer:
    """The ASGI app. ``scorer`` is already gated (``Scorer.from_task``)."""

    def __init__(
        self,
        scorer: Scorer,
        limits: Limits = Limits(),
        *,
        token: str | None = None,
        host: str = LOOPBACK,
        tripwire: bool = True,
    ) -> None:
        from starlette.applications import Starlette
        from starlette.routing import Route

        from ..train.tripwire import ServedTripwire

        self.scorer = scorer
        self.limits = limits
        # The same probes and signals as rlvr train, one scored batch a step (the task's grpo.tripwire).
        self.tripwire = ServedTripwire.for_task(scorer.task, scorer.reward_set) if tripwire else None
        self.token = token or None
        self.local_only = is_loopback(host) and not self.token
        self.pool = ThreadPoolExecutor(max_workers=max(1, limits.workers), thread_name_prefix="rlvr-serve")
        # Reading bodies and writing responses: never on the event loop (a 14 MB body of numbers
        # took seconds in the strict reader and held every other client for as long).
        self.parse_pool = ThreadPoolExecutor(max_workers=max(1, limits.parsers), thread_name_prefix="rlvr-parse")
        # The golds of rows past the deadline (rlvr.rewards.fault): their own threads, so answers
        # that hold every scoring worker cannot keep a gold from being scored.
        self.gold_pool = ThreadPoolExecutor(max_workers=max(1, limits.workers), thread_name_prefix="rlvr-gold")
        self.parsing = 0
        self.active = 0
        self.capacity = max(1, limits.workers) + max(0, limits.max_queue)
        scorer.metrics.capacity = self.capacity
        self.app = Starlette(
            routes=[
                Route("/v1/score", self.score, methods=["POST"]),
                Route("/get_reward", self.get_reward, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
                Route("/metrics", self.metrics, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    def _lifespan(self, app: Any) -> Any:
        from contextlib import asynccontextmanager

        @asynccontextmanager
        async def span(app: Any) -> Any:
            yield
            # Requests in flight have been answered (uvicorn waits for them); join the chunks
            # that are still running past a deadline so no verifier is cut mid-row.
            for pool in (self.parse_pool, self.gold_pool, self.pool):
                await asyncio.get_running_loop().run_in_executor(None, pool.shutdown, True)

        return span(app)

    # -- plumbing ---------------------------------------------------------------------------
    def _error(self, endpoint: str, exc: RequestError, headers: dict[str, str] | None = None) -> Any:
        from starlette.responses import JSONResponse

        self.scorer.metrics.request(endpoint, exc.status)
        return JSONResponse(exc.to_json(), status_code=exc.status, headers=headers)

    def _check_access(self, request: Any) -> None:
        if self.local_only:
            host = request.headers.get("host", "")
            name = host.rsplit(":", 1)[0].strip("[]") if not host.startswith("[") else host[1:].split("]")[0]
            if not is_loopback(name):
                self.scorer.metrics.reject("host")
                raise RequestError(400, f"refused: Host {host!r} is not local")
        if self.token:
            auth = request.headers.get("authorization", "")
            given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.query_params.get("token", "")
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                self.scorer.metrics.reject("unauthorized")
                raise RequestError(401, "missing or wrong token (Authorization: Bearer TOKEN, or ?token=TOKEN)")

    async def _body(self, request: Any) -> bytes:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self.scorer.metrics.reject("content_type")
            raise RequestError(415, f"the body must be application/json, got {ctype or 'no content type'!r}")
        limit = self.limits.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            self.scorer.metrics.reject("too_large")
            raise RequestError(
                413,
                f"the body is {int(declared)} bytes; the limit is {limit} (split the batch, or raise --max-body-mb)",
            )
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                self.scorer.metrics.reject("too_large")
                raise RequestError(413, f"the body is over {limit} bytes (split the batch, or raise --max-body-mb)")
            chunks.append(chunk)
        return b"".join(chunks)

    def _parse(self, raw: bytes) -> Any:
        """The body read by the strict reader; runs on the parse pool, never on the event loop."""
        try:
            return read_json(raw, max_depth=BODY_MAX_DEPTH, decimals="float", surrogates=True)
        except JsonError as exc:
            # Duplicate keys, NaN/Infinity, a number past the digit limit, nesting past the depth
            # limit: all the client's to fix, so 400 with a JSON body, never a 500.
            self.scorer.metrics.reject("bad_json")
            raise RequestError(400, f"the body is not valid JSON: {exc}") from None

    async def _off_loop(self, fn: Callable[..., T], *args: Any, admit: bool = True) -> T:
        """``fn(*args)`` on the parse pool (bounded: ``parsers`` threads, at most ``capacity``
        requests waiting for one; more get 503, unless ``admit`` is False: a response to a batch
        already scored). The event loop only moves bytes."""
        if admit and self.parsing >= self.capacity + max(1, self.limits.parsers):
            self.scorer.metrics.reject("queue_full")
            raise RequestError(503, "the server is busy reading other requests; retry later")
        self.parsing += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self.parse_pool, functools.partial(fn, *args))
        finally:
            self.parsing -= 1

    def _admit(self) -> None:
        if self.active >= self.capacity:
            self.scorer.metrics.reject("queue_full")
            raise RequestError(
                503, f"the server is busy: {self.active} batches admitted, the limit is {self.capacity}; retry later"
            )
        self.active += 1
        self.scorer.metrics.active = self.active

    def _release(self) -> None:
        self.active -= 1
        self.scorer.metrics.active = self.active

    async def _score(self, samples: Sequence[Sample]) -> list[Scored]:
        """Score in chunks on the worker pool; rows not done by the deadline are masked as
        timeouts, and chunks that have not started by then are dropped. The batch's admission is
        released when every chunk has finished or been dropped (never while one still runs)."""
        loop = asyncio.get_running_loop()
        size = max(1, self.limits.chunk)
        starts = list(range(0, len(samples), size))
        jobs = [self.pool.submit(self.scorer.reward_set.score, samples[i : i + size], i) for i in starts]
        left = [len(jobs)]

        def finished(_: Any) -> None:  # runs in a worker thread, or here when a job is dropped
            left[0] -= 1
            if left[0] == 0:
                loop.call_soon_threadsafe(self._release)

        for job in jobs:
            job.add_done_callback(finished)
        start = time.monotonic()
        await asyncio.wait([asyncio.wrap_future(j) for j in jobs], timeout=self.limits.deadline)
        out: list[Scored | None] = []
        late: list[int] = []
        for i, job in zip(starts, jobs, strict=True):
            n = len(samples[i : i + size])
            if job.done() and not job.cancelled() and job.exception() is None:
                out.extend(job.result())
            elif job.done() and not job.cancelled():
                # RewardSet.score turns every verifier failure into a verdict; this is a failure
                # of the scoring code itself: the rows are masked, as a crash, never scored 0.
                exc = job.exception()
                v = Verdict.error(f"scoring failed: {type(exc).__name__}: {exc}", kind="crash")
                out.extend(Scored(dict.fromkeys(self.scorer.reward_set.names, v)) for _ in range(n))
            else:
                # A chunk that is not done is past the deadline. One still queued is dropped; a
                # running one keeps its worker until its verifier returns.
                job.cancel()
                late.extend(range(i, i + n))
                out.extend([None] * n)
        if late:
            for i, row in zip(late, await self._past_deadline([samples[i] for i in late]), strict=True):
                out[i] = row
        done = [s for s in out if s is not None]
        self.scorer.metrics.scored(done, time.monotonic() - start, len(late))
        return done

    async def _past_deadline(self, samples: Sequence[Sample]) -> list[Scored]:
        """Rows not scored within the deadline, settled by ``rlvr.rewards.fault``: each row's gold
        is scored through the same terms on the gold pool, within a deadline of its own (a row's
        gold already decided is cached). A gold decided in time charges the slow answer (wrong,
        0, ``error_kind`` timeout); a gold as slow (or one that fails as a timeout) leaves the
        row masked. So a response comes within twice the deadline at most."""
        reward_set = self.scorer.reward_set
        keys = [gold_row_key(s) for s in samples]
        jobs = {k: self.gold_pool.submit(gold_verdicts, reward_set, s) for k, s in zip(keys, samples, strict=False)}
        await asyncio.wait([asyncio.wrap_future(j) for j in jobs.values()], timeout=self.limits.deadline)
        out = []
        for k in keys:
            job = jobs[k]
            gold = job.result() if job.done() and not job.cancelled() and job.exception() is None else None
            if not job.done():
                job.cancel()
            out.append(past_deadline(reward_set.names, self.limits.deadline, gold))
        return out

    # -- endpoints --------------------------------------------------------------------------
    async def score(self, request: Any) -> Any:
        try:
            self._check_access(request)
            samples, keys = await self._off_loop(self._read_score, await self._body(request))
            self._admit()
        except RequestError as exc:
            return self._error("score", exc, self._retry(exc))
        scored = await self._score(samples)
        if (tripped := await self._watch("score", samples, scored)) is not None:
            return tripped
        return await self._off_loop(lambda: json_response(self._rlvr_response(scored, keys)), admit=False)

    async def _watch(self, endpoint: str, samples: Sequence[Sample], scored: Sequence[Scored]) -> Any:
        """The tripwire's look at a scored batch (off the loop: a round re-scores rollouts); a
        ``409`` with the trip's report once it has tripped (this batch or an earlier one), so the
        engine's training stops instead of learning the hack. None: answer as usual."""
        if self.tripwire is None:
            return None
        trip = await self._off_loop(self.tripwire.watch, samples, scored, admit=False)
        if trip is None:
            return None
        from starlette.responses import JSONResponse

        self.scorer.metrics.request(endpoint, 409)
        return JSONResponse({"error": trip.message(), "tripwire": trip.to_json()}, status_code=409)

    def _read_score(self, raw: bytes) -> tuple[list[Sample], list[Hashable]]:
        body = self._parse(raw)
        return rlvr_samples(body, self.limits.max_rows, self.scorer.reward_set)

    def _rlvr_response(self, scored: Sequence[Scored], keys: Sequence[Hashable]) -> dict[str, Any]:
        engine = self.scorer.engine_rewards(scored, keys)
        results = [self.scorer.result(s, e) for s, e in zip(scored, engine, strict=True)]
        self.scorer.metrics.request("score", 200)
        return {"results": results, "masked": sum(s.masked for s in scored), "meta": self.scorer.meta}

    async def get_reward(self, request: Any) -> Any:
        try:
            self._check_access(request)
            raw = await self._body(request)
            samples, keys, _ = await self._off_loop(
                lambda: openrlhf_samples(self._parse(raw), self.scorer.task.answer_column, self.limits.max_rows)
            )
            from .episodes import reader_problem  # an episode task's texts read back as episodes (None: no reader)

            problem = await asyncio.get_running_loop().run_in_executor(None, reader_problem, self.scorer.reward_set)
            if problem:
                raise RequestError(500, problem)
            self._admit()
        except RequestError as exc:
            return self._error("get_reward", exc, self._retry(exc))
        scored = await self._score(samples)
        if (tripped := await self._watch("get_reward", samples, scored)) is not None:
            return tripped

        def respond() -> Any:
            body = openrlhf_response(self.scorer, samples, keys, scored)
            self.scorer.metrics.request("get_reward", 200)
            return json_response(body)

        return await self._off_loop(respond, admit=False)

    def _retry(self, exc: RequestError) -> dict[str, str] | None:
        return {"Retry-After": str(self.limits.retry_after)} if exc.status == 503 else None

    async def healthz(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        return JSONResponse(
            {
                "status": "ok",
                "task": self.scorer.meta["task"],
                "gate": self.scorer.meta["gate"]["status"],
                "batches_active": self.active,
                "batches_capacity": self.capacity,
            }
        )

    async def metrics(self, request: Any) -> Any:
        from starlette.responses import PlainTextResponse

        try:
            self._check_access(request)
        except RequestError as exc:
            return self._error("metrics", exc)
        text = self.scorer.metrics.prometheus() + (self.tripwire.prometheus() if self.tripwire is not None else "")
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


def json_response(body: Any) -> Any:
    """Strict JSON (ASCII, so a lone surrogate from a model stays valid). Verdict scores are
    finite by construction (``check_verdict``); a non-finite number elsewhere (a huge weight times
    a score) is written as null rather than as the invalid ``NaN``/``Infinity``."""
    from starlette.responses import Response

    from ..rewards.scoring import jsonable

    try:
        text = json.dumps(body, allow_nan=False, separators=(",", ":"))
    except ValueError:
        text = json.dumps(jsonable(body), allow_nan=False, separators=(",", ":"))
    return Response(text, media_type="application/json")


def serve(server: RewardServer, host: str = LOOPBACK, port: int = 5000, *, log: bool = False) -> None:
    """Run until SIGTERM/SIGINT, then finish the requests in flight (module docstring)."""
    import uvicorn

    config = uvicorn.Config(
        server,
        host=host,
        port=port,
        log_level="info" if log else "warning",
        access_log=log,
        timeout_graceful_shutdown=int(server.limits.deadline) + 30,
        lifespan="on",
    )
    uvicorn.Server(config).run()
