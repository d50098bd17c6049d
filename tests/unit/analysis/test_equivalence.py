"""Decision-grade accuracy verdicts (issue 23): each test is named after a finding of the review and failed before
the change. The statistics are checked against hand cases and small simulations; the whole-run false-alarm rate and
power at the sm120 matrix's sizes are in test_gate_statistics.py and benchmarks/gate_false_alarms.py."""

import json
from pathlib import Path

import numpy as np
import pytest

from evalharness.analysis.drift import refresh_drift, task_evidence
from evalharness.analysis.equivalence import decide, gate_outcome, margin_for
from evalharness.analysis.gate import GateError, make_baseline
from evalharness.analysis.pareto import ParetoPoint, pareto_front
from evalharness.analysis.secondary import secondary_changes
from evalharness.analysis.stats import benjamini_hochberg, holm, log_ratio_interval, mcnemar_exact, paired_evidence
from evalharness.cli import main
from evalharness.phases import quality
from evalharness.records.baseline import Thresholds
from evalharness.records.io import save_run
from evalharness.records.measures import Percentiles, RepeatScore, ScenarioResult, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.report import render_markdown
from evalharness.analysis.drift import apply_decision
from evalharness.analysis.equivalence import p_equivalent, samples_to_settle
from evalharness.analysis.sequential import final_levels
from evalharness.analysis.stats import PairedEvidence
from evalharness.records.drift import TaskDrift
from evalharness.render.drift import drift_section


def _flips(n: int, lost: int, gained: int) -> tuple[list[float], list[float]]:
    """Reference and cell of n documents: `lost` right->wrong, `gained` wrong->right, the rest right on both."""
    ref = [1.0] * lost + [0.0] * gained + [1.0] * (n - lost - gained)
    cell = [0.0] * lost + [1.0] * gained + [1.0] * (n - lost - gained)
    return ref, cell


def test_worse_means_the_drop_is_credibly_beyond_the_margin_not_merely_above_zero():
    # 12 lost, 2 gained of 400: a drop of 0.025, "credible" against zero (exact McNemar p = 0.013), which the old
    # gate reported as "drop 0.025 exceeds 0.02 and is credible"; whether it exceeds 0.02 is another question
    evidence = paired_evidence(*_flips(400, 12, 2))
    assert evidence.estimate == pytest.approx(0.025) and mcnemar_exact(12, 2) < 0.05
    decision = decide(evidence, margin=0.02, alpha=0.05, p_worse_adjusted=evidence.p_above(0.02))
    assert decision.outcome == "inconclusive" and decision.drop_low < 0.02 < decision.drop_high
    assert gate_outcome([decision]) == "inconclusive"
    # a drop whose lower bound clears the margin is worse
    big = paired_evidence(*_flips(400, 40, 2))
    assert decide(big, 0.02, 0.05, big.p_above(0.02)).outcome == "worse"


def test_interval_agrees_with_mcnemar_on_4_right_to_wrong_0_wrong_to_right_of_60():
    evidence = paired_evidence(*_flips(60, 4, 0))
    low, high = evidence.interval(0.95)
    assert mcnemar_exact(4, 0) == pytest.approx(0.125)
    assert low < 0 < high and evidence.p_no_difference() > 0.05  # the old bootstrap interval excluded 0 here
    # and where the exact test calls a change, so do the interval and the score test
    strong = paired_evidence(*_flips(60, 9, 0))
    assert mcnemar_exact(9, 0) < 0.01 and strong.interval(0.95)[0] > 0 and strong.p_no_difference() < 0.05


def test_interval_is_never_zero_width_when_nothing_flips():
    evidence = paired_evidence(*_flips(200, 0, 0))
    low, high = evidence.interval(0.9)
    assert low < -0.01 and high > 0.01  # the bootstrap gave [0, 0]: certainty from 200 documents
    # per-document means that agree exactly (repeats alike on both sides): no spread is not certainty either
    same = [0.5, 1.0, 0.0, 0.5] * 50
    low, high = paired_evidence(same, same).interval(0.9)
    assert low < -0.01 and high > 0.01


