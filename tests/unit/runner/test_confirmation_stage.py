"""The run's second stage read from records (analysis/confirmation.py, runner/confirmstage.py, render/confirmation.py,
issue 61): what exploration hands on, a try decided on its own launches, the decision said first."""

from pathlib import Path

import pytest

from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.pairing import merged_sides, side_of_values
from evalharness.matrix.schema import Matrix
from evalharness.records.confirm import launch_id
from evalharness.records.run import ConfirmTry
from evalharness.render.recommend import recommendation_lines
from evalharness.runner.confirmstage import SEED_STRIDE, launch_matrix, start_record
from tests.unit.analysis.test_equivalence import _run_with, _scores

SAME = [1.0] * 300 + [0.0] * 100


def _explored(tmp_path: Path):
    cells = {"ref": _scores(tmp_path, "ref", {"t": SAME}), "fast": _scores(tmp_path, "fast", {"t": SAME}),
             "fastest": _scores(tmp_path, "fastest", {"t": [0.0] * 400})}  # loses every answer: worse
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "fast": 20.0, "fastest": 40.0})
    run.meta.matrix.update(quality={"tasks": ["t"]}, confirm={"tries": 1, "launches": 2})
    refresh_drift(run, tmp_path)
    return run


def _launches(tmp_path: Path, run, finalist_answers: list[float], finalist_tok_s: float):
    this = ConfirmTry(finalist="fast", level=0.05, scenario="single",
                      reference_launches=[launch_id("ref", 1, k) for k in (1, 2)],
                      finalist_launches=[launch_id("fast", 1, k) for k in (1, 2)])
    speeds = {this.reference_launches[0]: 10.0, this.reference_launches[1]: 10.4,
              this.finalist_launches[0]: finalist_tok_s, this.finalist_launches[1]: finalist_tok_s * 1.03}
    answers = {lid: SAME if lid in this.reference_launches else finalist_answers for lid in speeds}
    launched = _run_with(tmp_path, {lid: _scores(tmp_path, lid, {"t": answers[lid]}, seed=1234 + SEED_STRIDE)
                                    for lid in speeds}, tok_s=speeds)
    run.confirmation.tries.append(this)
    run.confirmation.launches.update(launched.cells)


def confirmed_run(tmp_path: Path, finalist_answers: list[float]):
    """Explored, then one try of two launches a side (the finalist at 20 tok/s against 10) decided with the drift."""
    run = _explored(tmp_path)
    run.confirmation = start_record(run, tries=1)
    _launches(tmp_path, run, finalist_answers, 20.0)
    run.confirmation.complete = True
    refresh_drift(run, tmp_path)
    return run


def test_exploration_hands_the_fastest_cell_it_did_not_rule_out_to_confirmation(tmp_path):
    record = start_record(_explored(tmp_path), tries=1)
    assert record.order == ["fast"]
    assert record.ruled_out["fastest"].startswith("worse on t") and record.explored["fast"] == 2.0


def test_a_finalist_confirmed_on_its_own_launches_is_shipped_with_what_it_rests_on(tmp_path):
    run = _explored(tmp_path)
    run.confirmation = start_record(run, tries=1)
    _launches(tmp_path, run, SAME, 20.0)
    run.confirmation.complete = True
    refresh_drift(run, tmp_path)  # the try is decided with the drift, from the launches' own files
    verdict = run.confirmation.tries[0].verdict
    assert verdict.confirmed and verdict.launches == (2, 2) and verdict.launch_sd is not None
    assert verdict.tasks[0].not_worse and verdict.tasks[0].drop == 0.0
    line = recommendation_lines(run, with_command=False)[0]
    assert line.startswith("**Ship `fast`**: confirmed on fresh launches") and "2 launches against 2" in line
    assert "not worse on every confirmed task: t: not worse" in line


def test_a_finalist_worse_on_a_task_in_confirmation_is_not_shipped(tmp_path):
    # exploration saw it unchanged; its relaunches lose a quarter of the answers
    run = confirmed_run(tmp_path, [1.0] * 200 + [0.0] * 200)
    assert not run.confirmation.tries[0].verdict.confirmed
    line = recommendation_lines(run)[0]
    assert line.startswith("**No recommendation: keep the reference**: no finalist was confirmed")
    assert "t: not shown not worse" in line


def test_a_confirmation_not_finished_says_so_and_how_to_finish_it(tmp_path):
    run = _explored(tmp_path)
    run.confirmation = start_record(run, tries=1)
    assert recommendation_lines(run)[0].startswith("**Not decided yet**: the confirmation of `fast`")


