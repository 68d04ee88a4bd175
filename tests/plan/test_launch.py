"""Launch plan: commands, accelerate config files, duration; the distributed path end to end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from rlvr.cli.main import build_parser, main
from rlvr.errors import ConfigError
from rlvr.plan import launch
from rlvr.plan.launch import Cluster

ARITH = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"


def test_one_gpu_runs_rlvr_train():
    plan = launch.plan_launch(Cluster(gpus=1), task="t.yaml", config="p/plan.yaml", model="m")
    assert plan.commands == ("rlvr train t.yaml --config p/plan.yaml --run-dir runs/plan",) and not plan.files


@pytest.mark.parametrize("gpus", [1, 4])
def test_a_plan_made_for_another_model_keeps_it_in_the_train_command(gpus: int) -> None:
    """The tutorial plans for its SFT model: the printed train command must start from it, or the
    gate signed on it refuses the run."""
    plan = launch.plan_launch(
        Cluster(gpus=gpus), task="t.yaml", config="p/plan.yaml", model="runs/sft", train_model="runs/sft"
    )
    assert plan.commands[-1].endswith("train t.yaml --config p/plan.yaml --run-dir runs/plan --model runs/sft")


def test_plan_cli_prints_the_model_it_was_given_in_the_launch_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.tasks import make_task

    task = make_task(tmp_path / "task")
    sft = tmp_path / "sft"
    main(["sft", str(task), "--out", str(sft), "--max-steps", "1", "--no-progress"])
    capsys.readouterr()
    assert main(["plan", str(task), "--model", str(sft), "--gpus", "1", "--out", str(tmp_path / "p.yaml")]) == 0
    assert f"--model {sft}" in capsys.readouterr().out


def test_server_mode_splits_the_gpus_between_vllm_and_training():
    plan = launch.plan_launch(
        Cluster(gpus=8, server_gpus=2, zero=3),
        task="t.yaml",
        config="p/plan.yaml",
        model="Qwen/Qwen2.5-7B",
        use_vllm=True,
        vllm_mode="server",
    )
    server, train = plan.commands
    assert server.startswith("CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model Qwen/Qwen2.5-7B")
    assert train.startswith(
        "CUDA_VISIBLE_DEVICES=2,3,4,5,6,7 accelerate launch --config_file p/accelerate_zero3.yaml --num_processes 6"
    )
    assert yaml.safe_load(plan.files["accelerate_zero3.yaml"])["num_processes"] == 6


def test_multi_node_gives_one_command_per_machine_rank():
    plan = launch.plan_launch(
        Cluster(gpus=8, nodes=2, zero=3), task="t.yaml", config="plan.yaml", model="m", use_vllm=False
    )
    assert len(plan.commands) == 2
    assert "--machine_rank 0" in plan.commands[0] and "--machine_rank 1" in plan.commands[1]
    assert all("--num_processes 16 --num_machines 2" in c for c in plan.commands)


@pytest.mark.parametrize(
    ("cluster", "shipped"),
    [
        (Cluster(gpus=8, zero=3), "zero3.yaml"),
        (Cluster(gpus=8, zero=2), "zero2.yaml"),
        (Cluster(gpus=8, fsdp=True), "fsdp2.yaml"),
        (Cluster(gpus=8), "multi_gpu.yaml"),
    ],
)
def test_accelerate_files_have_the_keys_of_trls_shipped_configs(cluster, shipped):
    from importlib import resources

    ours = launch.accelerate_config(cluster, processes_per_node=8)
    theirs = yaml.safe_load(resources.files("trl.accelerate_configs").joinpath(shipped).read_text())
    assert ours["distributed_type"] == theirs["distributed_type"]
    for section in ("deepspeed_config", "fsdp_config"):
        if section in theirs:
            assert set(theirs[section]) <= set(ours[section])
            if section == "deepspeed_config":
                assert ours[section]["zero_stage"] == theirs[section]["zero_stage"]


@pytest.mark.parametrize(
    "cluster", [Cluster(gpus=8, zero=3), Cluster(gpus=4, fsdp=True), Cluster(gpus=8, nodes=2, zero=2), Cluster(gpus=2)]
)
def test_accelerate_files_load_with_accelerates_own_reader(tmp_path: Path, cluster):
    from accelerate.commands.config.config_args import load_config_from_file

    path = tmp_path / launch.accelerate_config_name(cluster)
    path.write_text(launch._yaml(launch.accelerate_config(cluster, processes_per_node=cluster.gpus)))
    loaded = load_config_from_file(str(path))
    assert loaded.num_processes == cluster.gpus * cluster.nodes and loaded.num_machines == cluster.nodes


def test_accelerate_argv_joins_cpu_processes_through_torchrun():
    argv = launch.accelerate_argv(2, ["train", "t.yaml"])
    assert "--multi_gpu" in argv and argv[argv.index("--num_processes") + 1] == "2"
    assert argv[-4:] == ["-m", "rlvr.cli.main", "train", "t.yaml"]


def test_accelerate_argv_uses_the_config_file_when_given():
    argv = launch.accelerate_argv(4, ["train", "t.yaml"], config_file="acc.yaml")
    assert "--multi_gpu" not in argv and argv[argv.index("--config_file") + 1] == "acc.yaml"


def test_accelerate_argv_refuses_zero_processes():
    with pytest.raises(ConfigError, match="--num-processes"):
        launch.accelerate_argv(0, ["train"])


def test_the_relaunched_argv_parses_back_to_the_same_args():
    parser = build_parser()
    argv = [
        "train",
        "task.yaml",
        "--config",
        "p.yaml",
        "--max-steps",
        "2",
        "--no-gate",
        "smoke test",
        "--no-progress",
        "--set",
        "beta=0.0",
        "--set",
        "seed=1",
        "--launch",
        "accelerate",
        "--num-processes",
        "2",
    ]
    args = parser.parse_args(argv)
    rebuilt = launch.without_options(argv, launch.LAUNCH_OPTIONS)
    again = parser.parse_args(rebuilt)
    keep = {k: v for k, v in vars(args).items() if k not in ("launch", "num_processes", "_run")}
    assert {k: v for k, v in vars(again).items() if k in keep} == keep
    assert again.launch is None and "--launch" not in rebuilt


def test_train_options_the_launch_does_not_know_reach_the_launched_command_unchanged(monkeypatch, capsys):
    import subprocess

    calls: list[list[str]] = []
    monkeypatch.setattr(subprocess, "call", lambda argv, env=None: calls.append(list(argv)) or 0)
    train = [
        "train",
        str(ARITH),
        "--model",
        "org/not-built-in",
        "--report-to",
        "tensorboard",
        "--eval-every=3",
        "--set",
        "learning_rate=1e-6",
        "--no-gate",
        "a reason, with spaces",
    ]
    argv = [*train[:2], "--launch", "accelerate", *train[2:6], "--num-processes=2", *train[6:], "--debug"]
    assert main(argv) == 0
    (command,) = calls
    assert command[command.index("rlvr.cli.main") + 1 :] == train
    assert command[command.index("--num_processes") + 1] == "2"


def test_abbreviated_launch_options_are_taken_out_with_their_values():
    argv = ["train", "t.yaml", "--launch", "accelerate", "--num-proc", "2", "--accel=a.yaml", "--", "--debug"]
    assert launch.without_options(argv, launch.LAUNCH_OPTIONS) == ["train", "t.yaml", "--", "--debug"]


def test_more_gpus_take_fewer_hours_for_the_same_work():
    kw = dict(
        active_params=7_600_000_000,
        params=7_600_000_000,
        prompt_tokens=256,
        completion_tokens=1024,
        completions_per_step=256,
        steps=100,
        beta=0.0,
        concurrent_sequences=64,
    )
    one, eight = launch.estimate_duration(gpus=1, **kw), launch.estimate_duration(gpus=8, **kw)
    assert eight.hours < one.hours and eight.gpu_hours == pytest.approx(8 * eight.hours)
    assert one.tokens_per_step == 256 * 1280


def test_num_processes_without_launch_is_one_line_and_nonzero(capsys):
    assert main(["train", str(ARITH), "--num-processes", "2", "--no-gate", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--launch" in err


def test_launch_with_a_missing_accelerate_config_is_one_line(tmp_path: Path, capsys):
    code = main(
        [
            "train",
            str(ARITH),
            "--launch",
            "accelerate",
            "--num-processes",
            "2",
            "--accelerate-config",
            str(tmp_path / "no.yaml"),
            "--no-gate",
            "x",
        ]
    )
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_grpo_runs_under_accelerate_with_two_cpu_processes(tmp_path: Path, capsys):
    """The distributed path end to end: rlvr plan (CPU) -> rlvr train --launch accelerate, two
    processes joined with gloo, two GRPO steps on the tiny model. Measured 33-50 s on 2 cores, under
    the ~60 s at which it would be marked slow."""
    plan = tmp_path / "plan.yaml"
    assert main(["plan", str(ARITH), "--gpus", "0", "-o", str(plan)]) == 0
    run_dir = tmp_path / "run"
    start = time.perf_counter()
    code = main(
        [
            "train",
            str(ARITH),
            "--config",
            str(plan),
            "--max-steps",
            "2",
            "--no-gate",
            "distributed smoke test",
            "--run-dir",
            str(run_dir),
            "--eval-every",
            "0",
            "--no-progress",
            "--set",
            "per_device_train_batch_size=16",
            "--launch",
            "accelerate",
            "--num-processes",
            "2",
        ]
    )
    elapsed = time.perf_counter() - start
    assert code == 0
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    steps = [x["step"] for x in lines if "reward" in x]
    assert steps == [1, 2]  # each step logged once, by the main process
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())["trl_resolved"]
    assert resolved["generation_batch_size"] == 16 * 2  # TRL saw a world of 2 processes
    assert (run_dir / "final").is_dir()
    print(f"distributed GRPO, 2 CPU processes, 2 steps: {elapsed:.1f} s")


def test_multi_node_server_mode_gives_the_server_a_node_of_its_own():
    plan = launch.plan_launch(
        Cluster(gpus=8, nodes=3, server_gpus=8, zero=3),
        task="t.yaml",
        config="plan.yaml",
        model="m",
        use_vllm=True,
        vllm_mode="server",
    )
    server, *train = plan.commands
    assert server.startswith("# on node 2 (the vLLM server): trl vllm-serve --model m --tensor_parallel_size 8")
    assert len(train) == 2 and all("--num_processes 16 --num_machines 2" in c for c in train)
    assert yaml.safe_load(plan.files["accelerate_zero3.yaml"])["num_machines"] == 2


def test_multi_node_plan_trains_on_as_many_processes_as_it_validates(tmp_path: Path):
    from rlvr.plan.build import PlanRequest, build_plan

    plan = build_plan(PlanRequest(task=str(ARITH), model="70B", gpus=8, nodes=2, output=str(tmp_path / "p.yaml")))
    assert plan.config["vllm_server_host"] == "SERVER_NODE_IP"
    assert plan.estimate.setting.train_gpus == 8  # node 1 serves, node 0 trains
    acc = yaml.safe_load(next(iter(plan.launch.files.values())))
    assert acc["num_processes"] == 8 and acc["num_machines"] == 1
