"""analysis/confirm.py, the two-stage decision (issue 61): the finalist's speed over launches, its tasks "not worse"
at the try's full level, and exploration's order. Named after the issue's findings; benchmarks/two_stage.py measures
the whole decision at sm120's sizes."""

import math

import numpy as np

from evalharness.analysis.confirm import (
    Confirmation, Explored, finalists, kept_launch, not_worse, speed_over_launches, try_level)
from evalharness.analysis.speed import Side, speedup
from evalharness.analysis.stats import paired_evidence


def _launches(rng, true_ratio: float, launches: int, launch_sd: float, cv: float, repeats: int = 3):
    return [list(np.exp(math.log(true_ratio) + rng.normal(0, launch_sd) + rng.normal(0, cv, repeats)))
            for _ in range(launches)]


def test_launch_to_launch_variation_enters_the_speed_interval():
    # the case: launches 2% apart, a cell truly 1.05x. One launch a side (today's single stage) calls it
    # credibly faster by 5% a quarter of the time; over two launches a side, at most the level
    rng = np.random.default_rng(3)
    runs = 600
    single = over_launches = 0
    for _ in range(runs):
        cell = _launches(rng, 1.05, 2, 0.02, 0.015)
        ref = _launches(rng, 1.0, 2, 0.02, 0.015)
        single += speedup(Side(tuple(cell[0])), Side(tuple(ref[0])), level=0.05).faster
        over_launches += speed_over_launches(cell, ref, level=0.05).verdict.faster
    assert single / runs > 0.15
    assert over_launches / runs <= 0.065


def test_a_finalist_noisier_than_its_reference_keeps_the_level():
    # repeats spreading 8% against 1%: a pooled t over launch means called a true 1.05x faster 9.5% of the time
    rng = np.random.default_rng(4)
    runs = 800
    faster = sum(speed_over_launches(_launches(rng, 1.05, 2, 0.0, 0.08), _launches(rng, 1.0, 2, 0.0, 0.01))
                 .verdict.faster for _ in range(runs))
    assert faster / runs <= 0.065


def test_the_launch_estimate_is_printed_and_a_clear_speedup_is_confirmed():
    rng = np.random.default_rng(5)
    speed = speed_over_launches(_launches(rng, 1.3, 2, 0.02, 0.015), _launches(rng, 1.0, 2, 0.02, 0.015))
    assert speed.verdict.faster and speed.verdict.kept == (2, 2)
    assert speed.launch_sd is not None and "launches against" in speed.text() and "% (SD)" in speed.text()
    # one launch a side says nothing about launches: undecided, whatever the repeats say
    one = speed_over_launches(_launches(rng, 1.3, 1, 0.02, 0.015), _launches(rng, 1.0, 1, 0.02, 0.015))
    assert one.verdict.outcome == "undecided" and one.launch_sd is None


def test_the_choice_does_not_inflate_the_confirmed_bound():
    # ten candidates all truly 1.2x: the single stage's winner had its lower bound above 1.2 in 31% of runs;
    # confirmation's fresh launches are not the ones the choice read
    rng = np.random.default_rng(6)
    runs, above = 300, 0
    for _ in range(runs):
        ref_explore = np.exp(rng.normal(0, 0.02) + rng.normal(0, 0.015, 3))
        explored = [Explored(str(i), float(np.exp(np.mean(np.log(c[0])) - np.mean(np.log(ref_explore)))))
                    for i, c in enumerate(_launches(rng, 1.2, 1, 0.02, 0.015) for _ in range(10))]
        pick = finalists(explored, tries=1)
        assert pick
        speed = speed_over_launches(_launches(rng, 1.2, 2, 0.02, 0.015), _launches(rng, 1.0, 2, 0.02, 0.015))
        above += speed.verdict.faster and speed.verdict.low > 1.2
    assert above / runs <= 0.08


def test_exploration_orders_the_finalists_fastest_first_and_leaves_out_what_it_ruled_out():
    explored = [Explored("a", 1.2), Explored("b", 1.5, ruled_out="worse on gsm8k"), Explored("c", 1.3),
                Explored("d", 1.04), Explored("e", math.nan)]
    assert [e.cell for e in finalists(explored, tries=2)] == ["c", "a"]
    assert [e.cell for e in finalists(explored, tries=4)] == ["c", "a"]  # below the floor: not worth a launch
    assert try_level(0.05, 2) == 0.025


def test_a_gain_never_holds_the_finalist_back():
    # the sample's bfloat16 cell gained 2 of 60 on a task: "inconclusive" for equivalence, not worse all the same
    rng = np.random.default_rng(7)
    reference = rng.binomial(8, 0.7, 200) / 8
    gained = np.clip(reference + rng.choice([0, 0.125, 0.25], 200, p=[0.6, 0.3, 0.1]), 0, 1)
    claim = not_worse("eh_choice", paired_evidence(reference, gained), 0.02, 0.05)
    assert claim.drop < -0.02 and claim.not_worse and not claim.equivalent
    assert "not worse" in claim.text() and "gained" in claim.text()


def test_a_finalist_is_confirmed_only_when_faster_and_not_worse_on_every_task():
    rng = np.random.default_rng(8)
    speed = speed_over_launches(_launches(rng, 1.3, 2, 0.01, 0.01), _launches(rng, 1.0, 2, 0.01, 0.01))
    reference = rng.binomial(8, 0.8, 400) / 8
    same = not_worse("a", paired_evidence(reference, reference.copy()), 0.02, 0.05)  # no flip in 400: bound 0.011
    worse = not_worse("b", paired_evidence(reference, np.clip(reference - 0.1, 0, 1)), 0.02, 0.05)
    assert Confirmation("x", speed, (same,)).confirmed
    held = Confirmation("x", speed, (same, worse))
    assert not held.confirmed and "b: not shown not worse" in held.why_not()
    assert not Confirmation("x", speed, ()).confirmed  # answers measured, none tested: no claim
    assert Confirmation("x", speed, (), answers_expected=False).confirmed  # a matrix measuring speed alone


def test_a_launch_keeps_its_clean_repeats_only():
    assert kept_launch([10.0, 3.0, 11.0], ["", "other processes' CPU 80%", ""]) == [10.0, 11.0]
    assert kept_launch([10.0, 3.0], ["", "busy"]) == [10.0, 3.0]  # two clean ones needed to set one aside
