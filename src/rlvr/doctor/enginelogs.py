"""verl's and OpenRLHF's training logs under rlvr's metric names, read from the files those
engines write offline, so ``rlvr doctor`` and ``rlvr report`` can read a run they trained.

Inputs:

- verl's file logger (``trainer.logger=[console,file]``; ``VERL_FILE_LOGGER_PATH``): JSONL, one
  ``{"step": N, "data": {name: value}}`` per line (verl/utils/tracking.py ``FileLogger``).
- TensorBoard event files, written by OpenRLHF (``--logger.use_tensorboard``: tags ``train/<key>``,
  openrlhf/utils/logging_utils.py ``TensorboardLogger``) or by verl's ``tensorboard`` backend (tags
  are verl's names). Read without TensorFlow or TensorBoard: TFRecord framing with CRC-32C checks,
  and the few protobuf fields of scalar summaries (``simple_value``, or a float/double tensor).

Output: rows ``{"step": N, <rlvr name>: value}``, the shape of ``rlvr train``'s ``metrics.jsonl``;
``write_metrics_jsonl`` writes them to a file that ``rlvr doctor FILE.jsonl`` reads. A name with
no rlvr counterpart is dropped, so an engine's own metric is never mistaken for one of rlvr's.

What maps (engine name -> rlvr name), and what is approximate:

- verl: ``critic/score/mean`` -> ``reward`` (the task reward before verl's in-reward KL penalty,
  like TRL's ``reward``); ``actor/entropy`` -> ``entropy``; ``response_length/mean``, ``/max``,
  ``/min``, ``/clip_ratio`` -> ``completions/mean_length``, ``max_length``, ``min_length``,
  ``clipped_ratio``; ``actor/pg_clipfrac`` -> ``clip_ratio/region_mean`` (share of tokens clipped,
  either side); ``actor/kl_loss`` (else ``critic/kl``) -> ``kl``; ``actor/grad_norm`` ->
  ``grad_norm``; ``actor/lr`` -> ``learning_rate``. verl logs no group std or zero-variance share.
- OpenRLHF: ``train/reward``, ``train/kl``, ``train/response_length`` (mean),
  ``train/response_clip_ratio``, ``train/ppo_clip_ratio``, ``train/entropy`` when logged, and the
  rlvr adapter's ``extra_logs`` means: ``train/rlvr/masked`` -> ``rewards/masked_rate``,
  ``train/rlvr/<term>/error|timeout|unparseable`` -> ``rewards/<term>/<kind>_rate``,
  ``train/rlvr/<term>/score`` -> ``rewards/<term>/mean``. ``train/dynamic_filtering_pass_rate``
  -> ``frac_reward_zero_std`` as ``1 - pass rate``: exact only for 0/1 scores with OpenRLHF's
  default filtering range, which drops exactly the all-0 and all-1 groups.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import DataError

VERL: dict[str, str] = {
    "critic/score/mean": "reward",
    "actor/entropy": "entropy",
    "response_length/mean": "completions/mean_length",
    "response_length/max": "completions/max_length",
    "response_length/min": "completions/min_length",
    "response_length/clip_ratio": "completions/clipped_ratio",
    "actor/pg_clipfrac": "clip_ratio/region_mean",
    "actor/kl_loss": "kl",
    "actor/grad_norm": "grad_norm",
    "actor/lr": "learning_rate",
}
VERL_FALLBACK: dict[str, str] = {"critic/kl": "kl"}  # used only when the preferred name is absent

OPENRLHF: dict[str, str] = {
    "train/reward": "reward",
    "train/kl": "kl",
    "train/response_length": "completions/mean_length",
    "train/response_clip_ratio": "completions/clipped_ratio",
    "train/ppo_clip_ratio": "clip_ratio/region_mean",
    "train/entropy": "entropy",
    "train/rlvr/masked": "rewards/masked_rate",
}
_OPENRLHF_TERM = re.compile(r"^train/rlvr/(?P<term>.+)/(?P<kind>error|timeout|unparseable|score)$")


def map_names(engine: str, values: Mapping[str, Any]) -> dict[str, float]:
    """One logging step's values under rlvr's names (module docstring); others are dropped."""
    out: dict[str, float] = {}
    if engine == "verl":
        for name, target in VERL.items():
            if _is_number(values.get(name)):
                out[target] = float(values[name])
        for name, target in VERL_FALLBACK.items():
            if target not in out and _is_number(values.get(name)):
                out[target] = float(values[name])
        return out
    if engine != "openrlhf":
        raise ValueError(f"unknown engine {engine!r}: verl or openrlhf")
    for name, value in values.items():
        if not _is_number(value):
            continue
        if name in OPENRLHF:
            out[OPENRLHF[name]] = float(value)
        elif m := _OPENRLHF_TERM.match(name):
            kind = m["kind"]
            out[f"rewards/{m['term']}/" + ("mean" if kind == "score" else f"{kind}_rate")] = float(value)
        elif name == "train/dynamic_filtering_pass_rate":
            out["frac_reward_zero_std"] = 1.0 - float(value)
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# -- verl's file logger -----------------------------------------------------------------------
def read_verl_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows from verl's file logger; several lines for one step merge (verl logs validation
    metrics on their own line). A torn last line (a run killed mid-write) is skipped; any other
    bad line raises ``DataError`` naming the file and the line."""
    p = Path(path)
    lines = p.read_text(encoding="utf-8").splitlines()
    steps: dict[int, dict[str, Any]] = {}
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            if i == len(lines):
                continue
            raise DataError(f"{p}, line {i}: not valid JSON: {exc.msg}") from exc
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("data"), dict)
            or isinstance(raw.get("step"), bool)
            or not isinstance(raw.get("step"), int)
        ):
            raise DataError(f'{p}, line {i}: expected verl\'s file-logger line {{"step": N, "data": {{...}}}}')
        steps.setdefault(raw["step"], {}).update(raw["data"])
    return [{"step": s, **map_names("verl", steps[s])} for s in sorted(steps)]


