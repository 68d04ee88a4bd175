"""The built-in ``search`` tool: the few documents of a local JSONL collection that best match a query.

The collection is a JSONL file in the task folder, one document a line with a ``text`` field and
an optional ``title`` (a line without ``text`` is a load error naming the file and line). Ranking
is plain and deterministic: a document's score is the number of distinct query words it contains
(lower-cased runs of letters and digits), ties broken by file order; documents with no query word
are never returned. Word splitting is one pass over the text (no backtracking pattern), so a
query or a document costs time linear in its length. The tool answers with at most ``k`` (1-5)
documents (default 1) as ``[title] text`` lines, each cut to 300 characters, or ``no match``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataError

MAX_K = 5
MAX_DOC_CHARS = 300
MAX_QUERY_CHARS = 300

__all__ = ["Document", "read_collection", "search_tool", "words"]


@dataclass(frozen=True)
class Document:
    title: str
    text: str
    words: frozenset[str]


def words(text: str) -> list[str]:
    """Lower-cased runs of letters and digits, in order (one pass, linear time)."""
    out: list[str] = []
    cur: list[str] = []
    for ch in text.lower():
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def read_collection(path: Path) -> tuple[Document, ...]:
    """The documents of a JSONL collection; ``DataError`` naming the file and line otherwise."""
    docs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {n}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise DataError(f"{path}: line {n}: a document needs a string field 'text'")
        title = row.get("title", "")
        docs.append(Document(str(title), row["text"], frozenset(words(f"{title} {row['text']}"))))
    if not docs:
        raise DataError(f"{path}: the collection has no documents")
    return tuple(docs)


def search_tool(docs: tuple[Document, ...]) -> Callable[..., str]:
    """The ``search`` tool over ``docs``: a plain function with a signature and docstring from
    which the tool's JSON schema is read."""

    def search(query: str, k: int = 1) -> str:
        """Search the task's document collection for the documents that best match a query.

        Args:
            query: Words to look for, for example "capital of Norway".
            k: How many documents to return, from 1 to 5.
        """
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is longer than {MAX_QUERY_CHARS} characters")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise ValueError(f"k must be an integer from 1 to {MAX_K}")
        wanted = set(words(query))
        scored = [(len(wanted & d.words), -i, d) for i, d in enumerate(docs)]
        hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (s[0], s[1]), reverse=True)[:k]
        if not hits:
            return "no match"
        return "\n".join(
            f"[{d.title}] {d.text[:MAX_DOC_CHARS]}" if d.title else d.text[:MAX_DOC_CHARS] for *_, d in hits
        )

    return search
