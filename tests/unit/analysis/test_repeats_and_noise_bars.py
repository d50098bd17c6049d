"""Issue 14: natural prompt sources, repeats and noise bars (report, Pareto, gate), per-phase time, the estimate."""

import json
import re
import time

import pytest

from evalharness.analysis.decision import decide
from evalharness.analysis.gate import check, make_baseline
from evalharness.analysis.pareto import ParetoPoint, faster, pareto_front
from evalharness.analysis.speed import Side
from evalharness.analysis.stats import log_ratio_interval
from evalharness.analysis.timing import estimate_line, estimate_total_s, grouped, outside_share
from evalharness.matrix.schema import Scenario
from evalharness.phases.throughput.prompts import (NATURAL_CORPUS, PromptSourceError, load_source,
                                                    synthetic_prompt)
from evalharness.records.baseline import Thresholds
from evalharness.records.measures import Percentiles, ScenarioResult, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.report import render_markdown
from evalharness.render.throughput import tok_s_text
from evalharness.runner.phaseclock import PhaseClock


# --- prompt sources -------------------------------------------------------------------------------------------------

def test_scenarios_default_to_natural_prompts_and_one_repeat():
    sc = Scenario(name="s", concurrency=1)
    assert sc.prompts == "natural" and sc.repeat_plan() == (1, 1)
    with pytest.raises(ValueError):
        Scenario(name="s", concurrency=1, repeats=0)


def test_the_shipped_corpus_is_natural_varied_text():
    source = load_source("natural")
    texts = source.texts
    assert source.natural and len(texts) >= 250 and len(set(texts)) == len(texts)
    words = [w for t in texts for w in t.split()]
    # natural text: a large vocabulary (random prompts draw from 30 words), sentences that end
    assert len(set(words)) > 1000 and sum(t.rstrip().endswith((".", "?", "!")) for t in texts) > 0.9 * len(texts)
    ids = [json.loads(line)["id"] for line in NATURAL_CORPUS.read_text().splitlines()]
    assert len(ids) == len(texts)


def test_prompt_sources_by_name(tmp_path):
    assert load_source("random").prompt(3, 8) == synthetic_prompt(8, 3) and len(synthetic_prompt(8, 3).split()) == 8
    capitals = load_source("task:eh_capitals")
    assert len(capitals.texts) == 159 and capitals.prompt(0, 1).endswith("Q: What is the capital of France?\nA:")
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "one"}\n\n{"text": "two"}\n')
    mine = load_source(str(path))
    assert mine.texts == ("one", "two") and mine.prompt(3, 100) == "two" and mine.name == str(path)


@pytest.mark.parametrize("spec,message", [
    ("task:nope", "no shipped task 'nope'"), ("prompts.txt", "expected natural, random, task:NAME"),
    ("/nonexistent/p.jsonl", "no such file"),
])
def test_bad_prompt_sources_are_named(spec, message):
    with pytest.raises(PromptSourceError, match=message):
        load_source(spec)


def test_a_prompt_file_with_a_bad_line_names_the_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "ok"}\n{"nope": 1}\n')
    with pytest.raises(PromptSourceError, match=r"p.jsonl:2: each line needs"):
        load_source(str(path))


# --- noise: Pareto, vs reference, gate ------------------------------------------------------------------------------

def test_faster_only_beyond_the_noise_and_the_floor():
    def quick(a, b):
        return faster(ParetoPoint(cell="a", throughput=sum(a) / len(a), drift=0, rates=list(a)),
                      ParetoPoint(cell="b", throughput=sum(b) / len(b), drift=0, rates=list(b)))

    assert not quick([12.0], [11.0])  # no repeats: no noise known, nothing is faster (the old rule said it was)
    assert not quick([10.0, 12.0, 14.0], [9.0, 11.0, 12.5])  # within the noise
    assert quick([14.0, 15.0, 16.0], [10.5, 11.0, 11.5])
    # credibly apart but only 3% faster: within the drift between cells measured minutes apart
    assert not quick([29.2, 29.3, 29.5], [28.1, 28.4, 28.5])
    assert quick([31.2, 31.3, 31.5], [28.1, 28.4, 28.5])


def test_a_cell_within_the_noise_is_not_on_the_front_by_speed_alone():
    ref = ParetoPoint(cell="ref", throughput=10.0, drift=0.0, rates=[9.0, 10.0, 11.0])
    # nominally 10% faster, but inside the reference's noise, and it drifts: the reference dominates it
    noisy = ParetoPoint(cell="noisy", throughput=11.0, drift=0.01, rates=[9.5, 11.0, 12.5])
    fast = ParetoPoint(cell="fast", throughput=20.0, drift=0.01, rates=[19.0, 20.0, 21.0])
    points = pareto_front([ref, noisy, fast])
    assert ref.on_front and fast.on_front and not noisy.on_front and noisy.dominated_by == ["ref", "fast"]
    # the same figures measured once: no noise known, no speed-up credited, the one with less drift dominates
    bare = pareto_front([ParetoPoint(cell="ref", throughput=10.0, drift=0.0),
                         ParetoPoint(cell="noisy", throughput=11.0, drift=0.01)])
    assert [p.on_front for p in bare] == [True, False] and points


