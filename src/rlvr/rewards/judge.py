"""An LLM judge as a reward term, and its calibration against human labels.

A judge is a verifier only with a measured agreement on record (DESIGN.md): ``JudgeVerifier``
refuses to be built without a calibration record whose model, prompt hash and version match
its own and whose Cohen's kappa is at or above ``min_kappa`` (default 0.6), unless
``require_calibration: false`` -- which ``rlvr judge calibrate`` itself uses, and which a task
file should never set for training.

The judge is any OpenAI-compatible ``/chat/completions`` endpoint, called with ``httpx``:
temperature 0, the pinned ``model``, the ``prompt`` template (``{prompt}``, ``{completion}``,
``{answer}`` placeholders) and a ``version`` label the task author bumps whenever anything about
the judge changes. The prompt's SHA-256 goes into every verdict's detail and the calibration
record. The reply must contain ``CORRECT`` or ``INCORRECT`` (the last such word decides);
anything else is an ``error`` (``error_kind="judge"``), as are HTTP failures after ``retries``
(429, 5xx and transport errors are retried with exponential back-off) and timeouts
(``error_kind="timeout"``): an unavailable judge masks the sample, it never scores it 0.

Limits: temperature 0 is not determinism on most serving stacks; the record pins what can be
pinned. A calibration measures agreement on *that* label set, not on the policy's later
outputs, which the judge may be hacked by (the Pitfalls paper); re-calibrate on samples from
the trained policy. The API key is read from the environment variable named by
``api_key_env`` (default ``OPENAI_API_KEY``), never from the task file, and never logged.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..data import read_objects
from ..errors import DataError, VerifierError
from .base import BaseVerifier, Reads, Sample, Verdict
from .kappa import pair_kappa

DEFAULT_PROMPT = (
    "You are grading an answer to a problem. Reply with one word:"
    " CORRECT if the response's final answer is equivalent to the reference answer, INCORRECT otherwise.\n"
    """
Problem:
{prompt}

Reference answer:
{answer}

Response:
{completion}

Grade (CORRECT or INCORRECT):"""
)

_LABEL = re.compile(r"\b(INCORRECT|CORRECT)\b")


@dataclass(frozen=True)
class JudgeConfig:
    """Everything that determines a judge's behaviour (and so what a calibration is valid for)."""

    model: str
    base_url: str
    prompt: str = DEFAULT_PROMPT
    version: str = "1"
    column: str = "answer"
    timeout: float = 30.0
    retries: int = 2
    max_tokens: int = 8
    api_key_env: str = "OPENAI_API_KEY"

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256(self.prompt.encode("utf-8")).hexdigest()

    def render(self, sample: Sample) -> str:
        answer = sample.row.get(self.column)
        return (
            self.prompt.replace("{prompt}", sample.prompt)
            .replace("{completion}", sample.completion)
            .replace("{answer}", "" if answer is None else str(answer))
        )


class JudgeFailure(Exception):
    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind


def ask(client: Any, cfg: JudgeConfig, sample: Sample) -> bool:
    """One judgement: True for CORRECT. Raises ``JudgeFailure`` (timeout/judge)."""
    import httpx

    headers = {}
    key = os.environ.get(cfg.api_key_env)
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body = {
        "model": cfg.model,
        "messages": [{"role": "user", "content": cfg.render(sample)}],
        "temperature": 0,
        "max_tokens": cfg.max_tokens,
    }
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    last = JudgeFailure("judge", "no attempt made")
    for attempt in range(cfg.retries + 1):
        if attempt:
            time.sleep(min(4.0, 0.2 * 2 ** (attempt - 1)))
        try:
            resp = client.post(url, json=body, headers=headers, timeout=cfg.timeout)
        except httpx.TimeoutException:
            last = JudgeFailure("timeout", f"judge did not answer within {cfg.timeout:g} s")
            continue
        except httpx.TransportError as exc:
            last = JudgeFailure("judge", f"judge unreachable: {type(exc).__name__}")
            continue
        if resp.status_code == 429 or resp.status_code >= 500:
            last = JudgeFailure("judge", f"judge returned HTTP {resp.status_code}")
            continue
        if resp.status_code != 200:
            raise JudgeFailure("judge", f"judge returned HTTP {resp.status_code}: {resp.text[:200]}")
        try:
            content = resp.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise JudgeFailure("judge", "judge reply is not an OpenAI chat completion") from None
        labels = _LABEL.findall(content.upper())
        if not labels:
            raise JudgeFailure("judge", f"judge reply has no CORRECT/INCORRECT: {content[:100]!r}")
        return labels[-1] == "CORRECT"
    raise last


