"""Sequential stopping and screening (analysis/sequential.py): its functions on hand cases, and the fixed design
against the sequential one by simulation (benchmarks/sequential_design.py at few runs, fixed seeds).

Tolerances are set from the benchmark's own figures at its defaults (4,000 runs, README "Sequential stopping and
screening"): the runner's design at the fixed repeats (simulate's default pair; test_sequential_equal_power.py
compares at equal per-task power) uses 37.5% of the fixed design's tokens at a per-task power 20 points below it
(cell power equal), false alarms 0 in both; the bounds below are what a broken rule would miss by far (no looks: 100%; no screening: about 75%; looks tested at
alpha each: false alarms far above the fixed design's at the least favourable null)."""

import math

import numpy as np
import pytest

from benchmarks import sequential_design as sd
from evalharness.analysis.sequential import (Levels, decide_look, default_looks, default_plan, equivalence_spent,
                                             final_levels, last_look_level, look_levels, quality_levels, screened,
                                             spent)
from evalharness.analysis.stats import PairedEvidence, paired_evidence

MARGIN, ALPHA, CELLS = 0.02, 0.05, 24


# ------------------------------------------------------------------------------------------- sequential.py by hand

@pytest.mark.parametrize("repeats, looks", [(1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (8, [1, 2, 4, 8]),
                                            (15, [1, 4, 8, 15]), (30, [1, 8, 15, 30]), (26, [1, 7, 13, 26])])
def test_default_looks_are_one_a_quarter_a_half_and_all(repeats, looks):
    got = default_looks(repeats)
    assert got == looks
    assert got[0] == 1 and got[-1] == repeats and got == sorted(set(got))


@pytest.mark.parametrize("looks", [[1], [1, 2], [1, 2, 4, 8], [1, 4, 8, 15], [1, 8, 15, 30], [3, 6, 9, 12, 40]])
@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.2])
def test_look_levels_spend_at_most_alpha_in_all(looks, alpha):
    levels = look_levels(alpha, looks)
    assert len(levels) == len(looks)
    assert all(v >= 0 for v in levels)
    assert sum(levels) <= alpha + 1e-12
    assert sum(levels) == pytest.approx(alpha, abs=1e-9)  # all of it is spent by the last look
    # O'Brien-Fleming-like: later looks get more than earlier ones; with four or more, the first almost nothing
    assert levels == sorted(levels)
    if len(looks) >= 4:
        assert levels[0] < alpha / 100


def test_look_levels_match_the_docstrings_example():
    levels = look_levels(0.05, [1, 2, 4, 8])
    assert [round(v, 4) for v in levels] == [0.0, 0.0001, 0.0055, 0.0444]  # the docstring says 0.0056 and 0.044


def test_spending_function_hand_values():
    assert spent(0.05, 1.0) == pytest.approx(0.05)
    assert spent(0.05, 0.0) == 0.0
    # 2 - 2 Phi(1.96 / sqrt(0.25)) = 2 - 2 Phi(3.92)
    assert spent(0.05, 0.25) == pytest.approx(2 * (1 - 0.999955687), rel=1e-3)


def test_final_levels_of_a_single_look_are_alpha():
    assert final_levels(0.05, [1], 1) == Levels(0.05, 0.05)
    assert final_levels(0.05, [7], 7, family_size=96) == Levels(0.05, 0.05)


def test_final_levels_are_those_of_the_look_reached():
    looks = [1, 8, 15, 30]
    levels = quality_levels(0.05, looks, 96)
    for look, level in zip(looks, levels):
        assert final_levels(0.05, looks, look, 96) == level
    assert final_levels(0.05, looks, 10, 96) == levels[2]  # between looks: the next look's
    assert final_levels(0.05, looks, 31, 96) == levels[-1]


