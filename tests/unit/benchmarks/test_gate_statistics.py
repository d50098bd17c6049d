"""The gate's statistics by simulation (benchmarks/gate_false_alarms.py, few runs, fixed seeds) and the sizing of
a design (analysis/sizing.py) on hand-computed cases.

Simulated rates are compared with their goals with a tolerance of 2.5 binomial standard errors at the runs used
(400 runs: 2.7 points at 5%, 5 points at 80%); every rate checked here is one a broken rule would miss by far (no
Holm adjustment: a 24-cell run fails about all the time at the margin; the plain sizing: gsm8k caught a quarter of
the time)."""

import math
import time

import numpy as np
import pytest
from scipy.stats import norm

from benchmarks.gate_false_alarms import FAIL, INCONCLUSIVE, PASS, TaskSpec, decide_exact, planned_repeats, simulate_run
from evalharness.analysis import sizing

SM120 = [("gsm8k", 200, 0.95), ("gpqa_diamond", 198, 0.80), ("mmlu_pro", 210, 0.82), ("ifeval", 200, 0.88)]
MARGIN, ALPHA, CELLS = 0.02, 0.05, 24
RUNS = 400


def tolerance(rate: float, runs: int = RUNS) -> float:
    return 2.5 * math.sqrt(rate * (1 - rate) / runs)


def sm120_tasks(consistency: float = 0.5, repeats: dict[str, tuple[int, int]] | None = None) -> list[TaskSpec]:
    return [TaskSpec(name, docs=docs, accuracy=acc, consistency=consistency,
                     cell_repeats=(repeats or {}).get(name, (1, 1))[0],
                     reference_repeats=(repeats or {}).get(name, (1, 1))[1]) for name, docs, acc in SM120]


def any_fails(result) -> float:
    return float(np.mean(np.any(result.outcome == FAIL, axis=1)))


# ------------------------------------------------------------------------------------------------ the simulations

def test_unchanged_24_cell_run_fails_ci_at_most_5_percent_with_single_samples():
    result = simulate_run(sm120_tasks(), cells=CELLS, margin=MARGIN, alpha=ALPHA, trials=RUNS, seed=11, check=3)
    assert result.checked == result.agreed == 3  # the replica decided as decide_family does
    assert result.run_false_fail() <= ALPHA
    # and the finding beside it: single samples cannot vouch for a margin of 0.02 (se 0.015-0.028): almost every
    # unchanged cell is inconclusive, not passed
    assert result.share(PASS) < 0.05


def test_false_alarms_do_not_grow_with_the_number_of_cells():
    # the least favourable null: every task of every cell truly dropped by exactly the margin (a drop of 0 is far
    # inside the null and fails almost never). Holm over cells x tasks keeps the run's rate at alpha at most; without
    # it 96 tests at 5% would fail a 24-cell run nearly always. Repeats (4 / 8): the t-test over documents.
    tasks = sm120_tasks(repeats={name: (4, 8) for name, _, _ in SM120})
    rates = {}
    for cells in (1, 4, 24):
        result = simulate_run(tasks, cells=cells, margin=MARGIN, alpha=ALPHA, trials=RUNS, seed=[5, cells],
                              drops={c: MARGIN for c in range(cells)})
        rates[cells] = any_fails(result)
        assert rates[cells] <= ALPHA + tolerance(ALPHA), rates
    assert rates[24] <= rates[1] + 2 * tolerance(ALPHA), rates


def test_unchanged_ci_run_fails_at_most_5_percent_whatever_the_number_of_cells():
    for cells in (1, 4, 24):
        result = simulate_run(sm120_tasks(0.75), cells=cells, margin=MARGIN, alpha=ALPHA, trials=RUNS,
                              seed=[7, cells])
        assert result.run_false_fail() <= ALPHA, (cells, result.run_false_fail())


