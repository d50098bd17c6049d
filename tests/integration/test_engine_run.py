"""`evalharness run` end to end on the real engine: a ready reference, a ready cell that differs, a cell that crashes
at startup, a cell that serves garbage; probes, quality scores, results, report, resume, and no engine process left."""

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from evalharness.records.io import load_run, save_run
from tests.headless import browser  # noqa: F401  (a fixture: headless chromium for report.html)
from tests.integration.conftest import HARNESS, REPO, engine_processes, matrix_yaml, run_harness

# safety limits only, about three times what the module takes on a 2-core machine: no outcome races them
pytestmark = [pytest.mark.engine, pytest.mark.timeout(3000)]


@pytest.fixture(scope="module")
def finished_run(engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("run")
    matrix = folder / "matrix.yaml"
    matrix.write_text(matrix_yaml(engine, {
        "f32": "{args: {--dtype: float32}}",
        "bf16": "{args: {--dtype: bfloat16}}",
        "fp8": "{args: {--dtype: bfloat16, --quantization: fp8}}",
        # float32: a machine without AVX-512 prefills bfloat16 about 4x slower (its probes 35 s, twice f32's)
        "rope": "{args: {--dtype: float32, --hf-overrides: {rope_parameters: {rope_theta: 10.0, rope_type: default}}}}",
    }, extra="quality: {tasks: [eh_copy, eh_choice], limit: 32, subset: first}\n"))  # eh_choice doc 31: bf16 flips it
    out = folder / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=2700)
    return matrix, out, proc


def test_every_cell_is_classified_and_nothing_is_left(finished_run):
    _, out, proc = finished_run
    assert proc.returncode == 0, proc.stderr
    assert engine_processes() == []
    results = json.loads((out / "results.json").read_text())
    assert results["complete"] is True and results["reference"] == "cell-f32"
    cells = results["cells"]
    for cid in ("cell-f32", "cell-bf16"):
        assert cells[cid]["status"] == "ok" and cells[cid]["phase"] == "done"
        assert cells[cid]["startup_s"] > 1
        assert cells[cid]["teardown"]["leftover"] == []
        assert cells[cid]["resolved"]["version"] == "0.32.0"
        assert (out / cells[cid]["log"]).read_text().count("Application startup complete") == 1
    assert cells["cell-f32"]["resolved"]["engine.dtype"] == "torch.float32"
    assert cells["cell-bf16"]["resolved"]["engine.dtype"] == "torch.bfloat16"
    crash = cells["cell-fp8"]
    assert crash["status"] == "crashed" and crash["phase"] == "startup"
    assert crash["crash"]["kind"] == "unsupported_kernel"
    assert "static_scaled_fp8_quant" in crash["reason"] and "static_scaled_fp8_quant" in crash["crash"]["excerpt"]
    assert results["meta"]["engine_version"] == "0.32.0" and results["meta"]["machine"]["cpus"] >= 1


def test_garbage_cell_is_caught_by_probes_and_skips_quality(finished_run):
    _, out, _ = finished_run
    cells = json.loads((out / "results.json").read_text())["cells"]
    rope = cells["cell-rope"]
    assert rope["status"] == "garbage" and rope["phase"] == "probes" and rope["quality"] == []
    assert rope["probes"]["flagged"] >= rope["probes"]["total"] / 2
    assert rope["probes"]["offending"] and rope["probes"]["offending"][0]["findings"]
    for cid in ("cell-f32", "cell-bf16"):
        probes = cells[cid]["probes"]
        assert probes["garbage"] is False and probes["total"] == 12 and probes["errors"] == 0
        scores = {t["task"]: t for t in cells[cid]["quality"]}
        assert scores["eh_copy"]["value"] >= 0.8 and scores["eh_copy"]["n"] == 32
        assert scores["eh_choice"]["value"] >= 0.6 and scores["eh_choice"]["metric"] == "acc,none"
        assert scores["eh_choice"]["version"] == 1.0
        samples = (out / scores["eh_choice"]["samples"]).read_text().splitlines()
        assert len(samples) == 32 and json.loads(samples[0])["doc_hash"]
    assert (out / "cells" / "cell-rope" / "probes.jsonl").exists()
    # it stops at its probes: no numerics check was paid for (probes.run_costly_phases_on_garbage would run it)
    assert "distribution" not in rope["measures"] and not (out / "cells" / "cell-rope" / "distribution.jsonl").exists()


def test_report_shows_status_reason_and_differences(finished_run):
    _, out, _ = finished_run
    report = (out / "report.md").read_text()
    assert "| `cell-f32` (reference) | ok | done |" in report
    assert "| `cell-fp8` | **crashed** | startup |" in report and "static\\_scaled\\_fp8\\_quant" in report
    assert "| engine.dtype | torch.float32 | torch.bfloat16 | asked |" in report
    assert "Kind **unsupported\\_kernel**" in report
    assert "## Garbage" in report and "### `cell-rope`" in report


