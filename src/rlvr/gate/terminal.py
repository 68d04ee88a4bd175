"""The review in a terminal: the same samples, verdicts and filters as the web page.

One line per verdict: ``r`` (reward is right), ``h`` (should be higher) or ``l`` (should be
lower), optionally followed by a note on the same line (``l accepts 4 2 as 42``); ``a REASON``
accepts an open disagreement; ``j``/``k`` next/previous; ``s`` status; ``q`` (or end of input)
quits. Each verdict is committed before the next sample is shown. Read from a script
(``scripted``: ``--no-tty``), a line that records nothing it asks for (an unknown command, an
``a`` with nothing to accept or no reason) stops the review with an error naming the line: were
it skipped, every later line's verdict would land on the sample before the one it was written for.
The extracted answer is marked ``⟦…⟧`` (reverse video on a colour terminal) and invisible characters are drawn as
``⟨U+200B⟩`` markers.

Identical completions of one prompt (a small model repeats itself: ``\\boxed{89}`` nine times) are
shown once, with their count: they score the same, so the verdict given on one is recorded for
every unreviewed copy (``duplicates``), and the reader is not asked the same question nine times.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import IO, Any

from ..errors import GateError
from .agreement import SampleStatus, agreement, format_agreement, statuses
from .codeview import code_view
from .codeview import terminal_lines as code_lines
from .review import Filter, answer_span, episode_lines, segments, step
from .store import InspectionSample, StaleReward, Store, reward_fingerprint

PROMPT = "[r]ight [h]igher [l]ower (+ note) · a REASON accept · j/k next/prev · s status · q quit > "


def duplicates(samples: Sequence[InspectionSample]) -> dict[int, tuple[int, ...]]:
    """Each sample id -> the ids of every sample with the same prompt and the same completion
    (itself included, in id order)."""
    groups: dict[tuple[int, str], list[int]] = {}
    for s in samples:
        groups.setdefault((s.rollout.prompt_index, s.rollout.completion), []).append(s.id)
    return {i: tuple(sorted(ids)) for ids in groups.values() for i in ids}


def render(
    store: Store,
    st: SampleStatus,
    *,
    correctness_term: str,
    answer_column: str,
    color: bool = False,
    meta: Mapping[str, Any] | None = None,
    copies: Sequence[int] = (),
) -> str:
    """One sample as the terminal shows it: header, prompt, completion (answer marked), terms, history.
    A code sample shows its tests, what each expected and got, instead of an expected answer (``gate.codeview``)."""
    s, r = st.sample, st.sample.rollout
    view = code_view(
        r.verdicts, r.row, {"correctness_term": correctness_term, "answer_column": answer_column, **(meta or {})}
    )
    span = answer_span(r.verdicts, correctness_term)
    on, off = ("\x1b[7m", "\x1b[0m") if color else ("⟦", "⟧")
    parts = []
    for kind, piece in segments(r.completion, span):
        parts.append(f"{on}{piece}{off}" if kind.startswith("span") else piece)
    lines = [
        f"── sample {s.id} (prompt #{r.prompt_index}, {s.bucket}, {len(r.token_ids)} tokens, {r.finish_reason})"
        f" · state: {st.state}",
        *(
            [
                f"×{len(copies)} identical completions of this prompt (samples {', '.join(map(str, copies))}): "
                "one verdict covers every unreviewed copy"
            ]
            if len(copies) > 1
            else []
        ),
        "prompt:",
        "  " + "".join(p for _, p in segments(r.prompt, None)).replace("\n", "\n  "),
        "completion:",
        "  " + ("".join(parts) or "(empty)").replace("\n", "\n  "),
        *episode_lines(r.episode),  # an episode task: each turn, call and result
        *(code_lines(view) if view is not None else [f"expected: {r.row.get(answer_column)}"]),
    ]
    for name, v in r.verdicts.items():
        score = "None (masked)" if v.score is None else f"{v.score:g}"
        extra = f" answer={v.answer!r}" if v.answer is not None else ""
        detail = f" — {v.detail}" if v.detail else ""
        lines.append(f"  {name:<12} {v.outcome.value:<11} {score}{extra}{detail}")
    lines.append(f"total reward: {'None (masked)' if r.total is None else f'{r.total:g}'} ({s.reward_class})")
    for rev in store.reviews(s.id):
        lines.append(
            f"  verdict {rev.created} {rev.reviewer}: {rev.label}"
            + (f" — accepted: {rev.accepted}" if rev.accepted else (f" — {rev.note}" if rev.note else ""))
        )
    return "\n".join(lines)


def review(
    store: Store,
    *,
    reviewer: str,
    flt: Filter | None = None,
    stdin: IO[str] | None = None,
    stdout: IO[str] | None = None,
    color: bool | None = None,
    scripted: bool = False,
) -> int:
    """Review interactively until nothing matches the filter or the reviewer quits. Returns the
    number of verdicts recorded. ``scripted``: a line that is not obeyed raises ``GateError``
    naming it (the verdicts before it stay recorded)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    flt = flt or Filter()
    color = stdout.isatty() if color is None else color
    meta = store.meta()
    term, column = meta.get("correctness_term", ""), meta.get("answer_column", "answer")
    given = 0
    lineno = 0
    current: int | None = None
    direction = 1
    while True:
        sts = statuses(store.samples(), store.latest_reviews())
        if current is None or not any(x.sample.id == current and flt.matches(x) for x in sts) or direction:
            nxt = step(sts, current, flt, direction or 1)
        else:
            nxt = current
        if nxt is None:
            stdout.write(
                "nothing left to review with this filter\n"
                + format_agreement(agreement(store.samples(), store.latest_reviews()))
                + "\n"
            )
            return given
        current, direction = nxt, 0
        st = next(x for x in sts if x.sample.id == current)
        copies = duplicates([x.sample for x in sts]).get(current, (current,))
        stdout.write(
            render(store, st, correctness_term=term, answer_column=column, color=color, meta=meta, copies=copies)
            + "\n"
            + PROMPT
        )
        stdout.flush()
        line = stdin.readline()
        lineno += 1
        if not line:
            stdout.write("\n")
            return given
        refused = None
        cmd, _, rest = line.strip().partition(" ")
        rest = rest.strip()
        if cmd in ("q", "quit"):
            return given
        if cmd in ("r", "h", "l"):
            label = {"r": "right", "h": "higher", "l": "lower"}[cmd]
            try:
                store.add_review(
                    current, label, reviewer=reviewer, note=rest, seen=reward_fingerprint(st.sample.rollout.verdicts)
                )
            except StaleReward as exc:
                stdout.write(f"not recorded: {exc}\n")
                continue
            given += 1
            seen = reward_fingerprint(st.sample.rollout.verdicts)
            unreviewed = [x for x in sts if x.sample.id in copies and x.sample.id != current and x.review is None]
            for twin in unreviewed:  # the same completion of the same prompt: the same verdict
                if reward_fingerprint(twin.sample.rollout.verdicts) == seen:
                    store.add_review(twin.sample.id, label, reviewer=reviewer, note=rest, seen=seen)
                    given += 1
            stdout.write(
                f"recorded: {label}" + (f" (and {len(unreviewed)} identical copies)" if unreviewed else "") + "\n"
            )
            direction = 1
        elif cmd == "a":
            if not (st.is_disagreement and st.review is not None and st.review.label != "right"):
                refused = "nothing to accept: 'a' accepts an open higher/lower disagreement"
            elif not rest:
                refused = "accepting needs a reason: a REASON"
            else:
                try:
                    store.add_review(
                        current,
                        st.review.label,
                        reviewer=reviewer,
                        accepted=rest,
                        seen=reward_fingerprint(st.sample.rollout.verdicts),
                    )
                except StaleReward as exc:
                    stdout.write(f"not recorded: {exc}\n")
                    continue
                given += 1
                stdout.write("recorded: accepted\n")
                direction = 1
        elif cmd in ("j", ""):
            direction = 1
        elif cmd == "k":
            direction = -1
        elif cmd == "s":
            stdout.write(format_agreement(agreement(store.samples(), store.latest_reviews())) + "\n")
        else:
            refused = f"unknown command {cmd!r}"
        if refused is not None:
            stdout.write(refused + "\n")
            if scripted:
                raise GateError(
                    f"stdin line {lineno}: {refused} (sample {current}); nothing after it was read, the {given} "
                    "verdicts before it are recorded (fix: correct that line and run the review again: it "
                    "continues with the samples still unreviewed)"
                )