def test_each_error_has_its_own_spending():
    levels = quality_levels(0.05, [1, 4, 8, 15], family_size=96)
    # worse: O'Brien-Fleming at the stopping looks (the union bound's increments), so a clear drop stops early only
    assert [v.worse for v in levels[:-1]] == look_levels(0.05, [1, 4, 8, 15])[:-1]
    # equivalent: alpha t^2, more at the half-way look than O'Brien-Fleming's 0.0071
    fractions = [1 / 15, 4 / 15, 8 / 15]
    expected = [equivalence_spent(0.05, fractions[0])] + [
        equivalence_spent(0.05, b) - equivalence_spent(0.05, a) for a, b in zip(fractions, fractions[1:])]
    assert [v.equivalent for v in levels[:-1]] == pytest.approx(expected)
    assert levels[2].equivalent == pytest.approx(0.05 * ((8 / 15) ** 2 - (4 / 15) ** 2))
    assert levels[2].equivalent > 1.4 * look_levels(0.05, [1, 4, 8, 15])[2]
    # the last looks get back what the union bound counts twice, the worse test's at the family's scale
    assert look_levels(0.05, [1, 4, 8, 15])[-1] < levels[-1].worse < 0.05
    assert levels[-1].worse == pytest.approx(0.0449, abs=2e-4)
    assert levels[-1].equivalent == pytest.approx(0.0439, abs=2e-4)
    assert equivalence_spent(0.05, 1.0) == 0.05 and equivalence_spent(0.05, 0.5) == pytest.approx(0.0125)


@pytest.mark.parametrize("repeats, looks, only", [(1, [1], []), (2, [1, 2], []), (4, [1, 2, 3, 4], [3]),
                                                  (8, [1, 2, 4, 6, 8], [6]), (15, [1, 4, 8, 12, 15], [12]),
                                                  (30, [1, 8, 15, 23, 30], [23]), (26, [1, 7, 13, 20, 26], [20])])
def test_the_default_plan_with_an_equivalence_look_at_three_quarters(repeats, looks, only):
    assert default_plan(repeats) == (looks, only)  # the default (issue 37: measured at equal power of both tests)
    assert default_plan(repeats, []) == (default_looks(repeats), [])  # none
    assert default_plan(repeats, [0.75]) == (looks, only)
    assert sorted(set(default_looks(repeats)) | set(only)) == looks


@pytest.mark.parametrize("looks, only", [([1, 4, 8, 12, 15], [12]), ([1, 8, 15, 23, 30], [23]),
                                         ([1, 2, 4, 6, 8], [6]), ([1, 3, 4, 8], [3])])
def test_an_equivalence_only_look_leaves_the_worse_test_as_it_was(looks, only):
    """The worse test does not look there (level 0) and its other looks, the last included, keep the levels they
    have without it; the equivalence test spends alpha t^2 over every look, its last look by the integral."""
    with_it = quality_levels(0.05, looks, 96, only)
    without = quality_levels(0.05, [v for v in looks if v not in only], 96)
    worse = [level.worse for look, level in zip(looks, with_it) if look not in only]
    assert worse == [level.worse for level in without]
    assert all(level.worse == 0.0 for look, level in zip(looks, with_it) if look in only)
    fractions = [v / looks[-1] for v in looks]
    interim = [equivalence_spent(0.05, b) - equivalence_spent(0.05, a) for a, b in zip([0, *fractions], fractions)]
    assert [v.equivalent for v in with_it[:-1]] == pytest.approx(interim[:-1])
    assert with_it[-1].equivalent == last_look_level(0.05, fractions, interim[:-1])
    assert decide_look(PairedEvidence(method="t", n=200, estimate=0.5, se=0.01, df=199), 0.02,
                       with_it[looks.index(only[0])], 96).stop is None  # a clear drop: no worse stop there


def test_a_task_stopped_at_an_equivalence_only_look_spends_the_worse_tests_increment_to_it():
    """Its final analysis (settled equivalent there, or stopped because its cell was worse): Lan and DeMets' look
    at that fraction, what the O'Brien-Fleming function spends since the worse test's look before, never more than
    what the worse test would have spent by its next look."""
    looks, only = [1, 4, 8, 12, 15], [12]
    levels = quality_levels(0.05, looks, 96, only)
    final = final_levels(0.05, looks, 12, 96, only)
    assert final.equivalent == levels[3].equivalent
    assert final.worse == pytest.approx(spent(0.05, 12 / 15) - spent(0.05, 8 / 15))
    assert 0 < final.worse < levels[-1].worse
    assert final_levels(0.05, looks, 10, 96, only) == final  # between looks: the next one's
    assert final_levels(0.05, looks, 15, 96, only) == levels[-1]
    assert final_levels(0.05, looks, 8, 96, only) == levels[2]


