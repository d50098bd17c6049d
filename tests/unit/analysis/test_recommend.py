"""The recommendation (analysis/recommend.py): controlled over the cells it chooses from, each task at the level its look
was tested at."""

from __future__ import annotations

import pytest

from evalharness.analysis.decision import decide as decide_shipping
from evalharness.analysis.recommend import controlled_choice, equivalence_p, recommend
from evalharness.records.drift import CellDrift, TaskDrift
from evalharness.render.recommend import recommendation_lines
from tests.unit.analysis.sweep_runs import cell, step, sweep_run


def _near_margin_run(candidates: int):
    """`candidates` cells, each about twice the reference's speed and each equivalent on its one task by its own test
    (TOST p 0.03 at alpha 0.05), as cells truly at the margin are about 5% of the time each."""
    ref = cell("ref", [step(1, [10.0, 10.3, 9.8], tpot_s=0.05)], outcome=None)
    cells = [ref]
    for k in range(candidates):
        fast = cell(f"fast{k}", [step(1, [20.0 + k, 20.4 + k, 19.7 + k], tpot_s=0.05)])
        fast.drift.tasks[0].p_equivalent = 0.03
        cells.append(fast)
    return sweep_run(cells, concurrency=[1])


def test_the_recommendation_is_controlled_over_the_cells_it_chooses_from():
    one = recommend(_near_margin_run(1))
    assert one.cell == "fast0" and one.candidates == 1  # one candidate: its own test at alpha is the whole family
    ten = recommend(_near_margin_run(10))
    assert ten.cell is None and ten.candidates == 10  # the first of ten such cells is not recommended
    assert "not once the choice among the 10 faster cells is counted" in ten.why_none
    # a cell clearly equivalent is still found among ten, and the line says what was controlled
    clear = _near_margin_run(10)
    clear.cells["fast3"].drift.tasks[0].p_equivalent = 1e-4
    rec = recommend(clear)
    assert rec.cell == "fast3" and rec.p_adjusted == pytest.approx(1e-3)
    clear.decision = decide_shipping(clear)  # the drift changed after the run was decided: decide again, as refresh_drift does
    assert "Holm" in " ".join(recommendation_lines(clear)) and "at most 0.05" in " ".join(recommendation_lines(clear))


def test_a_task_tested_at_a_spent_look_is_scaled_to_the_familys_alpha():
    """A task stopped at a look tested at 0.0055 is equivalent there with p 0.005: scaled to alpha it is 0.045, not
    0.005, so the choice's family counts the level it was tested at."""
    drift = CellDrift(cell="c", tasks=[TaskDrift(task="t", p_equivalent=0.005, level=0.0055)])
    assert equivalence_p(drift, 0.05) == pytest.approx(0.005 * 0.05 / 0.0055)
    assert controlled_choice([0.06, 0.001], 0.05) == (1, [0.06, 0.002])  # the faster one is not kept, the next is
    assert controlled_choice([0.04, 0.001], 0.05)[0] == 0  # Holm keeps both: the faster is chosen
