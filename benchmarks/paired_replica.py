"""The benchmarks' one numpy replica of the package's paired evidence (analysis/stats.py `paired_evidence`): the
score test where both sides are 0/1 (or nothing varies and nothing dropped), else the t-test over documents with the
package's fallback where the differences do not vary, for every (trial, cell) of a simulation at once.

benchmarks/gate_replica.py (the gate's and the recommendation's tests) and benchmarks/sequential_model.py (the TOST
at each look) decide on it; each checks its decisions against the package's own functions on a few runs.
Why a replica at all: the benchmarks decide 192,000 comparisons a line, one (trial, cell) array at a time; the
package's calibrated test alone takes about 2 ms a comparison (gate_replica.py `task_tests`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, t as student_t

from evalharness.analysis.stats import PairedEvidence, paired_evidence, tango_z


@dataclass
class Evidence:
    """paired_evidence(reference, cell) for every (trial, cell) at once."""

    n: int
    score: np.ndarray  # the score test (both sides 0/1, or no spread and no drop); else the t-test
    lost: np.ndarray
    gained: np.ndarray
    estimate: np.ndarray
    se: np.ndarray
    ref: np.ndarray  # (T, n) and (T, C, n): the sides, for the package's calibrated test per (trial, cell)
    cell: np.ndarray
    flat: np.ndarray  # not 0/1 and no spread: the t path with the package's fallback standard error (1 / n)

    @classmethod
    def of(cls, ref: np.ndarray, cell: np.ndarray) -> Evidence:
        """ref (T, n), cell (T, C, n)."""
        n = ref.shape[-1]
        drops = ref[:, None, :] - cell
        binary = np.all((ref == 0) | (ref == 1), axis=-1)[:, None] & np.all((cell == 0) | (cell == 1), axis=-1)
        estimate = np.sum(drops, axis=-1) / n
        se = np.sqrt(n / (n - 1) * np.sum((drops - estimate[..., None]) ** 2, axis=-1)) / n
        lost = np.where(binary, np.sum(drops == 1, axis=-1), 0).astype(float)
        gained = np.where(binary, np.sum(drops == -1, axis=-1), 0).astype(float)
        flat = ~binary & (se < 1e-12)
        still = flat & (np.abs(estimate) < 1e-12)
        se = np.where(flat & ~still, 1.0 / n, se)
        return cls(n, binary | still, lost, gained, estimate, se, ref, cell, flat)

    def cdf(self, delta: float) -> np.ndarray:
        """The one-sided p-value of "drop >= delta" (small: the drop is credibly below delta), per (trial, cell)."""
        z_score = tango_z(self.lost, self.gained, self.n, delta)
        with np.errstate(divide="ignore", invalid="ignore"):
            z_t = np.where(self.se > 0, (self.estimate - delta) / np.where(self.se > 0, self.se, 1.0),
                           np.sign(self.estimate - delta) * np.inf)
        return np.where(self.score, norm.cdf(z_score), student_t.cdf(z_t, self.n - 1))

    def p_above(self, margin: float) -> np.ndarray:
        """The one-sided p-value of "drop <= margin" (small: credibly worse than the margin)."""
        return 1.0 - self.cdf(margin)

    def drops(self, at: tuple[int, int]) -> np.ndarray:
        """One (trial, cell)'s per-document drops, reference minus cell."""
        return self.ref[at[0]] - self.cell[at]

    def equivalent(self, margin: float, level: float | np.ndarray) -> np.ndarray:
        """interval(1 - 2 level) inside (-margin, margin), elementwise level: the t's (and the score test's)."""
        if np.ndim(level) == 0:  # one level for all: one quantile (t.ppf is the slow part), the same arithmetic
            q = float(student_t.ppf((1 + (1 - 2 * float(level))) / 2, self.n - 1))
            confidence = np.full(self.estimate.shape, 1 - 2 * float(level))
        else:
            confidence = 1 - 2 * np.broadcast_to(np.asarray(level, dtype=float), self.estimate.shape)
            q = student_t.ppf((1 + confidence) / 2, self.n - 1)
        with np.errstate(invalid="ignore"):
            low, high = self.estimate - q * self.se, self.estimate + q * self.se
        out = (-margin < low) & (high < margin)
        if np.any(self.score):
            idx = np.nonzero(self.score)
            for i in zip(*idx):
                lo, hi = _score_interval(self.n, int(self.lost[i]), int(self.gained[i]), float(confidence[i]))
                out[i] = -margin < lo and hi < margin
        return out

    def calibrated_equivalent(self, margin: float, level: float, need: np.ndarray) -> np.ndarray:
        """The package's TOST (PairedEvidence.equivalent: the calibrated test on the t path, the score test's
        interval on the score path) for the (trial, cell) entries in `need`; False elsewhere. Where the estimate is
        outside +-margin no test at a level below one half can say equivalent (the package's own shortcut)."""
        out = np.zeros(self.estimate.shape, bool)
        score = need & self.score
        if np.any(score):
            out[score] = self.equivalent(margin, level)[score]
        for i, c in zip(*np.nonzero(need & ~self.score & (np.abs(self.estimate) < margin))):
            out[i, c] = paired_evidence(self.ref[i], self.cell[i, c]).equivalent(margin, level)
        return out


@functools.lru_cache(maxsize=None)
def _score_interval(n: int, lost: int, gained: int, confidence: float) -> tuple[float, float]:
    """The package's own score-test interval (it depends only on the flips and n)."""
    return PairedEvidence(method="score", n=n, estimate=(lost - gained) / n, lost=lost,
                          gained=gained).interval(confidence)
