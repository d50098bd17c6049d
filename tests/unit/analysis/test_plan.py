"""The cost of a decision (issue 24, the parts built): `evalharness plan` from stated defaults and from a previous
run's measured variance, the budget check of `run`, and the recommendation line of the report."""

import json
import math

import numpy as np
import pytest

from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.plan import make_plan
from evalharness.analysis.recommend import recommend
from evalharness.cli import main
from evalharness.records.measures import TaskScore
from evalharness.render.report import render_markdown, summary_markdown
from tests.unit.analysis.test_equivalence import _run_with, _scores

SM120_LIKE = {"name": "m", "quality": {"tasks": ["gpqa"], "limit": 198, "max_gen_toks": 32768, "repeats": 1,
                                       "reference_repeats": 4}, "gate": {"margin": 0.02}}


def test_plan_from_stated_defaults_gives_repeats_chains_and_hours():
    plan = make_plan(SM120_LIKE, cells=24, tok_s=2000.0)
    [gpqa] = plan.tasks
    assert "stated defaults" in gpqa.source and (gpqa.accuracy, gpqa.consistency) == (0.8, 0.5)
    assert gpqa.cell_repeats > 10 and gpqa.reference_repeats > 3 * gpqa.cell_repeats  # about sqrt(23) times
    assert gpqa.chains == 198 * (23 * gpqa.cell_repeats + gpqa.reference_repeats)
    assert gpqa.hours == pytest.approx(gpqa.chains * 32768 / 2000 / 3600) and gpqa.tokens_per_answer_is_bound
    assert gpqa.configured == (1, 4) and gpqa.configured_margin > 0.05  # what the matrix as written certifies


def test_plan_says_what_a_budget_reaches_and_when_a_margin_is_out_of_reach():
    plan = make_plan(SM120_LIKE, cells=24, tok_s=2000.0, budget_hours=100.0)
    assert plan.over_budget() and plan.tasks[0].budget_margin > 0.02
    roomy = make_plan(SM120_LIKE, cells=24, tok_s=2000.0, budget_hours=1e6)
    assert roomy.over_budget() is False and roomy.tasks[0].budget_margin < 0.02  # a big budget buys a finer margin
    assert make_plan(SM120_LIKE, cells=24, budget_hours=1.0).over_budget() is None  # no throughput: cannot tell
    tiny = make_plan({**SM120_LIKE, "quality": {**SM120_LIKE["quality"], "limit": 5}}, cells=24, tok_s=2000.0)
    assert tiny.tasks[0].cell_repeats is None and "out of reach" in tiny.tasks[0].statement


def test_plan_uses_a_previous_runs_measured_variance(tmp_path):
    rng = np.random.default_rng(4)
    p = rng.beta(0.8 * 3, 0.2 * 3, size=200)  # consistency 1/(3+1) = 0.25
    draws = [(rng.random(200) < p).astype(float) for _ in range(6)]
    ref = _scores(tmp_path, "ref", {"t": list(draws[0])}, {"t": [list(d) for d in draws[1:]]})
    run = _run_with(tmp_path, {"ref": ref, "cell": _scores(tmp_path, "cell", {"t": list(draws[0])})})
    plan = make_plan({"name": "m", "quality": {"tasks": ["t"]}, "gate": {"margin": 0.05}}, previous=(run, tmp_path),
                     cells=2)
    [t] = plan.tasks
    assert "measured" in t.source and t.documents == 200 and abs(t.accuracy - 0.8) < 0.05
    assert 0.05 < t.consistency < 0.5 and t.cell_repeats is not None
    assert plan.tok_s == 10.0 and "scenario single" in plan.tok_s_source


