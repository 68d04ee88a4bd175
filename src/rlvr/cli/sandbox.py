"""``rlvr sandbox check``: which isolation layers are active here, and the attack list against them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sandbox import Layers

HELP = "Show the code sandbox's isolation layers on this machine and run the attack list against them."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="print the active layers, run every attack, exit 1 if any got through")
    check.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1) when any isolation layer is missing, as training with strict: true would",
    )
    check.add_argument("--workers", type=int, default=2, help="sandbox workers to start (default 2)")
    check.add_argument(
        "--python",
        default=None,
        help=(
            "interpreter for the workers (default: the first of /usr/bin/python3 and this one that the sandbox uid "
            "can import)"
        ),
    )
    check.add_argument(
        "--timeout", type=float, default=2.0, help="per-sample wall-clock limit in seconds for the attacks (default 2)"
    )


def unix_socket_guard(layers: Layers) -> str:
    """Which layer stops a sample reaching a host daemon's UNIX socket, on this machine."""
    active = layers.active
    status = layers.status
    if active("seccomp"):
        note = (
            "socket() and connect() denied by seccomp (only socketpair() is left; sendto() with an address is denied)"
        )
        if active("landlock"):
            note += (
                f"; Landlock ({status['landlock'].split(' (')[0].removeprefix('active: ')}) has no rule for them on "
                "this kernel"
            )
        return note
    if active("mountns"):
        return (
            "NOT STOPPED outside the hidden directories: seccomp is missing (the mount namespace only hides /tmp, "
            "/run, /var, ...)"
        )
    return "NOT STOPPED: seccomp and the mount namespace are missing"


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError
    from ..rewards.base import Sample
    from ..rewards.code import UnitTests
    from ..rewards.rules.codeattacks import ADD_TESTS, run_attacks
    from ..sandbox.pool import Limits, SandboxPool

    if args.workers < 1:
        raise ConfigError("--workers must be at least 1")
    if not 0 < args.timeout <= 600:
        raise ConfigError("--timeout must be in (0, 600] seconds")
    pool = SandboxPool(args.workers, Limits(timeout=args.timeout), strict=args.strict, python=args.python)
    try:
        layers = pool.start()  # strict: raises SandboxError naming every missing layer
        print("sandbox layers")
        print(layers.describe())
        missing = layers.missing()
        if missing:
            print(f"MISSING: {', '.join(missing)} (training with strict: true would refuse to start)")
        print(f"pathname UNIX sockets: {unix_socket_guard(layers)}")
        verifier = UnitTests(timeout=args.timeout, pool=pool)
        results = run_attacks(verifier)
        print(f"\nattacks ({len(results)})")
        for r in results:
            mark = "stopped" if r.stopped else "GOT THROUGH"
            print(f"  {mark:<12} {r.name:<24} verdict={r.verdict}" + (f"  harm: {r.harm}" if r.harm else ""))
        after = verifier.verify_batch(
            [Sample("```python\ndef add(a, b):\n    return a + b\n```", row={"tests": ADD_TESTS})]
        )[0]
        serving = after.outcome.value == "correct"
        print(f"\npool still serving after the attacks: {'yes' if serving else 'NO (' + after.detail + ')'}")
        failed = [r.name for r in results if not r.stopped]
        if failed:
            print(f"FAILED: {len(failed)} attack(s) got through: {', '.join(failed)}")
        return 1 if failed or not serving else 0
    finally:
        pool.close()
