"""The inspection set on disk: one SQLite database per gate, in WAL mode.

Durability is the point of this module. Every reviewer verdict is one ``INSERT`` in its own
transaction, committed (``synchronous=FULL``) before the web page or the terminal moves on, so
killing the server or the terminal mid-review loses nothing that was acknowledged. Verdicts are
append-only: a second verdict on the same sample (a re-read after a rescore, a second tab) adds a
row and the latest one counts, so two tabs reviewing the same set cannot overwrite each other.

Each call opens its own short-lived connection, so the store is safe to use from the threads of
the ASGI server and from several processes at once (WAL: readers never block the writer; a busy
writer waits up to ``BUSY_TIMEOUT_S``).

Tables:

- ``meta``: key/value settings of the set (task, model, temperature, term names and weights).
- ``samples``: the inspection set. The sampled side (prompt, row, completion, token ids) never
  changes; the reward side (``verdicts_json``, ``total``, ``reward_class``) is replaced by
  ``rescore``.
- ``reviews``: every verdict a reviewer gave, with the reward they were looking at.
- ``rescores``: when the set was re-scored and which samples changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..errors import GateError
from ..rewards.base import Outcome, Verdict
from ..rewards.episode import Episode
from ..rollouts import Rollout

SCHEMA_VERSION = "1"
BUSY_TIMEOUT_S = 30.0
LABELS = ("right", "higher", "lower")
Label = Literal["right", "higher", "lower"]
# What the reward did with a sample: "pass" (the correctness term said correct), "fail" (wrong or
# unparseable), "masked" (some term could not decide, so TRL leaves the sample out).
RewardClass = Literal["pass", "fail", "masked"]
CLASSES: tuple[str, ...] = ("pass", "fail", "masked")
# Column lists in the order the rows are written and read (``_sample``, ``_review``).
SAMPLE_COLUMNS = (
    "id, prompt_index, prompt, row_json, completion, token_ids_json, finish_reason, bucket, verdicts_json, total, "
    "reward_class"
)
REVIEW_COLUMNS = "sample_id, label, note, accepted, reviewer, created, reward_total, reward_class, reward_json"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples (
    id INTEGER PRIMARY KEY,
    prompt_index INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    row_json TEXT NOT NULL,
    completion TEXT NOT NULL,
    token_ids_json TEXT NOT NULL,
    finish_reason TEXT NOT NULL,
    bucket TEXT NOT NULL,
    verdicts_json TEXT NOT NULL,
    total REAL,
    reward_class TEXT NOT NULL,
    episode_json TEXT
);
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sample_id INTEGER NOT NULL REFERENCES samples(id),
    label TEXT NOT NULL CHECK (label IN ('right', 'higher', 'lower')),
    note TEXT NOT NULL DEFAULT '',
    accepted TEXT,
    reviewer TEXT NOT NULL,
    created TEXT NOT NULL,
    reward_total REAL,
    reward_class TEXT NOT NULL,
    reward_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS reviews_by_sample ON reviews(sample_id, id);
CREATE TABLE IF NOT EXISTS rescores (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created TEXT NOT NULL,
    changed_json TEXT NOT NULL
);
"""