def test_plan_command_on_the_demo_matrix_and_run_refuses_a_budget_it_cannot_meet(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    import evalharness.runner.run as runner

    def never(*args, **kwargs):
        raise AssertionError("a matrix over its budget must not launch anything")

    monkeypatch.setattr(runner, "execute", never)
    assert main(["plan", "--matrix", "matrices/cpu-smollm2.yaml", "--tok-s", "80"]) == 0
    out = capsys.readouterr().out
    # two stages: exploration on each task's first 60 documents, confirmation on 96 others
    assert "Exploration:" in out and "| eh_capitals | ±0.1 | 60 |" in out
    assert "Confirmation:" in out and "| eh_capitals | ±0.1 | 96 |" in out
    text = Path("matrices/cpu-smollm2.yaml").read_text()
    text = text[:text.index("confirm:\n")] + text[text.index("gate:\n"):]  # one stage, as it was
    text = text.replace("  reference_repeats: 2\n", "  reference_repeats: 2\n  budget_hours: 0.000001\n")
    matrix = tmp_path / "m.yaml"
    matrix.write_text(text.replace("../.engine", str(Path(".").resolve() / ".engine")))
    # a previous run in the output folder gives the documents, tokens and throughput: the hours are known
    out_dir = tmp_path / "out"
    values = [1.0] * 40 + [0.0] * 12
    scores = _scores(out_dir, "ref", {"eh_capitals": values}, {"eh_capitals": [values[:20] + [0.0] + values[21:]]})
    for score in scores:
        score.generation = __import__("evalharness.records.measures", fromlist=["GenerationStats"]).GenerationStats(
            requests=52, mean_completion_tokens=3.0)
    previous = _run_with(out_dir, {"ref": scores, "x": _scores(out_dir, "x", {"eh_capitals": values})})
    del previous
    assert main(["run", "--matrix", str(matrix), "--out", str(out_dir)]) == 2
    captured = capsys.readouterr()
    assert "cannot reach the margins" in captured.err and "budget: 0.0 hours: the margins are out of reach" in \
        captured.out
    assert main(["plan", "--matrix", str(matrix), "--documents", "nope=3"]) == 2
    assert "nope" in capsys.readouterr().err


def test_the_report_opens_with_the_recommendation_and_its_launch_command(tmp_path):
    same = [1.0] * 150 + [0.0] * 50
    cells = {"ref": _scores(tmp_path, "ref", {"t": same}), "fast": _scores(tmp_path, "fast", {"t": same}),
             "faster": _scores(tmp_path, "faster", {"t": [0.0] * 60 + same[60:]})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "fast": 20.0, "faster": 40.0})
    for cid, cell in run.cells.items():
        cell.argv = ["sglang", "serve", "--model-path", "M", f"--{cid}"]
        cell.env = {"SGLANG_X": "1"}
    refresh_drift(run, tmp_path)
    rec = recommend(run)
    assert rec.cell == "fast" and rec.ratio == pytest.approx(2.0) and rec.low > 1.05  # 'faster' is worse: never
    assert rec.speed.endswith("faster")
    text = render_markdown(run)
    assert text.index("**Recommendation: `fast`**") < text.index("## Pareto")
    assert "SGLANG_X=1 sglang serve --model-path M --fast" in text
    assert "**Recommendation: `fast`**" in summary_markdown(run)


def test_the_samples_that_would_settle_a_cell_are_documents_both_sides_answer(tmp_path):
    base = [1.0] * 40 + [0.0] * 10
    ref = _scores(tmp_path, "ref", {"t": base}, {"t": [base]})  # the reference answers twice, the cell once
    run = _run_with(tmp_path, {"ref": ref, "fast": _scores(tmp_path, "fast", {"t": base})}, gate={"margin": 0.05},
                    tok_s={"ref": 10.0, "fast": 20.0})
    refresh_drift(run, tmp_path)
    settle = recommend(run).settle[0]
    assert settle.factor > 1 and settle.more_samples == math.ceil(50 * (settle.factor - 1))


