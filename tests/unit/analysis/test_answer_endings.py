"""Empty answers behind reasoning (issue 60, 4): 127 of 700 responses had an empty content behind a reasoning parser
(sgl-project/sglang#33995) and the report counted them only among "empty". Now they are their own outcome per cell
and task, counted in the generation record and paired against the reference like "cut off" and "looping"."""

import json
from pathlib import Path

from evalharness.analysis.drift import refresh_drift
from evalharness.phases._lmeval_results import generation_stats
from evalharness.records.measures import TaskScore
from evalharness.render.report import render_markdown
from tests.unit.analysis.test_equivalence import _run_with


def _answers(run_dir: Path, cid: str, swallowed: int, documents: int = 80) -> list[TaskScore]:
    """Every document reasoned; the first `swallowed` answers lost their content behind the reasoning."""
    path = run_dir / f"cells/{cid}/quality/t/samples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "finish_reason": "stop",
             "metrics": {"acc": 0.0 if i < swallowed else 1.0}, "reasoning": "Let me add 2 and 3: that is 5.",
             "answer": "" if i < swallowed else "5", "completion_tokens": 20} for i in range(documents)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [TaskScore(task="t", version=1.0, metric="acc,none", value=1 - swallowed / documents, seed=1,
                      samples=str(path.relative_to(run_dir)))]


def test_reasoning_present_content_empty_is_its_own_outcome_paired_against_the_reference(tmp_path):
    run = _run_with(tmp_path, {"ref": _answers(tmp_path, "ref", 0), "swallowing": _answers(tmp_path, "swallowing", 24),
                               "fine": _answers(tmp_path, "fine", 0)}, gate={"margin": 0.05})
    refresh_drift(run, tmp_path)
    endings = {c.field: c for c in run.cells["swallowing"].drift.endings}
    empty = endings["empty_with_reasoning_share"]
    assert empty.changed and empty.reference == 0.0 and empty.cell == 0.3
    assert not any(c.changed for c in run.cells["fine"].drift.endings)
    report = render_markdown(run)
    assert "| `swallowing` | t | empty behind reasoning | 0.0% | 30.0% |" in report
    stats = generation_stats([{"content": "", "reasoning": "thinking"}, {"content": "", "reasoning": None},
                              {"content": "5", "reasoning": "thinking"}])
    assert stats["empty"] == 2 and stats["empty_with_reasoning"] == 1  # an empty answer without thinking is not one
