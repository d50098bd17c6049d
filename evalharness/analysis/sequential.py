"""Sequential stopping of a cell's quality tasks: its repeats come in looks, and after each look a task stops as
soon as it is settled (equivalent, or worse), the cell when all its tasks are; the reference, shared by every cell,
always runs all its repeats. Pure: evidence in (analysis/stats.py), decisions out.

The error rates survive the looks by alpha spending (Lan and DeMets, O'Brien-Fleming-like spending function
alpha(t) = 2 - 2 Phi(z_{1 - alpha / 2} / sqrt(t)) at information fraction t = repeats so far / planned repeats):
look k tests at the alpha it spends, alpha(t_k) - alpha(t_{k-1}), which by the union bound keeps the chance of ever
wrongly stopping at most alpha, whatever the correlation between looks (conservative: exact group-sequential
boundaries would give the last look a little more: benchmarks/sequential_design.py measured 2 points of per-task
power lost to it). O'Brien-Fleming spends almost nothing early (4 looks at 1/8, 1/4, 1/2 and all of 8 repeats:
3e-8, 8.9e-5, 0.0055, then 0.0444 at the last), so a cell that runs to the end is tested nearly as a fixed design
is, and only clear cases stop early. The "worse" test at a look is Bonferroni over the planned family (every cell x
task of the matrix), as Holm's first step is at the end; the final analysis compares each comparison's Holm-adjusted
p with the level its last look spent (not a textbook combination of Holm and spending: the benchmark measured no
inflation, 0.12% against the fixed design's 0.13% with every cell exactly at the margin). Once a task of a cell is
worse, the cell is worse: its other tasks stop at that look too.

Screening: a cell that is credibly not faster than the reference (the speed rule's upper bound below 1 plus the
floor, analysis/speed.py) runs only its first look (enough to catch a damaged model), unless the matrix asks for full
quality everywhere; it can never be worth shipping. A cell whose speed is undecided is never screened. The decision
to screen comes from throughput, not from the quality data, so a screened cell is a fixed design of one look,
tested at the full alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence

from scipy.stats import norm

from evalharness.analysis.stats import PairedEvidence
from evalharness.matrix.quality import default_looks  # noqa: F401  (the looks' one definition; benchmarks use it here)

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
    """The alpha each look tests at: what the spending function spends between it and the look before."""
    total = looks[-1]
    levels, before = [], 0.0
    for look in looks:
        now = spent(alpha, look / total)
        levels.append(max(0.0, now - before))
        before = now
    return levels


@dataclass(frozen=True)
class LookDecision:
    stop: Stop | None  # None: go on
    level: float  # the alpha this look tested at


def decide_look(evidence: PairedEvidence, margin: float, level: float, family_size: int) -> LookDecision:
    """Stop a task at a look: worse when its drop is above the margin at level / family_size (Bonferroni over the
    planned family), equivalent when its (1 - 2 level) interval lies inside +-margin (TOST at level)."""
    if level <= 0:
        return LookDecision(None, level)
    if evidence.p_above(margin) < level / max(1, family_size):
        return LookDecision("worse", level)
    low, high = evidence.interval(1 - 2 * level)
    if -margin < low and high < margin:
        return LookDecision("equivalent", level)
    return LookDecision(None, level)


def screened(not_faster: bool, full_quality: bool) -> bool:
    """A cell the speed rule calls credibly not faster than the reference by the floor (SpeedVerdict.not_faster:
    its upper bound below 1 + FLOOR, analysis/speed.py) runs only its first look; an undecided one runs its quality
    as designed."""
    return not full_quality and not_faster


def final_alpha(alpha: float, looks: Sequence[int], reached: int) -> float:
    """The alpha the final analysis of a task that stopped after `reached` repeats (or ran to the end) tests at:
    the level of the look it stopped at; a task that ran all looks, the last look's."""
    levels = look_levels(alpha, looks)
    for look, level in zip(looks, levels):
        if reached <= look:
            return level
    return levels[-1]


def task_stops(decisions: Mapping[str, LookDecision]) -> dict[str, Stop]:
    return {task: d.stop for task, d in decisions.items() if d.stop is not None}
