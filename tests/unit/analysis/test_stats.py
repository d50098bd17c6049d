"""Statistics against hand-computed cases, the Pareto front, and the gate's decisions on hand-made sample files."""

import math

import pytest

from evalharness.analysis.drift import probe_agreement
from evalharness.analysis.numerics import topk_figures as compare_cells
from evalharness.analysis.pareto import ParetoPoint, pareto_front
from evalharness.analysis.stats import mcnemar_exact, paired_evidence, topk_kl
from evalharness.records.measures import Scored, percentiles


def test_mcnemar_on_known_tables():
    # b=1, c=9: two-sided exact p = 2 * P(X <= 1 | n=10, 1/2) = 2 * 11/1024
    assert mcnemar_exact(1, 9) == pytest.approx(22 / 1024)
    assert mcnemar_exact(9, 1) == pytest.approx(22 / 1024)
    # b=0, c=5: 2 * (1/32)
    assert mcnemar_exact(0, 5) == pytest.approx(1 / 16)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    # b=2, c=8: 2 * (1 + 10 + 45) / 1024
    assert mcnemar_exact(2, 8) == pytest.approx(112 / 1024)


def test_paired_interval_covers_a_known_difference():
    # 200 documents; the cell loses 20 answers and gains none: the drop is 0.10
    reference = [1.0] * 150 + [0.0] * 50
    cell = [0.0] * 20 + [1.0] * 130 + [0.0] * 50
    evidence = paired_evidence(reference, cell)
    low, high = evidence.interval(0.95)
    assert evidence.estimate == pytest.approx(0.10) and evidence.method == "score"
    assert 0 < low < 0.10 < high  # the interval excludes zero: a credible drop
    with pytest.raises(ValueError):
        paired_evidence([1.0], [1.0, 0.0])


def test_kl_of_known_distributions():
    p = {"a": math.log(0.5), "b": math.log(0.3), "c": math.log(0.2)}
    assert topk_kl(p, p) == pytest.approx(0.0, abs=1e-9)
    q = {"a": math.log(0.3), "b": math.log(0.5), "c": math.log(0.2)}
    expected = 0.5 * math.log(0.5 / 0.3) + 0.3 * math.log(0.3 / 0.5)  # c cancels
    assert topk_kl(p, q) == pytest.approx(expected, rel=1e-6)
    # only 'a' is shared: the rest of each side is one bucket (0.5 vs 0.8)
    r = {"a": math.log(0.2), "x": math.log(0.7)}
    assert topk_kl(p, r) == pytest.approx(0.5 * math.log(0.5 / 0.2) + 0.5 * math.log(0.5 / 0.8), rel=1e-6)


def test_percentiles_interpolate_linearly():
    assert percentiles([1, 2, 3, 4, 5]).p50 == 3 and percentiles([1, 2]).p99 == pytest.approx(1.99)


def test_distribution_comparison_pairs_positions_and_counts_top_tokens():
    ref = [Scored(id="x", tokens=["A", "B"], top=[{"A": -0.1, "C": -2.5}, {"B": -0.2, "D": -2.0}])]
    same = compare_cells(ref, ref)
    assert same.available and same.mean_kld == pytest.approx(0) and same.same_top_token == 1.0 and same.positions == 2
    other = [Scored(id="x", tokens=["A", "B"], top=[{"C": -0.1, "A": -2.5}, {"B": -0.2, "D": -2.0}])]
    moved = compare_cells(ref, other)
    assert moved.same_top_token == 0.5 and moved.mean_kld > 0.5
    broken = compare_cells(ref, [Scored(id="x", error="the engine returned no prompt log-probabilities")])
    assert not broken.available and "no prompt log-probabilities" in broken.reason


def test_pareto_front():
    def point(cell, tok_s, drift):
        return ParetoPoint(cell=cell, throughput=tok_s, drift=drift, rates=[tok_s * 0.99, tok_s, tok_s * 1.01])

    points = pareto_front([point("ref", 10, 0.0), point("fast", 20, 0.01),
                           point("worse", 15, 0.05),  # fast is faster and drifts less
                           point("fastest", 30, 0.2)])
    front = {p.cell for p in points if p.on_front}
    assert front == {"ref", "fast", "fastest"}
    assert "fast" in next(p for p in points if p.cell == "worse").dominated_by


def test_probe_agreement():
    from evalharness.records.measures import ProbeOutput

    ref = [ProbeOutput(id="a", prompt="", output="the sky is blue"), ProbeOutput(id="b", prompt="", output="one two")]
    cell = [ProbeOutput(id="a", prompt="", output="the sky is blue"), ProbeOutput(id="b", prompt="", output="one three")]
    agreement = probe_agreement(ref, cell)
    assert (agreement.identical, agreement.total, agreement.mean_first_difference) == (1, 2, 1.0)
