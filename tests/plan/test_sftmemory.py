"""``rlvr plan``'s SFT memory line (``rlvr.plan.sftmemory``): the estimate's parts follow its
stated formula, and the measured point it was checked against stays within its stated +-10 %."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rlvr.cli.main import main
from rlvr.plan.architecture import SIZE_CLASSES, load_architecture
from rlvr.plan.sftmemory import BYTES_PER_PARAM, sft_estimate

ARITH = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"

# bench/sft_memory.py on builtin:smollm2, 3 steps, rows of 50 tokens: peak RSS of the SFT child.
MEASURED_GB = {8: 3.43, 32: 6.76}


def test_the_estimate_is_within_ten_percent_of_the_measured_smollm2_points() -> None:
    arch = load_architecture("builtin:smollm2")
    for batch, measured in MEASURED_GB.items():
        est = sft_estimate(arch, batch=batch, seq=50, device="cpu").peak / 1e9
        assert abs(est - measured) / measured <= 0.10, (batch, est, measured)


@settings(max_examples=50, deadline=None)
@given(
    name=st.sampled_from(sorted(SIZE_CLASSES)),
    batch=st.integers(1, 64),
    seq=st.integers(1, 4096),
    more=st.integers(1, 64),
)
def test_the_estimate_grows_with_the_batch_and_is_at_least_sixteen_bytes_a_parameter(
    name: str, batch: int, seq: int, more: int
) -> None:
    arch = SIZE_CLASSES[name]
    small = sft_estimate(arch, batch=batch, seq=seq)
    big = sft_estimate(arch, batch=batch + more, seq=seq)
    assert small.peak >= BYTES_PER_PARAM * arch.params
    assert big.peak > small.peak
    assert big.parts["weights+grads+adam"] == small.parts["weights+grads+adam"]  # only tokens grow
    assert sum(small.parts.values()) == small.peak


def test_rlvr_plan_prints_the_sft_memory_line_on_cpu_and_gpu(tmp_path: Path, capsys) -> None:
    for gpus in ("0", "1"):
        assert main(["plan", str(ARITH), "--gpus", gpus, "-o", str(tmp_path / f"p{gpus}.yaml")]) == 0
        out = capsys.readouterr().out
        [line] = [x for x in out.splitlines() if x.startswith("  rlvr sft: SFT peak ~")]
        assert ("resident (RSS)" in line) == (gpus == "0") and "fp32 full fine-tuning" in line