def _write(run_dir: Path, rel: str, rows: list[dict]) -> str:
    path = run_dir / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rel


def test_instruction_level_metric_is_pooled_over_instructions_as_lm_eval_pools_it(tmp_path):
    rows = [{"doc_id": 0, "doc_hash": "a", "filter": "none", "metrics": {"inst_level_strict_acc": [True]}},
            {"doc_id": 1, "doc_hash": "b", "filter": "none", "metrics": {"inst_level_strict_acc": [False] * 3}}]
    rel = _write(tmp_path, "ref.jsonl", rows)
    score = TaskScore(task="ifeval", version=4.0, metric="inst_level_strict_acc,none", samples=rel,
                      aggregation="agg_inst_level_acc")
    better = [rows[0], {**rows[1], "metrics": {"inst_level_strict_acc": [True, True, False]}}]
    cell = score.model_copy(update={"samples": _write(tmp_path, "cell.jsonl", better)})
    drift, evidence = task_evidence("ifeval", score, cell, tmp_path)
    assert drift.reference == pytest.approx(0.25)  # 1 of 4 instructions, not the documents' mean 0.5
    assert drift.cell == pytest.approx(0.75) and drift.delta == pytest.approx(0.5)  # 2 more of the 4 instructions
    assert drift.pooled_instructions and evidence.method == "t"


def test_holm_and_benjamini_hochberg_agree_with_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = list(np.random.default_rng(1).random(40) ** 3) + [0.5, 0.5, 1.0]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert benjamini_hochberg(p) == pytest.approx(list(multipletests(p, method="fdr_bh")[1]))


def test_corpus_level_metric_is_refused_naming_task_and_metric(tmp_path, capsys):
    rows = [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "metrics": {"f1": [1, i % 2]}} for i in range(10)]
    rel = _write(tmp_path, "cells/ref/quality/squad/samples.jsonl", rows)
    score = TaskScore(task="squad", version=1.0, metric="f1,none", samples=rel, aggregation="f1")
    drift, evidence = task_evidence("squad", score, score, tmp_path)
    assert evidence is None and not drift.comparable and "squad" in drift.reason and "f1" in drift.reason
    run = _run_with(tmp_path, {"ref": [score]})
    with pytest.raises(GateError, match="squad.*f1"):
        make_baseline(run, tmp_path, None, Thresholds())
    assert main(["baseline", "save", str(tmp_path), "-o", str(tmp_path / "b.json")]) == 2
    assert "metric f1" in capsys.readouterr().err


def test_lower_is_better_metric_improvement_is_not_a_drop():
    # a perplexity-like metric: the cell is lower (better) on every document
    ref = [10.0 + i % 3 for i in range(50)]
    cell = [v - 1.0 for v in ref]
    evidence = paired_evidence(ref, cell, higher_is_better=False)
    assert evidence.estimate == pytest.approx(-1.0)  # a negative drop: an improvement
    assert decide(evidence, 0.5, 0.05, evidence.p_above(0.5)).outcome != "worse"
    assert paired_evidence(ref, cell).estimate == pytest.approx(1.0)  # read as higher-is-better it would be a drop


def _scores(run_dir: Path, cid: str, tasks: dict[str, list[float]], repeats: dict[str, list[list[float]]] | None = None,
            seed: int = 1234) -> list[TaskScore]:
    out = []
    for task, values in tasks.items():
        def rows(vals):
            return [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "metrics": {"acc": v}} for i, vals_i in
                    enumerate(vals) for v in [vals_i]]
        score = TaskScore(task=task, version=1.0, metric="acc,none", value=float(np.mean(values)), seed=seed,
                          samples=_write(run_dir, f"cells/{cid}/quality/{task}/samples.jsonl", rows(values)))
        for k, more in enumerate((repeats or {}).get(task, []), start=1):
            score.repeats.append(RepeatScore(repeat=k, seed=seed + k, value=float(np.mean(more)), samples=_write(
                run_dir, f"cells/{cid}/quality/{task}/repeat-{k}/samples.jsonl", rows(more))))
        out.append(score)
    return out