def test_resume_skips_finished_cells_and_changes_nothing(finished_run):
    matrix, out, _ = finished_run
    before = json.loads((out / "results.json").read_text())["cells"]
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), "--resume", timeout=300)
    assert proc.returncode == 0, proc.stderr
    after = json.loads((out / "results.json").read_text())["cells"]
    assert after == before
    # without --resume the finished run is protected
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=300)
    assert proc.returncode == 2 and "--resume" in proc.stderr


def test_report_command_rerenders_the_same_report(finished_run):
    _, out, _ = finished_run
    before = (out / "report.md").read_text()
    (out / "report.md").unlink()
    proc = run_harness("report", str(out), timeout=300)
    assert proc.returncode == 0 and (out / "report.md").read_text() == before


PHASES = ("startup", "resolve", "probes", "distribution", "quality")


def _start(matrix, out, *extra):
    return subprocess.Popen([*HARNESS, "run", "--matrix", str(matrix), "--out", str(out), *extra], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _signal_in_phase(proc, cell_id, phase, sig, delay_s):
    """Wait for the harness to announce `cell_id: phase`, then send `sig` after `delay_s`; returns its output."""
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if f"{cell_id}: {phase} " in line:
            time.sleep(delay_s)
            proc.send_signal(sig)
            break
    lines += proc.stdout.read().splitlines(keepends=True)
    proc.wait(timeout=600)
    return "".join(lines)


def _same_outcome(resumed, uninterrupted):
    """A re-run cell against the uninterrupted run's: the same settings, outcome and measurements. Measured here:
    greedy answers of this CPU engine in bfloat16 depend on how requests were batched (one of 12 probe answers of
    the bf16 cell differed between two runs, its quality scores did not), so scores and KL divergence are compared
    within a tolerance and probe agreement not at all."""
    for key in ("status", "phase", "settings_hash", "args", "env"):
        assert resumed[key] == uninterrupted[key], key
    assert [a for a in resumed["argv"] if not a.isdigit()] == [a for a in uninterrupted["argv"] if not a.isdigit()]
    assert (resumed["crash"] or {}).get("kind") == (uninterrupted["crash"] or {}).get("kind")
    assert (resumed["probes"] or {}).get("garbage") == (uninterrupted["probes"] or {}).get("garbage")
    assert (resumed["probes"] or {}).get("total") == (uninterrupted["probes"] or {}).get("total")
    assert [(q["task"], q["n"]) for q in resumed["quality"]] == [(q["task"], q["n"]) for q in uninterrupted["quality"]]
    for mine, theirs in zip(resumed["quality"], uninterrupted["quality"]):
        assert mine["value"] == pytest.approx(theirs["value"], abs=0.1), mine["task"]
    if uninterrupted["drift"] and uninterrupted["drift"]["measures"].get("distribution"):
        mine, theirs = resumed["drift"]["measures"]["distribution"], uninterrupted["drift"]["measures"]["distribution"]
        assert mine["positions"] == theirs["positions"]
        if theirs["mean_kld"] is None:  # no positions: a garbage cell stops before the numerics check
            assert mine["mean_kld"] is None
        else:
            # bf16's greedy path itself moves with batching (CI 2026-12-04: the top token agreed at 0.943 of the
            # positions in one run and 0.969 in the other, mean KL 0.00064 against 0.00071): the figures must agree
            # as measurements of one thing, the forward estimates inside each other's 90% intervals
            assert mine["mean_kld"] == pytest.approx(theirs["mean_kld"], rel=0.25)
            if (mine.get("forward") or {}).get("available") and (theirs.get("forward") or {}).get("available"):
                assert theirs["forward"]["ci_low"] <= mine["forward"]["estimate"] <= theirs["forward"]["ci_high"]
                assert mine["forward"]["ci_low"] <= theirs["forward"]["estimate"] <= mine["forward"]["ci_high"]


def _as_after_its_reference(finished: Path, out: Path) -> None:
    """`out` as the finished run stood once its first cell, the reference, had finished: that cell's folder and
    record, nothing else. Serving the reference again would only repeat what the finished run measured (a cell's
    start and phases, about 100 s here)."""
    run = load_run(finished)
    shutil.copytree(finished / "cells" / run.reference, out / "cells" / run.reference)
    save_run(run.model_copy(update={"cells": {run.reference: run.cells[run.reference]}, "complete": False,
                                    "notes": [], "no_effect": [], "noise": []}), out)


def test_signals_at_random_phases_then_resume_reproduce_the_uninterrupted_run(finished_run, tmp_path):
    matrix, reference_out, _ = finished_run
    seed = int(os.environ.get("EH_FAULT_SEED") or time.time_ns() % 10**6)
    rng = random.Random(seed)
    print(f"EH_FAULT_SEED={seed}")  # shown on failure: rerun the same moments with it
    out = tmp_path / "out"
    _as_after_its_reference(reference_out, out)

    # SIGTERM, or SIGINT, while the second cell is in a random phase: torn down, saved, nothing left running
    # (interrupting a fresh run is test_engine_interrupt.py's; this one is a resumed run from its second cell on)
    sig = rng.choice([signal.SIGTERM, signal.SIGINT])
    phase = rng.choice(PHASES)
    log = _signal_in_phase(_start(matrix, out, "--resume"), "cell-bf16", phase, sig, rng.uniform(0, 2))
    assert f"interrupted ({sig.name})" in log, log[-2000:]
    assert engine_processes() == []
    saved = json.loads((out / "results.json").read_text())
    assert saved["interrupted"] is True and saved["complete"] is False and list(saved["cells"]) == ["cell-f32"]

    # SIGKILL while the third cell is in a random phase: nothing can be torn down, but the file is whole
    phase = rng.choice(PHASES[:3])  # the fp8 cell crashes at startup
    cell = "cell-rope" if phase != "startup" else "cell-fp8"
    log = _signal_in_phase(_start(matrix, out, "--resume"), cell, phase, signal.SIGKILL, rng.uniform(0, 2))
    saved = json.loads((out / "results.json").read_text())  # valid JSON: every save is atomic
    assert saved["complete"] is False and "cell-bf16" in saved["cells"]
    left_behind = engine_processes()

    # resume: it kills what the SIGKILLed harness left, skips finished cells and finishes the run
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), "--resume", timeout=2700)
    assert proc.returncode == 0, proc.stderr
    assert engine_processes() == []
    final = json.loads((out / "results.json").read_text())
    assert final["complete"] is True
    if left_behind:
        assert any("left running by an earlier harness" in note for note in final["notes"]), final["notes"]
    for cid, kept in saved["cells"].items():  # finished cells are skipped: what they measured is untouched
        now = final["cells"][cid]
        assert {k: v for k, v in now.items() if k != "drift"} == {k: v for k, v in kept.items() if k != "drift"}, cid
        # their drift is decided again with every cell: the worse-test is Holm-adjusted over the whole run's
        # comparisons, which grow as cells finish; the paired estimates themselves do not move
        if kept.get("drift"):
            estimates = lambda d: [(t["task"], t["paired"], t["delta"], t["right_to_wrong"], t["wrong_to_right"])
                                   for t in d["tasks"]]  # noqa: E731
            assert estimates(now["drift"]) == estimates(kept["drift"]), cid
    uninterrupted = json.loads((reference_out / "results.json").read_text())["cells"]
    assert sorted(final["cells"]) == sorted(uninterrupted)
    for cid, cell in final["cells"].items():
        _same_outcome(cell, uninterrupted[cid])