def test_log_ratio_interval():
    ratio, low, high = log_ratio_interval([10.0, 10.1, 9.9], [8.0, 8.2, 7.9])
    assert high < 1 and low < ratio < high
    ratio, low, high = log_ratio_interval([10.0, 10.4, 9.6], [9.5, 11.0, 10.2])
    assert low < 1 < high
    _, _, high = log_ratio_interval([10.0], [8.0, 8.1, 7.9])  # one side repeated: its spread stands for both
    assert high < 1
    assert log_ratio_interval([1.0], [2.0]) is None and log_ratio_interval([0.0, 1.0], [2.0, 2.0]) is None


def _scenario(name="single", tok_s=10.0, repeats=(), prompts="natural", prompt_tokens=120, completed=3):
    p = Percentiles(mean=0.1, p50=0.1, p90=0.1, p99=0.1)
    return ScenarioResult(name=name, concurrency=1, input_len=128, output_len=64, requests=completed,
                          completed=completed, duration_s=10.0, output_tokens=64 * completed,
                          prompt_tokens=prompt_tokens, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p,
                          tpot_s=p, itl_s=p, e2e_s=p, prompts=prompts, repeat_tok_s=list(repeats))


def _cell(cid, scenarios, status="ok", duration=100.0, phases=None, quality=()):
    return CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status=status,
                      phase="done" if status == "ok" else "startup", throughput=scenarios, quality=list(quality),
                      phase_seconds=phases or {}, started_at="t", finished_at="t", duration_s=duration)


def _run(cells, order=None):
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   matrix={"throughput": {"scenarios": [{"name": "single", "concurrency": 1}]},
                           "report": {"throughput_scenario": "single"}})
    run = RunResult(meta=meta, reference=cells[0].id, cell_order=order or [c.id for c in cells],
                    cells={c.id: c for c in cells})
    run.decision = decide(run)  # decided, as every run is before it is rendered
    return run


def test_report_names_the_prompt_source_and_shows_the_range_over_repeats():
    """The unit-level render of a run with repeats (issue 14, done-when)."""
    ref = _cell("ref", [_scenario(tok_s=10.0, repeats=(9.0, 10.0, 11.0))])
    noisy = _cell("noisy", [_scenario(tok_s=10.5, repeats=(9.5, 10.5, 11.5))])
    spec = _cell("spec", [_scenario(tok_s=20.0, repeats=(19.0, 20.0, 21.0))])
    old = _cell("old", [_scenario(tok_s=12.0, prompts=None)])
    text = render_markdown(_run([ref, noisy, spec, old]))
    # the range over repeats is written min..max (a bracket is an interval, issue 57.5)
    assert "| `ref` | single | c=1 ×3 | natural, 40 tok | 3/3 | 10.0 (repeats 9.0..11.0) |" in text
    assert "| `old` | single | c=1 | random (not recorded), 40 tok | 3/3 | 12.0 |" in text
    # the speed rule's interval with its level beside its ends (a fixed design: 90%)
    assert "1.05x [90%: 0.89–1.25] undecided" in text and re.search(r"2\.01x \[90%: 1\.\d\d–2\.\d\d\] faster", text)
    assert "1.20x [90%: 0.86–1.69] undecided" in text  # measured once: the reference's spread stands for its noise
    assert "the mean of the repeats the speed rule kept" in text
    assert tok_s_text(10.5, Side((9.5, 10.5, 11.5))) == "10.5 (repeats 9.5..11.5)" and tok_s_text(10.5, None) == "10.5"


def test_report_says_when_throughput_was_measured_once():
    text = render_markdown(_run([_cell("ref", [_scenario()]), _cell("b", [_scenario(tok_s=12.0)])]))
    assert "measured once: no noise bar" in text and "| 1.20x undecided (measured once: no noise known) |" in text