def _run_with(run_dir: Path, cells: dict[str, list[TaskScore]], gate: dict | None = None,
              tok_s: dict[str, float] | None = None) -> RunResult:
    p = Percentiles()
    results = {cid: CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status="ok", phase="done",
                               quality=scores, started_at="t", finished_at="t", duration_s=1,
                               throughput=[ScenarioResult(name="single", concurrency=1, input_len=8, output_len=8,
                                                          requests=1, completed=1, duration_s=1, output_tokens=8,
                                                          output_tok_s=(tok_s or {}).get(cid, 10.0),
                                                          # three repeats 1% apart: the speed rule needs a noise
                                                          repeat_tok_s=[(tok_s or {}).get(cid, 10.0) * f
                                                                        for f in (0.99, 1.0, 1.01)],
                                                          request_decode_tok_s=p, ttft_s=p, tpot_s=p, itl_s=p, e2e_s=p)])
               for cid, scores in cells.items()}
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   matrix={"gate": gate or {}, "throughput": {"scenarios": [{"name": "single", "concurrency": 1}]}})
    run = RunResult(meta=meta, reference=next(iter(cells)), cell_order=list(cells), cells=results, complete=True)
    save_run(run, run_dir)
    return run


def test_pooled_delta_weights_tasks_equally_not_by_document_count(tmp_path):
    big = [1.0] * 800 + [0.0] * 200
    small = [1.0] * 40 + [0.0] * 10
    worse_small = [0.0] * 5 + [1.0] * 35 + [0.0] * 10  # -0.1 on the small task, nothing on the big one
    run = _run_with(tmp_path, {"ref": _scores(tmp_path, "ref", {"big": big, "small": small}),
                               "cell": _scores(tmp_path, "cell", {"big": big, "small": worse_small})})
    refresh_drift(run, tmp_path)
    assert run.cells["cell"].drift.accuracy_delta == pytest.approx(-0.05)  # by documents it would be -0.0048


def test_noise_improvement_never_dominates_the_reference():
    # the cell is one point better by its point estimate, equivalent within the margin, and as fast
    ref = ParetoPoint(cell="ref", throughput=10.0, drift=0.0, rates=[9.8, 10.0, 10.2], verdict="reference")
    lucky = ParetoPoint(cell="lucky", throughput=10.1, drift=-0.01, rates=[9.9, 10.1, 10.3], verdict="equivalent")
    pareto_front([ref, lucky])
    assert ref.on_front and lucky.on_front and not ref.dominated_by
    # an inconclusive cell as fast as the reference is dominated by it; a worse one faster beyond the noise is not
    unsure = ParetoPoint(cell="unsure", throughput=10.0, drift=-0.02, rates=[9.9, 10.0, 10.1], verdict="inconclusive")
    fast = ParetoPoint(cell="fast", throughput=20.0, drift=0.3, rates=[19.0, 20.0, 21.0], verdict="worse")
    pareto_front([ref, unsure, fast])
    assert unsure.dominated_by == ["ref"] and fast.on_front


