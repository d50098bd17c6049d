"""Drift and speed by context length on the real embedded engine (issue 39, phases/longcontext.py): the length
section's per-bucket long-context tasks and single-stream scenarios in three cells: the session's float32 engine as the
reference (behind the proxy: one engine start fewer), the demo's broken rope override (rope_theta 10) with its costly
phases asked for, and ngram speculative decoding. The broken cell is worse on the longest bucket's task; the
speculative cell's acceptance and speed against the reference are reported per bucket; the report has the section."""

from __future__ import annotations

import time

import pytest

from evalharness.analysis.numerics import bucket_of
from evalharness.records.cellfiles import load_scored
from evalharness.records.io import load_run
from tests.integration.conftest import behind_proxy, engine_processes, matrix_yaml, run_harness, served_by

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1800)]

BUCKETS = (256, 960)  # the tests' engines serve 1,024 tokens
DOCUMENTS = 12
ROPE = "{args: {--dtype: float32, --hf-overrides: {rope_parameters: {rope_theta: 10.0, rope_type: default}}}}"
NGRAM = ("{args: {--dtype: float32, --speculative-config: {method: ngram, num_speculative_tokens: 4, "
         "prompt_lookup_max: 4, prompt_lookup_min: 2}}}")


@pytest.fixture(scope="module")
def length_run(engine, shared_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("length")
    cells = {"ref": served_by(shared_engine), "rope": ROPE, "ngram": NGRAM}
    (folder / "matrix.yaml").write_text(matrix_yaml(engine, cells, command=behind_proxy(engine), extra=(
        "reference: {cell: ref}\n"
        # no probes: nothing here reads them, and the rope cell they call garbage would need every phase run anyway
        "probes: {enabled: false}\n"
        "quality: {tasks: [eh_copy], limit: 4, concurrency: 8, full_quality: true}\n"
        # watch_host false: the ref cell's answers come from the session's engine, not the harness's child
        "throughput: {watch_host: false, scenarios: [{name: single, concurrency: 1, input_len: 32, output_len: 8, "
        "requests: 1}]}\n"
        f"length: {{enabled: true, buckets: [{BUCKETS[0]}, {BUCKETS[1]}], documents: {DOCUMENTS}, speed_requests: 1, "
        "speed_output_len: 24, speed_repeats: 2, numerics: 1}\n")))
    begin = time.monotonic()
    proc = run_harness("run", "--matrix", str(folder / "matrix.yaml"), "--out", str(folder / "out"), timeout=1500)
    print(f"length run: {time.monotonic() - begin:.0f}s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert engine_processes() == []
    return folder / "out"


def _context_ids(out) -> list[str]:
    return [s.id for s in load_scored(out / "cells" / "cell-ref" / "contexts.jsonl")]


def test_each_bucket_is_a_task_and_a_scenario_in_every_cell(length_run):
    run = load_run(length_run)
    for cid in ("cell-ref", "cell-rope", "cell-ngram"):
        cell = run.cells[cid]
        tasks = {t.task: t for t in cell.quality}
        scenarios = {s.name: s for s in cell.throughput}
        for bucket in BUCKETS:
            score = tasks[f"eh_long_{bucket}"]
            assert score.error is None and score.n == DOCUMENTS, (cid, score.error)
            scenario = scenarios[f"length-{bucket}"]
            assert scenario.completed >= 2 and scenario.ttft_s.p50 is not None, (cid, scenario)
            # the documents fill their bucket by the model's own tokenizer: the engine counted about as many
            mean_tokens = scenario.prompt_tokens / scenario.completed
            assert 0.9 * bucket <= mean_tokens <= bucket, (cid, bucket, mean_tokens)
    # the same documents in every cell: the data the run wrote once, and every cell paired on all of them
    for cid in ("cell-rope", "cell-ngram"):
        drift = {t.task: t for t in run.cells[cid].drift.tasks}
        assert all(drift[f"eh_long_{b}"].paired == DOCUMENTS for b in BUCKETS)
    # longer prompts take longer to prefill on the reference
    ref = {s.name: s for s in run.cells["cell-ref"].throughput}
    assert ref[f"length-{BUCKETS[1]}"].ttft_s.p50 > ref[f"length-{BUCKETS[0]}"].ttft_s.p50


def test_the_broken_rope_is_worse_on_the_longest_bucket(length_run):
    run = load_run(length_run)
    ref = {t.task: t for t in run.cells["cell-ref"].quality}
    longest = f"eh_long_{BUCKETS[1]}"
    print("reference:", {b: ref[f'eh_long_{b}'].value for b in BUCKETS})
    drift = {t.task: t for t in run.cells["cell-rope"].drift.tasks}[longest]
    print("rope on the longest bucket:", drift.reference, drift.cell, drift.delta, drift.outcome, drift.p_worse_adjusted)
    assert drift.outcome == "worse", drift
    # the numerics check on each bucket's document, whole: the broken rope's divergence is far from the reference's
    numerics = run.cells["cell-rope"].drift.numerics()
    assert sorted(numerics.by_bucket) == list(BUCKETS)
    longest_kl = numerics.by_bucket[BUCKETS[1]].forward
    assert longest_kl.available and longest_kl.contexts == 1 and longest_kl.estimate > 0.5, longest_kl
    ids = _context_ids(length_run)
    assert sorted(b for c in ids if (b := bucket_of(c)) is not None) == list(BUCKETS)  # one document each, whole
    assert numerics.forward.contexts == sum(1 for c in ids if bucket_of(c) is None)  # the headline leaves them out
    report = (length_run / "report.md").read_text()
    section = report[report.index("## By length"):]
    section = section[:section.index("\n## ", 1)]
    assert "`cell-rope`" in section and "worse" in section


def test_speculation_is_reported_per_bucket(length_run):
    run = load_run(length_run)
    ngram = {s.name: s for s in run.cells["cell-ngram"].throughput}
    for bucket in BUCKETS:
        acceptance = ngram[f"length-{bucket}"].engine.get("spec_mean_acceptance_length")
        print(f"ngram at {bucket}: acceptance {acceptance}")
        assert acceptance is not None and acceptance >= 1.0
    report = (length_run / "report.md").read_text()
    section = report[report.index("## By length"):]
    section = section[:section.index("\n## ", 1)]
    rows = [line for line in section.splitlines() if line.startswith("| `cell-ngram`")]
    assert len(rows) == len(BUCKETS) and all(row.rstrip(" |").split("|")[-1].strip() for row in rows)
    assert "`cell-ngram`:" in section  # where its verdicts hold, and where speculation stops paying