def test_a_late_look_of_both_tests_would_cost_the_worse_tests_last_look():
    """Why the look at three quarters is the equivalence test's only: as a look of both, the union bound over the
    correlated late looks takes the worse test's last level from 0.045 to 0.033 (more repeats for its power)."""
    both = quality_levels(0.05, [1, 4, 8, 12, 15], 96)[-1].worse
    alone = quality_levels(0.05, [1, 4, 8, 12, 15], 96, [12])[-1].worse
    assert both == pytest.approx(0.033, abs=0.002) and alone == pytest.approx(0.0449, abs=2e-4)


@pytest.mark.parametrize("looks", [[1, 4, 8, 15], [1, 8, 15, 30], [1, 2]])
def test_last_look_level_is_the_multivariate_normals_from_below(looks):
    """scipy's multivariate normal (many points: slow, but right at alpha's scale) against the integral's level:
    never above it (the Bonferroni over the earlier looks is conservative), and within 3e-4 for O'Brien-Fleming's
    levels, 6e-4 for the equivalence test's (its earlier looks overlap more: 0.0439 against 0.0444)."""
    from scipy.optimize import brentq
    from scipy.stats import multivariate_normal, norm

    t = np.array(looks, float) / looks[-1]
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    for interim, tolerance in (
            (look_levels(0.05, looks)[:-1], 3e-4),
            ([equivalence_spent(0.05, b) - equivalence_spent(0.05, a) for a, b in zip([0, *t], t)][:-1], 6e-4)):
        z = [norm.isf(a) if a > 0 else 40.0 for a in interim]
        mvn = multivariate_normal(np.zeros(len(t)), cov, maxpts=400_000, abseps=1e-9, releps=1e-7, seed=1)
        exact = norm.sf(brentq(lambda c: 1 - mvn.cdf(z + [c]) - 0.05, 1.0, 3.0, xtol=1e-9))
        mine = last_look_level(0.05, list(t), interim)
        assert mine <= exact + 2e-5
        assert mine == pytest.approx(exact, abs=tolerance)


@pytest.mark.parametrize("looks, only", [([1, 4, 8, 15], []), ([1, 4, 8, 12, 15], [12])])
def test_the_looks_cross_at_most_alpha_by_simulation(looks, only):
    """Brownian motion at the looks' information, 400,000 draws: the chance that any look's statistic crosses its
    level is at most alpha (standard error 0.00034), for both errors' levels, with the default plan's
    equivalence-only look too."""
    from scipy.stats import norm

    rng = np.random.default_rng(11)
    t = np.array(looks) / looks[-1]
    steps = rng.standard_normal((400_000, len(t))) * np.sqrt(np.diff(np.concatenate([[0.0], t])))
    z = np.cumsum(steps, axis=1) / np.sqrt(t)
    levels = quality_levels(0.05, looks, 1, only)
    for which in ("worse", "equivalent"):
        bounds = np.array([norm.isf(getattr(v, which)) if getattr(v, which) > 0 else np.inf for v in levels])
        crossed = float(np.mean((z > bounds).any(axis=1)))
        assert 0.047 < crossed < 0.05 + 0.001, which


def test_decide_look_stops_worse_on_a_clear_drop():
    evidence = PairedEvidence(method="t", n=200, estimate=0.10, se=0.01, df=199)  # 8 standard errors above m
    assert decide_look(evidence, MARGIN, Levels(0.005, 0.005), family_size=96).stop == "worse"
    # the same drop at 4 standard errors passes level / family at 0.005 / 96 = 5.2e-5 (z 3.9) only just
    near = PairedEvidence(method="t", n=200, estimate=0.02 + 4 * 0.005, se=0.005, df=199)
    assert decide_look(near, MARGIN, Levels(0.005, 0.005), family_size=96).stop == "worse"
    assert decide_look(near, MARGIN, Levels(0.005, 0.005), family_size=96 * 10).stop is None


