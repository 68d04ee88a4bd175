"""What the suite's fake LLM judges read of a judge prompt: the reference answer and the response
exactly as the policy wrote it, taken from inside the ``<response chars="N">`` block that
``rlvr.rewards.judgecore.delimit`` writes (escapes undone, the length checked), as a judge that
follows the prompt's notice would."""

from __future__ import annotations


def response_of(prompt: str) -> str:
    """The delimited response, unescaped; ``AssertionError`` when the block is missing or its
    length does not match."""
    head = '<response chars="'
    at = prompt.index(head) + len(head)
    n_end = prompt.index('">\n', at)
    n, start = int(prompt[at:n_end]), n_end + 3
    end = prompt.index("\n</response>", start)
    text = prompt[start:end].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    assert len(text) == n, "the response block's length does not match its prefix"
    return text


def reference_of(prompt: str) -> str:
    """The line after ``Reference answer:`` (the last such line outside the response block)."""
    outside = prompt[: prompt.index('<response chars="')] + prompt[prompt.index("\n</response>") :]
    return outside.rsplit("Reference answer:\n", 1)[1].split("\n", 1)[0]
