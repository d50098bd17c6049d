"""The detectors against the labelled corpus (tests/data/detector_corpus.jsonl, made by
scripts/make_detector_corpus.py) and the cell verdict against real probe answers of the embedded engine."""

import json
from pathlib import Path

import pytest

from evalharness.phases.detectors import Sample, judge
from evalharness.phases.probes import DEFAULT_PROBES, load_probes, judge_outputs
from evalharness.records.measures import ProbeOutput

DATA = Path(__file__).resolve().parents[3] / "data"


def _load(name: str) -> list[dict]:
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{path} is not there")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_corpus_is_big_and_mostly_engine_made():
    records = _load("detector_corpus.jsonl")
    assert len(records) >= 300
    assert sum(r["source"].startswith("engine:") for r in records) > 0.5 * len(records)
    assert {r["label"] for r in records} == {"garbage", "healthy"}
    assert all(r["how"] and r["split"] in ("train", "test") for r in records)


# Measured 2026-11-30 (docs/quality.md): precision 1.000 on both splits, recall 0.962 train / 0.959 test without
# the reference's answers. The floors are the goal of 0.95 for each.
FLOORS = {"train": (0.95, 0.95), "test": (0.95, 0.95)}


@pytest.mark.parametrize("split", ["train", "test"])
def test_precision_and_recall_on_each_split(split):
    records = [r for r in _load("detector_corpus.jsonl") if r["split"] == split]
    marked = [judge(Sample(output=r["text"], prompt=r.get("prompt"), finish_reason=r.get("finish_reason"),
                           expect_stop=r.get("expect_stop", False))).garbage for r in records]
    truth = [r["label"] == "garbage" for r in records]
    tp = sum(m and t for m, t in zip(marked, truth))
    precision_floor, recall_floor = FLOORS[split]
    assert tp / max(1, sum(marked)) >= precision_floor
    assert tp / max(1, sum(truth)) >= recall_floor


def _cell(records: list[dict], cell: str) -> list[ProbeOutput]:
    return [ProbeOutput(id=r["id"], prompt=r["prompt"], output=r["output"], finish_reason=r["finish_reason"])
            for r in records if r["cell"] == cell]


def test_the_demo_garbage_cell_is_caught_and_no_healthy_cell_is_flagged():
    records = _load("probe_outputs.jsonl")
    probes = load_probes(DEFAULT_PROBES)
    reference = _cell(records, "healthy-float32")
    ref_summary = judge_outputs(reference, probes, {}, 0.5, 0.3, 0.0)
    assert not ref_summary.garbage, ref_summary.reason
    by_id = {o.id: o for o in reference}
    for cell, garbage in (("healthy-float32", False), ("healthy-bfloat16", False), ("rope-theta-10", True)):
        summary = judge_outputs(_cell(records, cell), probes, by_id, 0.5, 0.3, 0.0)
        assert summary.garbage == garbage, (cell, summary.reason)
