"""The gate's decisions on hand-made runs: noise passes, credible or large drops fail, versions are never mixed."""

import json
from pathlib import Path

import pytest

from evalharness.cli import main
from evalharness.analysis.gate import GateError, check, evaluate, make_baseline
from evalharness.records.baseline import Thresholds, load_baseline, save_baseline
from evalharness.records.io import save_run
from evalharness.records.measures import Percentiles, ScenarioResult, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.analysis.equivalence import decide
from evalharness.analysis.gate import inconclusive_words
from evalharness.analysis.stats import PairedEvidence
from tests.unit.analysis.test_equivalence import _run_with, _scores


def _write_samples(run_dir: Path, cell: str, correct: list[int]) -> str:
    rel = f"cells/{cell}/quality/t/samples.jsonl"
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"doc_id": i, "doc_hash": f"h{i}", "metrics": {"exact_match": float(c)}}) + "\n"
                            for i, c in enumerate(correct)))
    return rel


def _run(run_dir: Path, cells: dict[str, list[int]], version=1.0, status="ok", tok_s=100.0, gate=None) -> RunResult:
    results = {}
    for cid, correct in cells.items():
        score = TaskScore(task="t", version=version, metric="exact_match,strict", value=sum(correct) / len(correct),
                          samples=_write_samples(run_dir, cid, correct))
        p = Percentiles()
        sc = ScenarioResult(name="single", concurrency=1, input_len=8, output_len=8, requests=1, completed=1,
                            duration_s=1, output_tokens=8, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p,
                            tpot_s=p, itl_s=p, e2e_s=p)
        results[cid] = CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status=status,
                                  phase="done", quality=[score], throughput=[sc], started_at="t", finished_at="t",
                                  duration_s=1)
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   matrix={"gate": gate or {}})
    run = RunResult(meta=meta, reference=next(iter(cells)), cell_order=list(cells), cells=results, complete=True)
    save_run(run, run_dir)
    return run


@pytest.fixture()
def baseline(tmp_path):
    base_dir = tmp_path / "base"
    run = _run(base_dir, {"ref": [1] * 160 + [0] * 40})
    return make_baseline(run, base_dir, None, Thresholds(max_accuracy_drop=0.05, hard_accuracy_drop=0.2,
                                                          min_throughput_ratio=0.8))


def test_identical_run_passes(tmp_path, baseline):
    run = _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40})
    assert check(run, tmp_path / "run", baseline) == []


def test_noise_is_not_a_regression(tmp_path, baseline):
    # 4 lost, 2 gained on 200: a drop of 0.01, and McNemar p is large
    correct = [0] * 4 + [1] * 156 + [1] * 2 + [0] * 38
    run = _run(tmp_path / "run", {"ref": correct})
    assert check(run, tmp_path / "run", baseline) == []


def test_small_sample_drop_above_the_margin_but_not_credible_is_inconclusive_not_a_failure(tmp_path):
    base_dir = tmp_path / "base"
    base = make_baseline(_run(base_dir, {"ref": [1] * 16 + [0] * 4}), base_dir, None, Thresholds())
    run = _run(tmp_path / "run", {"ref": [0] * 2 + [1] * 14 + [0] * 4})  # drop 0.10 on 20: p = 0.5
    assert check(run, tmp_path / "run", base) == []
    result = evaluate(run, tmp_path / "run", base)
    assert result.outcome == "inconclusive" and "inconclusive" in result.inconclusive[0]


def test_credible_drop_fails_with_a_readable_message(tmp_path, baseline):
    correct = [0] * 30 + [1] * 130 + [0] * 40  # 30 right->wrong on 200: drop 0.15, p ~ 2e-9
    run = _run(tmp_path / "run", {"ref": correct})
    [violation] = check(run, tmp_path / "run", baseline)
    assert "drop +0.150 [90%: +0.109, +0.202]" in violation and "worse" in violation


def test_large_drop_fails_even_on_few_samples(tmp_path):
    base_dir = tmp_path / "base"
    base = make_baseline(_run(base_dir, {"ref": [1] * 8 + [0] * 2}), base_dir, None, Thresholds())
    run = _run(tmp_path / "run", {"ref": [0] * 3 + [1] * 5 + [0] * 2})  # drop 0.3 on 10 samples: p = 0.25
    [violation] = check(run, tmp_path / "run", base)
    assert "hard limit" in violation


def test_task_version_change_is_refused(tmp_path, baseline):
    run = _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40}, version=2.0)
    [violation] = check(run, tmp_path / "run", baseline)
    assert "refusing to compare" in violation


