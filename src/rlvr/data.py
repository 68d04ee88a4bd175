"""Reading data: task splits (JSONL, Parquet, Hugging Face datasets) and JSONL files, with
errors that name the file and line."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
                raise DataError(
                    f"{p}:{lineno}: not valid JSON, column {exc.colno}: {exc.msg}{_looks_like(p, line, lineno)}"
                ) from None
            if not isinstance(obj, dict):
                raise DataError(f"{p}:{lineno}: expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def _looks_like(path: Path, line: str, lineno: int) -> str:
    """What a file that is not JSON lines seems to be, said beside the parse error: a CSV/TSV
    file (by its name or a comma-separated header) or a single JSON document."""
    expected = "; rlvr reads JSON lines (one JSON object per line, .jsonl) or Parquet (.parquet)"
    if path.suffix.lower() in (".csv", ".tsv") or (
        lineno == 1 and not line.lstrip().startswith(("{", "[")) and ("," in line or "\t" in line)
    ):
        return (
            f"{expected}: this looks like a CSV/TSV file (convert it, e.g. "
            "pandas.read_csv(...).to_json(lines=True, orient='records'))"
        )
    if lineno == 1 and line.strip() in ("[", "{"):
        return f"{expected}: this looks like one JSON document spread over lines (write one object per line)"
    return ""


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


# Which rows a checkpoint was trained on, beside its weights: a model is measured (probe, dev
# pass rate, difficulty filter) on the rows it has not seen, or says that it could not.
TRAINED_ROWS_NAME = "trained_rows.json"


def row_key(row: Mapping[str, Any]) -> str:
    """A row's identity: 16 hex digits of the SHA-256 of its canonical JSON (keys sorted), so the
    same row is recognised whatever its position in the file."""
    text = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class TrainedRows:
    """The rows a model was trained on (``trained_rows.json``): their ``row_key``s, what trained on
    them (``sources``, e.g. ``("sft",)`` or ``("sft", "grpo")`` for a run started from an SFT model)
    and the file it was read from."""

    keys: frozenset[str]
    sources: tuple[str, ...]
    path: str = ""

    def seen(self, row: Mapping[str, Any]) -> bool:
        return row_key(row) in self.keys

    def merged(self, other: TrainedRows | None) -> TrainedRows:
        if other is None:
            return self
        return TrainedRows(self.keys | other.keys, (*other.sources, *self.sources), self.path)

    def write(self, directory: str | Path, *, task: str) -> Path:
        """``trained_rows.json`` in ``directory``."""
        path = Path(directory) / TRAINED_ROWS_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {"task": task, "sources": list(self.sources), "n": len(self.keys), "rows": sorted(self.keys)}
        path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        return path


def trained_rows_of(model: str | Path | None) -> TrainedRows | None:
    """The rows the model at ``model`` was trained on, when it is a local folder that records them:
    ``trained_rows.json`` in the folder itself or, for a ``checkpoint-N`` folder, in its run
    directory. None for a hub id, a built-in model or a folder that records nothing. A file that
    cannot be read is a ``DataError`` naming it."""
    if model is None or str(model).startswith("builtin:"):
        return None
    folder = Path(model)
    candidates = [folder / TRAINED_ROWS_NAME]
    if folder.name.startswith("checkpoint-"):
        candidates.append(folder.parent.parent / TRAINED_ROWS_NAME)
    for path in candidates:
        if path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                return TrainedRows(
                    frozenset(str(k) for k in data["rows"]), tuple(str(s) for s in data.get("sources") or ()), str(path)
                )
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise DataError(f"{path}: not a trained-rows file ({type(exc).__name__}: {exc})") from None
    return None