# -- TensorBoard event files ------------------------------------------------------------------
def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def _masked_crc(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _records(path: Path) -> Iterator[bytes]:
    data = path.read_bytes()
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            return  # a torn header at the end: the writer was stopped mid-record
        (length,) = struct.unpack_from("<Q", data, pos)
        (len_crc,) = struct.unpack_from("<I", data, pos + 8)
        if _masked_crc(data[pos : pos + 8]) != len_crc:
            raise DataError(
                f"{path}: byte {pos}: record length fails its CRC-32C (not a TensorBoard event file, or damaged)"
            )
        end = pos + 12 + length + 4
        if end > len(data):
            return
        body = data[pos + 12 : pos + 12 + length]
        (body_crc,) = struct.unpack_from("<I", data, pos + 12 + length)
        if _masked_crc(body) != body_crc:
            raise DataError(f"{path}: byte {pos}: record fails its CRC-32C (damaged event file)")
        yield body
        pos = end


def _fields(buf: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) of a protobuf message: varints as ints, fixed64/32 as raw
    bytes, length-delimited as bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        field, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos : pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos : pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos : pos + 4], pos + 4
        else:
            raise DataError(f"unsupported protobuf wire type {wire} in a TensorBoard event")
        yield field, wire, value


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DataError("truncated protobuf varint in a TensorBoard event")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _tensor_value(buf: bytes) -> float | None:
    """The first value of a scalar TensorProto (DT_FLOAT 1 or DT_DOUBLE 2)."""
    dtype, content = 0, b""
    for field, wire, value in _fields(buf):
        if field == 1 and wire == 0:
            dtype = value
        elif field == 4 and wire == 2:
            content = value
        elif field == 5:  # float_val, packed or not
            return struct.unpack_from("<f", value)[0] if len(value) >= 4 else None
        elif field == 6:  # double_val
            return struct.unpack_from("<d", value)[0] if len(value) >= 8 else None
    if content and dtype == 1 and len(content) >= 4:
        return struct.unpack_from("<f", content)[0]
    if content and dtype == 2 and len(content) >= 8:
        return struct.unpack_from("<d", content)[0]
    return None


def read_tensorboard_scalars(path: str | Path) -> dict[int, dict[str, float]]:
    """Every scalar in a TensorBoard event file, or in every ``events.out.tfevents.*`` under a
    folder: step -> tag -> value (the last one written wins)."""
    p = Path(path)
    files = sorted(p.rglob("events.out.tfevents.*")) if p.is_dir() else [p]
    if not files:
        raise DataError(f"{p}: no events.out.tfevents.* files")
    out: dict[int, dict[str, float]] = {}
    for f in files:
        for record in _records(f):
            step, summary = 0, None
            for field, wire, value in _fields(record):
                if field == 2 and wire == 0:
                    step = value - (1 << 64) if value >= 1 << 63 else value
                elif field == 5 and wire == 2:
                    summary = value
            if summary is None:
                continue
            for field, wire, value in _fields(summary):
                if field != 1 or wire != 2:
                    continue
                tag, number = None, None
                for vf, vw, vv in _fields(value):
                    if vf == 1 and vw == 2:
                        tag = vv.decode("utf-8", "replace")
                    elif vf == 2 and vw == 5:
                        number = struct.unpack("<f", vv)[0]
                    elif vf == 8 and vw == 2:
                        number = _tensor_value(vv)
                if tag is not None and number is not None:
                    out.setdefault(step, {})[tag] = float(number)
    return out


def read_tensorboard(path: str | Path, engine: str) -> list[dict[str, Any]]:
    """Rows under rlvr's names from an engine's TensorBoard events (``engine``: verl or openrlhf)."""
    scalars = read_tensorboard_scalars(path)
    return [{"step": s, **map_names(engine, scalars[s])} for s in sorted(scalars)]


def read_engine_log(path: str | Path, engine: str) -> list[dict[str, Any]]:
    """A verl file-logger JSONL (``.jsonl``) or TensorBoard events (a file or folder)."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"{p}: no such file or folder")
    if p.suffix == ".jsonl":
        if engine != "verl":
            raise DataError(
                f"{p}: a JSONL log is verl's file logger; OpenRLHF's offline log is TensorBoard "
                "(--logger.use_tensorboard)"
            )
        return read_verl_jsonl(p)
    return read_tensorboard(p, engine)


def write_metrics_jsonl(rows: Sequence[Mapping[str, Any]], out: str | Path) -> Path:
    """Rows as a ``metrics.jsonl`` that ``rlvr doctor`` reads; non-finite values are kept as
    ``null`` (JSON has no NaN), which the doctor reads as "not logged"."""
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as fh:
        for r in rows:
            clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
            fh.write(json.dumps(clean, allow_nan=False) + "\n")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rlvr.doctor.enginelogs ENGINE LOG OUT.jsonl``: convert, then ``rlvr doctor OUT.jsonl``."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3 or args[0] not in ("verl", "openrlhf"):
        sys.stderr.write("usage: python -m rlvr.doctor.enginelogs verl|openrlhf LOG OUT.jsonl\n")
        return 2
    try:
        rows = read_engine_log(args[1], args[0])
    except DataError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    path = write_metrics_jsonl(rows, args[2])
    sys.stdout.write(f"wrote {path}: {len(rows)} steps\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