def test_crashed_cell_and_slow_cell_fail(tmp_path, baseline):
    run = _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40}, status="crashed")
    assert "crashed" in check(run, tmp_path / "run", baseline)[0]
    run = _run(tmp_path / "run2", {"ref": [1] * 160 + [0] * 40}, tok_s=50.0)
    # measured once on both sides: no noise is known, so half the speed is inconclusive, said so, never a pass
    result = evaluate(run, tmp_path / "run2", baseline)
    assert result.violations == [] and result.outcome == "inconclusive"
    assert "0.50x the baseline's" in result.inconclusive[0] and "neither side repeated" in result.inconclusive[0]
    repeated = _run(tmp_path / "run3", {"ref": [1] * 160 + [0] * 40}, tok_s=50.0)
    repeated.cells["ref"].throughput[0].repeat_tok_s = [49.0, 50.0, 51.0]
    [violation] = check(repeated, tmp_path / "run3", baseline)
    assert "0.50x the baseline" in violation


def test_matrix_thresholds_override_the_baseline(tmp_path, baseline):
    correct = [0] * 30 + [1] * 130 + [0] * 40
    run = _run(tmp_path / "run", {"ref": correct}, gate={"max_accuracy_drop": 0.2})
    assert check(run, tmp_path / "run", baseline) == []


def test_cli_exit_codes_and_round_trip(tmp_path, baseline, capsys):
    path = tmp_path / "baseline.json"
    save_baseline(baseline, path)
    assert load_baseline(path) == baseline
    _run(tmp_path / "good", {"ref": [1] * 160 + [0] * 40})
    assert main(["gate", str(tmp_path / "good"), "--baseline", str(path)]) == 0
    _run(tmp_path / "bad", {"ref": [0] * 30 + [1] * 130 + [0] * 40})
    assert main(["gate", str(tmp_path / "bad"), "--baseline", str(path)]) == 1
    assert "worse" in capsys.readouterr().out
    (tmp_path / "broken.json").write_text("{")
    assert main(["gate", str(tmp_path / "good"), "--baseline", str(tmp_path / "broken.json")]) == 2
    assert main(["gate", str(tmp_path / "nope"), "--baseline", str(path)]) == 2
    assert main(["baseline", "save", str(tmp_path / "good"), "-o", str(tmp_path / "b2.json")]) == 0
    assert json.loads((tmp_path / "b2.json").read_text())["cells"]["ref"]["tasks"]["t"]["version"] == 1.0
    with pytest.raises(GateError):
        make_baseline(_run(tmp_path / "x", {"ref": [1]}), tmp_path / "x", ["missing"], Thresholds())


@pytest.mark.parametrize("damage,expected", [
    (None, "no such file"),                       # deleted
    ("{not json\n", ":1: not a sample record"),   # cut or corrupted
    ('{"doc_id": 0}\n[1, 2]\n', ":2: not a sample record"),  # valid JSON, not a record
])
def test_gate_on_a_missing_or_corrupt_samples_file_exits_2_naming_the_file(tmp_path, baseline, capsys, damage,
                                                                            expected):
    """Issue 13.4: bad input is exit 2 with one message naming the file and what it should hold, never a traceback
    and never exit 1 (which means violations)."""
    path = tmp_path / "baseline.json"
    save_baseline(baseline, path)
    _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40})
    samples = tmp_path / "run" / "cells" / "ref" / "quality" / "t" / "samples.jsonl"
    if damage is None:
        samples.unlink()
    else:
        samples.write_text(damage)
    assert main(["gate", str(tmp_path / "run"), "--baseline", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"evalharness: error: {samples}") and expected in err and "expected one JSON object" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_gate_fails_a_run_that_scored_fewer_documents_than_the_baseline(tmp_path, baseline):
    """Issue 13.3: 3 of the baseline's 200 documents, all right, is not a pass: the other 197 were never checked."""
    run = _run(tmp_path / "run", {"ref": [1, 1, 1]})
    [violation] = check(run, tmp_path / "run", baseline)
    assert "task t: scored 3 of the baseline's 200 documents (197 missing" in violation


def test_gate_fails_a_run_missing_a_task_or_a_throughput_scenario(tmp_path, baseline):
    """Issue 13.3: a baseline scenario absent from the run is a violation when throughput is gated, never skipped."""
    baseline.cells["ref"].throughput["batch8"] = 60.0
    baseline.cells["ref"].tasks["other"] = baseline.cells["ref"].tasks["t"].model_copy()
    run = _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40})
    assert check(run, tmp_path / "run", baseline) == [
        "ref: task other has no result in this run (the baseline scored 200 documents)",
        "ref: throughput scenario(s) batch8 of the baseline not in this run (1 of the baseline's 2 scenarios measured)",
    ]
    ungated = baseline.model_copy(update={"thresholds": Thresholds(min_throughput_ratio=None)})
    assert check(run, tmp_path / "run", ungated) == [
        "ref: task other has no result in this run (the baseline scored 200 documents)"]


