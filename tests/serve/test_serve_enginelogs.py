"""verl's and OpenRLHF's offline logs under rlvr's metric names, read by ``rlvr doctor``.

Fixtures, written by the engines' own logging code (tests/serve/engine_code.py fetches it):
``data/openrlhf-0.11.2.tfevents`` by OpenRLHF 0.11.2's ``TensorboardLogger.log_train`` (torch's
SummaryWriter, tensorboard 2.21), three steps, ``rlvr/*`` extra logs included, masked 0.25 at
step 2; ``data/verl-0.9.1-file-logger.jsonl`` by verl 0.9.1's ``FileLogger``, three steps and a
validation line for step 3.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.doctor.enginelogs import main, map_names, read_engine_log, read_tensorboard_scalars, write_metrics_jsonl
from rlvr.errors import DataError

DATA = Path(__file__).parent / "data"
TB = DATA / "openrlhf-0.11.2.tfevents"
VERL = DATA / "verl-0.9.1-file-logger.jsonl"


def test_openrlhf_tensorboard_scalars_map_onto_rlvr_names() -> None:
    rows = read_engine_log(TB, "openrlhf")
    assert [r["step"] for r in rows] == [1, 2, 3]
    two = rows[1]
    assert two["reward"] == pytest.approx(0.2) and two["kl"] == pytest.approx(0.02)
    assert two["completions/mean_length"] == 102.0 and two["clip_ratio/region_mean"] == pytest.approx(0.02)
    assert two["rewards/masked_rate"] == 0.25 and two["rewards/correct/error_rate"] == 0.25
    assert two["rewards/correct/unparseable_rate"] == 0.125 and two["rewards/correct/mean"] == 0.5
    assert "train/policy_loss" not in two and "policy_loss" not in two  # no rlvr counterpart: dropped


def test_a_text_summary_in_the_event_file_is_skipped() -> None:
    scalars = read_tensorboard_scalars(TB)
    assert not any("generated_samples" in tag for step in scalars.values() for tag in step)


def test_verl_file_logger_maps_onto_rlvr_names_and_merges_lines_of_one_step() -> None:
    rows = read_engine_log(VERL, "verl")
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[0] == {
        "step": 1,
        "reward": 0.1,
        "entropy": 0.9,
        "completions/mean_length": 101.0,
        "completions/clipped_ratio": 0.0,
        "clip_ratio/region_mean": 0.02,
        "kl": 0.001,
        "grad_norm": 0.5,
        "learning_rate": 1e-06,
    }


def test_verl_kl_prefers_the_kl_loss_and_falls_back_to_the_in_reward_kl() -> None:
    assert map_names("verl", {"actor/kl_loss": 0.1, "critic/kl": 0.5})["kl"] == 0.1
    assert map_names("verl", {"critic/kl": 0.5})["kl"] == 0.5


def test_openrlhf_dynamic_filtering_pass_rate_becomes_the_zero_variance_share() -> None:
    assert map_names("openrlhf", {"train/dynamic_filtering_pass_rate": 0.75})["frac_reward_zero_std"] == pytest.approx(
        0.25
    )


def test_converted_logs_are_read_by_rlvr_doctor(tmp_path: Path) -> None:
    from rlvr.doctor.table import load_run

    for engine, src in (("openrlhf", TB), ("verl", VERL)):
        out = write_metrics_jsonl(read_engine_log(src, engine), tmp_path / f"{engine}.jsonl")
        run = load_run(out)
        reward = run.series("reward")
        assert reward.steps == (1, 2, 3) and [round(v, 3) for v in reward.values] == [0.1, 0.2, 0.3]
        assert run.series("completions/mean_length").values == (101.0, 102.0, 103.0)
    masked = load_run(tmp_path / "openrlhf.jsonl").series("rewards/masked_rate")
    assert masked.values == (0.0, 0.25, 0.0)


def test_a_damaged_event_file_is_a_clear_error(tmp_path: Path) -> None:
    data = bytearray(TB.read_bytes())
    data[60] ^= 0xFF
    bad = tmp_path / "events.out.tfevents.bad"
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match="CRC-32C"):
        read_tensorboard_scalars(bad)


def test_a_torn_last_record_is_skipped(tmp_path: Path) -> None:
    torn = tmp_path / "events.out.tfevents.torn"
    # each scalar is one record; the last record (122 bytes framed) is step 3's text summary:
    # cut into the one before it, step 3's last scalar
    torn.write_bytes(TB.read_bytes()[: -(122 + 10)])
    whole, cut = read_tensorboard_scalars(TB), read_tensorboard_scalars(torn)
    assert len(cut[3]) == len(whole[3]) - 1 and cut[2] == whole[2]


def test_a_folder_of_event_files_is_read_whole(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.out.tfevents.1").write_bytes(TB.read_bytes())
    assert sorted(read_tensorboard_scalars(tmp_path)) == [1, 2, 3]


def test_a_verl_line_of_another_shape_names_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "log.jsonl"
    bad.write_text('{"step": 1, "data": {}}\n{"step": "x"}\n{"step": 2, "data": {}}\n')
    with pytest.raises(DataError, match="line 2"):
        read_engine_log(bad, "verl")


def test_the_module_converts_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verl", str(VERL), str(tmp_path / "m.jsonl")]) == 0
    assert "3 steps" in capsys.readouterr().out
    assert main(["trl", str(VERL), str(tmp_path / "m.jsonl")]) == 2


def test_rlvr_doctor_reads_an_engine_log_directly(capsys: pytest.CaptureFixture[str]) -> None:
    from rlvr.cli.main import main
    from rlvr.doctor.table import load_run

    for engine, src in (("openrlhf", TB), ("verl", VERL)):
        assert load_run(src, engine=engine).series("reward").steps == (1, 2, 3)
        assert main(["doctor", str(src), "--engine", engine, "--json"]) == 0
        assert '"findings"' in capsys.readouterr().out
    with pytest.raises(DataError, match="verl's file logger"):
        load_run(VERL, engine="openrlhf")
