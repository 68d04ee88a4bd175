"""A run's settings, layered once (``rlvr.settings.resolve`` and ``merge``): each value is the
one from the last layer that sets it and names that layer; rlvr's own stop and dynamic values are
checked as each layer gives them, every problem at once, named where it was written."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr import settings as rs
from rlvr.errors import ConfigError
from rlvr.settings import Layer, Settings, StopRules, merge, recipe
from support.tasks import task_values

CPU = {"gpus": 0, "bf16": False}
ONE_GPU = {"gpus": 1, "bf16": True, "vllm": True}
FILE = "plan.yaml: "


def resolve(grpo: dict[str, Any] | None = None, **kw: Any) -> Settings:
    return rs.resolve(task_values(grpo or {}), hw=kw.pop("hw", CPU), **kw)


# -- precedence and provenance ------------------------------------------------------------------
GRPO_KEYS = ("learning_rate", "beta", "loss_type", "bf16", "use_vllm", "epsilon_high", "temperature")
stop_section = st.none() | st.dictionaries(st.sampled_from(["masked_steps", "zero_std_steps"]), st.integers(0, 99))
dynamic_section = st.none() | st.dictionaries(st.sampled_from(["visits", "max_rounds"]), st.integers(1, 99))
layer_values = st.tuples(st.dictionaries(st.sampled_from(GRPO_KEYS), st.integers()), stop_section, dynamic_section)


DEFAULTS = ({}, recipe.STOP, recipe.DYNAMIC)  # per section: rlvr's own start from the recipe's values
PREFIXES = ("", "stop.", "dynamic.")


@given(st.lists(layer_values, max_size=6))
def test_each_value_comes_from_the_highest_layer_that_sets_it_and_names_it(layers: list[tuple]) -> None:
    settings = merge([Layer(f"layer {i}", grpo, stop, dyn) for i, (grpo, stop, dyn) in enumerate(layers)])
    values = settings.values()
    for section, (prefix, defaults) in enumerate(zip(PREFIXES, DEFAULTS, strict=True)):
        for key in GRPO_KEYS if not prefix else defaults:
            setters = [i for i, layer in enumerate(layers) if key in (layer[section] or {})]
            name = prefix + key
            if setters:
                expected = (layers[setters[-1]][section][key], f"layer {setters[-1]}")
                assert (values[name], settings.origin[name]) == expected
            elif prefix:
                assert (values[name], settings.origin[name]) == (defaults[key], "recipe")
            else:
                assert name not in values and name not in settings.origin


@given(
    task=st.dictionaries(st.sampled_from(GRPO_KEYS), st.integers()),
    above=st.lists(st.dictionaries(st.sampled_from(GRPO_KEYS), st.integers()), max_size=3),
    variant=st.sampled_from(sorted(recipe.VARIANTS)),
    hw=st.sampled_from([CPU, ONE_GPU]),
)
def test_the_layers_of_a_task_are_recipe_hardware_variant_task_then_the_callers(
    task: dict[str, int], above: list[dict[str, int]], variant: str, hw: dict[str, Any]
) -> None:
    settings = resolve(task, hw=hw, variant=variant, above=[Layer(f"above {i}", v) for i, v in enumerate(above)])
    machine = {"bf16", "use_vllm"} if hw is ONE_GPU else {"bf16"}  # what the hardware layer sets
    for key in GRPO_KEYS:
        expected = next((f"above {i}" for i in reversed(range(len(above))) if key in above[i]), None)
        expected = expected or ("task" if key in task else None)
        expected = expected or ("variant" if key in recipe.VARIANTS[variant] else None)
        expected = expected or ("hardware" if key in machine else "recipe")
        assert settings.origin[key] == expected, key
        assert settings.grpo[key] == {layer.name: layer.grpo for layer in settings.layers}[expected][key]


def test_a_tasks_learning_rate_is_named_as_the_tasks() -> None:
    settings = resolve({"learning_rate": 1e-4})
    assert settings.grpo["learning_rate"] == 1e-4 and settings.origin["learning_rate"] == "task"
    assert settings.origin["loss_type"] == "recipe" and settings.origin["use_cpu"] == "hardware"


def test_a_layer_on_top_wins_and_keeps_the_layers_below() -> None:
    settings = resolve({"learning_rate": 1e-4}).over(Layer("memory fit", {"per_device_train_batch_size": 4}))
    assert settings.origin["per_device_train_batch_size"] == "memory fit"
    assert settings.origin["learning_rate"] == "task"


# -- stop rules (moved from tests/train/test_train.py) ---------------------------------------------
def test_stop_thresholds_are_overridden_by_the_task_then_the_config_file_and_checked() -> None:
    file = Layer("config file", stop={"masked_steps": 9}, where=FILE)
    rules = resolve({"stop": {"masked_rate": 0.2, "zero_std_steps": 0}}, above=[file]).stop
    assert (rules.masked_rate, rules.masked_steps, rules.zero_std_steps) == (0.2, 9, 0)
    with pytest.raises(ConfigError) as info:
        resolve({"stop": {"masked": 0.2, "zero_std": 2}})
    assert "grpo.stop.masked: unknown key" in str(info.value) and "grpo.stop.zero_std: must be a share" in str(
        info.value
    )


def test_a_bad_stop_value_in_a_config_file_names_the_file_and_a_non_mapping_is_refused() -> None:
    with pytest.raises(ConfigError) as info:
        resolve({"stop": 3}, above=[Layer("config file", stop={"masked_steps": -1}, where=FILE)])
    text = str(info.value)
    assert "grpo.stop: must be a mapping, got 3" in text and "plan.yaml: stop.masked_steps: must be a whole" in text


def test_the_recipes_stop_thresholds_are_the_rules_defaults() -> None:
    assert resolve().stop == StopRules() and recipe.STOP == StopRules().to_json()


# -- dynamic sampling (moved from tests/train/test_dynamic.py) -----------------------------------------
def test_plain_grpo_has_the_filter_off_and_dapo_has_it_on() -> None:
    assert not resolve(variant="grpo").dynamic.enabled
    assert resolve(variant="dapo").dynamic.mode == "filter"
    assert resolve({"loss_type": "dapo"}).dynamic.mode == "filter"  # a dapo loss from the task, as rlvr train sees it


def test_an_unset_recheck_is_two_epochs_of_optimizer_steps() -> None:
    settings = resolve(variant="dapo").dynamic
    assert settings.recheck_after is None
    assert settings.for_epoch(prompts=256, prompts_per_step=8).recheck_after == 64
    assert settings.for_epoch(prompts=10, prompts_per_step=8).recheck_after == 4
    assert resolve({"dynamic": {"recheck_after": 5}}).dynamic.for_epoch(256, 8).recheck_after == 5


def test_the_task_can_turn_the_filter_off_in_dapo() -> None:
    settings = resolve({"dynamic": {"mode": "off"}}, variant="dapo")
    assert not settings.dynamic.enabled and settings.origin["dynamic.mode"] == "task"


def test_every_bad_setting_is_reported_at_once() -> None:
    bad = {"mode": "sometimes", "visits": 0, "epsilon": -1, "colour": 1, "max_rounds": 0, "short_batch": "all"}
    with pytest.raises(ConfigError) as err:
        resolve({"dynamic": bad})
    text = str(err.value)
    for where in (
        "grpo.dynamic.mode",
        "grpo.dynamic.visits",
        "grpo.dynamic.epsilon",
        "grpo.dynamic.colour",
        "grpo.dynamic.max_rounds",
        "grpo.dynamic.short_batch",
    ):
        assert where in text, where


WRITABLE = {"temperature": 0.9, "top_p": 0.95, "max_completion_length": 32, "seed": 11}


@given(written=st.sets(st.sampled_from(sorted(WRITABLE))))
def test_a_task_files_generation_and_seed_are_the_tasks_only_where_the_file_writes_them(written: set[str]) -> None:
    import tempfile
    from pathlib import Path

    import yaml

    from rlvr.task import load_task

    example = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"
    raw = yaml.safe_load((example / "task.yaml").read_text(encoding="utf-8"))
    raw["generation"] = {k: WRITABLE[k] for k in written if k != "seed"}
    raw.pop("seed", None)
    if "seed" in written:
        raw["seed"] = WRITABLE["seed"]
    raw["data"] = {k: str(example / v) for k, v in raw["data"].items() if isinstance(v, str)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "task.yaml"
        path.write_text(yaml.safe_dump(raw), encoding="utf-8")
        settings = rs.resolve(load_task(path, check_data=False), hw=CPU)
    for key, value in WRITABLE.items():
        assert settings.origin[key] == ("task" if key in written else "recipe"), key
        assert settings.grpo[key] == (value if key in written else recipe.RECIPE[key]), key


@given(key=st.sampled_from(sorted(WRITABLE.keys() - {"seed"})))
def test_a_generation_setting_under_grpo_is_refused_naming_where_it_belongs(key: str) -> None:
    import tempfile
    from pathlib import Path

    import yaml

    from rlvr.task import load_task

    example = Path(__file__).resolve().parents[2] / "examples" / "arithmetic"
    raw = yaml.safe_load((example / "task.yaml").read_text(encoding="utf-8"))
    raw["grpo"][key] = WRITABLE[key]
    raw["data"] = {k: str(example / v) for k, v in raw["data"].items() if isinstance(v, str)}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "task.yaml"
        path.write_text(yaml.safe_dump(raw), encoding="utf-8")
        with pytest.raises(ConfigError) as err:
            load_task(path, check_data=False)
    assert [p.where for p in err.value.problems] == [f"{path}: grpo.{key}"]
    assert f"generation.{key}" in err.value.problems[0].fix