def test_no_recommendation_says_which_cell_and_how_many_samples_would_settle_it(tmp_path):
    base = [1.0] * 40 + [0.0] * 10
    cells = {"ref": _scores(tmp_path, "ref", {"t": base}), "fast": _scores(tmp_path, "fast", {"t": base})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "fast": 20.0})
    refresh_drift(run, tmp_path)
    rec = recommend(run)
    assert rec.cell is None and rec.candidate == "fast" and rec.settle[0].task == "t"
    assert rec.settle[0].factor > 1 and rec.settle[0].more_samples > 0
    text = render_markdown(run)
    assert "**No recommendation**" in text and "`fast`" in text and "more documents" in text
    slow = _run_with(tmp_path / "slow", {"ref": _scores(tmp_path / "slow", "ref", {"t": base}),
                                          "slow": _scores(tmp_path / "slow", "slow", {"t": base})},
                     tok_s={"ref": 10.0, "slow": 10.2})
    refresh_drift(slow, tmp_path / "slow")
    assert "keep the reference" in recommend(slow).why_none
    json.dumps(rec.model_dump())


def test_a_settled_task_stops_at_its_look_and_the_others_go_on(tmp_path, monkeypatch):
    from pathlib import Path

    from evalharness.phases import quality

    calls = []

    def fake_run_task(task, spec, task_dir, run_dir, alive, retries, timeout_s):
        calls.append((task, spec["seed"]))
        return TaskScore(task=task, seed=spec["seed"], samples=str(task_dir / "samples.jsonl"), value=1.0)

    monkeypatch.setattr(quality, "run_task", fake_run_task)
    done: list = []
    looked = []

    def at_look(repeats_done, running):
        looked.append((repeats_done, sorted(running)))
        return {"easy"} if repeats_done == 2 else set()

    setup = quality.TaskSetup(base_url="http://x/v1", model="m", include_path=None, include_defaults=False,
                              api="completions", tokenizer="none", request_timeout_s=1, task_timeout_s=1, retries=0)
    quality.run_quality(["easy", "hard"], setup, tmp_path, tmp_path, lambda: True, concurrency=1, limit=None,
                        done=done, repeats=lambda task: 4, at_look=at_look)
    assert [c for c in calls if c[0] == "easy"] == [("easy", 1234), ("easy", 1235)]
    assert len([c for c in calls if c[0] == "hard"]) == 4
    assert looked == [(1, ["easy", "hard"]), (2, ["easy", "hard"]), (3, ["hard"]), (4, ["hard"])]
    del Path


def test_a_cell_not_faster_than_the_reference_is_screened_to_its_first_look():
    from types import SimpleNamespace

    from evalharness.matrix.schema import Matrix
    from evalharness.records.measures import Percentiles, ScenarioResult
    from evalharness.runner.cellphases import screening

    def scenario(tok_s, repeats):
        p = Percentiles()
        return ScenarioResult(name="single", concurrency=1, input_len=8, output_len=8, requests=3, completed=3,
                              duration_s=1, output_tokens=8, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p,
                              tpot_s=p, itl_s=p, e2e_s=p, repeat_tok_s=repeats)

    matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "x", "quality": {"tasks": ["t"]},
                                    "throughput": {"scenarios": [{"name": "single", "concurrency": 1}]}})
    reference = SimpleNamespace(throughput=[scenario(10.0, [9.8, 10.0, 10.2])])
    slow = SimpleNamespace(throughput=[scenario(10.1, [9.9, 10.1, 10.3])])
    fast = SimpleNamespace(throughput=[scenario(15.0, [14.8, 15.0, 15.2])])
    assert "not faster than the reference in single (1.01x [90%: 0.98–1.05] equal: its upper bound 1.05 is below 1 + " \
        "the 5% floor)" in screening(matrix, slow, reference)
    # undecided (its interval reaches past the floor): never screened, however close to 1 its point
    wide = SimpleNamespace(throughput=[scenario(10.1, [8.0, 10.1, 12.5])])
    assert screening(matrix, wide, reference) is None
    assert screening(matrix, fast, reference) is None
    everywhere = matrix.model_copy(update={"quality": matrix.quality.model_copy(update={"full_quality": True})})
    assert screening(everywhere, slow, reference) is None


