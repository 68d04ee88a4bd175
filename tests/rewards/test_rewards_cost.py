"""Who pays for a timeout (issue 25, item 5; issue 34's fail-closed rule): the verifier reports
the timeout as an error, and ``rlvr.rewards.fault`` charges it to the answer unless the row's
gold fails the same way; a ``json_schema`` term has no gold, so its timeouts are the answer's."""

from __future__ import annotations

import json

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.combine import checked_verdicts
from rlvr.rewards.schema import JsonSchemaVerifier

# RE2 refuses the lookahead, so this pattern runs on the backtracking engine; its own per-match
# limit is set far above the worker's timeout, so only the hard timeout can stop it.
SLOW_PATTERN = {"type": "object", "properties": {"e": {"type": "string", "pattern": r"^(.*?,){11}P(?=x)"}}}


def test_a_timeout_the_answer_causes_is_charged_not_masked():
    v = JsonSchemaVerifier(schema=SLOW_PATTERN, pattern_timeout=600, timeout=1.0)
    (slow,) = checked_verdicts("json", v, [Sample('<answer>{"e": "%s"}</answer>' % ("a," * 3000))])
    assert slow.outcome is Outcome.WRONG and slow.error_kind == "timeout" and "charged" in slow.detail
    # The same schema on a short answer decides (in-process: no timeout to race on a busy machine).
    quick = JsonSchemaVerifier(schema=SLOW_PATTERN, pattern_timeout=600, timeout=None)
    (v2,) = checked_verdicts("json", quick, [Sample('<answer>{"e": "a,P"}</answer>')])
    assert v2.outcome is Outcome.WRONG and "does not match" in v2.detail


def test_a_slow_per_row_schema_is_a_timeout_error_of_the_verifier_and_charged_without_a_gold():
    # A per-row schema whose own check (building its validator) outlasts the timeout.
    heavy = json.dumps({"allOf": [{"minimum": 0}] * 30000})
    v = JsonSchemaVerifier(schema_column="schema", timeout=1.0)
    sample = Sample('<answer>{"x": 1}</answer>', {"schema": heavy})
    (raw,) = v.verify_batch([sample])
    assert raw.outcome is Outcome.ERROR and raw.error_kind == "timeout"
    (settled,) = checked_verdicts("json", v, [sample])
    assert settled.outcome is Outcome.WRONG and settled.error_kind == "timeout"