def test_a_launch_measures_the_operating_point_and_the_confirmed_tasks_on_seeds_of_its_own():
    matrix = Matrix.model_validate({
        "name": "m", "engine": "vllm", "model": "x", "axes": {"a": {"p": {}, "q": {}}},
        "quality": {"tasks": ["t", "u"], "repeats": 1, "reference_repeats": 3, "task_settings": {"t": {"repeats": 2}}},
        "throughput": {"sweep": {"concurrency": [1, 4], "scenario": {"repeats": {"min": 2, "max": 5}}}},
        "report": {"slo": {"ttft": {"max_ms": 1000}}, "operating_point": "max_goodput"},
        "confirm": {"speed_repeats": 4, "launches": 2, "repeats": 6, "task_repeats": {"t": 9}}})
    launch = launch_matrix(matrix, "load-c4", ["t"], "finalist", attempt=1, launch=2)
    assert [s.name for s in launch.throughput.all_scenarios()] == ["load-c4"]
    assert (launch.throughput.scenarios[0].repeats.min, launch.throughput.scenarios[0].repeats.max) == (4, 4)
    assert launch.quality.tasks == ["t"]
    # the task's own confirmation repeats over the launches (9 over 2: 5 a launch), not its exploration size
    assert (launch.quality.task_settings["t"].repeats, launch.quality.task_settings["t"].reference_repeats) == (5, 5)
    both = launch_matrix(matrix, "load-c4", ["t", "u"], "reference", attempt=1, launch=1)
    assert both.quality.task_settings["u"].repeats == 3  # the section's 6 over 2
    assert launch.quality.seed == 1234 + SEED_STRIDE + 2_000  # past every seed exploration can use (1234..2233)
    assert not (launch.probes.enabled or launch.distribution.enabled or launch.batching.enabled)
    assert launch.confirm is None and launch.report.operating_point is None


def test_a_launch_answers_documents_exploration_did_not():
    matrix = Matrix.model_validate({
        "name": "m", "engine": "vllm", "model": "x", "axes": {"a": {"p": {}, "q": {}}},
        "quality": {"tasks": ["t", "u", "w"], "limit": 20, "task_settings": {"u": {"limit": 5}}},
        "confirm": {"documents": 30, "task_documents": {"t": 50}}})
    own = launch_matrix(matrix, None, ["t", "u", "w"], "finalist", attempt=1, launch=1).quality.task_settings
    assert (own["t"].skip, own["t"].limit) == (20, 50) and (own["u"].skip, own["u"].limit) == (5, 30)
    assert (own["w"].skip, own["w"].limit) == (20, 30)
    plain = Matrix.model_validate({**matrix.model_dump(mode="json"), "confirm": {}})
    kept = launch_matrix(plain, None, ["w"], "reference", attempt=1, launch=2).quality.task_settings["w"]
    assert (kept.skip, kept.limit) == (20, 20)  # as many as exploration's, past them


def test_documents_past_the_skip_are_disjoint_from_exploration_and_wrap_only_when_too_few():
    from evalharness.phases.subsets import subset_indices

    explored = subset_indices("t", 100, 20, 1234)
    held_out = subset_indices("t", 100, 50, 1234, skip=20)
    assert not set(explored) & set(held_out) and len(held_out) == 50
    assert subset_indices("t", 100, 20, 1234, skip=0) == explored  # no skip: exploration's own
    tight = subset_indices("t", 30, 20, 1234, skip=20)  # only 10 others: then exploration's, in the same order
    assert set(subset_indices("t", 30, 10, 1234, skip=20)) < set(tight) and len(tight) == 20


def test_confirm_documents_name_only_quality_tasks():
    from evalharness.matrix.confirm import ConfirmSection

    with pytest.raises(ValueError, match="confirm.task_documents"):
        ConfirmSection(task_documents={"nope": 3}).check(["t"], measures_speed=False)


def test_launches_answers_are_one_side_per_document():
    first = side_of_values({"a": 1.0, "b": 0.0}, repeats=2)
    second = side_of_values({"a": 0.0, "b": 0.0}, repeats=1)
    merged = merged_sides([first, second])
    assert merged.repeats == 3 and merged.means == {"a": 2 / 3, "b": 0.0}


