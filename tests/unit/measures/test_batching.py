"""Batch dependence (issue 39, measures/batching/, phases/prompts.py, analysis/changed.py) from recorded answers: a
cell whose batched answers change more often than the reference's is flagged, one that changes as often is not; the
section says both; the phase is off unless enabled and its prompts are checked before launch."""

from __future__ import annotations

import json

import pytest

from evalharness.measures.batching.compare import compare as batch_change
from evalharness.measures.batching.spec import BatchAnswer, BatchDependence, LoadDrifts
from evalharness.measures.reports import measure_sections
from evalharness.measures.specs import read
from evalharness.matrix.errors import SpecError
from evalharness.serving.engines import load_matrix
from evalharness.phases.prompts import BatchPromptsError, first_difference, load_prompts
from evalharness.records.drift import CellDrift
from evalharness.records.run import CellResult, RunMeta, RunResult
from tests.headless import browser  # noqa: F401  (a fixture)

# recorded on vLLM 0.32.0's CPU build (2026-12-04): float32 answered every prompt alike alone and batched; bfloat16
# changed 8 of 16, the first difference 75 to 318 characters in. The texts here stand for such answers.
ANSWER = "The clock tower rang thirteen times, and the town woke to find that nothing was as it had been."


def _changed_answer() -> str:
    return ANSWER[:40] + " and the baker" + ANSWER[54:]


def worse_first_difference() -> int:
    return first_difference(ANSWER, _changed_answer())


def _side(changed: set[int], n: int = 16) -> BatchDependence:
    answers = []
    for i in range(n):
        batched = ANSWER if i not in changed else _changed_answer()
        answers.append(BatchAnswer(id=f"n{i:03d}", alone=ANSWER, batched=batched,
                                   first_difference=first_difference(ANSWER, batched)))
    return BatchDependence(concurrency=16, max_tokens=64, answers=answers)


def test_a_cell_that_changes_more_than_the_reference_is_flagged_and_one_that_changes_as_much_is_not():
    reference = _side({3})
    worse = batch_change(reference, _side({0, 2, 3, 5, 7, 9, 11, 13}), alpha=0.05)
    assert worse.flagged and worse.reference == 1 / 16 and worse.cell == 0.5 and worse.p_value < 0.05
    assert worse.mean_first_difference == worse_first_difference()
    same = batch_change(reference, _side({6}), alpha=0.05)  # as often, other prompts: not more
    assert not same.flagged and same.cell == same.reference
    fewer = batch_change(_side({0, 1, 2, 3, 4, 5}), _side(set()), alpha=0.05)
    assert not fewer.flagged  # changing less than the reference is no fault
    one_more = batch_change(reference, _side({3, 4}), alpha=0.05)
    assert not one_more.flagged  # one prompt more in 16 is not credible


def test_failed_prompts_are_left_out_of_the_pairing():
    cell = _side(set(range(8)))
    for answer in cell.answers[:8]:
        answer.error, answer.batched = "http_500: boom", None
    change = batch_change(_side(set()), cell, alpha=0.05)
    assert change.prompts == 8 and change.cell == 0.0 and not change.flagged
    assert batch_change(_side(set()), BatchDependence(concurrency=16, max_tokens=64), alpha=0.05) is None


def test_first_difference():
    assert first_difference("abc", "abc") is None
    assert first_difference("abcd", "abxd") == 2
    assert first_difference("abc", "abcdef") == 3


def _run(cells: dict[str, BatchDependence | None]) -> RunResult:
    results = {}
    for cid, side in cells.items():
        results[cid] = CellResult(id=cid, axes={}, settings_hash="h", engine="vllm", args={}, env={}, argv=[],
                                  status="ok", phase="done", started_at="t", finished_at="t",
                                  duration_s=1.0)
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m", started_at="t")
    run = RunResult(meta=meta, reference="ref", cell_order=list(cells), cells=results)
    for cid, side in cells.items():
        if side is not None:
            results[cid].measures["batching"] = side.model_dump(mode="json")
    for cid in list(cells)[1:]:
        if cells[cid] is not None:
            change = batch_change(cells["ref"], cells[cid], 0.05)
            results[cid].drift = CellDrift(cell=cid, measures={"batching": change.model_dump(mode="json")})
    return run