def test_each_repeat_sends_its_own_seed_and_keeps_its_own_folder(tmp_path, monkeypatch):
    calls = []

    def fake_run_task(task, spec, task_dir, run_dir, alive, retries, timeout_s):
        calls.append((task, spec["seed"], task_dir.relative_to(tmp_path)))
        return TaskScore(task=task, seed=spec["seed"], samples=f"{task_dir.name}/samples.jsonl", value=1.0)

    monkeypatch.setattr(quality, "run_task", fake_run_task)
    done: list[TaskScore] = []
    setup = quality.TaskSetup(base_url="http://x/v1", model="m", include_path=None, include_defaults=False,
                              api="completions", tokenizer="none", request_timeout_s=1, task_timeout_s=1, retries=0,
                              seed=1234)
    quality.run_quality(["a", "b"], setup, tmp_path, tmp_path, lambda: True, concurrency=1, limit=None, done=done,
                        repeats=lambda task: 3 if task == "a" else 1)
    assert calls == [("a", 1234, Path("quality/a")), ("b", 1234, Path("quality/b")),
                     ("a", 1235, Path("quality/a/repeat-1")), ("a", 1236, Path("quality/a/repeat-2"))]
    assert [t.task for t in done] == ["a", "b"] and [r.seed for r in done[0].repeats] == [1235, 1236]
    # the worker hands the seed to lm-eval's client, which sends it with every request
    from evalharness.phases._lmeval_models import RecordingCompletions

    client = RecordingCompletions(base_url="http://127.0.0.1:9/v1/completions", model="m", tokenizer_backend=None,
                                  seed=1235)
    assert client._create_payload(["2 + 2 ="], generate=True, gen_kwargs={"until": ["\n"]}, seed=client._seed)[
        "seed"] == 1235


def test_the_report_shows_the_reference_a_a_row_and_its_within_document_variance(tmp_path):
    rng = np.random.default_rng(3)
    draws = (rng.random((3, 200)) < 0.8).astype(float)
    scores = _scores(tmp_path, "ref", {"t": list(draws[0])}, {"t": [list(draws[1]), list(draws[2])]})
    cell = _scores(tmp_path, "cell", {"t": list((rng.random(200) < 0.8).astype(float))})
    run = _run_with(tmp_path, {"ref": scores, "cell": cell}, gate={"margin": 0.1})
    refresh_drift(run, tmp_path)
    [noise] = run.noise
    assert noise.repeats == 3 and noise.seeds_a == [1234, 1236] and noise.seeds_b == [1235]
    assert 0.1 < noise.within_doc_variance < 0.2 and noise.aa.paired == 200 and noise.aa.outcome
    text = render_markdown(run)
    assert "`ref` (A/A within one launch: seeds 1234,1236 vs 1235)" in text and "Within-document variance" in text
    drift = run.cells["cell"].drift.tasks[0]
    assert drift.repeats == (3, 1) and drift.method == "t" and drift.margin == 0.1


def test_baseline_is_the_reference_averaged_over_its_repeats(tmp_path):
    scores = _scores(tmp_path, "ref", {"t": [1.0, 0.0, 1.0, 1.0]}, {"t": [[1.0, 1.0, 0.0, 1.0]]})
    run = _run_with(tmp_path, {"ref": scores})
    refresh_drift(run, tmp_path)
    task = make_baseline(run, tmp_path, None, Thresholds()).cells["ref"].tasks["t"]
    assert list(task.correct.values()) == [1.0, 0.5, 0.5, 1.0] and task.repeats == 2 and task.seeds == [1234, 1235]
    assert task.within_doc_variance == pytest.approx(0.25)  # two documents of variance 0.5, two of 0


def test_compare_controls_false_discoveries_across_cells():
    # 24 unchanged cells (independent draws of one engine, 200 documents at 0.8, consistency 0.5) against one base:
    # with no adjustment about 5% of cells come out "changed"; with Holm over tasks and BH over cells, a run calls
    # any cell changed in at most alpha of the runs (under the full null, FDR control is family-wise control)
    rng = np.random.default_rng(11)
    runs_with_a_change = 0
    raw_changed = 0
    trials = 150
    for _ in range(trials):
        p = rng.beta(0.8, 0.2, size=200)
        base = (rng.random(200) < p).astype(float)
        pvals = [paired_evidence(base, (rng.random(200) < p).astype(float)).p_no_difference() for _ in range(24)]
        raw_changed += sum(v < 0.05 for v in pvals)
        runs_with_a_change += any(v < 0.05 for v in benjamini_hochberg([holm([v])[0] for v in pvals]))
    assert runs_with_a_change / trials <= 0.08  # 0.05 plus two binomial standard errors at 150 runs
    assert raw_changed / (trials * 24) > 0.01  # the unadjusted test does call cells changed: the control matters


