"""Answer spans and the format term.

Extraction is anchored: the answer is what stands inside *the* answer span (``<answer>…</answer>``
or ``\\boxed{…}``), searched over the whole completion, never "the token appears somewhere".
The ``json`` format has no marker: the answer is everything after the think block, read as one
bare JSON value (``{"name": "Ada"}``), or the one fenced block (````` ```json ````` or ````` ``` `````)
there (``fenced_json``): several blocks, an unclosed fence or a ``{``/``[`` outside the block is no
answer (a second record is refused, never "the first one wins").
Exactly one span is required by default, because repeating the block to collect reward several
times, or hedging with ``\\boxed{a}\\boxed{b}``, is a known hack. A ``<think>`` block can be
required, optional or *prefilled*: chat templates of reasoning models (DeepSeek-R1 distills,
Qwen3) open ``<think>`` in the prompt, so the completion starts inside the block and only its
``</think>`` is visible. An answer span inside the think block never counts.

All scanning is linear in the completion's length (plain ``str.find`` and one brace-matching
pass with a stack, no backtracking regex), also for thousands of repeated or nested boxes, so a
1 MB completion costs milliseconds, not a timeout.

An answer span holding only invisible characters is empty: it looks like nothing to a reader.
"Invisible" has one definition, ``rlvr.rewards.rules.untrusted`` (Unicode's default-ignorable code
points, variation selectors and the other blank combining marks included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .base import BaseVerifier, Reads, Sample, Verdict
from .rules import untrusted
from .rules.strictjson import JsonError, read_json
from .rules.untrusted import is_blank, is_invisible

ThinkPolicy = Literal["none", "optional", "required", "prefilled"]
BoxedPolicy = Literal["only", "first", "last"]


@dataclass(frozen=True)
class AnswerFormat:
    """Where the answer lives in a completion.

    style: ``tags`` (``<tag>…</tag>``), ``boxed`` (``\\boxed{…}`` with brace matching) or ``json``
        (a bare JSON value after the think block, or its one fenced block: ``fenced_json``).
    tag: the tag name for ``tags``.
    think: ``none`` (no think block expected; one is tolerated before the answer), ``optional``
        (a block may precede the answer; a lone ``</think>`` is read as a block the template
        opened),
        ``required`` (``<think>…</think>`` must precede the answer), ``prefilled`` (the template
        opened ``<think>``; the completion must close it once and answer after it).
    boxed: which box counts when there are several: ``only`` (several is unparseable: a hedge),
        ``first`` or ``last``.
    allow_multiple: accept repeated answer tags (then the last one counts). Off by default.
    """

    style: Literal["tags", "boxed", "json"] = "tags"
    tag: str = "answer"
    think: ThinkPolicy = "none"
    boxed: BoxedPolicy = "only"
    allow_multiple: bool = False

    @property
    def open_tag(self) -> str:
        return f"<{self.tag}>"

    @property
    def close_tag(self) -> str:
        return f"</{self.tag}>"

    def wrap(self, answer: str) -> str:
        """A minimal well-formed completion carrying ``answer`` (used by SFT targets and the audit)."""
        if self.style == "json":
            body = answer  # the bare record: what a model that already writes JSON writes
        else:
            body = f"{self.open_tag}{answer}{self.close_tag}" if self.style == "tags" else f"\\boxed{{{answer}}}"
        if self.think == "required":
            return f"<think></think>{body}"
        if self.think == "prefilled":
            return f"</think>{body}"
        return body


@dataclass(frozen=True)
class Extraction:
    """The answer span found in a completion, or why there is none."""

    answer: str | None
    span: tuple[int, int] | None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _find_all(text: str, needle: str, start: int = 0) -> list[int]:
    out, i = [], text.find(needle, start)
    while i != -1:
        out.append(i)
        i = text.find(needle, i + len(needle))
    return out


def _think_end(text: str, fmt: AnswerFormat) -> tuple[int, str | None]:
    """Offset where the answer may start, after the think block, or a problem."""
    opens, closes = _find_all(text, "<think>"), _find_all(text, "</think>")
    if fmt.think == "prefilled":
        if opens:
            return 0, "a <think> tag inside a completion whose template already opened it"
        if len(closes) != 1:
            return 0, f"expected one </think> closing the prefilled block, found {len(closes)}"
        return closes[0] + len("</think>"), None
    if not opens and not closes:
        if fmt.think == "required":
            return 0, "no <think> block"
        return 0, None
    if fmt.think == "optional" and not opens and len(closes) == 1:
        # The chat template opened <think> in the prompt (DeepSeek-R1 distills, Qwen3): the
        # completion starts inside the block. Scoring this as malformed is the open-r1 / TRL
        # bug where the format reward is always 0 under such templates.
        return closes[0] + len("</think>"), None
    if len(opens) != 1 or len(closes) != 1:
        return 0, f"expected one <think> block, found {len(opens)} <think> and {len(closes)} </think>"
    if closes[0] < opens[0]:
        return 0, "</think> before <think>"
    return closes[0] + len("</think>"), None


def read_answer(completion: str, fmt: AnswerFormat) -> tuple[int, str | None, Extraction]:
    """The one reading of ``completion`` under ``fmt``: where the answer may start (just after the
    think block), why nothing can count as an answer (a think block the format requires is
    missing or malformed; None when there is none), and the answer span (``extract``). A
    completion whose think tags break the policy's count only because one of them is a *mention*
    (``</think>`` inside the answer span, or inside the reasoning) is read the one way it parses
    (``_one_reading``), and starts where that reading puts it. A reader that needs both the start
    and the span calls this once."""
    start, problem = _think_end(completion, fmt)
    ex = Extraction(None, None, problem) if problem else _after(completion, fmt, start)
    if not ex.ok and "think>" in completion and (reading := _one_reading(completion, fmt)) is not None:
        return reading[0], None, reading[1]
    return start, problem, ex


# More </think> tags than this and a completion is not re-read for mentions: each reading is a
# linear scan, and a completion of thousands of think tags is malformed, not a mention.
MAX_READINGS = 8


def _one_reading(completion: str, fmt: AnswerFormat) -> tuple[int, Extraction] | None:
    """The one reading of a completion whose think tags include a mention, or None.

    A reading puts the think block's end at the start (no block) or after one ``</think>``; it
    holds when the part before is a think block the policy allows (``_prefix_ok``: one ``<think>``,
    none under ``prefilled``; ``</think>`` mentions inside the reasoning are reasoning), the part
    after has an answer span, and every think tag after the block lies inside that span (a
    mention in the answer, which the answer term judges). A second block, or a tag between blocks
    and answer, fits no reading. Several readings with different spans are ambiguous: None, and
    the policy's own problem stands (fail closed)."""
    closes = _find_all(completion, "</think>")
    if len(closes) > MAX_READINGS:
        return None
    opens = _find_all(completion, "<think>")
    tags = sorted([(i, len("<think>")) for i in opens] + [(i, len("</think>")) for i in closes])
    found: dict[tuple[int, int], tuple[int, Extraction]] = {}
    for end in [0, *(c + len("</think>") for c in closes)]:
        if not _prefix_ok(fmt, end, sum(o < end for o in opens)):
            continue
        ex = _after(completion, fmt, end)
        if not ex.ok or ex.span is None:
            continue
        a, b = ex.span
        if any(i >= end and not (a <= i and i + n <= b) for i, n in tags):
            continue
        found[ex.span] = (end, ex)  # the later end wins a tie: less text counts as the answer's
    return next(iter(found.values())) if len(found) == 1 else None


