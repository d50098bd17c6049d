"""Drift, Pareto and the gate on the real engine: a float32 reference and a genuinely degraded cell (a perturbed
rope_theta that still answers in words, so the probes pass it and only the quality tasks and distributions show the
damage). The reference passes the committed baseline of the demo matrix; the degraded cell fails it, readably. The
reference is the session's float32 engine behind a proxy without faults (conftest.served_by), one engine start
fewer; the degraded cell starts its own."""

import json

import pytest

from tests.integration.conftest import (REPO, behind_proxy, engine_processes, matrix_yaml, run_harness,
                                        served_by)

pytestmark = [pytest.mark.engine, pytest.mark.timeout(3000)]  # a safety limit, about 3x a 2-core machine's time

BASELINE = REPO / "baselines" / "cpu-smollm2.json"
BASELINE_CELL = "dtype-float32.spec-off.compile-eager.fault-none"
DEGRADED = "{args: {--dtype: float32, --hf-overrides: {rope_parameters: {rope_theta: 500.0, rope_type: default}}}}"


@pytest.fixture(scope="module")
def gated_run(engine, shared_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("gate")
    matrix = folder / "matrix.yaml"
    # the session's engine asked for two tokens an answer (the fault proxy's `cap`; eh_arithmetic's answers are 3-4)
    capped = json.loads(served_by(shared_engine))
    capped["env"]["EH_FAULTS"] = json.dumps({"rules": [{"match": {"has": ["max_tokens"]}, "action": "cap",
                                                        "max_tokens": 2}]})
    cells = {"ref": served_by(shared_engine), "degraded": DEGRADED, "capped": json.dumps(capped)}
    matrix.write_text(matrix_yaml(engine, cells, command=behind_proxy(engine), extra=(
        # sixteen-token probes: their agreement is counted, and what the degraded cell does shows in the tasks
        "probes: {max_tokens: 16}\n"
        # every document the baseline scored (each task's first 60, 240; the rows after them are the demo's second
        # stage's): the gate fails a run that covers fewer than the baseline scored (issue 13.3)
        # every cell every document, even the ones not faster than the reference (not screened): the gate is tested
        "quality: {tasks: [eh_capitals, eh_arithmetic, eh_copy, eh_choice], limit: 60, subset: first, "
        "full_quality: true}\n"
        # watch_host false: the ref cell's answers come from the session's engine, not the harness's child
        "throughput: {watch_host: false, scenarios: [{name: single, concurrency: 1, input_len: 64, output_len: 32, "
        "requests: 3}]}\n")))
    out = folder / "out"
    # gated as it runs (`run --baseline`): the reference against the committed baseline, the outcome in the report
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), "--baseline", str(BASELINE), "--cell",
                       f"cell-ref={BASELINE_CELL}", timeout=2700)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate: pass" in proc.stdout and "Gate: PASS against" in proc.stdout
    assert engine_processes() == []
    return out


def test_drift_is_measured_and_reported(gated_run):
    results = json.loads((gated_run / "results.json").read_text())
    degraded = results["cells"]["cell-degraded"]
    assert degraded["status"] == "ok", degraded["reason"]
    drift = degraded["drift"]
    assert drift["paired"] == 240 and drift["accuracy_delta"] < 0 and drift["ci_high"] < 0
    assert drift["right_to_wrong"] > drift["wrong_to_right"]
    numerics = drift["measures"]["distribution"]
    assert numerics["available"] and numerics["mean_kld"] > 0.05
    assert numerics["same_top_token"] < 0.95
    # the numerics check (issue 26): both directions, on each side's own samples, credibly above 0
    forward, reverse = numerics["forward"], numerics["reverse"]
    assert forward["available"] and forward["ci_low"] > 0.05, forward
    assert reverse["available"] and reverse["ci_low"] > 0.05 and reverse["own_samples_identical"] < reverse["contexts"]
    assert "## Numerics: per-token KL divergence" in (gated_run / "report.md").read_text()
    assert drift["agreement"]["total"] == 12
    report = (gated_run / "report.md").read_text()
    assert report.index("## Pareto") < report.index("## Cells")
    assert "| `cell-ref` | **yes** |" in report
    assert (gated_run / "pareto.png").stat().st_size > 10_000
    csv = (gated_run / "results.csv").read_text().splitlines()
    assert csv[0].startswith("cell,") and len(csv) == 4


def test_a_cell_that_stops_early_is_named_by_the_length_check(gated_run):
    """Issue 60, 3: the engine of `capped` writes two tokens an answer; the verdict box names it, with its
    tasks' and its throughput scenario's lengths in the report; the reference is never named."""
    results = json.loads((gated_run / "results.json").read_text())
    lengths = {x["task"]: x for x in results["cells"]["cell-capped"]["drift"]["lengths"]}
    assert results["cells"]["cell-capped"]["status"] == "ok", results["cells"]["cell-capped"]["reason"]
    assert lengths["throughput:single"]["outcome"] == "shorter" and lengths["throughput:single"]["cell"] <= 2
    assert any(x["outcome"] == "shorter" and x["high"] < 0.9 for x in lengths.values() if x["low"] is not None)
    box = [line for line in (gated_run / "summary.md").read_text().splitlines() if line.startswith("> ")]
    health = next(line for line in box if line.startswith("> Run:"))
    assert "answers credibly shorter than the reference's: `cell-capped`" in health, box
    assert "cell-ref" not in health
    assert "| `cell-capped` | throughput:single |" in (gated_run / "report.md").read_text()


def test_reference_passes_the_committed_baseline(gated_run):
    proc = run_harness("gate", str(gated_run), "--baseline", str(BASELINE), "--cell", f"cell-ref={BASELINE_CELL}",
                       timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate: pass" in proc.stdout


def test_degraded_cell_fails_the_committed_baseline_readably(gated_run):
    proc = run_harness("gate", str(gated_run), "--baseline", str(BASELINE), "--cell",
                       f"cell-degraded={BASELINE_CELL}", timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "gate: FAIL" in proc.stdout and "cell-degraded: task" in proc.stdout
    box = "\n".join(line for line in (gated_run / "summary.md").read_text().splitlines()
                    if line.startswith("> "))  # the verdict box, the pull request's comment
    assert "Gate: **FAIL** against" in box and "1 of 1 cell fail" in box, box
    assert "worse: the drop's lower bound is above the margin" in proc.stdout or "hard limit" in proc.stdout
