"""Reading data: task splits (JSONL, Parquet, Hugging Face datasets) and JSONL files, with
errors that name the file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import DataError


def decode_utf8(data: bytes, path: str | Path) -> str:
    """``data`` as UTF-8; a ``DataError`` naming the file, line and byte offset where it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1)
        raise DataError(
            f"{path}:{line}: not UTF-8: byte 0x{data[exc.start]:02x} at byte {column} of line {line} (byte offset "
            f"{exc.start} in the file)"
        ) from None


def read_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line. Raises ``DataError`` naming
    ``file:line`` for a line that is not UTF-8, not JSON or not a JSON object."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: no such file")
    with p.open("rb") as fh:
        offset = 0
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"{p}:{lineno}: not UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start} of line {lineno} (byte "
                    f"offset {offset + exc.start} in the file)"
                ) from None
            offset += len(raw)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{p}:{lineno}: not valid JSON, column {exc.colno}: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def read_rows(ref: str) -> list[dict[str, Any]]:
    """Rows of a JSONL or Parquet file, or of a Hugging Face dataset (``hf:name[:config][@split]``,
    needs the network unless cached). Errors name the file and line."""
    if ref.startswith("hf:"):
        name, _, split = ref[3:].partition("@")
        name, _, config = name.partition(":")
        try:
            import datasets

            ds = datasets.load_dataset(name, config or None, split=split or "train")
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"{ref}: cannot load the Hugging Face dataset: {type(exc).__name__}: {exc}") from exc
        return [dict(r) for r in ds]
    path = Path(ref)
    if not path.exists():
        raise DataError(f"{ref}: no such file")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as exc:  # noqa: BLE001
            raise DataError(f"{ref}: not a readable Parquet file: {exc}") from exc
    return [row for _, row in read_objects(path)]