def test_gate_warns_when_the_baseline_came_from_another_kind_of_machine(tmp_path, baseline, capsys):
    """Issue 13.8: a warning line, and a caveat on the verdict, never a failure; an old baseline says unknown."""
    run = _run(tmp_path / "run", {"ref": [1] * 160 + [0] * 40})
    run.meta.machine = {"cpu_model": "AMD EPYC 7B13", "cpu_flags": ["avx2", "fma"]}
    save_run(run, tmp_path / "run")
    path = tmp_path / "baseline.json"
    for machine, warning in [
        ({"cpu_model": "Intel Xeon 8480+", "cpu_flags": ["avx512f", "avx512_bf16"]},
         "gate: warning: the baseline was measured on another kind of machine: baseline on Intel Xeon 8480+ "
         "(avx512f avx512_bf16), this run on AMD EPYC 7B13 (avx2 fma)"),
        ({}, "gate: warning: the baseline was measured on an unrecorded machine: baseline on unknown, "
             "this run on AMD EPYC 7B13 (avx2 fma)"),
        (run.meta.machine, None),
    ]:
        save_baseline(baseline.model_copy(update={"machine": machine}), path)
        assert main(["gate", str(tmp_path / "run"), "--baseline", str(path)]) == 0
        out = capsys.readouterr().out
        if warning is None:
            assert "warning" not in out and out.startswith("gate: pass")
        else:
            assert out.startswith(warning + "; throughput and drift may differ")
            assert "\ngate: pass" in out and "see the warning" in out


def test_a_saved_baseline_records_the_machine(tmp_path):
    run = _run(tmp_path / "run", {"ref": [1, 0]})
    run.meta.machine = {"cpu_model": "AMD EPYC 7B13", "cpu_flags": ["avx2"]}
    assert make_baseline(run, tmp_path / "run", None, Thresholds()).machine == run.meta.machine


def test_the_gates_outcome_opens_the_report_where_a_baseline_is_given(tmp_path, capsys):
    """Issue 58: the gate's verdict was nowhere in report.md or report.html. `gate`, and `run` / `report` with
    --baseline, keep its outcome in the decision record; the verdict box says it (within five lines), and a plain
    `report` later keeps saying what the gate decided."""
    good, bad = [1] * 160 + [0] * 40, [0] * 30 + [1] * 130 + [0] * 40
    base_dir = tmp_path / "base"
    path = tmp_path / "baseline.json"
    save_baseline(make_baseline(_run(base_dir, {"ref": good, "fast": good}), base_dir, None,
                                Thresholds(max_accuracy_drop=0.05)), path)
    _run(tmp_path / "good", {"ref": good, "fast": good})
    assert main(["gate", str(tmp_path / "good"), "--baseline", str(path)]) == 0
    box = [line for line in (tmp_path / "good" / "report.md").read_text().splitlines() if line.startswith("> ")]
    assert len(box) <= 5 and any(f"Gate: **PASS** against `{path}`: 2 of 2 cells pass (margin ±0.05, alpha 0.05)"
                                 in line for line in box), box
    decision = json.loads((tmp_path / "good" / "results.json").read_text())["decision"]
    assert decision["gate"]["outcome"] == "pass"
    # what qualifies the decision is kept with it and said after the full statement: here the baseline's machine
    assert any(w.startswith("gate: the baseline was measured on an unrecorded machine") for w in decision["warnings"])
    assert "What qualifies it: gate: the baseline was measured on an unrecorded machine" in \
        (tmp_path / "good" / "report.md").read_text()

    _run(tmp_path / "bad", {"ref": good, "fast": bad})
    assert main(["report", str(tmp_path / "bad"), "--baseline", str(path)]) == 1
    assert "gate: FAIL" in capsys.readouterr().out
    for name in ("report.md", "summary.md"):
        text = (tmp_path / "bad" / name).read_text()
        assert "Gate: **FAIL**" in text and "1 of 2 cells fail" in text and "first: " in text and "worse" in text
    assert "Gate: FAIL" in (tmp_path / "bad" / "report.html").read_text()
    assert main(["report", str(tmp_path / "bad")]) == 0  # re-rendered without a baseline: the gate's record stands
    assert "Gate: **FAIL**" in (tmp_path / "bad" / "report.md").read_text()
    assert main(["report", str(tmp_path / "bad"), "--baseline", str(tmp_path / "missing.json")]) == 2


