"""``rlvr inspect build|serve|review|status|rescore|sign task.yaml``: the inspection gate.

A person reads the reward's verdicts on 50-100 samples from the base model before training; the
signed record (``gate.json``) is what ``rlvr train`` checks. The gate lives in
``<task dir>/.rlvr/gate/<task file stem>/`` unless ``--gate PATH`` says otherwise.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..task import Task

HELP = "the inspection gate: sample, read every reward verdict, re-score after fixes, sign"


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", help="the task file (task.yaml) or its folder")
    p.add_argument(
        "--gate", metavar="PATH", help="gate folder (or its gate.json); default <task dir>/.rlvr/gate/<task file stem>/"
    )


def _default_reviewer() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return ""


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True

    b = sub.add_parser("build", help="sample from the base model at the run's temperature, score, pick the set to read")
    _add_common(b)
    b.add_argument(
        "--model",
        help="model to sample: local path, hub id or builtin:<name> "
        "(default: the task's model, or with --probe the probe's; use the model training starts from)",
    )
    b.add_argument(
        "--probe",
        metavar="DIR",
        help="reuse rlvr probe samples (its folder or samples.jsonl) taken at the run's temperature "
        "instead of sampling; the set records the probe's model, top_p and seed",
    )
    b.add_argument(
        "--size", type=int, default=64, help="samples a person will read (default 64; the gate asks for 50-100)"
    )
    b.add_argument(
        "--pool",
        type=int,
        default=2,
        help="sample this many times --size and pick both tails and a random middle (default 2)",
    )
    b.add_argument("--seed", type=int, help="sampling and selection seed (default: the task's seed)")
    b.add_argument(
        "--backend",
        choices=["auto", "transformers", "vllm"],
        default="auto",
        help="sampling backend (auto: vLLM when installed and a GPU is present)",
    )
    b.add_argument("--overwrite", action="store_true", help="replace a set that already holds verdicts (they are lost)")
    b.add_argument(
        "--run",
        metavar="RUN",
        help="build the set from the completions a training run kept (RUN/rollouts/) instead of sampling: "
        "re-inspect what the policy writes mid-run; goes with --step; default gate folder RUN/inspect/step-N",
    )
    b.add_argument("--step", type=int, help="with --run: the logging step whose completions to read")

    s = sub.add_parser("serve", help="the review page on http://127.0.0.1:PORT (keyboard: r h l a n j k, ? for help)")
    _add_common(s)
    s.add_argument(
        "--reviewer", default=_default_reviewer(), help="name recorded with each verdict (default: your login name)"
    )
    s.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765)")
    s.add_argument("--log", action="store_true", help="log every request")

    r = sub.add_parser("review", help="review in the terminal: r/h/l [note], a REASON, j/k, s, q")
    _add_common(r)
    r.add_argument(
        "--reviewer", default=_default_reviewer(), help="name recorded with each verdict (default: your login name)"
    )
    r.add_argument(
        "--no-tty",
        action="store_true",
        help="read verdicts from a pipe or a file instead of a terminal (a script, a test): each is recorded under "
        "the reviewer's name + ' (no-tty)', and the signed gate record counts them as no_tty_verdicts",
    )
    r.add_argument(
        "--show",
        choices=["todo", "open", "unreviewed", "all"],
        default="todo",
        help="which samples: unreviewed or open (todo, default), open disagreements, unreviewed, all",
    )
    r.add_argument("--term", default="", help="only samples where this term ...")
    r.add_argument(
        "--outcome", choices=["", "correct", "wrong", "unparseable", "error"], default="", help="... has this outcome"
    )
    r.add_argument("--min", type=float, help="only samples whose total reward is at least this")
    r.add_argument("--max", type=float, help="only samples whose total reward is at most this")

    st = sub.add_parser(
        "status", help="agreement between reward and reviewer: confusion matrix, Cohen's kappa, open disagreements"
    )
    _add_common(st)
    st.add_argument("--json", action="store_true", help="print JSON")

    rs = sub.add_parser("rescore", help="re-score the same set with the current reward code; verdicts are kept")
    _add_common(rs)

    sg = sub.add_parser("sign", help="write gate.json once every sample is read and no disagreement is open")
    _add_common(sg)
    sg.add_argument("--reviewer", help="who signs (default: the reviewer of the verdicts, when there is one)")
    sg.add_argument(
        "--accept-exploit",
        action="append",
        default=[],
        metavar="TERM=REASON",
        help="record why an exploitable term (found by the audit) is acceptable; repeatable",
    )
    sg.add_argument("--min-samples", type=int, default=50, help="smallest set that may be signed (default 50)")


def run(args: argparse.Namespace) -> int:
    from ..task import load_task

    task = load_task(args.task)
    return {"build": _build, "serve": _serve, "review": _review, "status": _status, "rescore": _rescore, "sign": _sign}[
        args.action
    ](task, args)


def _build(task: Task, args: argparse.Namespace) -> int:
    from .. import gate
    from ..errors import ConfigError, Problem

    problems = []
    if args.size < 1:
        problems.append(Problem("--size", f"must be at least 1, got {args.size}", "the gate asks for 50-100"))
    if args.pool < 1:
        problems.append(
            Problem("--pool", f"must be at least 1, got {args.pool}", "2 samples twice the set and keeps the tails")
        )
    if (args.run is None) != (args.step is None):
        problems.append(Problem("--run/--step", "go together", "e.g. --run runs/mytask --step 40"))
    if args.run is not None and args.probe is not None:
        problems.append(Problem("--run", "and --probe are two sources for the set", "pick one"))
    if problems:
        raise ConfigError(problems, source="rlvr inspect build")
    if args.run is not None:
        return _build_from_run(task, args)
    if not gate.MIN_SIZE <= args.size <= gate.MAX_SIZE:
        print(
            f"note: --size {args.size} is outside the {gate.MIN_SIZE}-{gate.MAX_SIZE} the gate asks a person to read; "
            "sign will refuse under --min-samples"
        )
    # The gate's pass/fail classes count the success term: refuse before sampling when there is none.
    task.success_term  # noqa: B018 - raises ConfigError naming the problem
    from ._common import check_model_arg

    check_model_arg(args.model)
    path = gate.db_path(task, args.gate)
    if gate.record_path(task, args.gate).exists():
        print(
            f"note: {gate.record_path(task, args.gate)} was signed for the previous set; "
            "it will not match the new one until you review and sign again"
        )
    store = gate.build_set(
        task,
        path,
        model=args.model,
        probe_samples=args.probe,
        size=args.size,
        pool=args.pool,
        seed=args.seed,
        backend=args.backend,
        overwrite=args.overwrite,
        progress=lambda m: print(m, flush=True),
    )
    samples = store.samples()
    classes = {c: sum(s.reward_class == c for s in samples) for c in ("pass", "fail", "masked")}
    print(f"inspection set: {len(samples)} samples ({', '.join(f'{k} {v}' for k, v in classes.items())}) in {path}")
    print(f"exported to {path.with_suffix('.jsonl')}; next: rlvr inspect serve {args.task} (or review)")
    return 0


def _build_from_run(task: Task, args: argparse.Namespace) -> int:
    from pathlib import Path

    from .. import gate

    folder = Path(args.gate) if args.gate else Path(args.run) / "inspect" / f"step-{args.step}"
    path = gate.db_path(task, folder)
    store = gate.build_set(
        task, path, rollouts=(args.run, args.step), size=args.size, seed=args.seed, overwrite=args.overwrite
    )
    samples = store.samples()
    classes = {c: sum(s.reward_class == c for s in samples) for c in ("pass", "fail", "masked")}
    print(
        f"inspection set from {args.run} at step {args.step}: {len(samples)} samples "
        f"({', '.join(f'{k} {v}' for k, v in classes.items())}) in {path}"
    )
    if len(samples) < args.size:
        print(
            f"note: the run kept {len(samples)} completions at step {args.step} (fewer than --size {args.size}); "
            "every one is in the set"
        )
    print(
        f"read them: rlvr inspect serve {args.task} --gate {folder} (or review); "
        "this set checks the policy mid-run, it is not the base-model gate"
    )
    return 0


def _serve(task: Task, args: argparse.Namespace) -> int:
    from .. import gate
    from ..errors import ConfigError, Problem
    from ..gate.web import serve

    if not 0 < args.port < 65536:
        raise ConfigError(
            Problem("--port", f"must be 1-65535, got {args.port}", "e.g. --port 8765"), source="rlvr inspect serve"
        )
    store = gate.open_store(task, args.gate)
    print(
        f"review page: http://127.0.0.1:{args.port}/  "
        f"(reviewer {args.reviewer!r}; Ctrl-C to stop; every verdict is saved when given)",
        flush=True,
    )
    try:
        serve(store, reviewer=args.reviewer, port=args.port, log=args.log)
    finally:
        print(f"exported to {gate.export_jsonl(store)}")  # the database already holds every verdict
    return 0


def _review(task: Task, args: argparse.Namespace) -> int:
    from .. import gate
    from ..errors import ConfigError, Problem
    from ..gate.review import NO_TTY_MARK, Filter
    from ..gate.terminal import review

    if args.term and args.term not in [t.name for t in task.rewards]:
        raise ConfigError(
            Problem(
                "--term", f"names no reward term ({args.term!r})", f"one of {', '.join(t.name for t in task.rewards)}"
            ),
            source="rlvr inspect review",
        )
    store = gate.open_store(task, args.gate)
    flt = Filter(show=args.show, term=args.term, outcome=args.outcome, min_total=args.min, max_total=args.max)
    if not args.reviewer.strip():
        raise ConfigError(
            Problem("--reviewer", "empty", "give the name recorded with each verdict"), source="rlvr inspect review"
        )
    import sys

    if not args.no_tty and not sys.stdin.isatty():
        # `yes r | rlvr inspect review` answers every sample without anyone reading it.
        raise ConfigError(
            Problem(
                "stdin",
                "is not a terminal: verdicts piped in are not a person reading each sample",
                "run it in a terminal, review in the browser (rlvr inspect serve), or pass --no-tty, which the gate "
                "record marks",
            ),
            source="rlvr inspect review",
        )
    reviewer = args.reviewer + (NO_TTY_MARK if args.no_tty else "")
    try:
        n = review(store, reviewer=reviewer, flt=flt, scripted=args.no_tty)
    finally:  # the verdicts given before a refused line are committed: export them too
        gate.export_jsonl(store)
    print(f"{n} verdicts recorded")
    return 0


def _status(task: Task, args: argparse.Namespace) -> int:
    import json

    from .. import gate

    a = gate.status(task, args.gate)
    if args.json:
        print(json.dumps(a.to_json(), indent=2))
        return 0
    print(gate.format_agreement(a))
    store = gate.open_store(task, args.gate)
    latest = store.latest_reviews()
    samples = {s.id: s for s in store.samples()}
    for sid in a.disagreement_ids:
        r, s = latest[sid], samples[sid]
        total = "masked" if s.rollout.total is None else f"{s.rollout.total:g}"
        print(
            f"  open: sample {sid}: reviewer said {r.label!r}, reward now {total} ({s.reward_class})"
            + (f" — {r.note}" if r.note else "")
        )
    return 0


def _rescore(task: Task, args: argparse.Namespace) -> int:
    from .. import gate

    store = gate.open_store(task, args.gate)
    changed = gate.rescore(task, store)
    if not changed:
        print("no sample's reward changed")
    for c in changed:
        old = "masked" if c.old_total is None else f"{c.old_total:g}"
        new = "masked" if c.new_total is None else f"{c.new_total:g}"
        print(
            f"sample {c.sample_id}: reward {old} ({c.old_class}) -> {new} ({c.new_class}); "
            f"{c.state_before} -> {c.state_after}"
        )
    print(gate.format_agreement(gate.status(task, args.gate)))
    return 0


def _sign(task: Task, args: argparse.Namespace) -> int:
    from .. import gate
    from ..errors import ConfigError, Problem

    accept = {}
    problems = []
    for item in args.accept_exploit:
        term, sep, reason = item.partition("=")
        if not sep or not term.strip() or not reason.strip():
            problems.append(
                Problem(
                    "--accept-exploit",
                    f"{item!r} is not TERM=REASON",
                    "e.g. --accept-exploit format='tags only; weight 0.1'",
                )
            )
        else:
            accept[term.strip()] = reason.strip()
    if problems:
        raise ConfigError(problems, source="rlvr inspect sign")
    from ..audit import gate_audit

    path = gate.sign(
        task, args.gate, reviewer=args.reviewer, min_samples=args.min_samples, accept_exploits=accept, audit=gate_audit
    )
    print(f"gate signed: {path}")
    return 0
