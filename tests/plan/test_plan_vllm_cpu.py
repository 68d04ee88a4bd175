"""vLLM on CPU in plans and validation: allowed with vLLM's CPU build, refused without it, and the
launch plan for server mode starts the server, trains, and stops the server."""

from __future__ import annotations

from rlvr.plan import launch
from rlvr.plan.launch import Cluster
from rlvr.settings import check as validate
from rlvr.settings import resolve
from rlvr.settings.recipe import Target
from support.tasks import task_values

CPU = {"gpus": 0, "bf16": False}
GEN = {"temperature": 0.7, "max_completion_length": 256}


def problems_at(cfg: dict[str, object], target: Target) -> set[str]:
    return {p.where for p in validate.validate(cfg, target=target, installed_trl="1.16.0")}


def test_vllm_on_cpu_is_allowed_with_the_cpu_build() -> None:
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "use_vllm": True, "vllm_mode": "colocate"}
    assert "use_vllm" not in problems_at(cfg, Target(gpus=0, vllm_cpu=True))


def test_the_refusal_without_a_gpu_names_the_cpu_build() -> None:
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "use_vllm": True}
    (problem,) = [p for p in validate.validate(cfg, target=Target(gpus=0)) if p.where == "use_vllm"]
    assert "make setup-vllm-cpu" in problem.fix


def test_vllm_on_cpu_with_several_training_processes_is_refused() -> None:
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "use_vllm": True, "vllm_mode": "colocate"}
    assert "use_vllm" in problems_at(cfg, Target(gpus=0, vllm_cpu=True, processes=2))


def test_cpu_server_mode_without_an_address_is_flagged() -> None:
    cfg = {**resolve(task_values({}, GEN), hw=CPU).grpo, "use_vllm": True, "vllm_mode": "server"}
    assert "vllm_server_host" in problems_at(cfg, Target(gpus=0, vllm_cpu=True))


def test_cpu_server_mode_on_localhost_passes() -> None:
    cfg = {
        **resolve(task_values({}, GEN), hw=CPU).grpo,
        "use_vllm": True,
        "vllm_mode": "server",
        "vllm_server_host": "127.0.0.1",
    }
    assert not problems_at(cfg, Target(gpus=0, vllm_cpu=True)) & {"use_vllm", "vllm_mode", "vllm_server_host"}


def test_the_recipe_does_not_turn_vllm_on_for_the_cpu_build() -> None:
    assert resolve(task_values({}, GEN), hw={**CPU, "vllm_cpu": True}).grpo["use_vllm"] is False


def _cpu_plan(mode: str) -> launch.LaunchPlan:
    return launch.plan_launch(
        Cluster(gpus=1), task="t.yaml", config="p/plan.yaml", model="/m", use_vllm=True, vllm_mode=mode, vllm_cpu=True
    )


def test_cpu_server_plan_starts_the_launcher_on_localhost_in_the_background() -> None:
    serve = _cpu_plan("server").commands[1]
    assert serve.startswith("python -m rlvr.engines.vllm_serve --model /m --host 127.0.0.1 --port 8000 ")
    assert serve.endswith("& echo $! > p/vllm-server.pid")


def test_cpu_server_plan_trains_then_stops_the_server_by_its_pid() -> None:
    commands = _cpu_plan("server").commands
    assert commands[2] == "rlvr train t.yaml --config p/plan.yaml --run-dir runs/plan"
    assert commands[3] == "kill $(cat p/vllm-server.pid)"


def test_cpu_plans_run_in_the_vllm_venv() -> None:
    assert _cpu_plan("colocate").commands[0] == _cpu_plan("server").commands[0] == ". .venv-vllm/bin/activate"


def test_cpu_colocate_plan_is_one_train_command() -> None:
    assert _cpu_plan("colocate").commands[1:] == ("rlvr train t.yaml --config p/plan.yaml --run-dir runs/plan",)


def test_gpu_server_plan_is_unchanged_by_the_cpu_path() -> None:
    plan = launch.plan_launch(
        Cluster(gpus=4, server_gpus=1),
        task="t.yaml",
        config="p/plan.yaml",
        model="m",
        use_vllm=True,
        vllm_mode="server",
    )
    assert plan.commands[0].startswith("CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model m")


def test_gpu_server_plan_says_how_to_stop_the_server() -> None:
    plan = launch.plan_launch(
        Cluster(gpus=4, server_gpus=1),
        task="t.yaml",
        config="p/plan.yaml",
        model="m",
        use_vllm=True,
        vllm_mode="server",
    )
    assert any("stop the server" in n for n in plan.notes)