def _prefix_ok(fmt: AnswerFormat, end: int, opens: int) -> bool:
    """Whether ``completion[:end]`` holding ``opens`` ``<think>`` tags is a think block ``fmt`` allows."""
    if end == 0:
        return fmt.think in ("none", "optional")
    if fmt.think == "prefilled":
        return opens == 0
    if fmt.think == "required":
        return opens == 1
    return opens <= 1  # none and optional: with no <think>, a block the template opened


def _boxes(text: str, start: int) -> tuple[list[tuple[int, int]], str | None]:
    """The outermost ``\\boxed{…}`` spans at or after ``start`` (inner offsets), or a problem.

    One pass: every brace is matched once with a stack, so the cost is linear in the text
    however many boxes there are or however deeply they nest.
    """
    marks = set(_find_all(text, "\\boxed{", start))
    if not marks:
        return [], None
    first = min(marks)
    stack: list[tuple[int, bool]] = []  # (offset of "{", whether it opens a box)
    spans: list[tuple[int, int]] = []
    depth_in_box = 0  # how many open boxes enclose the scan position
    for j in range(first + len("\\boxed"), len(text)):
        c = text[j]
        if c == "{":
            is_box = j - len("\\boxed") in marks
            stack.append((j, is_box))
            if is_box:
                if depth_in_box == 0:
                    spans.append((j + 1, -1))
                depth_in_box += is_box
        elif c == "}" and stack:
            _, is_box = stack.pop()
            if is_box:
                depth_in_box -= 1
                if depth_in_box == 0:
                    spans[-1] = (spans[-1][0], j)
    if depth_in_box:
        return [], "unbalanced braces in \\boxed{}"
    return spans, None


