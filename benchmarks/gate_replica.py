"""The numpy replica of the gate's decision rule that benchmarks/gate_false_alarms.py decides its runs with, on the
benchmarks' one replica of the paired evidence (paired_replica.py).

Owns the outcome codes (PASS / INCONCLUSIVE / FAIL), `task_tests` (paired_evidence's one-sided p-values for every
(trial, cell) at once), `holm_adjusted` (Holm's step-down over the last axis), the fast decision of every simulated
run, and `decide_exact`: one run decided by the package's own functions, which the replica is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from benchmarks.paired_replica import Evidence
from evalharness.analysis.equivalence import decide_family, gate_outcome
from evalharness.analysis.stats import PairedEvidence, paired_evidence

PASS, INCONCLUSIVE, FAIL = 0, 1, 2
OUTCOME_CODE = {"pass": PASS, "inconclusive": INCONCLUSIVE, "fail": FAIL}


@dataclass
class Tests:
    """Per (trial, cell): the one-sided p-values of "drop >= margin" (small: credibly below the margin; the gate's
    pass), of "drop <= -margin" and of "drop <= margin" (small: credibly worse)."""

    p_below_margin: np.ndarray
    p_above_minus_margin: np.ndarray
    p_above_margin: np.ndarray

    @property
    def p_equivalent(self) -> np.ndarray:
        return np.maximum(self.p_below_margin, self.p_above_minus_margin)


def task_tests(ref: np.ndarray, cell: np.ndarray, margin: float, calibrate: bool = False,
               level: float = 0.05) -> Tests:
    """For a (T, n) reference and (T, C, n) cells: `paired_evidence(ref, cell)`'s one-sided p-values at +-margin,
    on the benchmarks' one replica (paired_replica.py `Evidence`). `calibrate`: the two pass-side p-values on the t
    path by the package's calibrated test (`PairedEvidence.calibrated_p` on each comparison, resamples for `level`:
    about 2 ms a row, too slow for this benchmark's 192,000 comparisons a line, so its lines use the t alone and
    benchmarks/recommendation.py measures the calibrated pass)."""
    evidence = Evidence.of(ref, cell)
    below, above_minus = evidence.cdf(margin), 1.0 - evidence.cdf(-margin)
    if calibrate:  # the package's own PairedEvidence per t-path comparison (where it keeps the documents)
        for at in zip(*np.nonzero(~evidence.score & ~evidence.flat)):
            exact = PairedEvidence(method="t", n=evidence.n, estimate=float(evidence.estimate[at]),
                                   se=float(evidence.se[at]), df=evidence.n - 1,
                                   drops=tuple(evidence.drops(at).tolist()))
            below[at] = exact.calibrated_p(margin, "below", level)
            above_minus[at] = exact.calibrated_p(-margin, "above", level)
    return Tests(p_below_margin=below, p_above_minus_margin=above_minus, p_above_margin=evidence.p_above(margin))


def _task_tests(ref: np.ndarray, cell: np.ndarray, margin: float) -> tuple[np.ndarray, np.ndarray]:
    """(p_above(margin), noninferior) per (T, C), as `decide` computes them (noninferior: the 90% interval's upper
    end below the margin, the one-sided test of "drop >= margin" at 5%)."""
    tests = task_tests(ref, cell, margin)
    return tests.p_above_margin, tests.p_below_margin < 0.05


def holm_adjusted(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values over the last axis, as statsmodels' multipletests computes them."""
    k = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * np.arange(k, 0, -1)
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    adjusted = np.empty_like(adjusted_sorted)
    np.put_along_axis(adjusted, order, adjusted_sorted, axis=-1)
    return adjusted


def _holm_reject(p: np.ndarray, alpha: float) -> np.ndarray:
    """Holm over the last axis: adjusted < alpha."""
    return holm_adjusted(p) < alpha


def _decide_fast(refs: list[np.ndarray], cells: list[np.ndarray], margin: float,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(outcome (T, C), worse (T, C, K)) for every simulated run at once."""
    tests = [_task_tests(r, c, margin) for r, c in zip(refs, cells)]
    p = np.stack([pt for pt, _ in tests], axis=-1)  # (T, C, K)
    noninferior = np.stack([ni for _, ni in tests], axis=-1)
    t, c, k = p.shape
    worse = _holm_reject(p.reshape(t, c * k), alpha).reshape(t, c, k)
    outcome = np.where(worse.any(axis=-1), FAIL, np.where(noninferior.all(axis=-1), PASS, INCONCLUSIVE))
    return outcome, worse


def decide_exact(refs: Sequence[np.ndarray], cells: Sequence[np.ndarray], names: Sequence[str], margin: float,
                 alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """One run decided by the package's functions: refs[k] (n,), cells[k] (C, n). (outcome (C,), worse (C, K))."""
    count = cells[0].shape[0]
    family = {(c, name): (paired_evidence(refs[k], cells[k][c], calibrate=False), margin)
              for c in range(count) for k, name in enumerate(names)}
    decisions = decide_family(family, alpha)
    outcome = np.array([OUTCOME_CODE[gate_outcome([decisions[(c, name)] for name in names])] for c in range(count)])
    worse = np.array([[decisions[(c, name)].outcome == "worse" for name in names] for c in range(count)])
    return outcome, worse
