"""Task kinds (issue 59): the quality phase names no kind of task; the runner and `validate` ask measures/tasks.py,
which asks each kind's folder (measures/calls/task.py) whether a task is its, which worker answers it, whether its
data runs and what a cell's flags mean for it. A run started before the calls worker moved resumes its finished
repeats."""

from __future__ import annotations

import importlib.util
import json

from evalharness.measures.calls.cases import SHIPPED
from evalharness.measures.tasks import data_problems, flag_notes, worker_spec
from evalharness.phases import quality
from evalharness.records.measures import TaskScore


def test_a_calls_task_is_answered_by_its_folders_worker_and_an_lmeval_task_by_lmevals(tmp_path):
    spec = worker_spec("eh_tools", None)
    assert spec == {"worker": "evalharness.measures.calls.worker", "calls_data": str(SHIPPED / "eh_tools.jsonl")}
    assert importlib.util.find_spec(spec["worker"]) is not None
    assert worker_spec("eh_capitals", None) == {}  # an lm-eval task: phases/quality.py runs lm-eval's worker
    (tmp_path / "mine.jsonl").write_text((SHIPPED / "eh_json.jsonl").read_text().splitlines()[0] + "\n")
    assert worker_spec("mine", str(tmp_path))["calls_data"] == str(tmp_path / "mine.jsonl")  # a user's own cases


def test_a_calls_tasks_data_that_does_not_run_is_named_with_its_file_and_line(tmp_path):
    (tmp_path / "broken.jsonl").write_text('{"id": "a", "kind": "tools", "request": {}}\n{"id": "b"}\n')
    problems = data_problems(["broken", "eh_json", "eh_capitals"], str(tmp_path))
    assert set(problems) == {"broken", "eh_json"} and problems["eh_json"] is None  # eh_capitals: lm-eval checks it
    assert f"{tmp_path / 'broken.jsonl'}, line 2: kind" in problems["broken"]


class _Engine:
    """An engine module's `calls_flag_notes`, recording what it was asked."""

    def __init__(self):
        self.asked = []

    def calls_flag_notes(self, args, kinds):
        self.asked.append((args, kinds))
        return [f"{sorted(kinds)} with {sorted(args)}"]


def test_validate_asks_the_cells_engine_about_the_kinds_of_case_its_tasks_ask_for():
    engine = _Engine()
    assert flag_notes(["eh_json", "eh_capitals"], None, engine, {"--tool-call-parser": "x"}) == [
        "['json'] with ['--tool-call-parser']"]
    assert flag_notes(["eh_tools", "eh_json"], None, engine, {}) == ["['json', 'tools'] with []"]
    assert flag_notes(["eh_capitals"], None, engine, {}) == [] and len(engine.asked) == 2  # no calls task: not asked


def test_a_repeat_finished_before_the_worker_moved_is_kept_on_resume(tmp_path):
    """A calls task's repeat finished by a run whose spec named no worker (before the move) is the same repeat."""
    before = {"task": "eh_json", "base_url": "http://127.0.0.1:8001/v1", "calls_data": "/x/eh_json.jsonl", "seed": 1}
    score = TaskScore(task="eh_json", value=0.5, n=2, attempts=1, seconds=1.0)
    (tmp_path / quality.FINISHED).write_text(json.dumps({"spec": before, "score": score.model_dump(mode="json")}))
    (tmp_path / "samples.jsonl").write_text("")
    now = {**before, "base_url": "http://127.0.0.1:9002/v1", "worker": "evalharness.measures.calls.worker"}
    assert quality._finished(tmp_path, now) == score
    assert quality._finished(tmp_path, {**now, "seed": 2}) is None  # a setting that matters still does