def test_the_quality_phase_stops_a_task_settled_against_the_reference(tmp_path, monkeypatch):
    """A cell whose answers match the reference's stops its task at a look before its planned repeats; the
    reference itself and a cell that differs run them all."""
    from types import SimpleNamespace

    from evalharness.matrix.schema import Matrix
    from evalharness.phases import quality
    from evalharness.runner import cellphases

    values = [1.0] * 300 + [0.0] * 100
    ref_scores = _scores(tmp_path, "ref", {"t": values}, {"t": [values] * 7})
    reference = SimpleNamespace(quality=ref_scores, throughput=[])
    matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "x", "gate": {"margin": 0.1},
                                    "quality": {"tasks": ["t"], "repeats": 8}})

    def fake_run_task(answers):
        def run(task, spec, task_dir, run_dir, alive, retries, timeout_s):
            rel = task_dir.relative_to(run_dir) / "samples.jsonl"
            rows = [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "metrics": {"acc": v}}
                    for i, v in enumerate(answers)]
            (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (run_dir / rel).write_text("".join(json.dumps(r) + "\n" for r in rows))
            return TaskScore(task=task, version=1.0, metric="acc,none", seed=spec["seed"], samples=str(rel), value=1.0)
        return run

    def cell(cid, answers):
        monkeypatch.setattr(quality, "run_task", fake_run_task(answers))
        state = SimpleNamespace(cell=SimpleNamespace(id=cid), plan=SimpleNamespace(base_url="u", served_model_name="m"),
                                cell_dir=tmp_path / "cells" / cid, run_dir=tmp_path, quality=[], throughput=[],
                                screened=None, status="ok", phase="", enter=lambda *a: None)
        cellphases.quality_phase(matrix, state, None, lambda: True, "ref", reference, family_size=4)
        return state.quality[0]

    same = cell("same", values)
    # the default looks: 1, a quarter, a half, all, and the equivalence test's own look at three quarters
    assert same.looks == [1, 2, 4, 6, 8] and same.equivalence_only == [6] and same.finished_repeats() < 8
    assert same.stopped.startswith("equivalent at look")
    broken = cell("broken", [0.0] * 400)
    assert broken.stopped.startswith("worse at look") and broken.finished_repeats() < 8
    assert cell("ref", values).finished_repeats() == 8  # the reference never stops early


def test_an_equivalence_only_look_is_looked_at_for_equivalence_alone_and_recorded(tmp_path, monkeypatch):
    """quality.equivalence_looks: [0.75] of 8 repeats: the cell looks at 6 too, where only the equivalence test may
    stop it (worse level 0), and its record names that look so the final analysis tests at its levels."""
    from types import SimpleNamespace

    from evalharness.analysis import looks
    from evalharness.analysis.sequential import LookDecision
    from evalharness.matrix.schema import Matrix
    from evalharness.phases import quality
    from evalharness.runner import cellphases

    values = [1.0] * 300 + [0.0] * 100
    ref_scores = _scores(tmp_path, "ref", {"t": values}, {"t": [values] * 7})
    reference = SimpleNamespace(quality=ref_scores, throughput=[])
    matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "x", "gate": {"margin": 0.1},
                                    "quality": {"tasks": ["t"], "repeats": 8, "equivalence_looks": [0.75]}})

    def run(task, spec, task_dir, run_dir, alive, retries, timeout_s):
        rel = task_dir.relative_to(run_dir) / "samples.jsonl"
        (run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / rel).write_text("".join(json.dumps({"doc_id": i, "doc_hash": f"h{i}", "filter": "none",
                                                       "metrics": {"acc": v}}) + "\n" for i, v in enumerate(values)))
        return TaskScore(task=task, version=1.0, metric="acc,none", seed=spec["seed"], samples=str(rel), value=1.0)

    seen = []

    def never_stop(evidence, margin, level, family_size):  # record each look's levels, let the task run them all
        seen.append(level)
        return LookDecision(None, level)

    monkeypatch.setattr(quality, "run_task", run)
    monkeypatch.setattr(looks, "decide_look", never_stop)
    state = SimpleNamespace(cell=SimpleNamespace(id="c"), plan=SimpleNamespace(base_url="u", served_model_name="m"),
                            cell_dir=tmp_path / "cells" / "c", run_dir=tmp_path, quality=[], throughput=[],
                            screened=None, status="ok", phase="", enter=lambda *a: None)
    cellphases.quality_phase(matrix, state, None, lambda: True, "ref", reference, family_size=4)
    [score] = state.quality
    assert score.looks == [1, 2, 4, 6, 8] and score.equivalence_only == [6] and score.finished_repeats() == 8
    assert len(seen) == 4  # the looks before the last (the last is the final analysis)
    assert seen[3].worse == 0.0 and seen[3].equivalent > 0 and all(level.worse > 0 for level in seen[:3])

    def equivalent_at_its_own_look(evidence, margin, level, family_size):  # settled where only equivalence looks
        return LookDecision("equivalent" if level.worse == 0.0 else None, level)

    monkeypatch.setattr(looks, "decide_look", equivalent_at_its_own_look)
    state.quality, state.cell_dir = [], tmp_path / "cells" / "d"
    cellphases.quality_phase(matrix, state, None, lambda: True, "ref", reference, family_size=4)
    [score] = state.quality
    assert score.finished_repeats() == 6
    assert score.stopped.startswith("equivalent at look 4 of 5 (6 of 8 repeats, the equivalence test's own look")