def test_true_drop_of_twice_the_margin_is_caught_80_percent_at_the_planned_repeats():
    # the full sm120 run: 24 cells, the four tasks, cell 0 dropping by 0.04 on every task, at repeats_for_task's
    # repeats per task; each task alone must be called worse in 80% of runs (what the sizing promises)
    tasks = sm120_tasks()
    repeats = {t.name: planned_repeats(t, margin=MARGIN, alpha=ALPHA, power=0.8, cells=CELLS, tasks=4,
                                       under_drop=True) for t in tasks}
    result = simulate_run(sm120_tasks(repeats=repeats), cells=CELLS, margin=MARGIN, alpha=ALPHA, trials=RUNS,
                          seed=13, drops={0: 2 * MARGIN}, check=2)
    assert result.checked == result.agreed == 2
    for name, power in zip(repeats, result.caught_per_task(0)):
        assert power >= 0.8 - tolerance(0.8), (name, power, repeats[name])
    assert result.caught(0) >= 0.95  # four tasks dropping together: the cell is caught nearly always
    assert result.cell_false_fail() <= 0.01  # the 23 unchanged cells beside it


def test_plain_sizing_under_sizes_a_high_accuracy_task():
    # repeats_needed with the null's variance on both sides (the brief's formula) gives gsm8k 6 / 32 repeats; the
    # drop turns its nearly-always-right documents into coins (within-document variance 0.024 -> 0.060), and the
    # drop is caught about a quarter of the time, not 80%: why repeats_for_task sizes at the drop's variance
    gsm8k = sm120_tasks()[:1]
    plain = planned_repeats(gsm8k[0], margin=MARGIN, alpha=ALPHA, power=0.8, cells=CELLS, tasks=4)
    assert plain == (6, 32)
    result = simulate_run(sm120_tasks(repeats={"gsm8k": plain})[:1], cells=CELLS, margin=MARGIN, alpha=ALPHA,
                          trials=RUNS, seed=17, drops={0: 2 * MARGIN})
    assert result.caught(0) < 0.5


def test_replica_decides_as_the_package_does():
    # same seed, same draws: every run decided by the numpy replica and by decide_family + gate_outcome
    cases = [
        (sm120_tasks()[:2], 6, {0: 0.04}),  # single samples: the score test
        (sm120_tasks(repeats={"gsm8k": (3, 5), "gpqa_diamond": (2, 9)})[:2], 6, {1: 0.04}),  # the t-test
        ([TaskSpec("greedy", docs=60, accuracy=0.85, consistency=1.0, cell_repeats=4)], 3, {0: 0.2}),  # mixed
        ([TaskSpec("given", p=np.linspace(0.05, 1.0, 50), cell_repeats=2, reference_repeats=3)], 3, {2: 0.1}),
    ]
    seen = set()
    for tasks, cells, drops in cases:
        margin = 0.02 if cells == 6 else 0.1
        fast = simulate_run(tasks, cells=cells, margin=margin, trials=15, seed=3, drops=drops)
        exact = simulate_run(tasks, cells=cells, margin=margin, trials=15, seed=3, drops=drops, exact=True)
        assert np.array_equal(fast.outcome, exact.outcome) and np.array_equal(fast.worse, exact.worse)
        seen |= set(int(v) for v in fast.outcome.ravel())
    assert seen == {PASS, INCONCLUSIVE, FAIL}  # the comparison covered every outcome


def test_per_document_probabilities_can_be_given_directly():
    p = np.array([1.0] * 40 + [0.0] * 10)
    task = TaskSpec("given", p=p)
    assert task.docs == 50 and task.accuracy == pytest.approx(0.8)
    result = simulate_run([task], cells=2, margin=0.1, trials=50, seed=1)
    assert np.all(result.outcome == PASS)  # deterministic answers, nothing changed: every cell non-inferior
    with pytest.raises(ValueError):
        TaskSpec("bad", p=np.array([0.5, 1.5]))


def test_the_gate_decides_a_24_cell_run_in_seconds():
    rng = np.random.default_rng(0)
    names = [name for name, _, _ in SM120]
    refs = [rng.binomial(1, np.full(200, acc)).astype(float) for _, _, acc in SM120]
    cells = [rng.binomial(1, np.full((24, 200), acc)).astype(float) for _, _, acc in SM120]
    start = time.perf_counter()
    decide_exact(refs, cells, names, MARGIN, ALPHA)
    assert time.perf_counter() - start < 5.0