def _reasoning_rows(lengths: list[int], truncated: list[bool]) -> list[dict]:
    return [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "metrics": {"acc": 1.0}, "answer": "42",
             "finish_reason": "length" if cut else "stop", "reasoning": "x" * n}
            for i, (n, cut) in enumerate(zip(lengths, truncated))]


def test_two_draws_of_one_sampled_configuration_do_not_differ_in_reasoning_length_or_truncation(tmp_path):
    rng = np.random.default_rng(5)
    typical = rng.integers(200, 2000, size=150)

    def draw(scale=1.0):
        return [int(t * scale * rng.lognormal(0, 0.3)) for t in typical], list(rng.random(150) < 0.05)

    for name, (lengths, cut) in {"a": draw(), "b": draw(), "long": draw(2.0)}.items():
        _write(tmp_path, f"{name}.jsonl", _reasoning_rows(lengths, cut))
    score = {n: TaskScore(task="gsm8k", samples=f"{n}.jsonl") for n in ("a", "b", "long")}
    same = secondary_changes(score["a"], tmp_path, score["b"], tmp_path, 0.05)
    assert {c.field for c in same} == {"truncated_share", "empty_share", "stop_string_share", "reasoning_chars"}
    assert not any(c.changed for c in same)  # as floats they all differ: the old compare said "differs"
    longer = secondary_changes(score["a"], tmp_path, score["long"], tmp_path, 0.05)
    assert [c.field for c in longer if c.changed] == ["reasoning_chars"]


def test_throughput_gate_passes_a_same_code_rerun_that_welch_called_slower(tmp_path):
    # the project's own rerun: 29.2-29.5 tok/s against 28.1-28.5 (Welch p = 0.0013 failed it) is within the floor
    from evalharness.analysis.gate import _throughput_violations
    from evalharness.records.baseline import BaselineCell

    p = Percentiles()
    run = ScenarioResult(name="single", concurrency=1, input_len=8, output_len=8, requests=3, completed=3,
                         duration_s=1, output_tokens=8, output_tok_s=28.3, request_decode_tok_s=p, ttft_s=p, tpot_s=p,
                         itl_s=p, e2e_s=p, repeat_tok_s=[28.1, 28.3, 28.5])
    base = BaselineCell(status="ok", throughput={"single": 29.33}, throughput_repeats={"single": [29.2, 29.3, 29.5]})
    assert _throughput_violations("c", [run], base, Thresholds(min_throughput_ratio=1.0)) == ([], [])
    slow = run.model_copy(update={"output_tok_s": 20.0, "repeat_tok_s": [19.8, 20.0, 20.2]})
    assert len(_throughput_violations("c", [slow], base, Thresholds(min_throughput_ratio=1.0))[0]) == 1


def test_log_ratio_interval_covers_about_95_percent_with_3_against_3_repeats():
    rng = np.random.default_rng(2)
    covered = 0
    trials = 2000
    for _ in range(trials):
        before = 30.0 * rng.lognormal(0, 0.03, size=3)
        after = 27.0 * rng.lognormal(0, 0.03, size=3)
        _, low, high = log_ratio_interval(before, after)
        covered += low <= 0.9 <= high
    assert covered / trials >= 0.93  # the percentile bootstrap covered about 80%