def test_a_screened_cell_that_answers_each_task_once_answers_a_share_of_its_documents(tmp_path, monkeypatch):
    """Screening a cell whose tasks run once cut nothing when looks were repeats only: its first look is now a
    batch of documents (quality.screen_documents), sent to the worker as a fraction; a task repeated keeps its first
    repeat as its first look (full_quality turns screening off: screening()'s own test)."""
    from types import SimpleNamespace

    from evalharness.matrix.schema import Matrix
    from evalharness.phases import quality
    from evalharness.runner import cellphases

    sent = []

    def fake_run_task(task, spec, task_dir, run_dir, alive, retries, timeout_s):
        sent.append((task, spec.get("fraction"), spec["seed"]))
        return TaskScore(task=task, version=1.0, metric="acc,none", seed=spec["seed"], value=1.0)

    monkeypatch.setattr(quality, "run_task", fake_run_task)
    monkeypatch.setattr(cellphases, "screening", lambda matrix, state, against: "not faster than the reference")

    def run(settings):
        sent.clear()
        matrix = Matrix.model_validate({"name": "m", "engine": "vllm", "model": "x",
                                        "quality": {"tasks": ["once", "many"], "task_settings": {"many": {"repeats": 4}},
                                                    **settings}})
        state = SimpleNamespace(cell=SimpleNamespace(id="c"), plan=SimpleNamespace(base_url="u", served_model_name="m"),
                                cell_dir=tmp_path / "c", run_dir=tmp_path, quality=[], throughput=[], screened=None,
                                status="ok", phase="", enter=lambda *a: None)
        cellphases.quality_phase(matrix, state, None, lambda: True, "ref", SimpleNamespace(quality=[], throughput=[]))
        return state

    state = run({})
    assert sent == [("once", 0.25, 1234), ("many", None, 1234)]  # one repeat of `many`: its first look
    assert "answered 25% of its documents (quality.screen_documents)" in state.screened
    run({"screen_documents": 0.5})
    assert sent[0] == ("once", 0.5, 1234)


