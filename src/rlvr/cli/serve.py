"""`rlvr serve TASK.yaml`: the task's reward terms over HTTP for verl, OpenRLHF or any client."""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

HELP = (
    "serve a task's reward terms over HTTP (rlvr JSON API and OpenRLHF's remote reward protocol), gated like rlvr "
    "train; or write a verl/OpenRLHF adapter file"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", metavar="TASK_YAML", help="the task whose reward terms are served")
    parser.add_argument("--gate", help="the gate record (gate.json) to check; default: the task's gate folder")
    parser.add_argument(
        "--no-gate",
        metavar="REASON",
        help="serve without a matching gate; the reason is copied into every response's meta",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1); any other needs --allow-remote and a token",
    )
    parser.add_argument("--port", type=int, default=5000, help="port (default 5000)")
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than loopback (the server is then reachable from the network)",
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="a file holding the token clients must send (default: $RLVR_SERVE_TOKEN; none on loopback)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        metavar="N",
        help="chunks of rows scored at once (default 2); math and code verifiers fan out to their own processes",
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=8,
        metavar="N",
        help="batches admitted beyond --workers (default 8); one more gets 503 with Retry-After",
    )
    parser.add_argument(
        "--max-body-mb",
        type=float,
        default=16.0,
        metavar="MB",
        help="largest request body (default 16); larger gets 413",
    )
    parser.add_argument(
        "--max-rows", type=int, default=4096, metavar="N", help="most samples per request (default 4096); more gets 413"
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="per-request deadline (default 300); a row not scored by then is charged 0 (a timeout) unless its "
        "gold, scored within a deadline of its own, is as slow (then masked): a response within twice the deadline",
    )
    parser.add_argument(
        "--fallback",
        type=float,
        default=0.0,
        metavar="X",
        help=(
            "an engine's stand-in reward for a masked row before any row was ever decided (default 0.0; see "
            "docs/serve.md)"
        ),
    )
    parser.add_argument(
        "--write-adapter",
        nargs=2,
        metavar=("ENGINE", "PATH"),
        help="write the verl or openrlhf adapter file to PATH (gate checked first) and exit",
    )
    parser.add_argument(
        "--launch",
        action="store_true",
        help=(
            "with --write-adapter: also write the engine's data (from the task's splits) and a launch script beside "
            "PATH, with rlvr's recipe mapped onto the engine's options (docs/serve.md)"
        ),
    )
    parser.add_argument(
        "--gpus",
        type=int,
        default=None,
        metavar="N",
        help="with --launch: GPUs per node; 0: verl's CPU route (default: 1 on a machine with a CUDA GPU and for "
        "openrlhf, else 0)",
    )
    parser.add_argument("--nodes", type=int, default=1, metavar="N", help="with --launch: nodes (default 1)")
    parser.add_argument(
        "--model",
        metavar="PATH_OR_ID",
        help="the model the engine's run starts from (default: the task's), e.g. rlvr sft's output: the gate must "
        "have been signed on it, as for rlvr train --model; with --launch, the model the engine loads",
    )
    parser.add_argument("--log", action="store_true", help="uvicorn's access log (it shows ?token= in URLs)")