def test_the_section_gives_the_references_own_count_and_each_cells_verdict():
    text = "\n".join(measure_sections(_run({"ref": _side({3}), "bf16": _side(set(range(8))), "f32b": _side({3})})))
    assert "## Batch dependence" in text and "among 16 requests in flight" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| `")}
    assert rows["`ref` (reference)"][0] == "1/16"
    assert rows["`bf16`"][0] == "8/16" and rows["`bf16`"][2].startswith("**flagged**")
    assert rows["`f32b`"][2].startswith("not flagged")
    assert measure_sections(_run({"ref": None, "x": None})) == []  # the phase off: no section


def test_the_phase_is_off_unless_enabled_and_its_prompts_are_checked(tmp_path):
    body = ("name: x\nengine: vllm\nmodel: some/model\ncommand: [python, -m, vllm.entrypoints.openai.api_server]\n"
            "axes:\n  p:\n    a: {}\n")
    (tmp_path / "off.yaml").write_text(body)
    matrix, _, _ = load_matrix(tmp_path / "off.yaml")
    assert matrix.batching.enabled is False and matrix.batching.concurrency == 16
    (tmp_path / "missing.yaml").write_text(body + "batching: {enabled: true, prompts: ./nothere.jsonl}\n")
    with pytest.raises(SpecError, match=r"missing.yaml:\d+: batching.prompts: .*nothere.jsonl is not a file"):
        load_matrix(tmp_path / "missing.yaml")
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"id": "a", "prompt": "hi"}) + "\n")
    with pytest.raises(BatchPromptsError, match="1 prompts, the phase needs 17"):
        load_prompts(short, 17)
    short.write_text('{"id": "a"}\n')
    with pytest.raises(BatchPromptsError, match="line 1: expected"):
        load_prompts(short, 1)


def test_quality_among_concurrent_requests_is_paired_with_the_same_documents_alone(tmp_path):
    """A cell that loses answers among its concurrent requests (a batched-prefill defect) is worse than itself
    alone; one that answers alike is equivalent; the reference is compared too; the section shows both."""
    from evalharness.analysis.drift import refresh_drift
    from tests.unit.analysis.test_equivalence import _run_with, _scores

    right = [1.0] * 60
    broken = [1.0 if i % 3 else 0.0 for i in range(60)]  # a third of the documents lost when batched
    run = _run_with(tmp_path, {"ref": _scores(tmp_path, "ref", {"eh_capitals": right}),
                               "fine": _scores(tmp_path, "fine", {"eh_capitals": right}),
                               "defect": _scores(tmp_path, "defect", {"eh_capitals": broken})},
                    gate={"margin": 0.1})
    run.meta.matrix["quality"] = {"concurrency": 16}
    for cid in ("ref", "fine", "defect"):
        alone = _scores(tmp_path / "cells" / cid / "alone", "x", {"eh_capitals": right})
        for score in alone:  # the alone run's files, relative to the run folder as the runner keeps them
            score.samples = f"cells/{cid}/alone/{score.samples}"
        run.cells[cid].measures["batching"] = BatchDependence(concurrency=16, max_tokens=64,
                                                              alone=alone).model_dump(mode="json")
    refresh_drift(run, tmp_path)
    by_cell = {entry.cell: entry for entry in read(run.measures, "batching", LoadDrifts).load_drift}
    assert set(by_cell) == {"ref", "fine", "defect"} and all(e.concurrency == 16 for e in by_cell.values())
    assert by_cell["defect"].drift.paired == 60 and by_cell["defect"].drift.outcome == "worse"
    assert by_cell["defect"].drift.reference == 1.0 and by_cell["defect"].drift.delta < -0.2
    assert by_cell["fine"].drift.outcome == "equivalent" and by_cell["ref"].drift.outcome == "equivalent"
    run.cells["ref"].measures["batching"] = {**_side(set()).model_dump(mode="json"),
                                             "alone": run.cells["ref"].measures["batching"]["alone"]}
    text = "\n".join(measure_sections(run))
    rows = [line for line in text.splitlines() if line.startswith("| `") and "eh\\_capitals" in line]
    assert len(rows) == 3 and "**worse**" in next(r for r in rows if r.startswith("| `defect`"))
    assert "| `ref` (reference) |" in rows[0] and "at concurrency 16" in text
    assert "| 60 | 20/0 |" in next(r for r in rows if r.startswith("| `defect`"))  # 20 documents lost, none gained


