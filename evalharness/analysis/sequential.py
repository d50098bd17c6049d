"""Sequential stopping of a cell's quality tasks: its repeats come in looks, and after each look a task stops as
soon as it is settled (equivalent, or worse), the cell when all its tasks are; the reference, shared by every cell,
always runs all its repeats. Pure: evidence in (analysis/stats.py), decisions out.

The error rates survive the looks by alpha spending (Lan and DeMets), one spending function per error, each at the
information fraction t = repeats so far / planned repeats (`quality_levels`):
- **worse** (a false "worse" is a false alarm): O'Brien-Fleming-like, alpha(t) = 2 - 2 Phi(z_{1 - alpha / 2} /
  sqrt(t)), which spends almost nothing early (4 looks at 1/8, 1/4, 1/2 and all of 8 repeats: 3e-8, 8.9e-5, 0.0055),
  so only a clear drop (a damaged model) stops a task early and the final analysis is nearly a fixed design's. A
  stopping look tests at its level / the planned family (every cell x task of the matrix), as Holm's first step
  does at the end; the final analysis compares each comparison's Holm-adjusted p with the level of the look it
  stopped at (not a textbook combination of Holm and spending: the benchmark measured no inflation with every cell
  exactly at the margin).
- **equivalent** (a false "equivalent" ships a cell that is worse by the margin): alpha t^2 (Kim and DeMets' power
  family, rho 2), which spends more at the half-way look (0.0107 at 8 of 15 repeats, against O'Brien-Fleming's
  0.0071) where an unchanged cell usually shows it is equivalent, and still leaves the last look about what the
  union bound of O'Brien-Fleming left it (0.0439 at [1, 4, 8, 15]). benchmarks/sequential_design.py: looks +
  screening 39.3% of the fixed design's tokens at equal per-task power, against 40.6% with one O'Brien-Fleming
  level for both tests.
By default the equivalence test also looks alone at three quarters of the repeats (`quality.equivalence_looks`,
default [0.75], [] for none): the worse test spends over its own looks only (as a look of both, the union bound over
correlated late looks would take the worse test's last level from 0.045 to 0.033 at [1, 4, 8, 12, 15]), and a task
that stops at an equivalence-only look (settled equivalent, or its cell worse) has its final worse test at what
O'Brien-Fleming spends from the worse test's look before to there (`final_levels`). Its alpha comes out of the
equivalence test's last look (0.044 -> 0.040). benchmarks/sequential_design.py, at equal per-task power of both tests
against the fixed design (issue 37; the calibrated test, the sm120 sizes, fresh draws): looks + screening with it
39.2% of the fixed design's tokens against 40.1% without, the worse power, the false "equivalent" at the margin and
the equivalence power near the margin kept within a point of the fixed design's; at the same repeats as without it,
a task truly worse by half the margin is called equivalent up to about a point less often.
The last look of each gets back what the union bound over-counts (`last_look_level`): an earlier crossing that the
last look would have crossed too is counted once, not twice. The statistics of the looks are taken as a Brownian
motion in the repeats (correlation sqrt(t_j / t_k)); the reference's share of the variance, fixed across looks,
only raises the true correlation, which lowers the true chance of crossing (Slepian), so the levels stay valid.
Once a task of a cell is worse, the cell is worse: its other tasks stop at that look too.

Screening: a cell that is credibly not faster than the reference (the speed rule's upper bound below 1 plus the
floor, analysis/speed.py) runs only its first look (enough to catch a damaged model), unless the matrix asks for full
quality everywhere; it can never be worth shipping. A cell whose speed is undecided is never screened. The decision
to screen comes from throughput, not from the quality data, so a screened cell is a fixed design of one look,
tested at the full alpha.

`last_look_level` integrates the bivariate normal with scipy's quad rather than calling scipy's
multivariate_normal.cdf: measured, the latter's 1 - Phi_K at the family's scale (alpha / 96) needs about 2 million
points and 6 s a level to be right to 0.1%, and with 100,000 points (0.15 s) is off by 0.9% (0.04529 for 0.04491);
the integral is deterministic, 0.2 s a plan, and cached.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.stats import norm

from evalharness.analysis.stats import PairedEvidence
from evalharness.matrix.quality import default_looks, default_plan  # noqa: F401  (the looks' one definition)

Stop = Literal["equivalent", "worse"]


def spent(alpha: float, fraction: float) -> float:
    """The O'Brien-Fleming-like alpha spent by information fraction t (0 < t <= 1)."""
    if fraction <= 0:
        return 0.0
    if fraction >= 1:
        return alpha  # exactly: the last look of a plan spends what is left
    # 2 sf(z), not 2 - 2 cdf(z): the latter rounds to exactly 0 for early fractions (a first look of 18 or more
    # planned repeats could never stop)
    return float(min(alpha, 2 * norm.sf(norm.isf(alpha / 2) / math.sqrt(min(1.0, fraction)))))


