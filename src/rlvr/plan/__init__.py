"""``rlvr plan``: from a task and the hardware to a config that will run, before any GPU is touched.

``rlvr plan TASK --gpus N --gpu-memory GB [--nodes M]`` resolves the reference recipe (plain GRPO,
or a variant the doctor has named) into a flat, validated TRL ``GRPOConfig``, fits it into GPU
memory (lowering the per-device batch, then sharding, then LoRA/QLoRA, in that order of
preference), and writes the plan YAML with the accelerate files and the commands that launch it,
plus a rough duration. ``rlvr memory`` runs the memory planner alone.

Which module holds what, bottom to top (the recipe, the config file, the merge of a run's
settings and their check live in ``rlvr.settings``):

- ``architecture``: a model's shape from its ``config.json`` (no weights), the size-class table,
  and ``model_facts`` (what validation needs to know about a model reference).
- ``memory``: the per-GPU memory estimate of one setting and the search for a setting that fits.
- ``launch``: the launch commands and accelerate config files for a cluster, the rough duration,
  and ``relaunch`` (``rlvr train --launch accelerate``).
- ``build``: the whole plan: ``PlanRequest`` -> ``Plan``, written (``write_plan``) and printed
  (``format_plan``).
"""
