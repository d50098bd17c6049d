"""The cost of a decision (issue 24, the parts built): `evalharness plan` from stated defaults and from a previous
run's measured variance, the budget check of `run`, and the recommendation line of the report."""

import json

import numpy as np
import pytest

from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.plan import make_plan
from evalharness.analysis.recommend import recommend
from evalharness.cli import main
from evalharness.render.report import render_markdown, summary_markdown
from tests.unit.test_equivalence import _run_with, _scores

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
    assert "| eh_capitals | ±0.1 |" in out and "documents unknown" in out
    text = Path("matrices/cpu-smollm2.yaml").read_text().replace(
        "  reference_repeats: 2\n", "  reference_repeats: 2\n  budget_hours: 0.000001\n")
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
    assert rec.cell == "fast" and rec.ratio == pytest.approx(2.0)  # 'faster' is worse: never recommended
    text = render_markdown(run)
    assert text.index("**Recommendation: `fast`**") < text.index("## Pareto")
    assert "SGLANG_X=1 sglang serve --model-path M --fast" in text
    assert "**Recommendation: `fast`**" in summary_markdown(run)


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
