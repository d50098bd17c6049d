"""The calibrated pass (analysis/nullboot.py): the t path's two tests that let a cell through, by a bootstrap of t under
the empirical-likelihood-tilted null. Issue 37's "also": at accuracy 0.95 the t-test passes a cell truly at the
margin, and calls a cell better by the margin "equivalent", more often than alpha."""

from __future__ import annotations

import numpy as np

from benchmarks.gate_false_alarms import task_tests
from benchmarks.recommendation import cell_probabilities
from evalharness.analysis import nullboot
from evalharness.analysis.equivalence import decide, p_equivalent
from evalharness.analysis.stats import paired_evidence


def _draws(rng: np.random.Generator, runs: int, change: float, accuracy: float = 0.95, consistency: float = 0.5,
           docs: int = 200, cell_repeats: int = 15, reference_repeats: int = 44) -> tuple[np.ndarray, np.ndarray]:
    """The benchmarks' model: per-document p ~ Beta(accuracy, consistency), each side a mean of binomial repeats."""
    p = rng.beta(accuracy * (1 / consistency - 1), (1 - accuracy) * (1 / consistency - 1), size=(runs, docs))
    ref = rng.binomial(reference_repeats, p) / reference_repeats
    cell = rng.binomial(cell_repeats, cell_probabilities(p, accuracy, change)) / cell_repeats
    return ref, cell


def test_the_tilt_imposes_the_null_mean_and_refuses_one_outside_the_documents():
    rng = np.random.default_rng(3)
    drops = rng.normal(0.0, 0.1, 200)
    weights = nullboot.tilt(drops - 0.03)
    assert weights is not None and abs(weights.sum() - 1) < 1e-12 and np.all(weights > 0)
    assert abs(float(np.sum(weights * drops)) - 0.03) < 1e-9
    assert nullboot.tilt(np.abs(drops) + 0.01) is None  # every document above the null: no weights impose it


def test_resamples_grow_with_the_level_so_twenty_lie_beyond_the_critical_value():
    assert nullboot.resamples_for(0.05) == 1999
    assert nullboot.resamples_for(0.0033) == 6999
    assert nullboot.resamples_for(0.00022) == nullboot.MAX_RESAMPLES
    for level in (0.05, 0.01, 0.0033):
        assert level * (nullboot.resamples_for(level) + 1) >= nullboot.BEYOND


def test_each_bound_agrees_with_its_test_and_the_verdict_is_deterministic():
    rng = np.random.default_rng(7)
    ref, cell = _draws(rng, 60, 0.02)
    ref2, cell2 = _draws(rng, 60, -0.02)
    disagreements = 0
    for r, c in zip(np.concatenate([ref, ref2]), np.concatenate([cell, cell2])):
        evidence = paired_evidence(r, c)
        for level in (0.05, 0.0107, 0.0033):
            low, high = evidence.equivalence_bounds(0.02, level)
            assert (high < 0.02) == (evidence.calibrated_p(0.02, "below", level) < level)
            assert (low > -0.02) == (evidence.calibrated_p(-0.02, "above", level) < level)
            assert (-0.02 < low and high < 0.02) == (p_equivalent(evidence, 0.02, level) < level)
            t_low, t_high = evidence.interval(1 - 2 * level)
            disagreements += (t_high < 0.02) != (high < 0.02) or (t_low > -0.02) != (low > -0.02)
    assert disagreements > 0  # the calibration changes some verdicts: it is not the t under another name
    evidence = paired_evidence(ref[0], cell[0])
    again = paired_evidence(list(ref[0]), list(cell[0]))
    assert decide(evidence, 0.02, 0.05, 0.5) == decide(again, 0.02, 0.05, 0.5)


def test_the_calibrated_pass_holds_alpha_where_the_t_does_not():
    """A true gain of the margin at accuracy 0.95 (the gain's side of equivalence): the t calls it "equivalent"
    about 1.8x alpha (benchmarks/README.md); the calibrated test about alpha. 600 runs: the t's excess is 5 standard
    errors of the difference, the calibrated test's rate is checked against 5% + 2.5 standard errors."""
    rng = np.random.default_rng(11)
    ref, cell = _draws(rng, 600, -0.02)
    evidence = [paired_evidence(r, c) for r, c in zip(ref, cell)]  # the gain's side: H0 "drop <= -margin"
    calibrated = np.array([e.calibrated_p(-0.02, "above", 0.05) < 0.05 for e in evidence])
    plain = np.array([e.p_above(-0.02) < 0.05 for e in evidence])
    assert plain.mean() > 0.07
    assert calibrated.mean() < 0.05 + 2.5 * np.sqrt(0.05 * 0.95 / len(evidence))
    assert calibrated.mean() < plain.mean()