def test_report_html_shows_both_batching_tables_as_text(browser, tmp_path):
    from evalharness.render.html import render_html
    from tests.headless import open_page

    run = _run({"ref": _side({3}), "bf16": _side(set(range(8))), "f32b": _side({3})})
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    rows = browser.find_elements("css selector", "#measure-batching table.measure-table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == ["ref (reference)", "bf16", "f32b"]
    assert rows[1].find_elements("css selector", "td.worse")[0].text.startswith("flagged")
    assert len(browser.find_elements("css selector", "#measure-batching table")) == 1  # no task answered alone


def test_a_thinking_models_reasoning_is_compared_with_its_answer():
    from types import SimpleNamespace

    from evalharness.phases.prompts import answer_text

    assert answer_text(SimpleNamespace(content="Paris", model_extra={})) == "Paris"
    thinking = SimpleNamespace(content=None, model_extra={"reasoning_content": "Let me think"})
    other = SimpleNamespace(content=None, model_extra={"reasoning_content": "Let me see"})
    assert answer_text(thinking) != answer_text(other) and answer_text(thinking).startswith("Let me think")


def test_a_run_saved_before_batching_was_a_measure_reads_and_renders_alike():
    """results.json written before issue 59 kept the record at the cell's top level (`batching`) and its change in
    `drift.batching`: both read into `measures`, and the section renders as from a new run."""
    new = _run({"ref": _side({3}), "bf16": _side(set(range(8)))})
    saved = json.loads(new.model_dump_json())
    for cell in saved["cells"].values():
        cell["batching"] = cell["measures"].pop("batching")
        if cell.get("drift"):
            cell["drift"]["batching"] = cell["drift"]["measures"].pop("batching")
    old = RunResult.model_validate(saved)
    assert old.cells["bf16"].measures["batching"] == new.cells["bf16"].measures["batching"]
    assert old.cells["bf16"].drift.measures["batching"]["flagged"] is True
    assert measure_sections(old) == measure_sections(new) and "**flagged**" in "\n".join(measure_sections(old))
    assert "batching" not in json.loads(old.model_dump_json())["cells"]["bf16"]  # written back in the new place


def test_a_run_saved_before_the_tasks_alone_moved_into_the_record_reads_them_there():
    """Until issue 59 a cell kept batching.tasks' answers alone at its top level (`quality_alone`) and the run its
    comparison (`load_drift`): a saved run reads the first into the batching record and recomputes the second."""
    score = {"task": "eh_capitals", "metric": "exact_match", "value": 1.0, "n": 20, "samples": "cells/a/alone/x.jsonl"}
    old = {"batching": {"concurrency": 8, "max_tokens": 32, "answers": []}, "quality_alone": [score]}
    cell = CellResult.model_validate({**_cell_fields(), **old})
    record = read(cell.measures, "batching", BatchDependence)
    assert [t.task for t in record.alone] == ["eh_capitals"] and record.alone[0].n == 20
    assert "quality_alone" not in cell.model_dump(mode="json")
    # without the batching record (it never ran) there is nothing to attach the tasks to: nothing is invented
    bare = CellResult.model_validate({**_cell_fields(), "quality_alone": [score]})
    assert bare.measures == {}


def _cell_fields() -> dict:
    return {"id": "a", "axes": {}, "settings_hash": "h", "args": {}, "env": {}, "argv": [], "status": "ok",
            "phase": "done", "started_at": "t", "finished_at": "t", "duration_s": 1.0}
