"""YAML that reads ``1e-4`` as a number.

PyYAML implements YAML 1.1, where a float needs a dot: ``learning_rate: 1e-4`` loads as the
*string* "1e-4", which TRL then passes to the optimiser (a TypeError deep inside training).
Every YAML rlvr reads -- task files, configs, ``--set KEY=VALUE`` -- goes through ``load`` here,
which also accepts YAML 1.2 floats (``1e-4``, ``5E+3``).
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class _Loader(yaml.SafeLoader):
    pass


_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
# Replace the float resolver (YAML 1.1's needs a dot) with one that also takes 1e-4.
_Loader.yaml_implicit_resolvers = {
    k: [r for r in v if r[0] != "tag:yaml.org,2002:float"] for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def load(text: str) -> Any:
    """``yaml.safe_load`` with YAML 1.2 floats."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