class StaleReward(GateError):
    """A verdict was given on a reward that has been re-scored since it was shown."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class InspectionSample:
    """One sample of the set: the rollout (sampled side and the reward's current verdicts), why it
    is in the set (``bucket``: masked, low, high, middle or all) and its reward class."""

    id: int
    rollout: Rollout
    bucket: str
    reward_class: str

    def to_json(self) -> dict[str, Any]:
        r = self.rollout
        return {
            "id": self.id,
            "prompt_index": r.prompt_index,
            "prompt": r.prompt,
            "row": dict(r.row),
            "completion": r.completion,
            "token_count": len(r.token_ids),
            "finish_reason": r.finish_reason,
            "bucket": self.bucket,
            "total": r.total,
            "reward_class": self.reward_class,
            "verdicts": {k: v.to_json() for k, v in r.verdicts.items()},
            **({"episode": r.episode.to_json()} if r.episode is not None else {}),
        }


@dataclass(frozen=True)
class Review:
    """One verdict a reviewer gave: the label, a note, and the reward they were looking at.

    ``accepted`` is set when the reviewer records why a disagreement is acceptable as it is.
    """

    id: int
    sample_id: int
    label: str
    note: str
    accepted: str | None
    reviewer: str
    created: str
    reward_total: float | None
    reward_class: str
    reward: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "sample_id": self.sample_id,
            "label": self.label,
            "note": self.note,
            "accepted": self.accepted,
            "reviewer": self.reviewer,
            "created": self.created,
            "reward_total": self.reward_total,
            "reward_class": self.reward_class,
            "reward": dict(self.reward),
        }


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _fingerprint(verdicts_json: str) -> str:
    return hashlib.sha256(verdicts_json.encode()).hexdigest()[:16]


def reward_fingerprint(verdicts: Mapping[str, Verdict]) -> str:
    """A short hash of the reward's verdicts on a sample, as displayed: a verdict given while
    looking at one fingerprint is refused once a rescore has changed it."""
    return _fingerprint(_dumps({k: v.to_json() for k, v in verdicts.items()}))


class Store:
    """The SQLite file of one inspection set. Cheap to construct; every method opens and closes
    its own connection."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            yield conn
        finally:
            conn.close()

    # -- creating ------------------------------------------------------------------------------
    @classmethod
    def preflight(cls, path: str | Path, *, overwrite: bool = False) -> None:
        """What ``create`` refuses, checked before anything is sampled or scored (``build_set``
        calls it first): a set that already holds verdicts (without ``overwrite``), and a folder
        this process cannot write a file in (its ``OSError`` names ``path``)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            old = cls(path)
            n = old.count_reviews() if old.is_store() else 0
            if n and not overwrite:
                raise GateError(
                    f"{path} already holds {n} reviewer verdicts; building a new set would discard them "
                    "(pass --overwrite to start over, or rlvr inspect rescore to re-score the same set)"
                )
        probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
        try:
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, str(path)) from exc

    @classmethod
    def create(
        cls, path: str | Path, meta: Mapping[str, Any], samples: Sequence[InspectionSample], *, overwrite: bool = False
    ) -> Store:
        """Write a new set (each sample under its ``id``). Refuses to replace a set that already holds verdicts unless
        ``overwrite`` (the reviewer's work would be lost)."""
        path = Path(path)
        cls.preflight(path, overwrite=overwrite)
        if path.exists():
            for suffix in ("", "-wal", "-shm"):
                Path(str(path) + suffix).unlink(missing_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        for suffix in ("", "-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        conn = sqlite3.connect(tmp, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.execute("BEGIN")
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?)",
                [(k, _dumps(v)) for k, v in {**meta, "schema": SCHEMA_VERSION, "created": now()}.items()],
            )
            conn.executemany(
                f"INSERT INTO samples({SAMPLE_COLUMNS}, episode_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        s.id,
                        r.prompt_index,
                        r.prompt,
                        _dumps(dict(r.row)),
                        r.completion,
                        _dumps(list(r.token_ids)),
                        r.finish_reason,
                        s.bucket,
                        _dumps({k: v.to_json() for k, v in r.verdicts.items()}),
                        r.total,
                        s.reward_class,
                        None if r.episode is None else _dumps(r.episode.to_json()),
                    )
                    for s in samples
                    for r in (s.rollout,)
                ],
            )
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        # Written under a temporary name and renamed, so a crash mid-build never leaves a
        # half-written set that looks complete.
        tmp.replace(path)
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        return cls(path)

    def is_store(self) -> bool:
        try:
            with self._connect() as conn:
                conn.execute("SELECT count(*) FROM reviews").fetchone()
            return True
        except sqlite3.DatabaseError:
            return False

    def check(self) -> None:
        """Raise ``GateError`` when the file is missing or not an inspection set."""
        if not self.path.exists():
            raise GateError(f"no inspection set at {self.path}: run rlvr inspect build first")
        try:
            with self._connect() as conn:
                tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as exc:
            raise GateError(f"{self.path} is not a readable inspection set: {exc}") from None
        missing = {"meta", "samples", "reviews", "rescores"} - tables
        if missing:
            raise GateError(f"{self.path} is not an inspection set (missing tables: {', '.join(sorted(missing))})")

    # -- reading -------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        with self._connect() as conn:
            return {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}

    def samples(self) -> list[InspectionSample]:
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {SAMPLE_COLUMNS}, {_episode_column(conn)} FROM samples ORDER BY id").fetchall()
        return [_sample(r) for r in rows]

    def sample(self, sample_id: int) -> InspectionSample | None:
        with self._connect() as conn:
            r = conn.execute(
                f"SELECT {SAMPLE_COLUMNS}, {_episode_column(conn)} FROM samples WHERE id = ?", (sample_id,)
            ).fetchone()
        return _sample(r) if r else None

    def reviews(self, sample_id: int | None = None) -> list[Review]:
        """Every verdict given, oldest first (optionally for one sample)."""
        sql = f"SELECT id, {REVIEW_COLUMNS} FROM reviews"
        args: tuple[Any, ...] = ()
        if sample_id is not None:
            sql += " WHERE sample_id = ?"
            args = (sample_id,)
        with self._connect() as conn:
            rows = conn.execute(sql + " ORDER BY id", args).fetchall()
        return [Review(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], json.loads(r[9])) for r in rows]

    def latest_reviews(self) -> dict[int, Review]:
        """The verdict that counts for each reviewed sample: its most recent one."""
        out: dict[int, Review] = {}
        for r in self.reviews():
            out[r.sample_id] = r
        return out

    def count_reviews(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("SELECT count(*) FROM reviews").fetchone()[0])

    def rescores(self) -> list[dict[str, Any]]:
        with self._connect() as conn:
            return [
                {"id": r[0], "created": r[1], "changed": json.loads(r[2])}
                for r in conn.execute("SELECT id, created, changed_json FROM rescores ORDER BY id")
            ]

    # -- writing -------------------------------------------------------------------------------
    def add_review(
        self,
        sample_id: int,
        label: str,
        *,
        reviewer: str,
        note: str = "",
        accepted: str | None = None,
        seen: str | None = None,
    ) -> Review:
        """Record one verdict and commit it before returning.

        ``accepted``: the reviewer's reason why a disagreement ("higher"/"lower") is acceptable as
        it is; it closes the disagreement without a change to the reward. ``seen``: the
        ``reward_fingerprint`` of the verdicts the reviewer was shown; when a rescore changed them
        in the meantime the verdict is refused (``StaleReward``), so it is never recorded against
        a reward the reviewer did not see.
        """
        if label not in LABELS:
            raise GateError(f"unknown verdict {label!r}: one of {', '.join(LABELS)}")
        if not reviewer.strip():
            raise GateError("a verdict needs a reviewer name")
        accepted = accepted.strip() if accepted else None
        if accepted and label == "right":
            raise GateError("only a disagreement (higher/lower) can be accepted; 'right' already agrees")
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                r = conn.execute(
                    "SELECT verdicts_json, total, reward_class FROM samples WHERE id = ?", (sample_id,)
                ).fetchone()
                if r is None:
                    raise GateError(f"{self.path}: no sample {sample_id} in the inspection set")
                if seen is not None and seen != _fingerprint(r[0]):
                    raise StaleReward(f"sample {sample_id}: the reward was re-scored after it was shown; read it again")
                created = now()
                cur = conn.execute(
                    f"INSERT INTO reviews({REVIEW_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)",
                    (sample_id, label, note, accepted, reviewer, created, r[1], r[2], r[0]),
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return Review(
            int(cur.lastrowid or 0), sample_id, label, note, accepted, reviewer, created, r[1], r[2], json.loads(r[0])
        )

    def replace_scores(self, scores: Mapping[int, tuple[Mapping[str, Verdict], float | None, str]]) -> list[int]:
        """Replace the reward side of the given samples in one transaction; return the ids whose
        total or class changed, and log the rescore."""
        changed: list[int] = []
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sid, (verdicts, total, klass) in scores.items():
                    old = conn.execute("SELECT total, reward_class FROM samples WHERE id = ?", (sid,)).fetchone()
                    if old is None:
                        raise GateError(f"{self.path}: no sample {sid} in the inspection set")
                    if not same_total(old[0], total) or old[1] != klass:
                        changed.append(sid)
                    conn.execute(
                        "UPDATE samples SET verdicts_json = ?, total = ?, reward_class = ? WHERE id = ?",
                        (_dumps({k: v.to_json() for k, v in verdicts.items()}), total, klass, sid),
                    )
                conn.execute("INSERT INTO rescores(created, changed_json) VALUES (?, ?)", (now(), _dumps(changed)))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return changed


def same_total(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _episode_column(conn: sqlite3.Connection) -> str:
    """``episode_json``, or NULL in a set built before samples carried their episode."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(samples)")}
    return "episode_json" if "episode_json" in columns else "NULL"


def _sample(r: Sequence[Any]) -> InspectionSample:
    verdicts = {k: Verdict.from_json(v) for k, v in json.loads(r[8]).items()}
    episode = None if r[11] is None else Episode.from_json(json.loads(r[11]))
    rollout = Rollout(r[1], r[2], json.loads(r[3]), r[4], tuple(json.loads(r[5])), r[6], episode, verdicts, r[9])
    return InspectionSample(id=r[0], rollout=rollout, bucket=r[7], reward_class=r[10])


def reward_class(verdicts: Mapping[str, Verdict], correctness_term: str) -> str:
    """``masked`` when any term could not decide (TRL drops the sample), else ``pass`` when the
    correctness term said correct, else ``fail``."""
    if any(v.outcome is Outcome.ERROR for v in verdicts.values()):
        return "masked"
    v = verdicts.get(correctness_term)
    return "pass" if v is not None and v.outcome is Outcome.CORRECT else "fail"