# --------------------------------------------------------------------------------------------- sizing, by hand

def test_within_doc_variance_by_hand():
    assert sizing.within_doc_variance(0.9, 0.5) == pytest.approx(0.9 * 0.1 * 0.5)  # 0.045
    assert sizing.within_doc_variance(0.8, 0.0) == pytest.approx(0.16)  # every answer a coin
    assert sizing.within_doc_variance(0.95, 1.0) == 0.0  # deterministic
    with pytest.raises(ValueError):
        sizing.within_doc_variance(1.2, 0.5)


def test_within_doc_variance_matches_the_beta_model():
    # E[p(1-p)] for p ~ Beta(mu (1/rho - 1), (1 - mu)(1/rho - 1)), by Monte Carlo
    rng = np.random.default_rng(0)
    for mu, rho in ((0.95, 0.5), (0.8, 0.75), (0.5, 0.2)):
        p = rng.beta(mu * (1 / rho - 1), (1 - mu) * (1 / rho - 1), size=400_000)
        assert np.mean(p * (1 - p)) == pytest.approx(sizing.within_doc_variance(mu, rho), rel=0.02)
        dropped = p * (1 - 0.04 / mu)
        assert np.mean(dropped * (1 - dropped)) == pytest.approx(
            sizing.dropped_within_doc_variance(mu, rho, 0.04), rel=0.02)
        assert np.var(p - dropped) == pytest.approx(sizing.between_doc_drop_variance(mu, rho, 0.04), rel=0.03)


def test_dropped_variance_by_hand():
    # 0.95, rho 0.5, drop 0.04: k = 1 - 0.04 / 0.95; E[p^2] = 0.9025 + 0.02375 = 0.92625
    k = 1 - 0.04 / 0.95
    assert sizing.dropped_within_doc_variance(0.95, 0.5, 0.04) == pytest.approx(k * 0.95 - k * k * 0.92625)
    assert sizing.dropped_within_doc_variance(0.95, 0.5, 0.04) == pytest.approx(0.0601, abs=1e-4)
    # deterministic and always right: the dropped cell is a coin of 0.8
    assert sizing.dropped_within_doc_variance(1.0, 1.0, 0.2) == pytest.approx(0.16)
    assert sizing.between_doc_drop_variance(1.0, 1.0, 0.2) == 0.0
    assert sizing.between_doc_drop_variance(0.95, 0.5, 0.04) == pytest.approx((0.04 / 0.95) ** 2 * 0.02375)


def test_standard_error_by_hand():
    assert sizing.standard_error(0.045, 100, 2, 2) == pytest.approx(math.sqrt(0.045 * 1.0 / 100))  # 0.02121
    assert sizing.standard_error(0.25, 100, 1, 1) == pytest.approx(math.sqrt(0.005))
    assert sizing.standard_error(0.1, 50, 4, 1, cell_within_var=0.2, between_var=0.01) == pytest.approx(
        math.sqrt((0.1 + 0.05 + 0.01) / 50))


def test_family_z_is_holms_first_step():
    assert sizing.family_z(0.05, 1) == pytest.approx(1.644854, abs=1e-5)
    assert sizing.family_z(0.05, 2) == pytest.approx(1.959964, abs=1e-5)
    assert sizing.family_z(0.05, 5) == pytest.approx(2.326348, abs=1e-5)  # alpha / 5 = 0.01
    assert sizing.family_z(0.05, 96) == pytest.approx(norm.ppf(1 - 0.05 / 96))