def test_the_gates_inconclusive_words_match_the_interval_beside_them():
    """96 comparisons, drop +0.060 [+0.035, +0.085], margin 0.02, raw p 0.004, Holm 0.40: the words said the lower
    bound was not above the margin."""
    evidence = PairedEvidence(method="t", n=200, estimate=0.06, se=0.0152, df=199)
    decision = decide(evidence, 0.02, 0.05, p_worse_adjusted=0.40, family_size=96)
    assert decision.outcome == "inconclusive" and decision.drop_low > 0.02
    words = inconclusive_words(decision, 0.02, 0.05, 96)
    assert "lower bound" in words and "above the margin before adjustment" in words and "Holm" in words
    assert "not above it" not in words
    straddling = decide(PairedEvidence(method="t", n=200, estimate=0.02, se=0.01, df=199), 0.02, 0.05, 0.5, 96)
    assert "holds the margin" in inconclusive_words(straddling, 0.02, 0.05, 96)


def test_a_screened_cell_never_passes_the_gate_on_a_share_of_its_documents(tmp_path):
    """50 of 200 documents, no flips, margin 0.1: the gate passed it."""
    from evalharness.analysis.gate import evaluate, make_baseline
    from evalharness.records.baseline import Thresholds
    from evalharness.records.measures import SubsetInfo

    values = [1.0] * 150 + [0.0] * 50
    run = _run_with(tmp_path, {"ref": _scores(tmp_path, "ref", {"t": values})}, gate={"margin": 0.1})
    baseline = make_baseline(run, tmp_path, ["ref"], Thresholds(margin=0.1))
    head = tmp_path / "head"
    screened = _scores(head, "ref", {"t": values[:50]})
    screened[0].subset = SubsetInfo(seed=1, documents=50, of=200, fraction=0.25)
    later = _run_with(head, {"ref": screened}, gate={"margin": 0.1})
    result = evaluate(later, head, baseline)
    [task] = result.cells[0].tasks
    assert task.outcome == "screened" and result.outcome == "inconclusive"
    assert "screened: the cell answered 50 of the baseline's 200 documents" in result.inconclusive[0]


def test_a_baseline_refreshed_with_another_runs_repeats_pools_them(tmp_path, capsys):
    """A baseline is one draw; `baseline save --merge` pools a later run's repeats into it (other seeds only), and
    the gate says what its guarantee holds for."""
    first, second, same = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    _run_with(first, {"ref": _scores(first, "ref", {"t": [1.0] * 30 + [0.0] * 10})})
    _run_with(second, {"ref": _scores(second, "ref", {"t": [1.0] * 20 + [0.0] * 20}, seed=2000)})
    _run_with(same, {"ref": _scores(same, "ref", {"t": [1.0] * 40})})
    path = tmp_path / "b.json"
    assert main(["baseline", "save", str(first), "-o", str(path)]) == 0
    assert main(["baseline", "save", str(second), "-o", str(path), "--merge"]) == 0
    from evalharness.records.baseline import load_baseline

    merged = load_baseline(path)
    task = merged.cells["ref"].tasks["t"]
    assert task.repeats == 2 and task.seeds == [1234, 2000] and len(merged.merged) == 1
    assert sorted(task.correct.values()).count(0.5) == 10  # documents right in one run and wrong in the other
    assert main(["baseline", "save", str(same), "-o", str(path), "--merge"]) == 2  # seed 1234 again: not a new draw
    assert "seeds [1234] are already in the baseline" in capsys.readouterr().err
    assert main(["gate", str(first), "--baseline", str(path)]) in (0, 3)
    assert "the baseline holds 2 repeat(s) per document, pooled from 2 runs" in capsys.readouterr().out


def test_a_baseline_with_a_negative_alpha_or_a_zero_margin_is_refused_by_key(tmp_path):
    from evalharness.records.baseline import BaselineError

    for key, value in (("alpha", -0.1), ("margin", 0.0), ("max_accuracy_drop", -1)):
        path = tmp_path / f"{key}.json"
        path.write_text('{"created": "t", "matrix_name": "m", "harness_version": "0", "engine": "vllm", '
                        f'"thresholds": {{"{key}": {value}}}, "cells": {{}}}}')
        with pytest.raises(BaselineError, match=f"thresholds.{key}"):
            load_baseline(path)