def test_a_resumed_confirmation_repeats_no_finished_launch(tmp_path, monkeypatch):
    # the stage's own loop with the launches stood in by records: one launch had finished before the interrupt
    import evalharness.runner.confirmstage as stage
    from evalharness.matrix.schema import Cell
    from evalharness.runner.progress import Progress

    run = _explored(tmp_path)
    matrix = Matrix.model_validate({
        "name": "m", "engine": "vllm", "model": "x", "axes": {"a": {"ref": {}, "fast": {}, "fastest": {}}},
        "quality": {"tasks": ["t"]}, "gate": {"margin": 0.05},
        "throughput": {"scenarios": [{"name": "single", "concurrency": 1, "repeats": 3}]},
        "report": {"throughput_scenario": "single"}, "confirm": {"launches": 2, "repeats": 2}})
    cells = {cid: Cell(id=cid, axes={}, args={}, env={}, settings_hash="h", engine="vllm") for cid in run.cells}
    full = _explored(tmp_path / "launched")
    full.confirmation = start_record(full, tries=1)
    _launches(tmp_path, full, SAME, 20.0)  # what every launch of the try records
    run.confirmation = start_record(run, tries=1)
    run.confirmation.tries.append(full.confirmation.tries[0])
    first = full.confirmation.tries[0].reference_launches[0]
    run.confirmation.launches[first] = full.confirmation.launches[first]
    asked: list[str] = []

    def launch(launch_matrix, cell, engine, out_dir, progress, reference_id, gpu_baseline):
        asked.append(cell.id)
        assert launch_matrix.quality.task_settings["t"].repeats == 1  # 2 repeats over 2 launches
        assert launch_matrix.throughput.scenarios[0].repeats.max == 4
        return full.confirmation.launches[cell.id]

    monkeypatch.setattr(stage, "run_cell", launch)
    stage.run_confirmation(matrix, run, cells["ref"], cells, tmp_path, Progress(total=3), lambda: None, None)
    assert asked == ["fast.confirm-1-1", "ref.confirm-1-2", "fast.confirm-1-2"]  # interleaved, the first not again
    assert run.confirmation.complete and run.confirmation.tries[0].verdict.confirmed


def test_a_side_answering_each_document_once_spreads_the_documents_over_its_launches():
    """`repeats: 1` over three launches gave every document three answers (ceil(1 / 3) a launch): three times the
    time, and greedy answers repeat, so the second and third added nothing. Now each launch answers its own slice,
    in the seeded order past exploration's, and together the slices are the confirmation's documents once each."""
    from evalharness.phases.subsets import subset_indices

    matrix = Matrix.model_validate({
        "name": "m", "engine": "vllm", "model": "x", "axes": {"a": {"p": {}, "q": {}}},
        "quality": {"tasks": ["t"], "limit": 60},
        "confirm": {"launches": 3, "repeats": 1, "reference_repeats": 2, "documents": 97}})
    slices = [launch_matrix(matrix, None, ["t"], "finalist", attempt=1, launch=k).quality.task_settings["t"]
              for k in (1, 2, 3)]
    assert [(s.skip, s.limit, s.repeats) for s in slices] == [(60, 33, 1), (93, 32, 1), (125, 32, 1)]
    answered = [set(subset_indices("t", 300, s.limit, 1234, skip=s.skip)) for s in slices]
    explored = set(subset_indices("t", 300, 60, 1234))
    held_out = set(subset_indices("t", 300, 97, 1234, skip=60))
    assert set().union(*answered) == held_out and sum(map(len, answered)) == 97 and not held_out & explored
    # the reference answers each document twice over three launches: every launch answers all of them once
    ref = launch_matrix(matrix, None, ["t"], "reference", attempt=1, launch=2).quality.task_settings["t"]
    assert (ref.skip, ref.limit, ref.repeats) == (60, 97, 1)


def test_each_launchs_figure_is_the_one_the_verdict_read_in_its_unit(tmp_path):
    """The Confirmation table printed each launch's output tok/s under a header saying so while the claim was in
    goodput tok/s (demo, 2026-12-06): the table now shows the repeats the verdict kept, in the verdict's unit."""
    from evalharness.render.confirmation import confirmation_section

    run = confirmed_run(tmp_path, SAME)
    verdict = run.confirmation.tries[0].verdict
    assert verdict.unit == "output tok/s"  # this matrix states no SLO
    assert set(verdict.figures) == set(run.confirmation.launches) and all(verdict.figures.values())
    verdict.figures[launch_id("fast", 1, 1)] = [123.0, 125.0]  # what the section shows is the record's
    verdict.unit = "goodput tok/s"
    text = "\n".join(confirmation_section(run))
    assert "| goodput tok/s |" in text and "124.0 (repeats 123.0..125.0)" in text