def test_decide_look_stops_equivalent_on_a_tight_interval():
    evidence = PairedEvidence(method="t", n=200, estimate=0.001, se=0.004, df=199)
    # 0.001 + 2.6 x 0.004 < 0.02
    assert decide_look(evidence, MARGIN, Levels(0.005, 0.005), family_size=96).stop == "equivalent"
    # a wider interval at a tiny early level does not stop
    assert decide_look(evidence, MARGIN, Levels(1e-12, 1e-12), family_size=96).stop is None
    # each test reads its own level: equivalence at the equivalence level whatever the worse test's
    assert decide_look(evidence, MARGIN, Levels(0.0, 0.005), family_size=96).stop == "equivalent"
    assert decide_look(evidence, MARGIN, Levels(0.005, 1e-12), family_size=96).stop is None
    drop = PairedEvidence(method="t", n=200, estimate=0.10, se=0.01, df=199)
    assert decide_look(drop, MARGIN, Levels(0.005, 0.0), family_size=96).stop == "worse"
    assert decide_look(drop, MARGIN, Levels(1e-12, 0.005), family_size=96).stop is None


def test_decide_look_goes_on_when_unsettled():
    evidence = PairedEvidence(method="t", n=200, estimate=0.02, se=0.01, df=199)
    assert decide_look(evidence, MARGIN, Levels(0.0444, 0.0444), family_size=96).stop is None


def test_decide_look_on_paired_evidence_of_documents():
    rng = np.random.default_rng(3)
    ref = rng.binomial(40, 0.8, size=200) / 40
    assert decide_look(paired_evidence(ref, ref * 0.5), MARGIN, Levels(0.0054, 0.0054), 96).stop == "worse"
    cell = ref.copy()
    cell[:20] -= 0.025  # a little spread, no drop
    cell[20:40] += 0.025
    assert decide_look(paired_evidence(ref, cell), MARGIN, Levels(0.0054, 0.0054), 96).stop == "equivalent"
    # two identical sides are the score test of no flips in 200 documents: +-0.022 at 90% (stats.py's docstring
    # says +-0.013, the uncorrected figure), +-0.041 at 1 - 2 x 0.0054: never equivalent at a 0.02 margin
    same = paired_evidence(ref, ref)
    assert same.method == "score"
    assert same.interval(0.9)[1] > MARGIN
    assert decide_look(same, MARGIN, Levels(0.0054, 0.0054), 96).stop is None
    assert decide_look(same, MARGIN, Levels(0.0444, 0.0444), 96).stop is None
    assert decide_look(same, 0.05, Levels(0.0054, 0.0054), 96).stop == "equivalent"


def test_a_look_at_level_zero_never_stops():
    evidence = PairedEvidence(method="t", n=200, estimate=0.6, se=0.03, df=199)
    assert decide_look(evidence, MARGIN, Levels(0.0, 0.0), family_size=96).stop is None


def test_the_first_look_of_a_long_plan_spends_something():
    assert look_levels(0.05, default_looks(30))[0] > 0.0


def test_screened_cells_are_the_credibly_not_faster_ones():
    assert not screened(False, full_quality=False)  # faster, or undecided: its quality runs as designed
    assert screened(True, full_quality=False)
    assert not screened(True, full_quality=True)


# ------------------------------------------------------------------------------------------- the simulation

def sm120_tasks() -> list[sd.Task]:
    return sd.sized_tasks(sd.parse_tasks(sd.SM120, 0.5), consistency=0.5, margin=MARGIN, alpha=ALPHA, cells=CELLS)


@pytest.fixture(scope="module")
def mixed():
    tasks = sm120_tasks()
    mix = sd.Mix.of(CELLS, 0.25, 0.25, 0.5)
    res = sd.simulate(tasks, mix, margin=MARGIN, alpha=ALPHA, drop=2 * MARGIN, broken_factor=0.3, trials=300,
                      seed=11, check=2)
    return res, sd.report_mixed(res)


@pytest.fixture(scope="module")
def boundary():
    tasks = sm120_tasks()
    mix = sd.Mix.of(CELLS, 0.0, 1.0, 0.5)
    return sd.simulate(tasks, mix, margin=MARGIN, alpha=ALPHA, drop=MARGIN, broken_factor=0.3, trials=300, seed=12)


def test_sm120_sizes_are_the_ones_the_benchmark_reports():
    assert [(t.cell_repeats, t.reference_repeats) for t in sm120_tasks()] == [(15, 44), (30, 118), (26, 118),
                                                                             (22, 93)]


