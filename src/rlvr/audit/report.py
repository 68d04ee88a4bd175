"""The audit's result: one finding per (term, exploit), per-term summaries, a table and JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Verdict = Literal["exploitable", "leaky", "ok", "untested"]
VERDICTS: tuple[str, ...] = ("exploitable", "leaky", "ok", "untested")


@dataclass(frozen=True)
class Example:
    """The prompt on which the exploit did best, with the three scores side by side."""

    prompt: str
    completion: str
    score: float | None
    correct_score: float | None
    wrong_score: float | None
    outcome: str = ""
    detail: str = ""


@dataclass(frozen=True)
class Finding:
    """One exploit against one term.

    ``verdict``: ``exploitable`` when the exploit scored at least as high as the correct answer on
    some prompt; ``leaky`` when it scored above the wrong answer on some prompt; ``ok`` otherwise;
    ``untested`` when no prompt gave it a chance (no usable baseline, or nothing to build from).
    A term whose findings are mostly ``untested`` is ``untested`` itself, never ``ok``.
    ``relative``: (exploit - wrong) / (correct - wrong), the mean and the worst over prompts --
    1.0 is full credit, 0.0 is what a wrong answer gets. ``undecided``: attempts the term could
    not decide (``error`` verdicts). ``masked``: those of them that count as hits -- an error
    masks the sample in training, so a wrong answer that ends in one escapes its negative
    advantage (every exploit but ``missing_ground_truth``, where "could not decide" is right).
    """

    term: str
    exploit: str
    description: str
    verdict: str
    prompts: int = 0
    undecided: int = 0
    ties: int = 0
    hits: int = 0
    leaks: int = 0
    relative_mean: float | None = None
    relative_max: float | None = None
    example: Example | None = None
    reason: str = ""
    masked: int = 0


@dataclass(frozen=True)
class TermSummary:
    """A term's overall verdict (the worst of its findings) and what limited the audit."""

    name: str
    kind: str
    verifier: str
    weight: float
    verdict: str
    prompts: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class AuditReport:
    task: str
    seed: int
    max_prompts: int
    split: str
    terms: tuple[TermSummary, ...]
    findings: tuple[Finding, ...]
    notes: tuple[str, ...] = field(default=())
    problems: tuple[str, ...] = field(default=())  # task-level: a success term that is not a correctness term

    @property
    def exploitable_terms(self) -> tuple[str, ...]:
        """Terms an exploit beats on some prompt. A weight-0 term (logged, never rewarded) is
        left out: its holes cannot be trained into."""
        return tuple(t.name for t in self.terms if t.verdict == "exploitable" and t.weight != 0)

    @property
    def leaky_terms(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.terms if t.verdict == "leaky" and t.weight != 0)

    @property
    def untested_terms(self) -> tuple[str, ...]:
        """Terms the audit could not call safe: most of their exploits were untested (no usable
        baseline, nothing to build from), none exploitable. A weight-0 term is left out."""
        return tuple(t.name for t in self.terms if t.verdict == "untested" and t.weight != 0)

    @property
    def exploitable(self) -> bool:
        """A term an exploit beats, a term the audit could not test (``untested`` is a finding,
        never clean: a hole the probes cannot reach is still a hole), or a task-level problem."""
        return bool(self.exploitable_terms or self.untested_terms or self.problems)

    def finding(self, term: str, exploit: str) -> Finding:
        for f in self.findings:
            if f.term == term and f.exploit == exploit:
                return f
        raise KeyError(f"no finding for term {term!r} and exploit {exploit!r}")

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["exploitable_terms"] = list(self.exploitable_terms)
        out["leaky_terms"] = list(self.leaky_terms)
        out["untested_terms"] = list(self.untested_terms)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AuditReport:
        def finding(f: Mapping[str, Any]) -> Finding:
            ex = f.get("example")
            return Finding(**{**f, "example": Example(**ex) if ex else None})

        return cls(
            task=data["task"],
            seed=data["seed"],
            max_prompts=data["max_prompts"],
            split=data["split"],
            terms=tuple(TermSummary(**{**t, "notes": tuple(t.get("notes", ()))}) for t in data["terms"]),
            findings=tuple(finding(f) for f in data["findings"]),
            notes=tuple(data.get("notes", ())),
            problems=tuple(data.get("problems", ())),
        )