def look_levels(alpha: float, looks: Sequence[int]) -> list[float]:
    """The alpha each look tests at by the union bound: what the O'Brien-Fleming function spends between it and the
    look before (the speed rule's looks, and the worse test's stopping looks)."""
    return _increments(lambda t: spent(alpha, t), looks)


def equivalence_spent(alpha: float, fraction: float) -> float:
    """The equivalence test's spending, alpha t^2 (Kim and DeMets' power family, rho 2)."""
    return alpha * min(1.0, max(0.0, fraction)) ** 2


def _increments(spending, looks: Sequence[int]) -> list[float]:
    total = looks[-1]
    levels, before = [], 0.0
    for look in looks:
        now = spending(look / total)
        levels.append(max(0.0, now - before))
        before = now
    return levels


def _upper_tails(a: float, b: float, rho: float) -> float:
    """P(Z_1 > a, Z_2 > b) for a standard bivariate normal with correlation rho."""
    if rho >= 1.0:
        return float(norm.sf(max(a, b)))
    s = math.sqrt(1.0 - rho * rho)
    return quad(lambda x: norm.pdf(x) * norm.sf((b - rho * x) / s), a, math.inf, epsabs=1e-15, epsrel=1e-10)[0]


def last_look_level(alpha: float, fractions: Sequence[float], interim: Sequence[float]) -> float:
    """The last look's level when the looks before it test at `interim` (one-sided levels, at information
    `fractions`, the last 1): the largest a with P(any look crosses) <= alpha, by Bonferroni over the earlier looks
    only: a = alpha - sum(interim) + sum_j P(Z_j > z_j, Z_K > z_a), what the union bound counts twice. Never above
    the exact multivariate normal's; at the package's looks [1, 4, 8, 15] 0.04775 against 0.04777 for
    O'Brien-Fleming's levels, 0.0439 against 0.0444 for the equivalence test's (its earlier looks overlap more)."""
    rest = alpha - sum(interim)
    if rest <= 0 or len(fractions) < 2:
        return max(0.0, rest)
    earlier = [(float(norm.isf(a)), math.sqrt(t / fractions[-1])) for a, t in zip(interim, fractions) if a > 0]

    def excess(c: float) -> float:
        return float(norm.sf(c)) - rest - sum(_upper_tails(z, c, rho) for z, rho in earlier)

    high = float(norm.isf(rest))  # the union bound's boundary: excess <= 0 there
    low = high - 1.0
    while excess(low) < 0:  # a rare plan whose earlier looks overlap the last a lot
        low -= 1.0
    return float(norm.sf(brentq(excess, low, high, xtol=1e-12)))


@dataclass(frozen=True)
class Levels:
    """The alphas a look tests at: `worse` (the drop-above-the-margin test: divided by the planned family at a
    stopping look, against the Holm-adjusted p at the final analysis) and `equivalent` (TOST: its interval is
    1 - 2 equivalent)."""

    worse: float
    equivalent: float