def test_mix_is_balanced():
    mix = sd.Mix.of(CELLS, 0.25, 0.25, 0.5)
    for kind, count in ((sd.UNCHANGED, 12), (sd.BROKEN, 6), (sd.DROPPED, 6)):
        assert mix.mask(kind).sum() == count
        assert mix.mask(kind, True).sum() == count // 2


def test_replica_agrees_with_the_package(mixed):
    res, _ = mixed
    assert res.checked == 2 and res.agreed == 2


def test_replica_agrees_on_the_score_test_path():
    """Greedy tasks (every p_i 0 or 1, a single reference repeat): both sides often 0/1, the score test and its
    root-found interval."""
    rng = np.random.default_rng(0)
    tasks = [sd.Task("a", 60, 0.0, 1.0, 100, 6, 1, p=(rng.random(60) < 0.85).astype(float)),
             sd.Task("b", 50, 0.0, 1.0, 100, 4, 1, p=(rng.random(50) < 0.7).astype(float))]
    tasks = [sd.Task(t.name, t.docs, float(t.p.mean()), 1.0, 100, t.cell_repeats, 1, t.p) for t in tasks]
    mix = sd.Mix.of(6, 1 / 6, 2 / 6, 0.5)
    res = sd.simulate(tasks, mix, margin=0.1, alpha=ALPHA, drop=0.2, broken_factor=0.3, trials=8, seed=1, check=8)
    assert res.checked == 8 and res.agreed == 8


def test_the_check_catches_a_wrong_replica(monkeypatch):
    """No Holm adjustment in the replica: at the least favourable null the package's decisions differ."""
    monkeypatch.setattr("benchmarks.sequential_simulation.holm_adjusted", lambda p: p)  # simulate()'s module
    tasks = sm120_tasks()
    mix = sd.Mix.of(CELLS, 0.0, 1.0, 0.0)
    res = sd.simulate(tasks, mix, margin=MARGIN, alpha=ALPHA, drop=MARGIN, broken_factor=0.3, trials=4, seed=2,
                      check=4)
    assert res.agreed < res.checked


def test_sequential_runs_at_most_the_fixed_repeats_and_screened_cells_one_look(mixed):
    res, _ = mixed
    full = np.array([t.cell_repeats for t in res.tasks])
    assert np.all(res.reached <= full) and np.all(res.reached >= 1)
    slow = ~np.array(res.mix.fast)
    assert np.all(res.reached[:, slow, :] == 1)


def test_sequential_uses_well_under_half_the_tokens(mixed):
    _, figures = mixed
    # the benchmark measures 35.2% at 4,000 runs (seed 3), at lower per-task power than the fixed design's
    assert 0.31 < figures["ratio"] < 0.42


def test_false_alarms_of_sequential_not_above_fixed(mixed, boundary):
    _, figures = mixed
    fa_fixed, fa_seq = sd._rate(figures["fixed"]["fa"])[0], sd._rate(figures["seq"]["fa"])[0]
    assert fa_seq <= fa_fixed + 0.005
    # the least favourable null (every cell truly worse by exactly the margin), fast cells: a "worse" is an error
    fast = np.array(boundary.mix.fast)
    fixed = sd.Result.cell_level(boundary.fixed)[:, fast] == sd.WORSE
    seq = sd.Result.cell_level(boundary.seq)[:, fast] == sd.WORSE
    tol = 2.5 * math.sqrt(max(fixed.mean(), 0.002) / fixed.size) * 3  # cells of a run are correlated
    assert seq.mean() <= fixed.mean() + tol
    assert np.mean(np.any(sd.Result.cell_level(boundary.seq) == sd.WORSE, axis=1)) <= 0.05 + 0.03


def test_power_on_fast_cells_within_tolerance(mixed):
    _, figures = mixed
    p_fixed, p_seq = sd._rate(figures["fixed"]["power_fast"])[0], sd._rate(figures["seq"]["power_fast"])[0]
    assert p_fixed > 0.97 and p_seq >= p_fixed - 0.02
    # each task on its own is called worse less often: once one task of a cell is worse, the others stop at their
    # next look (the cell is worse whatever they say), and the last look tests at 0.044, not 0.05
    t_fixed = sd._rate(figures["fixed"]["power_task_fast"])[0]
    t_seq = sd._rate(figures["seq"]["power_task_fast"])[0]
    assert t_seq <= t_fixed + 0.005  # the same draws, fewer samples and a stricter level: never more


