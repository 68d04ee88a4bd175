"""Small helpers shared by command modules."""

from __future__ import annotations

import argparse
from typing import Any

from .. import yamlio
from ..errors import ConfigError, Problem


def parse_sets(items: list[str] | None, flag: str = "--set") -> dict[str, Any]:
    """``KEY=VALUE`` pairs, values parsed as YAML scalars (``1e-4``, ``true``, ``[1, 2]``)."""
    import yaml

    out: dict[str, Any] = {}
    problems = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            problems.append(Problem(f"{flag} {item}", "expected KEY=VALUE", "e.g. --set learning_rate=1e-5"))
            continue
        try:
            out[key.strip()] = yamlio.load(value)
        except yaml.YAMLError as exc:
            problems.append(Problem(f"{flag} {item}", f"value is not valid YAML: {exc}"))
    if problems:
        raise ConfigError(problems)
    return out


def add_set(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help=f"override one {what} value (repeatable); values are YAML (1e-4, true, [1, 2])",
    )
