"""The power of confirmation's "not worse" as it is decided, by simulation (issue 61): what `plan` sizes a task's
confirmation repeats and states its certified margin by.

Why not the formula: confirmation passes a task with the gate's calibrated test (analysis/nullboot.py, through
`analysis/confirm.not_worse`), a bootstrap-t under a tilted null that is more cautious than Student's t near the margin
where answers are skewed (high accuracy, most documents always right). Sized by the t (analysis/sizing.py
`confirmation_repeats`), sm120's tasks passed a truly unchanged finalist 0.88 / 0.89 / 0.91 / 0.90 of the time (gsm8k
90 documents at 0.95, GPQA, MMLU-Pro and IFEval 42 at 0.80 / 0.82 / 0.88, consistency 0.5, 15 / 46 / 44 / 31 repeats
a side; 300 runs each) where the t promised 0.946 each, and the whole claim (every task must pass) 0.65 instead of
0.8 (benchmarks/two_stage.py). No closed form of the calibrated test's power is known; 400 draws of the plan's own
model (each document's success probability from a Beta with the task's accuracy and consistency, as
analysis/sizing.py models it; binomial answers) decided by the package's own test are, at about 1.3 ms a decision:
a task's margin in about 1.5 s, its repeats in 2-3 s.

Deterministic: the draws are seeded by the task's figures and the repeats, so a plan prints the same numbers each
time. A power estimated from 400 draws has a standard error of about 1.1 points at 0.95.

Must not import outside analysis/ (stats, confirm, sizing) and numpy.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from evalharness.analysis.sizing import confirmation_margin, confirmation_repeats
from evalharness.analysis.stats import PairedEvidence, paired_evidence

RUNS = 400
STEP = 0.0005  # the grid a certified margin is printed on (as analysis/sizing.certified_margin's)
MOST_REPEATS = 2000


def _draws(accuracy: float, consistency: float, docs: int, repeats: int, reference_repeats: int,
           runs: int) -> list[PairedEvidence]:
    """`runs` confirmations of a truly unchanged finalist: each document's success probability from the Beta of the
    task's accuracy and consistency (intra-class correlation), each side's answers binomial around it."""
    rng = np.random.default_rng([20261206, docs, repeats, reference_repeats, round(accuracy * 1e6),
                                 round(consistency * 1e6)])
    out = []
    for _ in range(runs):
        if consistency <= 0 or not 0 < accuracy < 1:
            p = np.full(docs, accuracy)
        else:
            scale = 1 / min(consistency, 1 - 1e-9) - 1
            p = rng.beta(accuracy * scale, (1 - accuracy) * scale, size=docs)
        reference = rng.binomial(reference_repeats, p) / reference_repeats
        finalist = rng.binomial(repeats, p) / repeats
        out.append(paired_evidence(reference, finalist))
    return out


def _passes(evidence: PairedEvidence, margin: float, level: float) -> bool:
    """confirm.not_worse's decision (H0 "drop >= margin" rejected by the calibrated test at `level`)."""
    return evidence.calibrated_p(margin, "below", level) < level


def pass_power(accuracy: float, consistency: float, docs: int, repeats: int, reference_repeats: int, margin: float,
               level: float, runs: int = RUNS) -> float:
    """The share of simulated unchanged finalists that confirmation passes on this task at `margin`."""
    draws = _draws(accuracy, consistency, docs, repeats, reference_repeats, runs)
    return sum(_passes(e, margin, level) for e in draws) / runs


def _critical_margin(evidence: PairedEvidence, level: float) -> float:
    """The smallest margin this draw passes at: the fixed point of m = the calibrated upper bound at m (the bound
    moves little with the margin it is calibrated at: three steps from the t's bound settle it to well under the
    printed grid)."""
    margin = evidence.bound(1 - level, "upper")
    for _ in range(3):
        margin = evidence.calibrated_bound(1 - level, "upper", max(margin, 1e-6))
    return margin + 1e-9  # passing needs the bound strictly below the margin


@lru_cache(maxsize=64)
def pass_margin(accuracy: float, consistency: float, docs: int, repeats: int, reference_repeats: int, *,
                alpha: float = 0.05, tries: int = 1, power: float = 0.8, runs: int = RUNS) -> float:
    """The margin at which confirmation passes a truly unchanged finalist with probability `power` on this task, at
    alpha / tries: the `power` quantile of the draws' critical margins, snapped up to the printed grid. Never below
    what the t formula states (sizing.confirmation_margin): the simulation corrects the formula's optimism only."""
    level = alpha / tries
    draws = _draws(accuracy, consistency, docs, repeats, reference_repeats, runs)
    critical = np.sort([_critical_margin(e, level) for e in draws])
    quantile = float(critical[min(runs - 1, math.ceil(power * runs) - 1)])
    floor = confirmation_margin(accuracy, consistency, docs, repeats, reference_repeats, alpha=alpha, tries=tries,
                                power=power)
    return math.ceil(max(quantile, floor) / STEP - 1e-6) * STEP


@lru_cache(maxsize=64)
def pass_repeats(accuracy: float, consistency: float, docs: int, margin: float, *, alpha: float = 0.05,
                 tries: int = 1, power: float = 0.8, reference_share: float = 1.0,
                 runs: int = RUNS) -> tuple[int, int] | None:
    """The fewest (finalist, reference) repeats a document, the reference's at `reference_share` times the
    finalist's, at which confirmation passes a truly unchanged finalist at `margin` with probability `power`: from
    the t formula's answer (sizing.confirmation_repeats) up, by the simulated calibrated test. None when no repeats up
    to MOST_REPEATS reach it."""
    start = confirmation_repeats(accuracy, consistency, docs, margin, alpha=alpha, tries=tries, power=power,
                                 reference_share=reference_share)
    if start is None:
        return None

    def pair(n: int) -> tuple[int, int]:
        return n, max(1, math.ceil(reference_share * n - 1e-9))

    def reached(n: int) -> bool:
        return pass_power(accuracy, consistency, docs, *pair(n), margin, alpha / tries, runs) >= power

    low = start[0]
    if reached(low):
        return pair(low)
    high = math.ceil(low * 1.25)
    while not reached(high):  # grow by a quarter at a time, then bisect between the last miss and the first hit
        low, high = high, math.ceil(high * 1.25)
        if high > MOST_REPEATS:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reached(mid) else (mid, high)
    return pair(high)