def test_report_html_of_the_real_run_draws_in_a_browser_with_its_flips(finished_run, browser):
    """The run wrote report.html beside report.md; headless chromium draws it from disk: every cell in the table,
    the garbage cell's probes with the detectors' evidence marked, and per task the documents the records say
    flipped (bf16 against f32), each with both answers. A screenshot is kept in .cache/test-artifacts/."""
    from evalharness.analysis.pairing import pair, side_scores
    from evalharness.records.io import load_run
    from tests.headless import open_page, screenshot

    _, out, _ = finished_run
    page = out / "report.html"
    assert page.stat().st_size > 100_000
    seconds = open_page(browser, page)
    screenshot(browser, "real-run.png")
    assert seconds < 10
    rows = browser.find_elements("css selector", "#cells-table tbody tr")
    assert [r.get_attribute("data-cell") for r in rows] == ["cell-f32", "cell-bf16", "cell-fp8", "cell-rope"]
    assert browser.find_elements("css selector", "#probes [data-probe] mark.finding")  # the garbage, marked
    run = load_run(out)
    ref, bf16 = run.cells["cell-f32"], run.cells["cell-bf16"]
    flipped = 0
    for index, score in enumerate(ref.quality):
        other = next(t for t in bf16.quality if t.task == score.task)
        expected = len(pair(side_scores(out, score).means, side_scores(out, other).means).flips())
        browser.execute_script("const c=document.getElementById('doc-cell'); c.value='cell-bf16';"
                               "c.dispatchEvent(new Event('change'));"
                               f"const t=document.getElementById('doc-task'); t.value='{index}';"
                               "t.dispatchEvent(new Event('change'));"
                               "const f=document.getElementById('doc-filter'); f.value='flips';"
                               "f.dispatchEvent(new Event('change'));")
        cards = browser.find_elements("css selector", "#documents-list article.doc")
        assert len(cards) == expected, score.task
        for card in cards:
            answers = card.find_elements("css selector", "pre.answer")
            assert len(answers) == 2 and all(a.text.strip() for a in answers)
        flipped += expected
        if expected:
            screenshot(browser, f"real-run-flips-{score.task}.png")
    if not flipped:  # reported, never passed silently: the assertions above held for zero documents
        pytest.skip("bf16 flipped no document of this run on this machine: the flip view was checked on zero "
                    "documents (tests/unit/render/test_html_report.py checks it on a run with flips)")