def test_a_resumed_cell_goes_on_after_its_last_finished_repeat(tmp_path, monkeypatch):
    """run_task keeps what a repeat finished: on resume (same settings; another port) it is not run again."""
    import subprocess

    from evalharness.phases import quality

    ran = []

    def fake_worker(argv, **kwargs):
        spec = json.loads(open(argv[-1]).read())
        ran.append(spec["seed"])
        out = __import__("pathlib").Path(spec["out_dir"])
        (out / "summary.json").write_text(json.dumps({"version": 1.0, "headline": "acc,none", "value": 0.5}))
        (out / "samples.jsonl").write_text("")
        return subprocess.CompletedProcess(argv, 0)

    monkeypatch.setattr(quality.subprocess, "run", fake_worker)
    spec = {"base_url": "http://127.0.0.1:1/v1", "seed": 1234, "limit": None}
    first = quality.run_task("t", spec, tmp_path / "t", tmp_path, lambda: True, 0, 10)
    again = quality.run_task("t", {**spec, "base_url": "http://127.0.0.1:2/v1"}, tmp_path / "t", tmp_path,
                             lambda: True, 0, 10)
    assert ran == [1234] and again == first and first.value == 0.5
    quality.run_task("t", {**spec, "limit": 5}, tmp_path / "t", tmp_path, lambda: True, 0, 10)
    assert ran == [1234, 1234]  # other settings: run again


SWEPT = {"name": "swept", "engine": "vllm", "model": "x", "axes": {"dtype": {"a": {}, "b": {}, "c": {}}},
         "reference": {"dtype": "a"}, "quality": {"tasks": ["t"]},
         "throughput": {"sweep": {"concurrency": [1, 2, 4, 8], "requests_per_stream": 2,
                                  "scenario": {"output_len": 64, "repeats": {"min": 2, "max": 4}}}}}


def _swept_plan(matrix: dict = SWEPT, previous=None):
    from evalharness.matrix.schema import Matrix

    return make_plan(Matrix.model_validate(matrix).model_dump(mode="json"), cells=3, previous=previous)


def _step_record(name: str, concurrency: int, tok_s: float):
    from evalharness.records.measures import Percentiles, ScenarioResult

    p = Percentiles()
    return ScenarioResult(name=name, concurrency=concurrency, input_len=8, output_len=64, requests=8, completed=8,
                          duration_s=9.0, output_tokens=512, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p,
                          tpot_s=p, itl_s=p, e2e_s=p)


def test_plan_prices_a_load_sweep_steps_times_repeats_times_requests():
    from evalharness.render.plan import plan_text

    plan = _swept_plan()
    tp = plan.throughput
    assert [s.name for s in tp.steps] == ["load-c1", "load-c2", "load-c4", "load-c8"]
    assert [s.requests for s in tp.steps] == [2, 4, 8, 16] and all(s.repeats == (2, 4) for s in tp.steps)
    assert [s.output_tokens for s in tp.steps] == [128, 256, 512, 1024]
    assert plan.cells == 2 and tp.cells == 2  # three cells: the reference and two compared with it
    assert tp.reference.requests == 2 * 4 * (1 + 2 + 4 + 8) == 120 and tp.reference.tokens == 120 * 64
    assert (tp.cell_min.requests, tp.cell_max.requests) == (2 * 2 * 15, 120)
    assert (tp.all_min.requests, tp.all_max.requests) == (120 + 2 * 60, 120 + 2 * 120)
    # no previous run: no time is guessed, the requests and tokens are still priced
    assert all(s.seconds is None for s in tp.steps) and tp.reference.minutes is None and tp.all_max.minutes is None
    text = plan_text(plan)
    assert "| load-c4 (sweep) | c4 | 8 | 512 | 4 / 2–4 | 32 | 16–32 | needs --from | no run, no tok/s |" in text
    assert ("throughput totals: reference at most 120 requests; one cell 60 to at most 120 requests; the reference "
            "and its 2 cell(s) 240 to at most 360 requests; time unknown: give a previous run (--from RUN)") in text
    assert "saturation can stop a sweep after load-c2" in text  # no operating point: the second step on
    point = _swept_plan({**SWEPT, "report": {"operating_point": {"concurrency": 4}}})
    assert point.throughput.earliest_stop == "load-c4"  # never before the operating point's load


