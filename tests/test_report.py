"""`rlvr report`: PNG plots and a self-contained HTML report."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rlvr.cli.main import main
from rlvr.doctor import load_run
from rlvr.report import default_out_dir, write_report

DATA = Path(__file__).parent / "data" / "doctor"
SYN = DATA / "synthetic"
PNG = b"\x89PNG\r\n\x1a\n"
PLOTS = ["rewards", "accuracy", "entropy", "length", "zero_std", "kl"]


def test_full_run_gets_six_png_plots(tmp_path: Path) -> None:
    rep = write_report(load_run(SYN / "reward_hacking"), tmp_path)
    assert [p.name for p in rep.plots] == PLOTS
    for p in rep.plots:
        assert p.path is not None and p.path.read_bytes().startswith(PNG)


def test_html_embeds_every_plot_and_links_nothing_outside(tmp_path: Path) -> None:
    rep = write_report(load_run(SYN / "reward_hacking"), tmp_path)
    text = rep.html.read_text()
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", text)
    assert len(images) == 6
    assert all(base64.b64decode(i).startswith(PNG) for i in images)
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:|//|file:)", text)
    assert "<script" not in text and "<link" not in text
    assert "reward_hacking" in text  # the doctor's finding is in the report


def test_plots_the_run_did_not_log_are_skipped_and_said_so(tmp_path: Path) -> None:
    rep = write_report(load_run(DATA / "trl_checkpoint"), tmp_path)
    acc = next(p for p in rep.plots if p.name == "accuracy")
    assert acc.path is None and not (tmp_path / "accuracy.png").exists()
    assert "not logged in this run (eval/accuracy)" in rep.html.read_text()


def test_text_from_the_run_is_escaped_in_the_html(tmp_path: Path) -> None:
    # Term names come from the log: a hostile one must not become markup in the report.
    evil = "<img src=x onerror=alert(1)>"
    run = tmp_path / "run"
    shutil.copytree(SYN / "term_saturation", run)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        if "rewards/format/mean" in r:
            r[f"rewards/{evil}/mean"] = r.pop("rewards/format/mean")
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = (run / "config.yaml").read_text().replace("- format", f"- '{evil}'")
    (run / "config.yaml").write_text(cfg)
    rep = write_report(load_run(run), tmp_path / "out")
    text = rep.html.read_text()
    assert evil not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text


def test_default_report_folder_is_inside_the_run() -> None:
    assert default_out_dir(load_run(SYN / "healthy")) == SYN / "healthy" / "report"
    assert (
        default_out_dir(load_run(DATA / "trl_checkpoint" / "trainer_state.json")) == DATA / "trl_checkpoint" / "report"
    )


def test_report_help_works(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--help"])
    assert exc.value.code == 0
    assert "--out" in capsys.readouterr().out


def test_report_cli_writes_the_html_and_lists_plots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["report", str(SYN / "healthy"), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "report.html (0 findings" in out
    assert (tmp_path / "report.html").is_file()


def test_report_cli_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "m.csv"
    bad.write_text("step,reward\n1,nope\n")
    assert main(["report", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "row 2, column 'reward'" in err[0]
    assert not (tmp_path / "o").exists(), "nothing is written for input that cannot be read"


def test_real_run_report_has_every_plot(tmp_path: Path) -> None:
    rep = write_report(load_run(DATA / "real" / "sft_60"), tmp_path)
    assert all(p.path is not None for p in rep.plots if p.name != "kl")
    kl = next(p for p in rep.plots if p.name == "kl")
    assert kl.path is None, "beta=0: TRL logs no kl, and the report says so instead of drawing zeros"


def test_html_shows_the_settings_that_explain_the_plots_and_reading_warnings(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SYN / "healthy", run)
    with (run / "metrics.jsonl").open("a") as fh:
        fh.write('{"step": 61, "rew')
    text = write_report(load_run(run), tmp_path / "out").html.read_text()
    assert "<td>loss_type</td><td>&#x27;grpo&#x27;</td>" in text
    assert "incomplete last line" in text


def test_nonsense_eval_sizes_do_not_break_the_error_bars(tmp_path: Path) -> None:
    (tmp_path / "m.csv").write_text("step,eval/accuracy,eval/n\n0,0.5,-1\n10,1.5,0\n20,0.4,200\n")
    rep = write_report(load_run(tmp_path / "m.csv"), tmp_path / "out")
    assert next(p for p in rep.plots if p.name == "accuracy").path is not None


# ---- resumes, eval sizes, the gate (issue 14) ------------------------------------------------
def _healthy_copy(tmp_path: Path) -> tuple[Path, list[dict]]:
    run = tmp_path / "run"
    shutil.copytree(SYN / "healthy", run)
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    return run, rows


def _write(run: Path, rows: list[dict]) -> None:
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_report_marks_a_resume_on_the_plots_and_lists_it(tmp_path: Path) -> None:
    from rlvr.report import resume_steps

    run, rows = _healthy_copy(tmp_path)
    cut = next(i for i, r in enumerate(rows) if r["step"] == 31)
    rows.insert(
        cut,
        {"step": 30, "time": 1075.0, "event": "resume", "resumed_from": "checkpoint-30", "skipped": ["checkpoint-40"]},
    )
    _write(run, rows)
    loaded = load_run(run)
    assert resume_steps(loaded) == [30] and len(loaded.train) == 60  # the mark is not a logged step
    text = write_report(loaded, tmp_path / "out").html.read_text()
    assert "Resumes and stops" in text and "resumed from checkpoint-30; skipped incomplete checkpoint-40" in text


def test_evals_of_different_sizes_are_separate_lines_with_their_size(tmp_path: Path) -> None:
    from rlvr.report import accuracy_by_size, plot_lines

    run, rows = _healthy_copy(tmp_path)
    for r in rows:
        if "eval/accuracy" in r and r["step"] >= 40:
            r.update({"eval/n": 8, "eval/masked": 0, "eval/prompts": 8})
    _write(run, rows)
    loaded = load_run(run)
    sizes = [(size, list(series.steps)) for size, series in accuracy_by_size(loaded)]
    assert sizes == [(200, [0, 10, 20, 30]), (8, [40, 50, 60])]
    assert [ln.label for ln in plot_lines(loaded)["accuracy"][2]] == [
        "held-out accuracy (n=200)",
        "held-out accuracy (n=8)",
    ]
    text = write_report(loaded, tmp_path / "out").html.read_text()
    assert "Evals of different sizes are separate lines" in text


def test_evals_of_one_size_stay_one_line(tmp_path: Path) -> None:
    from rlvr.report import plot_lines

    assert [ln.label for ln in plot_lines(load_run(SYN / "healthy"))["accuracy"][2]] == ["held-out accuracy"]


def test_the_eval_table_reports_masked_beside_decided(tmp_path: Path) -> None:
    run, rows = _healthy_copy(tmp_path)
    for r in rows:
        if "eval/accuracy" in r:
            r.update({"eval/n": 150, "eval/masked": 50})
    _write(run, rows)
    text = write_report(load_run(run), tmp_path / "out").html.read_text()
    assert "<th>masked (undecided)</th>" in text and "<td>200</td><td>150</td><td>50</td>" in text


def test_the_report_shows_the_gate_status_or_the_no_gate_reason(tmp_path: Path) -> None:
    from rlvr.report import gate_text

    text = write_report(load_run(SYN / "healthy"), tmp_path).html.read_text()
    assert "<td>inspection gate</td><td>bypassed with --no-gate: synthetic fixture</td>" in text
    passed = {
        "status": "passed",
        "reviewer": "alice",
        "samples": 64,
        "signed_at": "2026-12-01T10:00:00Z",
        "record": "x/gate.json",
    }
    assert (
        gate_text({"gate": passed})
        == "passed (reviewer alice, 64 samples read, signed 2026-12-01T10:00:00Z, record x/gate.json)"
    )
    assert (
        gate_text({"gate": {"status": "bypassed", "no_gate_reason": "smoke test"}})
        == "bypassed with --no-gate: smoke test"
    )


def test_a_stopped_run_says_why_in_the_report(tmp_path: Path) -> None:
    text = write_report(load_run(DATA / "real" / "reward_broken"), tmp_path).html.read_text()
    assert "stopped: every sample was masked" in text and "reward_broken" in text


def _dynamic_run(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(SYN / "healthy", run)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for r in rows:
        if "reward" in r:
            r.update(
                {
                    "dynamic/zero_std_before": 0.25,
                    "dynamic/zero_std_after": 0.05,
                    "dynamic/kept_groups": 3.0,
                    "dynamic/replaced_groups": 1.0,
                    "dynamic/starved_groups": 0.0,
                    "dynamic/skipped_prompts": 12.0,
                    "dynamic/skipped_solved": 10.0,
                    "dynamic/skipped_unsolved": 2.0,
                }
            )
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_a_run_with_the_online_filter_gets_its_two_plots(tmp_path: Path) -> None:
    rep = write_report(load_run(_dynamic_run(tmp_path)), tmp_path / "out")
    assert [p.name for p in rep.plots] == PLOTS + ["dynamic", "dynamic_counts"]
    assert all(p.path is not None and p.path.read_bytes().startswith(PNG) for p in rep.plots[-2:])
    assert "zero-variance share before and after" in rep.html.read_text()


def test_a_run_without_the_filter_gets_no_dynamic_plot_and_no_mention(tmp_path: Path) -> None:
    rep = write_report(load_run(SYN / "healthy"), tmp_path)
    assert [p.name for p in rep.plots] == PLOTS and "Dynamic sampling" not in rep.html.read_text()


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=80), st.integers(1, 30))
def test_trailing_mean_is_each_points_mean_over_its_window(values: list[float], w: int) -> None:
    from rlvr.report import trailing_mean

    got = trailing_mean(values, w)
    for i, g in enumerate(got):
        window = values[max(0, i - w + 1) : i + 1]
        assert g == pytest.approx(sum(window) / len(window), rel=1e-9, abs=1e-6)


def test_long_per_step_lines_are_smoothed_and_evals_and_short_runs_are_not() -> None:
    from rlvr.doctor import Series
    from rlvr.report import PlotLine, smoothing_window

    def line(n: int, marker: bool = False) -> PlotLine:
        return PlotLine(Series("reward", tuple(range(n)), tuple(0.0 for _ in range(n))), "reward", marker)

    assert smoothing_window(line(50)) == 0
    assert smoothing_window(line(51)) == 5
    assert smoothing_window(line(900)) == 36
    assert smoothing_window(line(900, marker=True)) == 0


def test_a_run_with_sampled_evals_reports_pass_at_1_as_the_headline_with_its_interval(tmp_path: Path) -> None:
    run, rows = _healthy_copy(tmp_path)
    sampled = {"eval/pass@1": 0.25, "eval/pass@1_low": 0.2, "eval/pass@1_high": 0.31, "eval/pass@k": 0.6}
    sampled |= {
        "eval/pass@k_low": 0.5,
        "eval/pass@k_high": 0.7,
        "eval/k": 4,
        "eval/samples": 4,
        "eval/temperature": 1.0,
    }
    for r in rows:
        if "eval/accuracy" in r:
            r.update(sampled)
    _write(run, rows)
    text = write_report(load_run(run), tmp_path / "out").html.read_text()
    assert "Headline: pass@1, 4 completions per prompt at T=1 (the training temperature)" in text
    assert (
        "<th>pass@1 (95% CI)</th>" in text
        and "<td>25.0% [20.0%, 31.0%]</td><td>60.0% [50.0%, 70.0%] (k=4)</td>" in text
    )


def test_a_run_with_greedy_evals_only_says_its_headline_is_greedy_and_how_to_sample(tmp_path: Path) -> None:
    text = write_report(load_run(SYN / "healthy"), tmp_path / "out").html.read_text()
    assert "Headline: greedy accuracy" in text and "set eval.samples" in text and "pass@1 (95% CI)" not in text