@dataclass(frozen=True)
class CalibrationRecord:
    """Agreement of one judge configuration with human labels."""

    model: str
    base_url: str
    prompt_sha256: str
    version: str
    n: int
    judged: int
    errors: int
    accuracy: float
    kappa: float
    confusion: dict[str, int]
    threshold: float
    passed: bool
    labels_file: str
    created: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _label(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("correct", "incorrect", "true", "false", "yes", "no"):
        return value.strip().lower() in ("correct", "true", "yes")
    raise DataError(f"{where}: field 'label' must be true/false or correct/incorrect, got {value!r}")


def read_labels(path: str | Path) -> list[tuple[Sample, bool]]:
    p = Path(path)
    out = []
    for lineno, row in read_objects(p):
        for key in ("completion", "label"):
            if key not in row:
                raise DataError(f"{p}:{lineno}: field {key!r} is missing")
        label = _label(row["label"], f"{p}:{lineno}")
        sample = Sample(
            str(row["completion"]),
            {k: v for k, v in row.items() if k not in ("completion", "label")},
            prompt=str(row.get("prompt") or ""),
        )
        out.append((sample, label))
    if not out:
        raise DataError(f"{p}: no labelled rows")
    return out


def calibrate(
    labels_path: str | Path, cfg: JudgeConfig, threshold: float = 0.6, concurrency: int = 4, client: Any = None
) -> CalibrationRecord:
    """Judge every labelled row and measure agreement. Judge errors are left out of accuracy and
    kappa and counted; more than 5% errors fails the calibration whatever the kappa."""
    import datetime

    import httpx

    rows = read_labels(labels_path)
    own = client is None
    client = client or httpx.Client()
    try:

        def one(item: tuple[Sample, bool]) -> bool | None:
            try:
                return ask(client, cfg, item[0])
            except JudgeFailure:
                return None

        with ThreadPoolExecutor(max(1, concurrency)) as ex:
            verdicts = list(ex.map(one, rows))
    finally:
        if own:
            client.close()
    pairs = [(h, j) for (_, h), j in zip(rows, verdicts, strict=True) if j is not None]
    human, judge = [h for h, _ in pairs], [j for _, j in pairs]
    errors = len(rows) - len(pairs)
    confusion = {
        "judge_correct_human_correct": sum(h and j for h, j in pairs),
        "judge_correct_human_incorrect": sum(j and not h for h, j in pairs),
        "judge_incorrect_human_correct": sum(h and not j for h, j in pairs),
        "judge_incorrect_human_incorrect": sum(not h and not j for h, j in pairs),
    }
    accuracy = sum(h == j for h, j in pairs) / len(pairs) if pairs else 0.0
    measured = pair_kappa(human, judge)
    notes = []
    if measured is None:
        notes.append("kappa is undefined (no judged rows, or both sides gave one and the same label): recorded as 0")
    kappa = 0.0 if measured is None else measured
    if errors > 0.05 * len(rows):
        notes.append(f"{errors} of {len(rows)} judgements failed (over 5%): fix the judge endpoint before trusting it")
    if len(pairs) < 50:
        notes.append(f"only {len(pairs)} judged rows: kappa is noisy below about 50")
    if len(set(human)) < 2:
        notes.append("the human labels are all one class: kappa cannot measure agreement; label both kinds")
    passed = kappa >= threshold and errors <= 0.05 * len(rows) and len(set(human)) == 2
    return CalibrationRecord(
        model=cfg.model,
        base_url=cfg.base_url,
        prompt_sha256=cfg.prompt_sha256,
        version=cfg.version,
        n=len(rows),
        judged=len(pairs),
        errors=errors,
        accuracy=round(accuracy, 6),
        kappa=round(kappa, 6),
        confusion=confusion,
        threshold=threshold,
        passed=passed,
        labels_file=str(labels_path),
        created=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        notes=notes,
    )


def write_record(record: CalibrationRecord, path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(record.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return p


def check_record(path: str | Path, cfg: JudgeConfig, min_kappa: float) -> list[str]:
    """Every reason the record at ``path`` does not license this judge (empty when it does)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError:
        return [f"no calibration record at {p} (run: rlvr judge calibrate --labels LABELS.jsonl --out {p})"]
    except json.JSONDecodeError as exc:
        return [f"{p} is not valid JSON ({exc.msg})"]
    problems = []
    for key, mine in (("model", cfg.model), ("prompt_sha256", cfg.prompt_sha256), ("version", cfg.version)):
        if data.get(key) != mine:
            problems.append(
                f"record {key} {data.get(key)!r} does not match the judge's {mine!r}: "
                "re-calibrate after changing the judge"
            )
    kappa = data.get("kappa")
    if not isinstance(kappa, (int, float)) or kappa < min_kappa:
        problems.append(
            f"record kappa {kappa!r} is below the required {min_kappa}: improve the prompt or model and re-calibrate"
        )
    if data.get("errors", 0) > 0.05 * max(1, data.get("n", 1)):
        problems.append(f"record has {data.get('errors')} failed judgements of {data.get('n')}: over 5%")
    return problems


class JudgeVerifier(BaseVerifier):
    """CORRECT from the judge is 1.0, INCORRECT 0.0; failures are ``error`` (masked).

    Options: ``model``, ``base_url``, ``prompt`` (template text) or ``prompt_file``, ``version``,
    ``calibration`` (record path), ``min_kappa`` (0.6), ``require_calibration`` (true),
    ``timeout``, ``retries``, ``concurrency``, ``column``, ``api_key_env``.
    """

    kind = "judge"

    def __init__(
        self,
        model: str,
        base_url: str,
        prompt: str | None = None,
        prompt_file: str | None = None,
        version: str = "1",
        calibration: str | None = None,
        min_kappa: float = 0.6,
        require_calibration: bool = True,
        timeout: float = 30.0,
        retries: int = 2,
        concurrency: int = 8,
        column: str = "answer",
        api_key_env: str = "OPENAI_API_KEY",
        client: Any = None,
    ) -> None:
        if prompt and prompt_file:
            raise VerifierError("judge: give prompt or prompt_file, not both")
        if prompt_file:
            try:
                prompt = Path(prompt_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise VerifierError(f"judge: cannot read prompt_file {prompt_file!r}: {exc}") from None
        self.config = JudgeConfig(
            model,
            base_url,
            prompt or DEFAULT_PROMPT,
            str(version),
            column,
            float(timeout),
            int(retries),
            api_key_env=api_key_env,
        )
        if "{completion}" not in self.config.prompt:
            raise VerifierError(
                "judge: the prompt has no {completion} placeholder, so the judge would never see the answer"
            )
        if require_calibration:
            if not calibration:
                raise VerifierError(
                    "judge: no calibration record; a judge is a verifier only with measured agreement "
                    "(run rlvr judge calibrate, then set options.calibration)"
                )
            problems = check_record(calibration, self.config, min_kappa)
            if problems:
                raise VerifierError("judge: " + "; ".join(problems))
        self.calibration = calibration
        self.concurrency = max(1, concurrency)
        self._client = client

    def _http(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.Client()
        return self._client

    def reads(self) -> Reads:
        return Reads(answer=self.config.column, columns=(self.config.column,))

    def verify(self, sample: Sample) -> Verdict:
        tag = f"judge {self.config.model} v{self.config.version} prompt {self.config.prompt_sha256[:12]}"
        try:
            ok = ask(self._http(), self.config, sample)
        except JudgeFailure as exc:
            return Verdict.error(f"{tag}: {exc}", kind=exc.kind)
        return Verdict.correct(detail=tag) if ok else Verdict.wrong(detail=tag)

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        if len(samples) <= 1 or self.concurrency == 1:
            return [self.verify(s) for s in samples]
        with ThreadPoolExecutor(min(self.concurrency, len(samples))) as ex:
            return list(ex.map(self.verify, samples))


def config_from_options(options: Mapping[str, Any]) -> JudgeConfig:
    """The judge configuration a set of term options describes (for calibrating from a task)."""
    opts = {
        k: v for k, v in options.items() if k not in ("calibration", "min_kappa", "concurrency", "require_calibration")
    }
    return JudgeVerifier(**opts, require_calibration=False).config