def test_screened_cells_rest_on_their_first_look_and_slow_drops_go_uncaught(mixed):
    res, figures = mixed
    slow = ~np.array(res.mix.fast)
    assert np.all(res.reached[:, slow, :] == 1)  # one repeat: the first look of every task
    assert sd._rate(figures["seq"]["power_all"])[0] == pytest.approx(0.5, abs=0.02)
    assert sd._rate(figures["seq"]["eq_fast"])[0] > 0.95
    # a broken slow cell is caught: a screened cell is a fixed design of its first look, at the full alpha
    broken_slow = slow & res.mix.mask(sd.BROKEN)
    assert np.all(sd.Result.cell_level(res.seq)[:, broken_slow] == sd.WORSE)


def test_every_task_of_a_broken_screened_cell_is_called_worse(mixed):
    res, _ = mixed
    broken_slow = ~np.array(res.mix.fast) & res.mix.mask(sd.BROKEN)
    assert np.all(res.seq[:, broken_slow, :] == sd.WORSE)


def test_a_screened_cell_of_tasks_answered_once_uses_a_share_of_the_documents_and_the_package_agrees():
    """Cells that answer each task once (the demo, a matrix with `repeats: 1`): a screened cell's first look is
    `quality.screen_documents` of the documents, decided as a fixed design of them; the replica and the package's
    own functions decide alike on it, a broken screened cell is still called worse, and its tokens are that share."""
    tasks = sd.sized_tasks(sd.parse_tasks(sd.SM120, 0.5), consistency=0.5, margin=MARGIN, alpha=ALPHA, cells=CELLS,
                           cell_repeats=1)
    mix = sd.Mix.of(CELLS, 0.25, 0.25, 0.5)
    res = sd.simulate(tasks, mix, margin=MARGIN, alpha=ALPHA, drop=2 * MARGIN, broken_factor=0.3, trials=60, seed=5,
                      check=6)
    assert res.checked == 6 and res.agreed == 6
    slow = ~np.array(mix.fast)
    shares = np.array([math.ceil(t.docs * sd.SCREEN_DOCUMENTS) / t.docs for t in tasks])
    assert np.allclose(res.reached[:, slow, :], shares) and np.all(res.reached[:, ~slow, :] == 1)
    broken_slow = mix.mask(sd.BROKEN, False)
    assert np.all(res.seq[:, broken_slow, :] == sd.WORSE)
    per_cell = np.array([t.docs * t.tokens for t in tasks])
    assert res.cell_tokens(np.nonzero(broken_slow)[0][:1]) == pytest.approx(float(per_cell @ shares))
    # with the whole first look (1: no share) the screened cell answers every document once
    whole = sd.simulate(tasks, mix, margin=MARGIN, alpha=ALPHA, drop=2 * MARGIN, broken_factor=0.3, trials=4, seed=5,
                        check=2, screen_documents=1.0)
    assert whole.agreed == 2 and np.all(whole.reached == 1)


def test_the_printed_levels_are_the_default_plans_with_the_worse_test_silent_at_its_equivalence_only_look(capsys):
    """print_tasks printed the default looks' levels as if three quarters were a look of both tests (worse 0.021 at
    12 of 15, 0.033 at the last): the worse test spends nothing there and keeps its own last level."""
    tasks = sm120_tasks()
    [gsm8k] = [t for t in tasks if t.name == "gsm8k"]
    assert gsm8k.looks == [1, 4, 8, 12, 15] and gsm8k.equivalence_only == [12]
    sd.print_tasks(tasks, CELLS, ALPHA)
    out = capsys.readouterr().out
    levels = quality_levels(ALPHA, gsm8k.looks, CELLS * 4, [12])
    assert levels[3].worse == 0 and levels[-1].worse == quality_levels(ALPHA, [1, 4, 8, 15], CELLS * 4)[-1].worse
    assert "(equivalence only [12])" in out and "levels worse (x family) " + ", ".join(
        f"{v.worse:.2g}" for v in levels) in out
