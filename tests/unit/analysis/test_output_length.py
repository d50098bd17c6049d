"""Output length as a check (issue 60, 3): a cell that stops early looks faster. Each cell's output tokens per
answer against the reference's, paired by document, within ±10% by default; a cell outside it is named beside its
speed-up in the verdict box and the Pareto table; the reference and a cell of the same lengths are not."""

import json
import random
from pathlib import Path

import pytest

from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.outputlength import length_ratio, scenario_lengths
from evalharness.records.measures import TaskScore
from evalharness.render.report import render_markdown, summary_markdown
from tests.unit.analysis.test_equivalence import _run_with


def _answers(run_dir: Path, cid: str, lengths: list[int], cap: int | None = None) -> list[TaskScore]:
    """One generation task: every document right, its answer `lengths[i]` tokens (cut at `cap`)."""
    path = run_dir / f"cells/{cid}/quality/t/samples.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"doc_id": i, "doc_hash": f"h{i}", "filter": "none", "metrics": {"acc": 1.0}, "answer": "x",
             "finish_reason": "length" if cap is not None and n > cap else "stop",
             "completion_tokens": n if cap is None else min(n, cap)} for i, n in enumerate(lengths)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [TaskScore(task="t", version=1.0, metric="acc,none", value=1.0, seed=1,
                      samples=str(path.relative_to(run_dir)))]


def test_a_cell_that_stops_early_is_named_beside_its_speed_up(tmp_path):
    """The report paired answers and counted accuracy only: a cell cut at 40 tokens (answers of 30-200) looked
    1.3x faster with nothing said. Now it is named in the verdict box and its row; the reference and a cell of
    the same lengths are not."""
    rng = random.Random(3)
    lengths = [rng.randint(30, 200) for _ in range(60)]
    run = _run_with(tmp_path, {"ref": _answers(tmp_path, "ref", lengths),
                               "same": _answers(tmp_path, "same", lengths),
                               "capped": _answers(tmp_path, "capped", lengths, cap=40)},
                    gate={"margin": 0.1}, tok_s={"ref": 10.0, "same": 10.0, "capped": 13.0})
    refresh_drift(run, tmp_path)
    capped = {x.task: x for x in run.cells["capped"].drift.lengths}
    assert capped["t"].outcome == "shorter" and capped["t"].high < 0.9 and capped["t"].documents == 60
    assert {x.task: x.outcome for x in run.cells["same"].drift.lengths}["t"] == "within"
    box = [line for line in summary_markdown(run).splitlines() if line.startswith("> ")]
    said = "\n".join(box)
    assert "capped" in said and "the reference's length on t" in said and "outside ±10%" in said, said
    report = render_markdown(run)
    row = next(line for line in report.splitlines() if line.startswith("| `capped`") and "x [" in line)
    assert "the reference's length on t" in row  # its speed-up is not shown without the note
    assert "length on t" not in next(line for line in report.splitlines() if line.startswith("| `same`"))
    assert "| `capped` | t |" in report and "**shorter**" in report


@pytest.mark.parametrize("ratio, outcome", [(1.0, "within"), (0.5, "shorter"), (1.6, "longer")])
def test_the_rule_names_a_change_beyond_the_tolerance_and_only_then(ratio, outcome):
    rng = random.Random(7)
    reference = {f"d{i}": float(rng.randint(50, 300)) for i in range(150)}
    cell = {d: n * ratio * rng.uniform(0.97, 1.03) for d, n in reference.items()}
    check = length_ratio("t", reference, cell)
    assert check.outcome == outcome and check.low <= check.ratio <= check.high
    few = length_ratio("t", {"a": 100.0, "b": 200.0, "c": 50.0}, {"a": 80.0, "b": 230.0, "c": 35.0})
    assert few.outcome == "undecided" and few.low < 0.9 < 1.1 < few.high  # three documents: too few to tell
    assert length_ratio("t", {"a": 5.0}, {"a": 1.0}) is None  # one document: no interval


def test_a_throughput_scenario_that_returns_fewer_tokens_than_the_reference_is_named():
    from evalharness.records.measures import Percentiles, ScenarioResult

    def scenario(tokens: int) -> ScenarioResult:
        p = Percentiles()
        return ScenarioResult(name="single", concurrency=1, input_len=8, output_len=128, requests=8, completed=8,
                              duration_s=1, output_tokens=tokens, output_tok_s=tokens, request_decode_tok_s=p,
                              ttft_s=p, tpot_s=p, itl_s=p, e2e_s=p)

    [check] = scenario_lengths([scenario(8 * 128)], [scenario(8 * 64)])
    assert check.task == "throughput:single" and check.outcome == "shorter" and check.ratio == 0.5
    assert check.low is None  # a point: the requests' mean as counted
    [same] = scenario_lengths([scenario(8 * 128)], [scenario(8 * 128)])
    assert same.outcome == "within"
    # natural lengths (ignore_eos false: the reference returned less than asked): not a fixed-length check
    assert scenario_lengths([scenario(8 * 60)], [scenario(8 * 40)]) == []
