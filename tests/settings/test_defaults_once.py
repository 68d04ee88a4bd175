"""Each default of a run's settings is written once, in ``rlvr.settings.recipe``: no module outside
``rlvr/settings/`` restates one. A restatement is found in the source (``ast``) in the three shapes
the five copies of the default group size took: a recipe key read with a literal fallback
(``cfg.get("num_generations", 8)``, ``cfg.get("num_generations") or 8``), a field, parameter or
command-line flag named after a recipe key whose literal default is the recipe's value
(``seed: int = 3407``, ``add_argument("--beta", default=0.01)``), and the recipe's distinctive
numbers written as literals anywhere (its seed and learning rate)."""

from __future__ import annotations

import ast
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import rlvr
from rlvr.settings.recipe import RECIPE

SRC = Path(rlvr.__file__).parent
# Values too common to mean the recipe when they appear alone (0, 1, True, ...), so only their
# keyed shapes count; these are the recipe's own numbers.
DISTINCTIVE = {RECIPE["seed"], RECIPE["learning_rate"]}
# A sampling function's neutral value, which the recipe happens to share: top_p 1.0 is "no nucleus
# truncation", the identity of the parameter, not a choice of the recipe's.
NEUTRAL = {("top_p", 1.0)}


def _key(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is not None


def _same(node: ast.AST, key: str) -> bool:
    value = node.value if isinstance(node, ast.Constant) else object()
    return type(value) is type(RECIPE[key]) and value == RECIPE[key]


def _is_get(node: ast.AST) -> str | None:
    """The recipe key ``node`` reads with ``.get("key", ...)``, if it does."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key = _key(node.args[0])
        return key if key in RECIPE else None
    return None


def restated(source: str) -> list[str]:
    """Each restated recipe default in ``source``, as 'line N: what'."""
    out = []
    for node in ast.walk(ast.parse(source)):
        key = _is_get(node)
        if key and isinstance(node, ast.Call) and len(node.args) > 1 and _literal(node.args[1]):
            out.append(f"line {node.lineno}: {key} read with a literal fallback")
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and _is_get(node.values[0]):
            if any(_literal(v) for v in node.values[1:]):
                out.append(f"line {node.lineno}: {_is_get(node.values[0])} read with `or` a literal")
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in RECIPE:
            if node.value is not None and _same(node.value, node.target.id):
                out.append(f"line {node.lineno}: field {node.target.id} restates the recipe's default")
        if isinstance(node, ast.arguments):
            args = [*node.posonlyargs, *node.args]
            positional = zip(args[len(args) - len(node.defaults) :], node.defaults, strict=True)
            pairs = [*positional, *zip(node.kwonlyargs, node.kw_defaults, strict=True)]
            for arg, default in pairs:
                neutral = isinstance(default, ast.Constant) and (arg.arg, default.value) in NEUTRAL
                if arg.arg in RECIPE and default is not None and _same(default, arg.arg) and not neutral:
                    out.append(f"line {default.lineno}: parameter {arg.arg} restates the recipe's default")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            flags = [_key(a) or "" for a in node.args]
            names = {f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")}
            for kw in node.keywords:
                if kw.arg == "default" and any(n in RECIPE and _same(kw.value, n) for n in names):
                    out.append(f"line {kw.value.lineno}: flag {sorted(names)[0]} restates the recipe's default")
        if isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value in DISTINCTIVE:
            out.append(f"line {node.lineno}: the recipe's {node.value!r} written as a literal")
    return out


def test_no_module_outside_settings_restates_a_recipe_default():
    found = [
        f"{path.relative_to(SRC)}: {what}"
        for path in sorted(SRC.rglob("*.py"))
        if "settings" not in path.relative_to(SRC).parts[:1]
        for what in restated(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "read the resolved value (rlvr.settings.resolve) or RECIPE[key]:\n" + "\n".join(found)


KEYS = st.sampled_from(sorted(RECIPE))
# Keys whose recipe value is a neutral parameter value (NEUTRAL): not a restatement as a parameter.
RESTATABLE = st.sampled_from(sorted(k for k in RECIPE if (k, RECIPE[k]) not in NEUTRAL))


@given(key=KEYS, via_or=st.booleans())
def test_a_recipe_key_read_with_its_default_as_a_fallback_is_found(key: str, via_or: bool):
    value = RECIPE[key]
    code = f"x = cfg.get({key!r}) or {value!r}" if via_or else f"x = cfg.get({key!r}, {value!r})"
    assert restated(code), code


@given(key=RESTATABLE)
def test_a_field_parameter_or_flag_restating_a_recipe_default_is_found(key: str):
    value = RECIPE[key]
    for code in (
        f"class C:\n    {key}: object = {value!r}\n",
        f"def f({key}={value!r}):\n    pass\n",
        f"def f(*, {key}={value!r}):\n    pass\n",
        f"p.add_argument('--{key.replace('_', '-')}', default={value!r})\n",
    ):
        assert restated(code), code


@given(key=KEYS)
def test_reading_the_resolved_value_or_the_recipe_is_not_a_restatement(key: str):
    code = f"a = cfg[{key!r}]\nb = cfg.get({key!r}, RECIPE[{key!r}])\nc = cfg.get({key!r})\n"
    assert restated(code) == []


def test_the_five_restatements_of_the_group_size_the_issue_named_would_be_found():
    for code in (
        'g = ints.get("num_generations", 8)',  # plan/validate.py
        'g = group_size or int(task.grpo.get("num_generations", 8))',  # probe/run.py
        'g = int(cfg.get("num_generations") or 8)',  # train/dynamic.py
        'x = f(group_size=int(cfg.get("num_generations", 8)))',  # train/launch.py
        'x = int(cfg.get("num_generations", 8))',  # train/settings.py
    ):
        assert restated(code), code
