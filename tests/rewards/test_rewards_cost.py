"""Who pays for a timeout (issue 25, item 5): when the candidate makes verification expensive,
the sample is wrong; when the row's own check is the slow part, it stays masked."""

from __future__ import annotations

import json

from rlvr.rewards import Outcome, Sample
from rlvr.rewards.schema import JsonSchemaVerifier

# RE2 refuses the lookahead, so this pattern runs on the backtracking engine; its own per-match
# limit is set far above the worker's timeout, so only the hard timeout can stop it.
SLOW_PATTERN = {"type": "object", "properties": {"e": {"type": "string", "pattern": r"^(.*?,){11}P(?=x)"}}}


def test_a_timeout_the_answer_causes_is_wrong_not_masked():
    v = JsonSchemaVerifier(schema=SLOW_PATTERN, pattern_timeout=600, timeout=1.0)
    slow, quick = v.verify_batch(
        [Sample('<answer>{"e": "%s"}</answer>' % ("a," * 3000)), Sample('<answer>{"e": "a,P"}</answer>')]
    )
    assert slow.outcome is Outcome.WRONG and "cost comes from the answer" in slow.detail
    assert quick.outcome is Outcome.WRONG and "does not match" in quick.detail


def test_a_timeout_the_rows_own_check_causes_stays_masked():
    # A per-row schema whose own check (building its validator) outlasts the timeout: even a
    # minimal answer cannot be checked in time, so the answer is not to blame.
    heavy = json.dumps({"allOf": [{"minimum": 0}] * 30000})
    v = JsonSchemaVerifier(schema_column="schema", timeout=1.0)
    (got,) = v.verify_batch([Sample('<answer>{"x": 1}</answer>', {"schema": heavy})])
    assert got.outcome is Outcome.ERROR and got.error_kind == "timeout"