def test_gate_throughput_uses_the_repeats_noise(tmp_path):
    def run_with(tok_s, repeats):
        run = _run([_cell("ref", [_scenario(tok_s=tok_s, repeats=repeats)])])
        run.meta.matrix["gate"] = {"min_throughput_ratio": 0.95}
        return run

    base = make_baseline(run_with(10.0, (9.8, 10.0, 10.2)), tmp_path, None, Thresholds())
    assert base.cells["ref"].throughput_repeats == {"single": [9.8, 10.0, 10.2]}
    # 9% below the baseline, under the fixed 0.95, but inside the run's noise: passes
    assert check(run_with(9.1, (8.2, 9.1, 10.0)), tmp_path, base) == []
    # 20% below, beyond the noise: fails, saying so
    [violation] = check(run_with(8.0, (7.9, 8.0, 8.1)), tmp_path, base)
    assert "0.80x the baseline's 10.0" in violation and "lies below 0.95x" in violation
    # the same figures with a baseline that spread 9-11 over its three repeats: a t interval on 2+2 degrees of
    # freedom cannot rule out the baseline's own noise, so the 20% drop is not called
    wide = make_baseline(run_with(10.0, (8.5, 10.0, 11.5)), tmp_path, None, Thresholds())
    assert check(run_with(8.0, (7.9, 8.0, 8.1)), tmp_path, wide) == []
    # no repeats on either side: no noise known, nothing fails on it (the old fixed tolerance failed 9% below)
    base_once = make_baseline(run_with(10.0, ()), tmp_path, None, Thresholds())
    assert base_once.cells["ref"].throughput_repeats == {}
    assert check(run_with(9.1, ()), tmp_path, base_once) == []


def test_old_baselines_and_runs_load_without_the_new_fields():
    from evalharness.records.baseline import BaselineCell

    assert BaselineCell(status="ok", throughput={"single": 1.0}).throughput_repeats == {}
    cell = CellResult.model_validate({"id": "a", "axes": {}, "settings_hash": "h", "args": {}, "env": {}, "argv": [],
                                      "status": "ok", "phase": "done", "started_at": "t", "finished_at": "t",
                                      "duration_s": 1.0, "throughput": [_scenario().model_dump(
                                          exclude={"prompts", "repeat_tok_s"})]})
    assert cell.phase_seconds == {} and cell.throughput[0].prompts is None and cell.throughput[0].tok_s_range() is None


# --- where the time went ----------------------------------------------------------------------------------------------

def test_phase_clock_adds_up_and_splits_quality_by_task(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    clock = PhaseClock()
    for name, at in [("startup", 0.0), ("resolve", 40.0), ("quality", 41.0), ("throughput:single", 100.0),
                     ("teardown", 150.0), (None, 152.0)]:
        now[0] = at
        clock.enter(name)
    tasks = [TaskScore(task="a", seconds=20.0), TaskScore(task="b", seconds=38.0)]
    assert clock.times(tasks) == {"startup": 40.0, "resolve": 1.0, "quality:a": 20.0, "quality:b": 38.0,
                                  "quality": 1.0, "throughput:single": 50.0, "teardown": 2.0}


def test_outside_share_and_the_estimate():
    phases = {"startup": 40.0, "resolve": 1.0, "probes": 4.0, "distribution": 5.0, "quality:a": 30.0,
              "throughput:single": 10.0, "teardown": 5.0}
    ref = _cell("ref", [], duration=100.0, phases=phases)
    assert grouped(ref)["quality"] == 30.0 and grouped(ref)["other"] == pytest.approx(5.0)
    assert outside_share(ref) == pytest.approx(0.51)  # 40 + 1 + 5 + 5 of 100 s
    assert outside_share(_cell("old", [])) is None
    run = _run([ref], order=["ref", "b", "c"])
    assert estimate_total_s(run) == 300.0 and "whole matrix about 5 min" in estimate_line(run)
    run.cells["b"] = _cell("b", [], status="crashed", duration=40.0)
    assert estimate_total_s(run) == 240.0
    text = render_markdown(run)
    assert "## Where the time went" in text and "| `ref` | ok | 100 | 40 | 1 | 4 | 5 | 30 | 10 | 5 | 5 | 51% |" in text
    assert "3 cells × its 100 s = 5.0 min" in text
    not_yet = _run([_cell("x", [])], order=["x", "y"])
    not_yet.reference = "y"
    assert estimate_total_s(not_yet) is None and estimate_line(not_yet) is None


def test_a_measures_phase_is_the_engines_work_and_has_its_column_where_it_ran():
    """The demo's prefix-cache and calls checks (2026-12-07) took 45 of the reference's 325 s, and the table showed
    neither: their seconds were missing from the row and counted as outside the engine's work."""
    phases = {"startup": 40.0, "resolve": 1.0, "probes": 4.0, "distribution": 5.0, "prefix_cache": 12.0,
              "calls_modes": 8.0, "quality:a": 20.0, "throughput:single": 5.0, "teardown": 5.0}
    ref = _cell("ref", [], duration=100.0, phases=phases)
    assert outside_share(ref) == pytest.approx(0.46)  # startup 40, resolve 1, teardown 5 of 100 s: the checks are work
    text = render_markdown(_run([ref], order=["ref"]))
    header = next(line for line in text.splitlines() if line.startswith("| cell | status | total s |"))
    assert "prefix_cache" in header and "calls_modes" in header and "batching" not in header  # only what ran
    assert "| `ref` | ok | 100 | 40 | 1 | 4 | 5 | 12 | 8 | 20 | 5 | 5 | 0 | 46% |" in text
