"""The ``rlvr`` command: one module per subcommand under ``rlvr.cli``.

Each command module defines ``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``,
and imports heavy libraries only inside ``run`` so ``rlvr --help`` stays fast. Errors that rlvr
raises on purpose print as one line (a ``ConfigError`` lists each problem) and exit with the
error's ``exit_status``: 2 for bad input (a bad argument, task file, config, dataset row or reward
option: ``ConfigError``, ``DataError``, ``VerifierError``), 1 for a refusal or a failure of what
rlvr runs (a gate not signed, a run that cannot resume, a model that does not load). A traceback
appears only with ``--debug`` (accepted after any command, nested ones too). Output piped into a
reader that stops early (``| head``) ends quietly with status 141, as a shell tool killed by
SIGPIPE does. SIGINT interrupts any command (status 130), even one started with SIGINT ignored.
An operating-system error (a read-only or full disk, a file where a folder should be, no
permission) is one line naming the path and the cause, status 2 (``rlvr.cli.oserrors``, the one
place that words them). ``main`` puts the command line it parsed on ``args.argv``, so a command
can rerun itself with it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from .oserrors import EXIT_STATUS as OS_ERROR_STATUS
from .oserrors import describe

# The commands in workflow order: name -> module.
COMMANDS: dict[str, str] = {
    "demo": "rlvr.cli.demo",
    "probe": "rlvr.cli.probe",
    "score": "rlvr.cli.score",
    "inspect": "rlvr.cli.inspect",
    "audit": "rlvr.cli.audit",
    "plan": "rlvr.cli.plan",
    "memory": "rlvr.cli.memory",
    "sft": "rlvr.cli.sft",
    "train": "rlvr.cli.train",
    "serve": "rlvr.cli.serve",
    "doctor": "rlvr.cli.doctor",
    "report": "rlvr.cli.report",
    "judge": "rlvr.cli.judge",
    "sandbox": "rlvr.cli.sandbox",
    "task": "rlvr.cli.task",
}


class _Parser(argparse.ArgumentParser):
    """One clear line on a bad argument, and ``--debug`` on every parser: shown on ``rlvr`` itself,
    hidden after a command and after a nested one (``rlvr task check x --debug``), which argparse
    builds with this class too (a subparser's class defaults to its parent's)."""

    def __init__(self, *args: Any, top: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if top:
            self.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
        else:  # SUPPRESS: a command's parser leaves the value set before the command alone
            self.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def error(self, message: str) -> NoReturn:  # one clear line, not usage + error
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="rlvr", description="GRPO on verifiable rewards, with the gates that keep it honest.", top=True
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        # help= strings are %-formatted by argparse, descriptions are not: one HELP text for both.
        p = sub.add_parser(name, help=module.HELP.replace("%", "%%"), description=module.HELP)
        module.configure(p)
        p.set_defaults(_run=module.run)
    return parser


def honour_sigint() -> None:
    """Make SIGINT interrupt rlvr even when it was started with SIGINT ignored: a shell starts
    background jobs (``rlvr probe ... &`` in a script) that way, and Python then never installs its
    handler, so ``kill -INT PID`` did nothing while Ctrl-C on a terminal worked."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def outputs(args: argparse.Namespace) -> list[str]:
    """The places a command writes under, as its arguments name them (for an error that names none)."""
    found = [getattr(args, name, None) for name in ("out", "run_dir", "gate")]
    adapter = getattr(args, "write_adapter", None)
    found.append(adapter[1] if isinstance(adapter, list | tuple) and len(adapter) > 1 else None)
    return [str(Path(f).resolve()) for f in found if isinstance(f, str) and f]


def main(argv: list[str] | None = None) -> int:
    honour_sigint()
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    # The command line as given, kept so a command can rerun itself (rlvr train --launch accelerate).
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    from ..errors import RlvrError

    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at interpreter exit
        return code
    except RlvrError as exc:
        if args.debug:
            raise
        sys.stderr.write(f"rlvr {args.command}: error: {exc}\n")
        return exc.exit_status
    except KeyboardInterrupt:
        sys.stderr.write(f"rlvr {args.command}: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader went away (``rlvr ... | head``): stop quietly, as cat and grep do. stdout is
        # pointed at /dev/null so the interpreter's final flush does not raise again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a file (embedded, captured): nothing to flush
            pass
        return 141
    except Exception as exc:
        line = None if args.debug else describe(exc, outputs(args))
        if line is None:
            raise
        sys.stderr.write(f"rlvr {args.command}: error: {line}\n")
        return OS_ERROR_STATUS


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