def extract(completion: str, fmt: AnswerFormat) -> Extraction:
    """The answer span of ``completion`` under ``fmt``; ``problem`` says why there is none
    (``read_answer``)."""
    return read_answer(completion, fmt)[2]


def _after(completion: str, fmt: AnswerFormat, start: int) -> Extraction:
    """The answer span at or after ``start`` (the end of the think block)."""
    if fmt.style == "json":
        return json_answer(completion, start)
    if fmt.style == "tags":
        opens = _find_all(completion, fmt.open_tag)
        closes = _find_all(completion, fmt.close_tag)
        if not opens and not closes:
            return Extraction(None, None, f"no {fmt.open_tag} span")
        before = [i for i in opens if i < start]
        if before:
            return Extraction(None, None, f"{fmt.open_tag} inside the think block")
        if len(opens) != len(closes):
            return Extraction(
                None, None, f"unbalanced tags: {len(opens)} {fmt.open_tag}, {len(closes)} {fmt.close_tag}"
            )
        if len(opens) > 1 and not fmt.allow_multiple:
            return Extraction(None, None, f"{len(opens)} {fmt.open_tag} spans (exactly one is allowed)")
        for k in range(len(opens)):
            if closes[k] < opens[k] or (k + 1 < len(opens) and opens[k + 1] < closes[k]):
                return Extraction(None, None, "answer tags out of order or nested")
        o, c = opens[-1], closes[-1]
        a, b = o + len(fmt.open_tag), c
        inner = completion[a:b]
    else:
        top, problem = _boxes(completion, start)
        if problem:
            return Extraction(None, None, problem)
        if not top:
            inside = completion.find("\\boxed{") != -1
            return Extraction(None, None, "\\boxed{} inside the think block" if inside else "no \\boxed{} span")
        if len(top) > 1 and fmt.boxed == "only":
            return Extraction(None, None, f"{len(top)} \\boxed{{}} answers (exactly one is allowed)")
        a, b = top[0] if fmt.boxed == "first" else top[-1]
        inner = completion[a:b]
    # Trim surrounding whitespace but keep offsets pointing at the trimmed text.
    stripped = untrusted.strip(inner)  # White_Space only: a U+001F stays part of the answer
    if is_blank(stripped):
        return Extraction(None, None, "empty answer span" + (" (only invisible characters)" if stripped else ""))
    a += len(inner) - len(untrusted.lstrip(inner))
    return Extraction(stripped, (a, a + len(stripped)))


FENCE = "```"
_NO_JSON = "no JSON answer: a bare JSON object (or array), or one fenced ```json block"


def json_answer(completion: str, start: int) -> Extraction:
    """The ``json`` format's answer after ``start`` (the end of the think block): the one fenced
    block when the text has a fence marker (``fenced_json``), else the whole rest, stripped, which
    must open like a JSON object or array (the strict reader decides the rest: a second record is
    "extra data", a wrong answer)."""
    if completion.find(FENCE, start) != -1:
        return fenced_json(completion, start)
    rest = completion[start:]
    text = untrusted.strip(rest)
    if not text[:1] or text[0] not in "{[":
        return Extraction(None, None, _NO_JSON if is_blank(text) else f"{_NO_JSON}, not text")
    a = start + len(rest) - len(untrusted.lstrip(rest))
    return Extraction(text, (a, a + len(text)))