@functools.lru_cache(maxsize=256)
def _quality_levels(alpha: float, looks: tuple[int, ...], family_size: int,
                    equivalence_only: frozenset[int]) -> tuple[Levels, ...]:
    both = [look for look in looks if look not in equivalence_only or look == looks[-1]]
    worse = dict(zip(both, look_levels(alpha, both)))
    equivalent = _increments(lambda t: equivalence_spent(alpha, t), looks)
    fractions = [look / looks[-1] for look in looks]
    if len(both) > 1:
        family = max(1, family_size)
        # the worse test's family-wide chance at the last look: per comparison at the family's scale, as it is tested
        worse[looks[-1]] = family * last_look_level(alpha / family, [look / looks[-1] for look in both],
                                                    [worse[look] / family for look in both[:-1]])
    if len(looks) > 1:
        equivalent[-1] = last_look_level(alpha, fractions, equivalent[:-1])
    return tuple(Levels(worse.get(look, 0.0), e) for look, e in zip(looks, equivalent))


def quality_levels(alpha: float, looks: Sequence[int], family_size: int = 1,
                   equivalence_only: Sequence[int] = ()) -> list[Levels]:
    """Each look's levels for a quality task planned in `looks`, in a family of `family_size` comparisons. At the
    looks in `equivalence_only` only the equivalence test looks (its worse level is 0): the worse test spends over
    the other looks alone, so its last look keeps what it had without them."""
    return list(_quality_levels(float(alpha), tuple(looks), int(family_size), frozenset(equivalence_only)))


@dataclass(frozen=True)
class LookDecision:
    stop: Stop | None  # None: go on
    level: Levels  # the alphas this look tested at


def decide_look(evidence: PairedEvidence, margin: float, level: Levels, family_size: int) -> LookDecision:
    """Stop a task at a look: worse when its drop is above the margin at level.worse / family_size (Bonferroni over
    the planned family), equivalent when its (1 - 2 level.equivalent) interval lies inside +-margin (TOST, the
    verdict's calibrated test: `PairedEvidence.equivalent`, which stops counting resamples at the first side that
    cannot pass)."""
    if level.worse > 0 and evidence.p_above(margin) < level.worse / max(1, family_size):
        return LookDecision("worse", level)
    if level.equivalent > 0:
        if evidence.equivalent(margin, level.equivalent):  # the verdict's own test (calibrated)
            return LookDecision("equivalent", level)
    return LookDecision(None, level)


def screened(not_faster: bool, full_quality: bool) -> bool:
    """A cell the speed rule calls credibly not faster than the reference by the floor (SpeedVerdict.not_faster:
    its upper bound below 1 + FLOOR, analysis/speed.py) runs only its first look; an undecided one runs its quality
    as designed."""
    return not full_quality and not_faster


def final_levels(alpha: float, looks: Sequence[int], reached: int, family_size: int = 1,
                 equivalence_only: Sequence[int] = ()) -> Levels:
    """The levels the final analysis of a task that stopped after `reached` repeats (or ran to the end) tests at:
    those of the look it stopped at; a task that ran all looks, the last look's. A task that stopped at an
    equivalence-only look (settled equivalent there, or stopped because another task of its cell was worse) has its
    worse test's one look there, at what the O'Brien-Fleming function spends between the worse test's look before
    and that fraction (Lan and DeMets: an unplanned look spends its increment; the task never reaches the looks
    after it, so the planned levels stay valid)."""
    levels = quality_levels(alpha, looks, family_size, equivalence_only)
    for k, (look, level) in enumerate(zip(looks, levels)):
        if reached <= look:
            if look in equivalence_only and look != looks[-1]:
                before = max([0, *(v for v in looks[:k] if v not in equivalence_only)])
                worse = spent(alpha, look / looks[-1]) - spent(alpha, before / looks[-1])
                return Levels(max(0.0, worse), level.equivalent)
            return level
    return levels[-1]


def task_stops(decisions: Mapping[str, LookDecision]) -> dict[str, Stop]:
    return {task: d.stop for task, d in decisions.items() if d.stop is not None}
