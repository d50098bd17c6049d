"""The one pairing key, on every shape lm-eval writes: several filters per document (gsm8k), several metrics per row
(ifeval, instruction-level as lists), a group's subtasks whose document ids restart at 0 (mmlu_pro), and baselines
saved before the key named subtask, filter and metric."""

import json
from pathlib import Path

import pytest

from evalharness.analysis.drift import task_evidence
from evalharness.analysis.gate import GateError, check, make_baseline
from evalharness.analysis.pairing import DocScore, canonical_key, headline_scores, pair, sample_records
from evalharness.records.baseline import Baseline, BaselineCell, BaselineTask, Thresholds
from evalharness.records.io import save_run
from evalharness.records.measures import SubtaskScore, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult


def _rows(path: Path, rows: list[dict]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def gsm8k_rows(strict: list[int], flexible: list[int]) -> list[dict]:
    """lm-eval's shape: one row per document per filter, strict-match first."""
    rows = []
    for i, (s, f) in enumerate(zip(strict, flexible)):
        rows.append({"doc_id": i, "doc_hash": f"h{i}", "filter": "strict-match", "metrics": {"exact_match": s}})
        rows.append({"doc_id": i, "doc_hash": f"h{i}", "filter": "flexible-extract", "metrics": {"exact_match": f}})
    return rows


GSM8K = "exact_match,strict-match"


def test_multi_filter_rows_are_separate_records_and_the_headline_is_the_configs_first_filter(tmp_path):
    path = Path(_rows(tmp_path / "s.jsonl", gsm8k_rows([1, 0, 0], [1, 1, 1])))
    records = sample_records(path, "gsm8k")
    assert len(records) == 6
    scores = headline_scores(path, TaskScore(task="gsm8k", metric=GSM8K))
    assert {k: v.value for k, v in scores.items()} == {
        "gsm8k|0|h0|strict-match|exact_match": 1.0, "gsm8k|1|h1|strict-match|exact_match": 0.0,
        "gsm8k|2|h2|strict-match|exact_match": 0.0}


def test_drift_pairs_on_the_headline_filter_not_the_last_row(tmp_path):
    # strict-match loses two documents; flexible-extract (the last row per document) is unchanged
    ref = _rows(tmp_path / "ref/s.jsonl", gsm8k_rows([1, 1, 1, 0], [1, 1, 1, 1]))
    cell = _rows(tmp_path / "cell/s.jsonl", gsm8k_rows([1, 0, 0, 0], [1, 1, 1, 1]))
    score = TaskScore(task="gsm8k", version=3.0, metric=GSM8K)
    drift, _ = task_evidence("gsm8k", score.model_copy(update={"samples": ref}),
                                    score.model_copy(update={"samples": cell}), Path("/"))
    assert drift.paired == 4 and (drift.reference, drift.cell) == (0.75, 0.25)
    assert (drift.right_to_wrong, drift.wrong_to_right) == (2, 0)


def test_ifeval_metrics_are_records_of_their_own_and_instruction_lists_keep_their_instructions(tmp_path):
    rows = [{"doc_id": 0, "doc_hash": "a", "filter": "none",
             "metrics": {"prompt_level_strict_acc": False, "inst_level_strict_acc": [True, False, True, True],
                         "prompt_level_loose_acc": True, "inst_level_loose_acc": [True, True, True, True]}}]
    path = Path(_rows(tmp_path / "s.jsonl", rows))
    records = sample_records(path, "ifeval")
    assert records["ifeval|0|a|none|inst_level_strict_acc"] == DocScore(0.75, 4.0)
    assert headline_scores(path, TaskScore(task="ifeval", metric="prompt_level_strict_acc,none")) == {
        "ifeval|0|a|none|prompt_level_strict_acc": DocScore(0.0)}


def _group_rows(correct: dict[str, list[int]]) -> list[dict]:
    return [{"task": sub, "doc_id": i, "doc_hash": f"{sub}{i}", "filter": "custom-extract",
             "metrics": {"exact_match": c}} for sub, values in correct.items() for i, c in enumerate(values)]


def _group_score(samples: str, subs: list[str]) -> TaskScore:
    return TaskScore(task="mmlu_pro", version="2.0", metric="exact_match,custom-extract", samples=samples,
                     subtasks={s: SubtaskScore(version=3.1, metric="exact_match,custom-extract") for s in subs})


def test_a_groups_subtasks_pair_per_subtask_even_where_document_ids_repeat(tmp_path):
    subs = ["mmlu_pro_biology", "mmlu_pro_law"]
    ref = _rows(tmp_path / "ref/s.jsonl", _group_rows({"mmlu_pro_biology": [1, 0], "mmlu_pro_law": [1, 1]}))
    cell = _rows(tmp_path / "cell/s.jsonl", _group_rows({"mmlu_pro_biology": [1, 0], "mmlu_pro_law": [0, 1]}))
    drift, _ = task_evidence("mmlu_pro", _group_score(ref, subs), _group_score(cell, subs), Path("/"))
    assert drift.paired == 4 and drift.subtasks_paired == {"mmlu_pro_biology": 2, "mmlu_pro_law": 2}
    assert drift.right_to_wrong == 1
    other = _group_score(cell, subs[:1])
    refused, _ = task_evidence("mmlu_pro", _group_score(ref, subs), other, Path("/"))
    assert not refused.comparable and "subtasks differ" in refused.reason


def test_old_doc_only_keys_are_read_as_the_tasks_headline():
    assert canonical_key("3|abc", "gsm8k", GSM8K) == "gsm8k|3|abc|strict-match|exact_match"
    assert canonical_key("3|abc", "eh_choice", "acc,none") == "eh_choice|3|abc|none|acc"
    new = "gsm8k|3|abc|strict-match|exact_match"
    assert canonical_key(new, "gsm8k", GSM8K) == new
    assert pair({"a|1": 1.0}, {"a|1": 0.0}).right_to_wrong == 1


def _run(run_dir: Path, rows: list[dict], score: TaskScore) -> RunResult:
    rel = "cells/ref/quality/t/samples.jsonl"
    _rows(run_dir / rel, rows)
    cell = CellResult(id="ref", axes={}, settings_hash="h", args={}, env={}, argv=[], status="ok", phase="done",
                      quality=[score.model_copy(update={"samples": rel})], started_at="t", finished_at="t",
                      duration_s=1)
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t")
    run = RunResult(meta=meta, reference="ref", cell_order=["ref"], cells={"ref": cell}, complete=True)
    save_run(run, run_dir)
    return run


def test_baseline_save_and_gate_use_the_same_headline_key(tmp_path):
    score = TaskScore(task="gsm8k", version=3.0, metric=GSM8K)
    base_run = _run(tmp_path / "base", gsm8k_rows([1] * 10, [1] * 10), score)
    baseline = make_baseline(base_run, tmp_path / "base", None, Thresholds(hard_accuracy_drop=0.2))
    assert list(baseline.cells["ref"].tasks["gsm8k"].correct)[0] == "gsm8k|0|h0|strict-match|exact_match"
    assert len(baseline.cells["ref"].tasks["gsm8k"].correct) == 10  # documents, not rows
    same = _run(tmp_path / "same", gsm8k_rows([1] * 10, [1] * 10), score)
    assert check(same, tmp_path / "same", baseline) == []
    # the headline filter lost half its answers; flexible-extract, the last row of each document, lost none
    worse = _run(tmp_path / "worse", gsm8k_rows([1] * 5 + [0] * 5, [1] * 10), score)
    [violation] = check(worse, tmp_path / "worse", baseline)
    assert "task gsm8k: drop +0.500" in violation and "on 10 documents" in violation


def test_a_baseline_saved_with_doc_only_keys_still_gates(tmp_path):
    score = TaskScore(task="gsm8k", version=3.0, metric=GSM8K)
    old = Baseline(created="t", matrix_name="m", harness_version="0", engine="vllm", cells={"ref": BaselineCell(
        status="ok", tasks={"gsm8k": BaselineTask(version=3.0, metric=GSM8K,
                                                   correct={f"{i}|h{i}": 1.0 for i in range(10)})})})
    same = _run(tmp_path / "same", gsm8k_rows([1] * 10, [0] * 10), score)
    assert check(same, tmp_path / "same", old) == []
    worse = _run(tmp_path / "worse", gsm8k_rows([0] * 10, [1] * 10), score)
    assert "worse" in check(worse, tmp_path / "worse", old)[0]


def _asked(rows: list[dict], prompts: dict[int, str]) -> list[dict]:
    return [{**r, "prompt_hash": prompts.get(r["doc_id"], f"p{r['doc_id']}")} for r in rows]


def test_documents_asked_with_different_prompts_are_refused_naming_the_task_and_the_first_document(tmp_path):
    ref = _rows(tmp_path / "ref/s.jsonl", _asked(gsm8k_rows([1, 1, 0], [1, 1, 1]), {}))
    same = _rows(tmp_path / "same/s.jsonl", _asked(gsm8k_rows([1, 0, 0], [1, 1, 1]), {}))
    changed = _rows(tmp_path / "changed/s.jsonl", _asked(gsm8k_rows([1, 1, 0], [1, 1, 1]), {1: "other-few-shot"}))
    score = TaskScore(task="gsm8k", version=3.0, metric=GSM8K)
    drift, _ = task_evidence("gsm8k", score.model_copy(update={"samples": ref}),
                             score.model_copy(update={"samples": same}), Path("/"))
    assert drift.comparable and drift.paired == 3
    refused, evidence = task_evidence("gsm8k", score.model_copy(update={"samples": ref}),
                                      score.model_copy(update={"samples": changed}), Path("/"))
    assert evidence is None and not refused.comparable
    assert refused.reason.startswith("task gsm8k: document 1 was asked with a different prompt")


def test_a_baseline_keeps_the_prompts_and_the_gate_refuses_a_run_asked_otherwise(tmp_path):
    score = TaskScore(task="gsm8k", version=3.0, metric=GSM8K)
    base_run = _run(tmp_path / "base", _asked(gsm8k_rows([1] * 10, [1] * 10), {}), score)
    baseline = make_baseline(base_run, tmp_path / "base", None, Thresholds(hard_accuracy_drop=0.2))
    assert baseline.cells["ref"].tasks["gsm8k"].prompts["gsm8k|0|h0|strict-match|exact_match"] == "p0"
    changed = _run(tmp_path / "changed", _asked(gsm8k_rows([1] * 10, [1] * 10), {4: "new-system-prompt"}), score)
    with pytest.raises(GateError, match="task gsm8k: document 4 was asked with a different prompt"):
        check(changed, tmp_path / "changed", baseline)