def test_gate_writes_json_and_exits_3_when_inconclusive(tmp_path, capsys):
    base_dir, run_dir = tmp_path / "base", tmp_path / "run"
    base_run = _run_with(base_dir, {"ref": _scores(base_dir, "ref", {"t": [1.0] * 16 + [0.0] * 4})})
    assert main(["baseline", "save", str(base_dir), "-o", str(tmp_path / "b.json")]) == 0
    _run_with(run_dir, {"ref": _scores(run_dir, "ref", {"t": [1.0] * 16 + [0.0] * 4})})
    assert main(["gate", str(run_dir), "--baseline", str(tmp_path / "b.json"), "--json", str(tmp_path / "g.json")]) == 3
    out = capsys.readouterr().out
    assert "gate: INCONCLUSIVE" in out and "samples would settle it" in out
    verdict = json.loads((tmp_path / "g.json").read_text())
    assert verdict["outcome"] == "inconclusive" and verdict["cells"][0]["tasks"][0]["outcome"] == "inconclusive"
    assert verdict["cells"][0]["tasks"][0]["drop_high"] > 0.05
    del base_run


def test_margin_per_task_with_a_default():
    gate = {"margin": {"gpqa": 0.05, "default": 0.02}, "max_accuracy_drop": 0.3}
    assert margin_for("gpqa", gate) == 0.05 and margin_for("gsm8k", gate) == 0.02
    assert margin_for("x", {"max_accuracy_drop": 0.03}) == 0.03 and margin_for("x", {}) == 0.05


def test_intervals_carry_the_confidence_they_were_decided_at(tmp_path):
    """A task that stopped at the third of four default looks was decided at the equivalence level that look spent
    (0.0094): its interval is 98.1%, not the 90% the header printed."""
    evidence = paired_evidence([1.0] * 150 + [0.0] * 50, [1.0] * 150 + [0.0] * 50)
    drift = TaskDrift(task="t")
    level = final_levels(0.05, [1, 2, 4, 8], 4).equivalent
    apply_decision(drift, decide(evidence, 0.05, level, evidence.p_above(0.05)), 0.05)
    assert drift.confidence == pytest.approx(1 - 2 * level) and drift.confidence > 0.98
    assert drift.ci_high - drift.ci_low > 2 * evidence.bound(0.95, "upper")  # wider than the 90% one
    values = [1.0] * 150 + [0.0] * 50
    run = _run_with(tmp_path, {"ref": _scores(tmp_path, "ref", {"t": values}),
                               "c": _scores(tmp_path, "c", {"t": values})}, gate={"margin": 0.05})
    refresh_drift(run, tmp_path)
    text = "\n".join(drift_section(run))
    assert "Δ [90%]" not in text and "Δ [interval, confidence]" in text and " 90%" in text


def test_would_settle_it_settles_it_four_times_in_five_counting_both_sides():
    """The old factor put the expected bound on the margin: it settled about half the time. Simulated here: means over
    repeats (the t-test over documents), a true drop of 0.01 against a margin of 0.05, inconclusive at 100 documents;
    at the factor's documents it is called equivalent in about 80% of draws (the old factor: about 50%)."""
    rng = np.random.default_rng(7)
    n, spread, drop, margin = 100, 0.4, 0.01, 0.05

    def draw(docs: int) -> PairedEvidence:
        base = rng.uniform(0.2, 0.8, docs)  # each document's own level: cancels in the pairing
        ref = base + rng.normal(0, spread / np.sqrt(2), docs)
        cell = base - drop + rng.normal(0, spread / np.sqrt(2), docs)
        return paired_evidence(ref, cell)

    present = PairedEvidence(method="t", n=n, estimate=drop, se=spread / np.sqrt(n), df=n - 1)
    assert decide(present, margin, 0.05, 1.0).outcome == "inconclusive"
    factor = samples_to_settle(present, margin, 0.05)
    assert factor is not None and factor > 1
    settled = np.mean([p_equivalent(draw(int(np.ceil(n * factor))), margin) < 0.05 for _ in range(400)])
    assert 0.72 <= settled <= 0.88, (factor, settled)