def test_the_replica_decides_each_row_as_the_package_does():
    rng = np.random.default_rng(5)
    ref, cell = _draws(rng, 30, 0.02)
    tests = task_tests(ref, cell[:, None, :], 0.02, calibrate=True, level=0.05)
    for i in range(len(ref)):
        evidence = paired_evidence(ref[i], cell[i])
        assert abs(tests.p_below_margin[i, 0] - evidence.calibrated_p(0.02, "below", 0.05)) < 1e-9
        assert abs(tests.p_above_minus_margin[i, 0] - evidence.calibrated_p(-0.02, "above", 0.05)) < 1e-9


def test_the_score_path_and_evidence_without_documents_keep_their_own_tests():
    greedy = paired_evidence([1, 1, 0, 1] * 50, [1, 0, 0, 1] * 50)
    assert greedy.method == "score"
    assert greedy.equivalence_bounds(0.02, 0.05) == greedy.interval(0.9)
    plain = paired_evidence([0.9, 0.5, 1.0] * 60, [0.8, 0.6, 1.0] * 60, calibrate=False)
    assert plain.method == "t" and not plain.drops
    assert plain.equivalence_bounds(0.02, 0.05) == plain.interval(0.9)


def test_a_look_stops_for_equivalence_exactly_when_the_verdict_at_its_level_is_equivalent():
    """The look and the final verdict use one test: a task never stops "equivalent" and then reads inconclusive."""
    from evalharness.analysis.sequential import decide_look, final_levels, quality_levels

    rng = np.random.default_rng(13)
    looks = [1, 4, 8, 15]
    levels = quality_levels(0.05, looks, 96)
    ref, cell = _draws(rng, 40, 0.0, cell_repeats=4)
    stops = 0
    for r, c in zip(ref, cell):
        evidence = paired_evidence(r, c)
        stopped = decide_look(evidence, 0.02, levels[1], 96).stop == "equivalent"
        level = final_levels(0.05, looks, 4, 96)
        verdict = decide(evidence, 0.02, level.equivalent, 0.5, 96, worse_alpha=level.worse).outcome
        assert stopped == (verdict == "equivalent")
        stops += stopped
    assert 0 < stops < 40  # both kinds occur at 4 of 15 repeats


def test_counting_resamples_decides_as_the_whole_distribution_does():
    """nullboot.rejects stops counting once too many resamples are as extreme: the same decision as the p-value of
    the whole sorted distribution, weighted or not, at a look's levels and the final one; and
    PairedEvidence.equivalent (what a look stops on) is TOST on equivalence_bounds (what the verdict reads)."""
    rng = np.random.default_rng(17)
    checked = rejected = 0
    for change, repeats in ((0.0, 8), (0.02, 15), (-0.02, 4), (0.01, 15)):
        ref, cell = _draws(rng, 8, change, cell_repeats=repeats)
        for r, c in zip(ref, cell):
            weights = rng.integers(1, 5, len(r)).astype(float)
            drops = r - c
            for w in (None, weights):
                for delta, side in ((0.02, "below"), (-0.02, "above")):
                    estimate = float(np.sum((1 if w is None else w) * drops) / np.sum(1 if w is None else w))
                    evidence = paired_evidence(r, c, weights=w)
                    statistic = (estimate - delta) / evidence.se
                    for level in (0.05, 0.0107, 0.0033):
                        null = nullboot.null_t(drops, w, delta, nullboot.resamples_for(level))
                        expected = nullboot.p_value(statistic, null, side) < level
                        assert nullboot.rejects(drops, w, delta, statistic, side, level) == expected
                        checked += 1
                        rejected += expected
                for level in (0.05, 0.0107, 0.0033):
                    low, high = evidence.equivalence_bounds(0.02, level)
                    assert evidence.equivalent(0.02, level) == (-0.02 < low and high < 0.02)
    assert 0 < rejected < checked  # both answers occur
    everyone_above = np.abs(rng.normal(0, 0.1, 50)) + 0.03
    assert nullboot.rejects(everyone_above, None, 0.02, -1.0, "below", 0.05) is None  # no weights impose 0.02


def test_the_sequential_benchmark_decides_equivalence_as_the_package_does_when_calibrated():
    """benchmarks/sequential_design.py --calibrated: its replica's looks and verdicts are the package's calibrated
    ones (the package's own functions decide the same runs look by look)."""
    from benchmarks import sequential_design as sd

    tasks = sd.sized_tasks(sd.parse_tasks("gsm8k:200:0.95:1500,gpqa_diamond:198:0.80:8000", 0.5), consistency=0.5,
                           margin=0.02, alpha=0.05, cells=4)
    mix = sd.Mix.of(4, 0.0, 0.25, 0.5)
    designs = [sd.FIXED, sd.BOTH, sd.replace(sd.LOOKS_ALONE, repeats=tuple(t.cell_repeats + 1 for t in tasks))]
    calibrated = sd.simulate(tasks, mix, margin=0.02, alpha=0.05, drop=0.04, broken_factor=0.3, trials=3, seed=4,
                             check=3, designs=designs, calibrate=True)
    assert calibrated.checked == 3 and calibrated.agreed == 3, calibrated.disagreements