def run(args: argparse.Namespace) -> int:
    from ..errors import ConfigError, Problem
    from ..serve.app import Limits, RewardServer, check_bind, serve
    from ..serve.scoring import Scorer

    problems = []
    for flag, value in (("--workers", args.workers), ("--max-rows", args.max_rows)):
        if value < 1:
            problems.append(Problem(flag, f"must be at least 1, got {value}", "omit it for the default"))
    for flag, value in (("--max-body-mb", args.max_body_mb), ("--deadline", args.deadline)):
        if not value > 0:
            problems.append(Problem(flag, f"must be positive, got {value}", "omit it for the default"))
    if not math.isfinite(args.fallback):
        problems.append(
            Problem(
                "--fallback",
                f"must be a finite number, got {args.fallback}",
                "a NaN or infinite reward ruins its whole group's advantages",
            )
        )
    if args.max_queue < 0:
        problems.append(Problem("--max-queue", f"must be 0 or more, got {args.max_queue}", "omit it for the default"))
    if args.launch and not args.write_adapter:
        problems.append(
            Problem(
                "--launch", "writes the engine's data and command beside an adapter", "add --write-adapter ENGINE PATH"
            )
        )
    if args.nodes < 1:
        problems.append(Problem("--nodes", f"must be at least 1, got {args.nodes}", "omit it for the default"))
    if args.gpus is not None and args.gpus < 0:
        problems.append(Problem("--gpus", f"must be 0 or more, got {args.gpus}", "omit it for the default"))
    if args.launch and args.write_adapter and args.write_adapter[0] == "openrlhf" and args.gpus == 0:
        from ..serve.launch import OPENRLHF_CUDA

        problems.append(Problem("--gpus", OPENRLHF_CUDA, "pass --gpus N for the GPU machine it will run on"))
    if args.write_adapter and args.write_adapter[0] not in ("verl", "openrlhf"):
        problems.append(Problem("--write-adapter", f"unknown engine {args.write_adapter[0]!r}", "use verl or openrlhf"))
    token = os.environ.get("RLVR_SERVE_TOKEN") or None
    if args.token_file:
        try:
            token = Path(args.token_file).read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            problems.append(Problem("--token-file", f"cannot read {args.token_file}: {exc}", "give a readable file"))
    if problems:
        raise ConfigError(problems)
    if not args.write_adapter:
        check_bind(args.host, token, args.allow_remote)
    scorer = Scorer.from_task(
        args.task, gate_path=args.gate, no_gate_reason=args.no_gate, fallback=args.fallback, model=args.model
    )
    if args.write_adapter:
        from ..serve.engines import write_adapter

        engine = args.write_adapter[0]
        path = write_adapter(
            engine,
            scorer.task,
            args.write_adapter[1],
            gate_path=args.gate,
            no_gate_reason=args.no_gate,
            fallback=args.fallback,
            model=args.model,
        )
        sys.stdout.write(f"wrote {path}\n")
        if args.launch:
            from ..serve.launch import cuda_available, openrlhf_plan, verl_plan

            adapter = path.resolve()
            data_dir = adapter.parent / f"{adapter.stem}.data"
            # openrlhf without --gpus on a machine without a GPU: a script for one GPU, which says it needs CUDA
            gpus = args.gpus if args.gpus is not None else int(engine == "openrlhf" or cuda_available())
            if engine == "verl":
                plan = verl_plan(
                    scorer.task, adapter, data_dir, gpus=max(gpus, 1), nodes=args.nodes, model=args.model, cpu=gpus == 0
                )
            else:
                plan = openrlhf_plan(scorer.task, str(adapter), data_dir, gpus=gpus, nodes=args.nodes, model=args.model)
            script = adapter.with_suffix(".launch.sh")
            script.write_text(plan.script(), encoding="utf-8")
            script.chmod(0o755)
            for role, f in plan.files.items():
                sys.stdout.write(f"wrote {f} ({role} data)\n")
            for warning in plan.warnings:
                sys.stdout.write(f"warning: {warning}\n")
            sys.stdout.write(f"wrote {script} (arguments to it go to the engine after its own)\n")
        return 0
    limits = Limits(
        workers=args.workers,
        max_queue=args.max_queue,
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
        max_rows=args.max_rows,
        deadline=args.deadline,
    )
    server = RewardServer(scorer, limits, token=token, host=args.host)
    gate = scorer.meta["gate"]
    status = gate["status"] + (f" ({gate['no_gate_reason']})" if gate.get("no_gate_reason") else "")
    sys.stderr.write(
        f"rlvr serve: task {scorer.task.name}, gate {status}, http://{args.host}:{args.port} "
        f"(POST /v1/score, POST /get_reward, GET /healthz, GET /metrics)\n"
    )
    sys.stderr.flush()
    serve(server, args.host, args.port, log=args.log)
    return 0