def test_the_sweeps_times_follow_from_the_previous_runs_tok_s(tmp_path, capsys):
    from evalharness.records.io import save_run
    from evalharness.render.plan import plan_text

    run = _run_with(tmp_path, {"ref": [], "x": []})
    # the reference measured load-c1 and load-c8 only: c2 is priced at c1's rate, c4 at c8's (the nearest loads)
    run.cells["ref"].throughput = [_step_record("load-c1", 1, 100.0), _step_record("load-c8", 8, 400.0)]
    save_run(run, tmp_path)
    tp = _swept_plan(previous=(run, tmp_path)).throughput
    assert [s.seconds for s in tp.steps] == pytest.approx([128 / 100, 256 / 100, 512 / 400, 1024 / 400])
    assert tp.steps[0].seconds_source == "its own 100.0 tok/s"
    assert tp.steps[1].seconds_source.startswith("nearest: load-c1 (c1") and "load-c8" in tp.steps[2].seconds_source
    one_pass = 128 / 100 + 256 / 100 + 512 / 400 + 1024 / 400  # every step once: 7.68 s
    assert tp.reference.minutes == pytest.approx(4 * one_pass / 60)
    assert (tp.cell_min.minutes, tp.cell_max.minutes) == pytest.approx((2 * one_pass / 60, 4 * one_pass / 60))
    assert tp.all_max.minutes == pytest.approx((4 + 2 * 4) * one_pass / 60)
    assert "one cell 60 to at most 120 requests, 0.3 to at most 0.5 min" in plan_text(_swept_plan(
        previous=(run, tmp_path)))
    # the command reads the same run (--from) and prints the table with the times
    matrix = tmp_path / "m.yaml"
    matrix.write_text(json.dumps(SWEPT))
    assert main(["plan", "--matrix", str(matrix), "--from", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| load-c2 (sweep) | c2 | 4 | 256 | 4 / 2–4 | 16 | 8–16 | 2.6 s | nearest: load-c1 (c1, 100.0 tok/s) |" \
        in out
    assert f"- throughput times: from the reference of {tmp_path}" in out


def test_a_matrix_without_throughput_prices_nothing_and_says_so():
    from evalharness.render.plan import plan_text

    plan = make_plan(SM120_LIKE, cells=24, tok_s=2000.0)
    assert plan.throughput is None
    assert "Throughput: the matrix has no throughput section: nothing to price" in plan_text(plan)


def test_the_plans_sweep_steps_are_the_matrix_layers_own():
    """The plan prices the steps the runner measures: the same names, loads, requests, lengths and repeats as
    SweepSection.steps() (a matrix kept as results.json keeps it, validated again)."""
    from evalharness.matrix.schema import Matrix

    for sweep in ({"concurrency": [1, 3], "requests_per_stream": 3, "scenario": {"repeats": 3, "output_len": 16,
                                                                    "warmup_requests": 2, "remeasure": 1}},
                  {"name": "rate", "request_rate": [0.1, 0.5, 2.0], "step_seconds": 10},
                  {"concurrency": [2]}):
        matrix = Matrix.model_validate({**SWEPT, "throughput": {
            "scenarios": [{"name": "s", "concurrency": 2, "duration_s": 5, "ignore_eos": False}], "sweep": sweep}})
        own = matrix.throughput.all_scenarios()
        priced = make_plan(matrix.model_dump(mode="json"), cells=3).throughput.steps
        assert [(s.name, s.concurrency, s.request_rate, s.output_len, s.repeat_plan(), s.warmup_requests,
                 s.remeasure) for s in own] == \
            [(p.name, p.concurrency, p.request_rate, p.output_len, p.repeats, p.warmup, p.remeasure) for p in priced]
        assert [s.requests for s in own[1:]] == [p.requests for p in priced[1:]]
    # the duration-bound scenario: its time is its duration, its requests unknown and left out of the totals
    assert priced[0].requests is None and priced[0].seconds == 5 and priced[0].name in \
        make_plan(matrix.model_dump(mode="json"), cells=3).throughput.unknown_requests


def test_the_demos_plan_prices_its_greedy_tasks_as_the_answers_they_give(capsys, tmp_path):
    """The demo's plan assumed every task samples (consistency 0.5) and said confirmation certified ±0.145, none of
    its four tasks within ±0.1, while its run confirmed all four at 0.025-0.061: its tasks decode greedily (or are
    scored by log-likelihood), so their answers repeat. The plan reads that from the task's own YAML, and a
    matrix's gen_kwargs that sample overrule it."""
    from pathlib import Path

    from evalharness.analysis.plan_groups import greedy_tasks
    from evalharness.cli import main
    from evalharness.phases.quality import SHIPPED_TASKS

    shipped = [Path(SHIPPED_TASKS)]
    found = greedy_tasks(["eh_capitals", "eh_choice"], shipped, {})
    assert "generation_kwargs" in found["eh_capitals"] and "log-likelihood" in found["eh_choice"]
    assert greedy_tasks(["eh_capitals"], shipped, {"eh_capitals": {"do_sample": True, "temperature": 0.6}}) == {}
    assert greedy_tasks(["eh_capitals"], [], {"eh_capitals": {"temperature": 0}}) == {
        "eh_capitals": "greedy (the matrix's gen_kwargs)"}
    (tmp_path / "t.yaml").write_text("task: silent\noutput_type: generate_until\ngeneration_kwargs: {until: [x]}\n")
    assert greedy_tasks(["silent"], [tmp_path], {}) == {}  # nothing says how it decodes: not assumed greedy
    assert main(["plan", "--matrix", "matrices/cpu-smollm2.yaml"]) == 0
    out = capsys.readouterr().out
    assert "within its own margin: eh_capitals, eh_arithmetic, eh_copy, eh_choice" in out
    assert "| eh_capitals | ±0.1 | 96 | 1 / 1 | needs lengths | ±0.045 ✓ | repeats add nothing |" in out
    # the story's tasks sample (its gen_kwargs): priced at the stated consistency as before
    assert greedy_tasks(["gsm8k"], shipped, {"gsm8k": {"do_sample": True, "temperature": 0.6}}) == {}


def test_plan_certifies_only_the_margin_its_design_has_the_power_for():
    """gsm8k, 200 documents at 0.95, consistency 0.5, margin 0.02, 24 cells, configured 6 / 32: the plain formula
    said it certifies ±0.018 while 12 / 36 were needed (simulated power at 6 / 32: 43%)."""
    matrix = {"name": "m", "quality": {"tasks": ["gsm8k"], "limit": 200, "repeats": 6, "reference_repeats": 32},
              "gate": {"margin": 0.02}}
    [row] = make_plan(matrix, cells=25, accuracy={"gsm8k": 0.95}, consistency=0.5).tasks
    assert row.cell_repeats > 6  # the design is under-powered for ±0.02 ...
    assert row.configured_margin > row.margin  # ... so it cannot be said to certify it
    needed = {**matrix, "quality": {**matrix["quality"], "repeats": row.cell_repeats,
                                    "reference_repeats": row.reference_repeats}}
    [sized] = make_plan(needed, cells=25, accuracy={"gsm8k": 0.95}, consistency=0.5).tasks
    assert sized.configured_margin <= sized.margin  # one sizing: the needed design certifies the margin it was sized for


def test_a_zero_or_negative_budget_speed_or_consistency_exits_2(capsys):
    for flag, value in (("--budget-hours", "-3"), ("--budget-hours", "0"), ("--tok-s", "-1"), ("--consistency", "2")):
        with pytest.raises(SystemExit) as stop:
            main(["plan", "--matrix", "matrices/cpu-smollm2.yaml", flag, value])
        assert stop.value.code == 2
        assert flag in capsys.readouterr().err
