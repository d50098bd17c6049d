"""The numerics check as a measure (measures/numerics/, issue 59): a run saved before it moved reads the same, an
engine without log-probabilities is recorded as such without a phase, the figures come from the cells' folders
into the drift's measures, and the plan leaves it unpriced. Its statistics are tests/unit/phases/test_numerics.py's."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.analysis.drift import refresh_drift
from evalharness.analysis.plan import make_plan
from evalharness.analysis.timing import shown_groups
from evalharness.measures.comparisons import folder_changes
from evalharness.measures.numerics import phase as numerics_phase
from evalharness.measures.numerics.report import section
from evalharness.measures.numerics.spec import NumericsRecord
from evalharness.measures.phases import SKIPPED
from evalharness.measures.specs import read
from evalharness.phases.served import Served
from evalharness.records.cellfiles import save_scored
from evalharness.records.io import load_run, save_run
from evalharness.records.measures import Scored
from evalharness.records.run import RunResult
from tests.unit.analysis.test_gate import _run
from tests.unit.analysis.test_plan_two_stage import TWO_STAGE


def _scored(cid: str, ids: list[int], logprobs: list[float], **extra) -> Scored:
    return Scored(id=cid, token_ids=ids, logprobs=logprobs, top=[{str(i): lp} for i, lp in zip(ids, logprobs)],
                  **extra)


def _with_files(tmp_path: Path, shift: float) -> RunResult:
    """A finished two-cell run whose cells wrote the numerics check's files: the cell's echo `shift` nats below the
    reference's at every position."""
    run = _run(tmp_path, {"ref": [1, 0, 1], "cell": [1, 0, 1]})
    contexts = [_scored(f"c{i}", [5 + i, 6], [-0.5, -1.0], prompt_ids=[1], seed=i) for i in range(5)]
    save_scored(tmp_path / "cells" / "ref" / "contexts.jsonl", contexts)
    save_scored(tmp_path / "cells" / "ref" / "distribution.jsonl", contexts)
    save_scored(tmp_path / "cells" / "cell" / "distribution.jsonl",
                [_scored(c.id, c.token_ids, [v - shift for v in c.logprobs]) for c in contexts])
    for cid in run.cells:
        run.cells[cid].measures["distribution"] = NumericsRecord(path="completions", contexts=5, scored=5,
                                                                 positions=10).model_dump(mode="json")
    return run


def test_the_figures_come_from_the_folders_into_the_drifts_measures(tmp_path):
    run = _with_files(tmp_path, shift=0.5)
    refresh_drift(run, tmp_path)
    figures = run.cells["cell"].drift.numerics()
    assert figures is not None and figures.forward.available
    assert abs(figures.forward.estimate - 0.5) < 1e-9 and figures.positions == 10
    assert run.cells["cell"].drift.measures["distribution"]["forward"]["estimate"] == figures.forward.estimate
    # a cell without files has no figures: nothing to report, not an unavailable figure
    assert folder_changes(tmp_path / "cells" / "ref", tmp_path / "cells" / "gone", same_run=True) == {}
    # across two runs only the forward direction means anything
    across = folder_changes(tmp_path / "cells" / "ref", tmp_path / "cells" / "cell", same_run=False)
    assert across["distribution"]["reverse"] is None and across["distribution"]["forward"]["available"]


def test_a_run_saved_before_the_move_reads_and_renders_the_same(tmp_path):
    """Saved before issue 59 moved it, a cell's summary was `distribution` at its top level and its figures
    `drift.distribution`: both are read into `measures`, and the report's section is the same as the run's now."""
    now = _with_files(tmp_path / "now", shift=0.5)
    refresh_drift(now, tmp_path / "now")
    save_run(now, tmp_path / "now")
    before = json.loads((tmp_path / "now" / "results.json").read_text())
    for cell in before["cells"].values():
        cell["distribution"] = cell["measures"].pop("distribution")
        if cell["drift"] is not None:
            cell["drift"]["distribution"] = cell["drift"]["measures"].pop("distribution", None)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "results.json").write_text(json.dumps(before))
    old = load_run(tmp_path / "old")
    assert old.cells["cell"].drift.numerics() == now.cells["cell"].drift.numerics()
    assert read(old.cells["ref"].measures, "distribution", NumericsRecord).contexts == 5
    assert section(old) == section(now) and any("KL(ref‖cell)" in line for line in section(now))


def test_an_engine_without_log_probabilities_is_said_not_measured(tmp_path):
    served = Served(base_url="http://x/v1", root_url="http://x", model="m", timeout_s=1, retries=0, hung_after=1,
                    cell_dir=tmp_path, engine_label="transformers serve", logprob_path=None)
    record = SKIPPED["distribution"](served, None)
    assert record == NumericsRecord(path=None, scored=0,
                                    error="transformers serve returns no log-probabilities by token id")
    assert numerics_phase.skipped(Served(**{**served.__dict__, "logprob_path": "completions"}), None) is None
    run = _run(tmp_path, {"ref": [1, 0, 1]})
    run.cells["ref"].measures["distribution"] = record.model_dump(mode="json")
    assert section(run) == ["## Numerics: per-token KL divergence against the reference", "",
                            "Not measured: transformers serve returns no log-probabilities by token id.", ""]
    # on by default, its column in the time table stays where no cell timed it, as before it moved
    assert "distribution" in shown_groups(run) and "prefix_cache" not in shown_groups(run)


def test_the_plan_leaves_the_numerics_check_unpriced():
    plan = make_plan({**TWO_STAGE, "distribution": {"enabled": True}}, cells=4, tok_s=400.0, startup_min=5,
                     answer_tokens={"a": 200, "b": 800})
    assert plan.stages.measures == {}