def test_repeats_needed_by_hand():
    # coin answers (E[p(1-p)] 0.25), 100 documents, margin 0.05, one cell, one task: ratio 1.6449 + 0.8416 = 2.4865,
    # se <= 0.020109, so 0.25 (1/Rc + 1/Rr) <= 0.04044: 12 / 12 gives 0.04167 (too much), 12 / 13 gives 0.04006
    # (cost 25; 13 / 12 is as cheap and as tight: the larger reference wins)
    assert sizing.repeats_needed(0.25, 100, 0.05) == (12, 13)
    assert sizing.standard_error(0.25, 100, 12, 12) > 0.05 / 2.4865 > sizing.standard_error(0.25, 100, 12, 13)
    # the same on both sides when asked
    assert sizing.repeats_needed(0.25, 100, 0.05, reference_share=1.0) == (13, 13)
    # sm120's gsm8k at consistency 0.5: E[p(1-p)] 0.02375, 200 documents, 24 cells x 4 tasks: z 3.2790 + 0.8416,
    # se <= 0.0048537, budget 0.0047116: 5 cell repeats alone exceed it (0.00475); 6 leave 0.0007533, so Rr >= 31.5
    assert sizing.repeats_needed(0.02375, 200, 0.02, cells=24, tasks=4) == (6, 32)
    # nothing to sample: deterministic answers
    assert sizing.repeats_needed(0.0, 200, 0.02, cells=24, tasks=4) == (1, 1)
    # the drop's own spread between documents beyond what the margin allows: no repeats reach it
    assert sizing.repeats_needed(0.02, 200, 0.02, between_var=1.0) is None


def test_the_shared_reference_gets_about_sqrt_cells_times_the_repeats():
    rc, rr = sizing.repeats_needed(0.25, 100, 0.01, cells=16)
    assert 3.5 <= rr / rc <= 4.5  # sqrt(16) = 4
    rc1, rr1 = sizing.repeats_needed(0.25, 100, 0.01, cells=1)
    assert abs(rc1 - rr1) <= 1  # one cell: the same on both sides


def test_equivalence_repeats_by_hand():
    # margin / se >= z(0.95) + z(0.9) = 1.6449 + 1.2816 = 2.9264: se <= 0.017086, 0.25 (1/Rc + 1/Rr) <= 0.029193;
    # 16 / 19, 17 / 18 and 18 / 17 all cost 35; 17 / 18 and 18 / 17 are the tightest, the larger reference wins
    assert sizing.repeats_for_equivalence(0.25, 100, 0.05) == (17, 18)
    assert sizing.required_ratio("equivalent") == pytest.approx(1.644854 + 1.281552, abs=1e-5)
    assert sizing.required_ratio("noninferior") == pytest.approx(1.644854 + 0.841621, abs=1e-5)


def test_reachable_margin_inverts_repeats_needed():
    # 12 / 13 coin repeats over 100 documents: 2.4865 x sqrt(0.25 (1/12 + 1/13) / 100) = 0.04977
    assert sizing.reachable_margin(0.25, 100, 12, 13) == pytest.approx(
        (1.644854 + 0.841621) * math.sqrt(0.25 * (1 / 12 + 1 / 13) / 100), rel=1e-5)
    for within, docs, margin, cells, tasks in ((0.02375, 200, 0.02, 24, 4), (0.08, 198, 0.03, 6, 2)):
        rc, rr = sizing.repeats_needed(within, docs, margin, cells=cells, tasks=tasks)
        reach = sizing.reachable_margin(within, docs, rc, rr, cells=cells, tasks=tasks)
        assert reach <= margin
        assert sizing.reachable_margin(within, docs, rc - 1 if rc > 1 else 1, max(1, rr - 1), cells=cells,
                                       tasks=tasks) > margin  # one fewer on each side no longer does


def test_t_quantile_and_the_drops_variance_raise_the_repeats():
    plain = sizing.repeats_needed(0.02375, 200, 0.02, cells=24, tasks=4)
    t_only = sizing.repeats_needed(0.02375, 200, 0.02, cells=24, tasks=4, df=199)
    task = sizing.repeats_for_task(0.95, 0.5, 200, 0.02, cells=24, tasks=4)
    assert sum(plain) < sum(t_only) < sum(task)
    assert task == (15, 44)
    # greedy decoding: nothing to sample when nothing changed, but a drop makes the cell's answers coins
    assert sizing.repeats_needed(0.0, 60, 0.1, cells=3, tasks=4) == (1, 1)
    assert sizing.repeats_for_task(0.85, 1.0, 60, 0.1, cells=3, tasks=4)[0] > 1
