"""`evalharness compare` on runs built from the record types: transitions, paired accuracy across runs, throughput
ratios, settings, warnings, the gate's verdict (noise passes, a credible drop fails) and bad input (exit 2)."""

import json
from pathlib import Path

import pytest

from evalharness.analysis.compare import compare_runs, match_cells, scenario_changes
from evalharness.analysis.stats import log_ratio_interval
from evalharness.cli import main
from evalharness.records.io import save_run
from evalharness.records.measures import (CrashReason, GenerationStats, LogWarning, Percentiles, ProbeSummary, ScenarioResult,
                                          TaskScore)
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.compare import summary_markdown

GOOD = [1] * 160 + [0] * 40
NOISE = [0] * 4 + [1] * 156 + [1] * 2 + [0] * 38  # 4 lost, 2 gained on 200: McNemar p ~ 0.69
DROP = [0] * 30 + [1] * 130 + [0] * 40  # 30 lost on 200: p ~ 2e-9


def _samples(run_dir: Path, cell: str, correct: list[int]) -> str:
    rel = f"cells/{cell}/quality/t/samples.jsonl"
    (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
    (run_dir / rel).write_text("".join(json.dumps({"doc_id": i, "doc_hash": f"h{i}", "metrics": {"exact_match": c}})
                                       + "\n" for i, c in enumerate(correct)))
    return rel


def _scenario(tok_s: float, cls=ScenarioResult, **extra) -> ScenarioResult:
    p = Percentiles()
    return cls(name="single", concurrency=1, input_len=8, output_len=8, requests=4, completed=4, duration_s=1,
               output_tokens=32, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p, tpot_s=p, itl_s=p, e2e_s=p,
               **extra)


def _cell(run_dir: Path, cid: str, correct: list[int] | None = GOOD, status: str = "ok", tok_s: float = 100.0,
          **kw) -> CellResult:
    quality = [TaskScore(task="t", version=1, metric="exact_match,none", value=sum(correct) / len(correct),
                         samples=_samples(run_dir, cid, correct))] if correct else []
    fields = dict(id=cid, axes={"cell": cid}, settings_hash=f"hash-{cid}", args={"--dtype": "float32"}, env={},
                  argv=[], status=status, phase="done" if status == "ok" else "startup", quality=quality,
                  throughput=[_scenario(tok_s)] if status == "ok" else [], started_at="t", finished_at="t",
                  duration_s=1)
    return CellResult(**{**fields, **kw})


def _run(run_dir: Path, cells: list[CellResult], name: str = "m", order: list[str] | None = None,
         **meta) -> RunResult:
    matrix = {"gate": {"max_accuracy_drop": 0.05, "hard_accuracy_drop": 0.2, "alpha": 0.05},
              "throughput": {"scenarios": [{"name": "single", "concurrency": 1}]}}
    run = RunResult(meta=RunMeta(harness_version="0.1.0", engine="vllm", matrix_name=name, matrix_path="m.yaml",
                                 started_at="t", matrix=matrix, **meta),
                    reference=cells[0].id, cell_order=order or [c.id for c in cells], cells={c.id: c for c in cells},
                    complete=True)
    save_run(run, run_dir)
    return run


def _pair(tmp_path: Path, base_cells, head_cells, **head_meta):
    b, h = tmp_path / "base", tmp_path / "head"
    base = _run(b, [f(b) for f in base_cells])
    head = _run(h, [f(h) for f in head_cells], **head_meta)
    return compare_runs(base, b, head, h), b, h


def test_a_crash_and_garbage_appearing_are_transitions_that_fail(tmp_path):
    garbage = ProbeSummary(garbage=True, flagged=11, total=12, errors=0, reason="11/12 probe outputs marked", seconds=1)
    crash = CrashReason(kind="unsupported_kernel", line="RuntimeError: fp8", excerpt="RuntimeError: fp8")
    cmp, b, h = _pair(tmp_path, [lambda d: _cell(d, "ref"), lambda d: _cell(d, "fp8"), lambda d: _cell(d, "rope")], [
        lambda d: _cell(d, "ref"),
        lambda d: _cell(d, "fp8", correct=None, status="crashed", crash=crash, reason="unsupported_kernel: x"),
        lambda d: _cell(d, "rope", correct=None, status="garbage", probes=garbage, reason=garbage.reason)])
    cells = {c.cell: c for c in cmp.cells}
    assert cells["fp8"].transitions == ["ok → crashed: unsupported_kernel at startup"]
    assert cells["rope"].transitions == ["ok → garbage: garbage appears"]
    assert cells["fp8"].verdict == cells["rope"].verdict == "fails" and cells["ref"].verdict == "same"
    assert cmp.failed() and len(cmp.violations) == 2
    text = summary_markdown(cmp)
    first, details = text.split("<details>")
    assert "`fp8` **fails the gate**: ok → crashed: unsupported\\_kernel at startup" in first
    assert "`rope` **fails the gate**: ok → garbage: garbage appears" in first
    assert "`ref`" not in first and "- `ref` unchanged within noise" in details
    assert main(["compare", str(b), str(h)]) == 1


def test_a_new_crash_class_and_a_fixed_cell_change_but_do_not_fail(tmp_path):
    oom = CrashReason(kind="out_of_memory", line="CUDA out of memory", excerpt="x")
    kernel = CrashReason(kind="unsupported_kernel", line="RuntimeError", excerpt="x")
    cmp, _, _ = _pair(tmp_path, [lambda d: _cell(d, "ref"), lambda d: _cell(d, "a", None, "crashed", crash=kernel),
                                 lambda d: _cell(d, "b", None, "garbage")],
                      [lambda d: _cell(d, "ref"), lambda d: _cell(d, "a", None, "crashed", crash=oom),
                       lambda d: _cell(d, "b")])
    cells = {c.cell: c for c in cmp.cells}
    assert cells["a"].transitions == ["new crash class out_of_memory (was unsupported_kernel)"]
    assert cells["b"].transitions == ["garbage → ok: fixed"]
    assert cells["a"].verdict == cells["b"].verdict == "changed" and not cmp.failed()


def test_noise_is_unchanged_and_a_credible_drop_fails_with_its_paired_interval(tmp_path, capsys):
    cmp, b, h = _pair(tmp_path, [lambda d: _cell(d, "ref"), lambda d: _cell(d, "x")],
                      [lambda d: _cell(d, "ref", NOISE), lambda d: _cell(d, "x", DROP)])
    ref, x = cmp.cells
    assert ref.verdict == "same" and ref.accuracy.paired == 200
    assert (ref.accuracy.right_to_wrong, ref.accuracy.wrong_to_right) == (4, 2) and ref.accuracy.p_value > 0.5
    assert x.verdict == "fails" and x.accuracy.accuracy_delta == pytest.approx(-0.15)
    assert x.accuracy.ci_high < 0 and x.accuracy.right_to_wrong == 30
    assert "worse: the drop's lower bound is above the margin" in x.violations[0]
    assert main(["compare", str(b), str(h), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "1 fail the gate" in out and "1 unchanged within noise" in out and "compare: FAIL" in out
    full = (tmp_path / "out" / "compare.md").read_text()
    assert "| `x` | t | 200 | 0.800 | 0.650 | -0.150 [" in full
    assert (tmp_path / "out" / "compare.png").stat().st_size > 5000
    assert json.loads((tmp_path / "out" / "compare.json").read_text())["cells"][1]["verdict"] == "fails"


def test_a_credible_gain_is_a_change_not_a_failure(tmp_path):
    better = [1] * 190 + [0] * 10
    cmp, b, h = _pair(tmp_path, [lambda d: _cell(d, "ref")], [lambda d: _cell(d, "ref", better)])
    assert cmp.cells[0].verdict == "changed" and not cmp.failed()
    assert main(["compare", str(b), str(h)]) == 0


def test_a_setting_changed_within_noise_is_listed_with_its_flag(tmp_path):
    cmp, _, _ = _pair(tmp_path, [lambda d: _cell(d, "ref"), lambda d: _cell(d, "x")], [
        lambda d: _cell(d, "ref"),
        lambda d: _cell(d, "x", NOISE, settings_hash="other", args={"--dtype": "bfloat16"},
                        resolved={"dtype": "bfloat16"}, tok_s=130.0)])
    x = cmp.cells[1]
    assert x.verdict == "differs" and x.settings_changed
    assert [(d.key, d.reference, d.cell) for d in x.launch] == [("--dtype", "float32", "bfloat16")]
    line = next(line for line in summary_markdown(cmp).splitlines() if line.startswith("- `x`"))
    assert "settings changed (--dtype)" in line and "--dtype float32 → bfloat16" in line
    assert "accuracy Δ -0.010 [" in line and "flips 4 r→w / 2 w→r" in line and "tok/s head/base single 1.30x (one measurement each" in line


def test_throughput_repeats_give_an_interval_and_only_then_a_change_beyond_noise():
    base = CellResult(id="c", axes={}, settings_hash="h", args={}, env={}, argv=[], status="ok", phase="done",
                      started_at="t", finished_at="t", duration_s=1,
                      throughput=[_scenario(100, repeat_tok_s=[99.0, 100.0, 101.0, 100.5])])
    slow = base.model_copy(update={"throughput": [_scenario(80, repeat_tok_s=[79.0, 80.0, 81.0, 80.5])]})
    [change] = scenario_changes(base, slow)
    assert change.repeats == (4, 4) and change.ci_high < 1 and change.beyond_noise() and change.outcome == "slower"
    assert change.ratio == pytest.approx(80.125 / 100.125, rel=1e-4)  # of geometric means
    single = base.model_copy(update={"throughput": [_scenario(80)]})
    [change] = scenario_changes(base, single)
    # measured once on the head side: the base's spread stands for its noise, and a 20% drop is still credible
    assert change.ratio == pytest.approx(0.8, rel=0.01) and change.ci_high < 1 and change.beyond_noise()
    # a 3% drift with tight repeats on both sides (the demo rerun of itself): the interval excludes 1, but the change
    # is within the drift between runs, so it is no change
    drift = base.model_copy(update={"throughput": [_scenario(97, repeat_tok_s=[96.9, 97.0, 97.1])]})
    [change] = scenario_changes(base, drift)
    assert change.ci_high < 1 and not change.beyond_noise() and change.outcome == "equal"
    ratio, low, high = log_ratio_interval([10.0, 10.0], [12.0, 12.0])
    assert (ratio, low, high) == pytest.approx((1.2, 1.2, 1.2))


def test_cells_in_one_run_only_and_renamed_cells(tmp_path):
    b, h = tmp_path / "base", tmp_path / "head"
    base = _run(b, [_cell(b, "ref"), _cell(b, "old"), _cell(b, "axis-a")])
    head = _run(h, [_cell(h, "ref"), _cell(h, "new"), _cell(h, "axis-b", settings_hash="hash-axis-a")])
    assert match_cells(base, head) == [("ref", "ref"), (None, "new"), ("axis-a", "axis-b"), ("old", None)]
    cmp = compare_runs(base, b, head, h)
    cells = {c.cell: c for c in cmp.cells}
    assert cells["new"].verdict == cells["old"].verdict == "only" and not cmp.failed()
    assert cells["old"].absent == "not in the head run's matrix"
    assert cells["axis-b"].base_id == "axis-a" and cells["axis-b"].verdict == "same"
    assert "`axis-b` (was `axis-a`)" in summary_markdown(cmp)


def test_a_cell_the_head_did_not_run_fails(tmp_path):
    b, h = tmp_path / "base", tmp_path / "head"
    base = _run(b, [_cell(b, "ref"), _cell(b, "x")])
    head = _run(h, [_cell(h, "ref")], order=["ref", "x"])
    cmp = compare_runs(base, b, head, h)
    assert cmp.cells[1].verdict == "fails" and cmp.violations == ["x: did not run"]
    assert "1 cell(s) not run: x" in cmp.notes[0]


def test_versions_warnings_and_untrusted_text_are_escaped(tmp_path):
    evil = {"max": "1|2 <script>@everyone"}
    cmp, _, _ = _pair(tmp_path, [lambda d: _cell(d, "ref", warnings=[LogWarning(key="kv", message="m", values={})])],
                      [lambda d: _cell(d, "ref", warnings=[LogWarning(key="kv", message="m", values=evil),
                                                           LogWarning(key="new`key", message="m")])],
                      engine_version="0.33.0")
    assert cmp.versions[0].key == "engine version" and cmp.versions[0].cell == "0.33.0"
    assert cmp.cells[0].verdict == "differs"
    text = summary_markdown(cmp)
    assert "<script>" not in text and "@everyone" not in text and "1|2" not in text and "new`key" not in text
    assert "engine version (unset) → 0.33.0" in text


@pytest.mark.parametrize("problem", ["not a run", "other matrix", "old schema", "new schema", "cut samples"])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, problem):
    b, h = tmp_path / "base", tmp_path / "head"
    _run(b, [_cell(b, "ref")])
    _run(h, [_cell(h, "ref")], name="other" if problem == "other matrix" else "m")
    if problem == "not a run":
        h = tmp_path / "empty"
        h.mkdir()
    elif problem.endswith("schema"):
        data = json.loads((h / "results.json").read_text())
        data["schema_version"] = 0 if problem == "old schema" else 2
        data["meta"]["git_revision"] = "abc123"
        (h / "results.json").write_text(json.dumps(data))
    elif problem == "cut samples":
        (h / "cells/ref/quality/t/samples.jsonl").write_text('{"doc_id": 0, "doc_h')
    assert main(["compare", str(b), str(h)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalharness: error: ") and err.count("\n") == 1 and "Traceback" not in err
    expected = {"not a run": "is " + str(h) + " a run folder?",
                "other matrix": "a run of matrix 'm' and " + str(h) + " of matrix 'other': compare two runs of one",
                "old schema": "no converter to schema 1 exists: read it with the harness that wrote it (evalharness "
                              "0.1.0 at git revision abc123), or re-run its matrix",
                "new schema": "written by a newer harness (evalharness 0.1.0 at git revision abc123): upgrade",
                "cut samples": "samples.jsonl:1: not a sample record"}[problem]
    assert expected in err


def test_the_short_form_goes_to_the_step_summary_and_the_markdown_file(tmp_path, monkeypatch):
    cmp, b, h = _pair(tmp_path, [lambda d: _cell(d, "ref")], [lambda d: _cell(d, "ref")])
    summary = tmp_path / "step.md"
    summary.write_text("before\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["compare", str(b), str(h), "--markdown", str(tmp_path / "comment.md")]) == 0
    comment = (tmp_path / "comment.md").read_text()
    assert comment.startswith("### evalharness compare: m") and "Every cell is unchanged within noise." in comment
    assert "<details><summary>All 1 cells (1 unchanged within noise)" in comment and comment.rstrip().endswith(
        "</details>")
    assert summary.read_text() == "before\n" + comment + "\n"


def test_a_cell_that_crashed_in_both_runs_the_same_way_is_unchanged(tmp_path):
    kernel = CrashReason(kind="unsupported_kernel", line="RuntimeError", excerpt="x")
    crashed = lambda d: _cell(d, "x", None, "crashed", crash=kernel)  # noqa: E731
    cmp, _, _ = _pair(tmp_path, [lambda d: _cell(d, "ref"), crashed], [lambda d: _cell(d, "ref"), crashed])
    assert cmp.cells[1].verdict == "same" and not cmp.failed()
    assert "- `x` unchanged within noise: still crashed" in summary_markdown(cmp)


def test_compare_without_out_prints_the_short_form_table_to_the_terminal(tmp_path, capsys):
    _, b, h = _pair(tmp_path, [lambda d: _cell(d, "ref"), lambda d: _cell(d, "x")],
                    [lambda d: _cell(d, "ref"), lambda d: _cell(d, "x", DROP)])
    assert main(["compare", str(b), str(h)]) == 1
    out = capsys.readouterr().out
    assert "`x` **fails the gate**" in out  # the short form's line per changed cell ...
    assert "| cell | verdict | status |" in out and "| `ref` |" in out  # ... and its table of every cell
    assert "1 fail the gate" in out  # the count line still closes it
    assert main(["compare", str(b), str(h), "--out", str(tmp_path / "out")]) == 1
    assert "| cell | verdict |" not in capsys.readouterr().out  # with --out the files hold it