def worst(verdicts: list[str]) -> str:
    """The term's verdict: the worst tested finding; ``untested`` only if nothing was tested."""
    for v in ("exploitable", "leaky", "ok"):
        if v in verdicts:
            return v
    return "untested"


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _clip(text: str, n: int = 90) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= n else text[: n - 3] + "..."


def format_table(report: AuditReport, *, show_ok: bool = False) -> str:
    """A table for people: per term, every non-ok finding with its example, and then what else
    was tried, by name, so that "ok" always says what it is ok against."""
    lines = [
        f"reward-hack audit of {report.task}: {report.max_prompts} prompts max from {report.split}, seed {report.seed}"
    ]
    for note in report.notes:
        lines.append(f"  note: {note}")
    for problem in report.problems:
        lines.append(f"  PROBLEM: {problem}")
    for term in report.terms:
        lines.append("")
        lines.append(
            f"term {term.name} ({term.kind}, verifier {term.verifier}, weight {term.weight:g}): "
            f"{term.verdict.upper()} on {term.prompts} prompts"
        )
        for note in term.notes:
            lines.append(f"  note: {note}")
        rows = [f for f in report.findings if f.term == term.name]
        shown = [f for f in rows if show_ok or f.verdict in ("exploitable", "leaky")]
        if shown:
            width = max(len(f.exploit) for f in shown)
            lines.append(f"  {'exploit'.ljust(width)}  verdict      hits  leaks  masked  rel.mean  rel.max")
            for f in shown:
                lines.append(
                    f"  {f.exploit.ljust(width)}  {f.verdict.ljust(11)}  {f.hits:>4}  {f.leaks:>5}  {f.masked:>6}  "
                    f"{_fmt(f.relative_mean):>8}  {_fmt(f.relative_max):>7}"
                )
                if f.example and f.verdict in ("exploitable", "leaky"):
                    e = f.example
                    lines.append(f"    e.g. {_clip(e.completion)!s}")
                    lines.append(
                        f"         scored {_fmt(e.score)} (correct {_fmt(e.correct_score)}, "
                        f"wrong {_fmt(e.wrong_score)}) on prompt {_clip(e.prompt, 40)!r}"
                    )
                    if e.detail:
                        lines.append(f"         {_clip(e.detail, 110)}")
                if f.reason and f.verdict in ("untested", "exploitable"):
                    lines.append(f"    ({f.reason})")
        counts = {v: sum(f.verdict == v for f in rows) for v in VERDICTS}
        lines.append("  " + ", ".join(f"{n} {v}" for v, n in counts.items() if n) + f" of {len(rows)} exploits tried")
        if not show_ok:
            ok = [f"{f.exploit} ({f.prompts})" for f in rows if f.verdict == "ok"]
            if ok:
                lines.append("  ok (prompts tried): " + ", ".join(ok))
            untested = [f for f in rows if f.verdict == "untested"]
            for f in untested:
                lines.append(f"  untested: {f.exploit} ({f.reason or 'nothing to try'})")
    lines.append("")
    if report.problems:
        lines.append(f"PROBLEM: {len(report.problems)} task-level problem(s) above -- fix the task before training")
    if report.exploitable_terms:
        lines.append(
            f"EXPLOITABLE: {', '.join(report.exploitable_terms)} -- "
            "fix the reward, or record at the gate why it is acceptable"
        )
    elif report.leaky_terms:
        lines.append(f"leaky (partial credit for exploits): {', '.join(report.leaky_terms)}")
    if report.untested_terms:
        lines.append(
            f"UNTESTED: {', '.join(report.untested_terms)} -- most exploits could not be tried (see the notes); "
            "the audit does not call these terms safe"
        )
    elif not report.problems and not report.exploitable_terms and not report.leaky_terms:
        lines.append("no term was exploited")
    return "\n".join(lines)