def fenced_json(completion: str, start: int) -> Extraction:
    """The inner text of the one fenced block after ``start``, or why there is none. One rule for
    every reader of fenced JSON: exactly two fence markers (an odd count is an unclosed fence, more
    is several blocks: which would count?), the opening line ```` ``` ```` or ```` ```json ````, and
    no ``{`` or ``[`` outside the block (a second record beside the fenced one is a hedge, not prose).
    Linear: ``str.find`` only."""
    marks = _find_all(completion, FENCE, start)
    if not marks:
        return Extraction(None, None, "no fenced JSON block")
    if len(marks) % 2:
        return Extraction(None, None, f"{len(marks)} ``` fence markers: a fenced block is opened and closed once")
    if len(marks) > 2:
        return Extraction(None, None, f"{len(marks) // 2} fenced blocks (exactly one JSON block is read)")
    o, c = marks
    eol = completion.find("\n", o, c)
    if eol == -1:
        return Extraction(None, None, "a fenced block must start a new line after ```json")
    info = completion[o + len(FENCE) : eol].rstrip("\r").strip(" \t")
    if info not in ("", "json", "JSON"):
        return Extraction(None, None, f"a ```{info} block, not ```json")
    outside = completion[start:o] + completion[c + len(FENCE) :]
    if "{" in outside or "[" in outside:
        return Extraction(None, None, "JSON outside the fenced block (exactly one record is read)")
    inner = completion[eol + 1 : c]
    text = untrusted.strip(inner)
    if is_blank(text):
        return Extraction(None, None, "empty fenced block")
    a = eol + 1 + len(inner) - len(untrusted.lstrip(inner))
    return Extraction(text, (a, a + len(text)))


# What may close the answer span's surroundings without being "text after the answer": the end
# of a math environment (``$\\boxed{42}$``, ``\\[\\boxed{42}\\]``), a full stop, a code fence.
_CLOSERS = ("$$", "$", "\\]", "\\)", "```", ".")


def trailing_is_closing(rest: str) -> bool:
    """Whether ``rest`` (what follows the answer span's closing marker) holds only invisible
    characters and closers (``$``, ``$$``, ``\\]``, ``\\)``, a code fence, a full stop)."""
    i = 0
    while i < len(rest):
        if is_invisible(rest[i]):
            i += 1
            continue
        closer = next((c for c in _CLOSERS if rest.startswith(c, i)), None)
        if closer is None:
            return False
        i += len(closer)
    return True


class FormatVerifier(BaseVerifier):
    """1.0 when the completion has exactly one well-formed answer span (and the think block the
    format asks for), else 0.0 with the reason. Text after the answer span is allowed unless
    ``strict_end`` is set (the default): then only invisible characters and closers may follow
    it (see ``trailing_is_closing``)."""

    kind = "format"

    def __init__(self, answer_format: AnswerFormat | None = None, strict_end: bool = True) -> None:
        self.fmt = answer_format or AnswerFormat()
        self.strict_end = strict_end

    def reads(self) -> Reads:
        return Reads()  # the completion only

    def verify(self, sample: Sample) -> Verdict:
        ex = extract(sample.completion, self.fmt)
        if not ex.ok:
            return Verdict.wrong(detail=ex.problem or "")
        assert ex.span is not None
        # The form itself: think tags outside the answer span must make the one block the policy
        # allows. A </think> inside the reasoning reads like a second close (the repeated-block
        # hack), so the format term refuses it where the answer terms read the answer the one way
        # it parses (extract); a tag inside the answer span is the answer's content.
        a, b = ex.span
        _, problem = _think_end(sample.completion[:a] + " " * (b - a) + sample.completion[b:], self.fmt)
        if problem:
            return Verdict.wrong(detail=problem, answer=ex.answer, span=ex.span)
        if self.fmt.style == "json":
            return self._json(sample.completion, ex)
        if self.strict_end:
            close = self.fmt.close_tag if self.fmt.style == "tags" else "}"
            end = sample.completion.find(close, ex.span[1])
            if end == -1 or not trailing_is_closing(sample.completion[end + len(close) :]):
                return Verdict.wrong(detail="text after the answer span", answer=ex.answer, span=ex.span)
        return Verdict.correct(answer=ex.answer, span=ex.span)

    def _json(self, completion: str, ex: Extraction) -> Verdict:
        """The json format's span must hold one strict JSON value; after a fenced block only
        closers may follow (``strict_end``); a bare value is the whole rest already."""
        assert ex.answer is not None and ex.span is not None
        try:
            read_json(ex.answer)
        except JsonError as exc:
            return Verdict.wrong(detail=f"not valid JSON: {exc}", answer=ex.answer, span=ex.span)
        end = completion.find(FENCE, ex.span[1])
        if self.strict_end and end != -1 and not trailing_is_closing(completion[end + len(FENCE) :]):
            return Verdict.wrong(detail="text after the answer span", answer=ex.answer, span=ex.span)
        return Verdict.correct(answer=ex.answer, span=ex.span)
