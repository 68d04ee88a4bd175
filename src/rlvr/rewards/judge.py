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
record.

The prompt is filled in one pass (``render``): each placeholder of the *template* is replaced
once, and the text put in is never searched for placeholders again, so a completion holding the
text ``{answer}`` stays that text (filling ``{completion}`` first and ``{answer}`` after it once
spliced the reference answer into the completion, and the judge agreed with it). The completion
goes in escaped (``&`` ``<`` ``>`` as entities) inside one ``<response chars="N">`` ...
``</response>`` block (``judgecore.delimit``), so a forged ``</response>`` or ``Reference
answer:`` line stays inside it; the prompt says so (``RESPONSE_NOTICE``, put first in a custom
template that does not mention ``<response>``), and the default puts the reference after the
response.

The reply is read by a grammar (``parse_verdict``): it must be exactly one of the two configured
``labels`` (default ``CORRECT`` / ``INCORRECT``; case, surrounding whitespace, markdown emphasis
or quotes and one final full stop aside). "Not correct.", "CORRECT, I think", "INCORRECT? No,
CORRECT" are none of them: never correct. Two labels equal after that normalisation (``PASS``
and ``PASS.``) are refused when the term is built.

A calibration record licenses one judge: its model, endpoint (``base_url``), prompt hash,
version and labels must match, and it must have judged at least 20 rows (``judgecal.MIN_ROWS``);
anything else refuses the term (one line naming every mismatch), so ``rlvr train`` and ``task
check`` stop.

Failures are split by who can cause them:

- the policy: a rendered prompt over ``max_input_chars``, the judge refusing the input (HTTP 400
  or 413: a context overflow), a refusal (``finish_reason: content_filter`` or a ``refusal``),
  a reply the grammar does not accept. The sample is ``unparseable`` (score 0, logged as the
  term's ``unparseable_rate``): a policy that could mask its wrong answers by being long or odd
  would learn to be long or odd;
- the infrastructure: transport errors, timeouts, HTTP 429 and 5xx (retried ``retries`` times
  with exponential back-off), another 4xx (a key or model the endpoint does not know), a reply
  that is not an OpenAI chat completion. The sample is an ``error`` (``error_kind`` ``judge`` or
  ``timeout``), then settled by the fail-closed rule (``rlvr.rewards.fault``): the reference
  answer is judged as a response through the same call; when it fails the same way (an outage)
  the row is masked, otherwise the failure is the answer's (a long answer that times out the
  judge is charged 0, never masked).

Limits: temperature 0 is not determinism on most serving stacks; the record pins what can be
pinned. A calibration measures agreement on *that* label set, not on the policy's later
outputs, which the judge may be hacked by (the Pitfalls paper); re-calibrate on samples from
the trained policy. The API key is read from the environment variable named by
``api_key_env`` (default ``OPENAI_API_KEY``), never from the task file, and never logged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..errors import VerifierError
from .base import BaseVerifier, Reads, Sample, Verdict
from .judgecal import CalibrationRecord, calibrate, check_record, read_labels, write_record
from .judgecore import (
    DEFAULT_LABELS,
    DEFAULT_PROMPT,
    JudgeConfig,
    JudgeFailure,
    ask,
    check_kappa,
    check_labels,
    parse_verdict,
    render,
)

__all__ = [
    "DEFAULT_LABELS",
    "DEFAULT_PROMPT",
    "CalibrationRecord",
    "JudgeConfig",
    "JudgeFailure",
    "JudgeVerifier",
    "ask",
    "calibrate",
    "check_kappa",
    "check_labels",
    "check_record",
    "config_from_options",
    "parse_verdict",
    "read_labels",
    "render",
    "write_record",
]


class JudgeVerifier(BaseVerifier):
    """The correct label from the judge is 1.0, the incorrect one 0.0; a failure the policy
    caused is ``unparseable`` (0.0), an infrastructure failure ``error`` (settled by
    ``rlvr.rewards.fault``: masked only when the reference fails the same way).

    Options: ``model``, ``base_url``, ``prompt`` (template text) or ``prompt_file``, ``version``,
    ``calibration`` (record path), ``min_kappa`` (0.6; above 0, at most 1),
    ``require_calibration`` (true), ``timeout``, ``retries``, ``concurrency``, ``column``,
    ``api_key_env``, ``labels`` ([correct, incorrect], default [CORRECT, INCORRECT]),
    ``max_input_chars`` (200,000: a longer prompt is not sent, and the sample is unparseable).
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
        labels: Sequence[str] = DEFAULT_LABELS,
        max_input_chars: int = 200_000,
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
            labels=check_labels(tuple(labels) if isinstance(labels, list) else labels),
            max_input_chars=_positive_int("max_input_chars", max_input_chars),
        )
        min_kappa = check_kappa("min_kappa", min_kappa)
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
            if exc.policy:  # the policy's text caused it: never correct, never masked
                return Verdict.unparseable(f"{tag}: {exc}")
            return Verdict.error(f"{tag}: {exc}", kind=exc.kind)
        return Verdict.correct(detail=tag) if ok else Verdict.wrong(detail=tag)

    def verify_batch(self, samples: Sequence[Sample]) -> list[Verdict]:
        if len(samples) <= 1 or self.concurrency == 1:
            return [self.verify(s) for s in samples]
        with ThreadPoolExecutor(min(self.concurrency, len(samples))) as ex:
            return list(ex.map(self.verify, samples))


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise VerifierError(f"judge {name} must be a positive whole number, got {value!r}")
    return value


def config_from_options(options: Mapping[str, Any]) -> JudgeConfig:
    """The judge configuration a set of term options describes (for calibrating from a task)."""
    opts = {
        k: v for k, v in options.items() if k not in ("calibration", "min_kappa", "concurrency", "require_calibration")
    }
    return JudgeVerifier(**opts, require_calibration=False).config
