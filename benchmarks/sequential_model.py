"""The simulation model of benchmarks/sequential_design.py and its numpy replica of the package's evidence.

Owns the shared constants (outcome codes, kinds of cell, the sm120 sizes, the screened share of documents), a task
(`Task`: the Beta model of its documents, its fixed repeats and looks), the cells of a run (`Mix`: what each is and
whether it is faster) and `Evidence` / `Equivalence`: paired_evidence and the TOST for every (trial, cell) at once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm, t as student_t

from evalharness.analysis.sequential import default_plan
from evalharness.analysis.stats import PairedEvidence, paired_evidence, tango_z
from evalharness.matrix.quality import QualitySection

# a screened cell's share of the documents of a task it runs once (quality.screen_documents; the matrix's default)
SCREEN_DOCUMENTS = QualitySection.model_fields["screen_documents"].default

EQUIVALENT, INCONCLUSIVE, WORSE = 0, 1, 2
CODE = {"equivalent": EQUIVALENT, "inconclusive": INCONCLUSIVE, "worse": WORSE}
UNCHANGED, BROKEN, DROPPED = "unchanged", "broken", "dropped"

# the equivalence test's own look the benchmark measures as an option (quality.equivalence_looks)
EQUIVALENCE_LOOK = [0.75]

# the sm120 matrix's sizes, with stated tokens per answer (assumptions: reasoning chains)
SM120 = "gsm8k:200:0.95:1500,gpqa_diamond:198:0.80:8000,mmlu_pro:210:0.82:4000,ifeval:200:0.88:1200"


@dataclass(frozen=True)
class Task:
    """One task: `docs` documents at `accuracy` with `consistency` (the Beta model), or fixed per-document
    probabilities `p`; tokens per answer; the fixed design's repeats (cell, reference)."""

    name: str
    docs: int
    accuracy: float
    consistency: float
    tokens: float
    cell_repeats: int
    reference_repeats: int
    p: np.ndarray | None = field(default=None, compare=False)

    @property
    def looks(self) -> list[int]:
        """The package's default looks at the fixed design's repeats, the equivalence-only ones included."""
        return default_plan(self.cell_repeats)[0]

    @property
    def equivalence_only(self) -> list[int]:
        """Which of `looks` only the equivalence test looks at (the worse test spends nothing there)."""
        return default_plan(self.cell_repeats)[1]

    def screened_docs(self, share: float, repeats: int | None = None) -> int | None:
        """The documents a screened cell answers of this task: a share of them when the task runs once (`repeats`,
        default the fixed design's; its first look is then a batch of documents, _lmeval_worker.document_subsets),
        else None (its first repeat)."""
        once = (self.cell_repeats if repeats is None else repeats) == 1
        return max(1, math.ceil(self.docs * share)) if once and share < 1 else None

    def draw_p(self, rng: np.random.Generator, trials: int) -> np.ndarray:
        if self.p is not None:
            return np.broadcast_to(self.p, (trials, self.docs))
        mu, rho = self.accuracy, self.consistency
        if mu <= 0 or mu >= 1 or rho <= 0:
            return np.full((trials, self.docs), float(mu))
        if rho >= 1:
            return (rng.random((trials, self.docs)) < mu).astype(float)
        scale = 1 / rho - 1
        return rng.beta(mu * scale, (1 - mu) * scale, size=(trials, self.docs))


@dataclass(frozen=True)
class Mix:
    """What each cell is (unchanged, broken or dropped) and whether it is faster than the reference."""

    kinds: tuple[str, ...]
    fast: tuple[bool, ...]

    @classmethod
    def of(cls, cells: int, broken_share: float, dropped_share: float, slow_share: float) -> Mix:
        broken, dropped = round(cells * broken_share), round(cells * dropped_share)
        if broken + dropped > cells:
            raise ValueError("broken and dropped shares exceed the cells")
        kinds = [UNCHANGED] * (cells - broken - dropped) + [BROKEN] * broken + [DROPPED] * dropped
        fast = []
        for kind in (UNCHANGED, BROKEN, DROPPED):  # slow cells spread evenly within each kind (Bresenham)
            for j in range(kinds.count(kind)):
                fast.append(not math.floor((j + 1) * slow_share) > math.floor(j * slow_share))
        return cls(tuple(kinds), tuple(fast))

    @property
    def cells(self) -> int:
        return len(self.kinds)

    def mask(self, kind: str, fast: bool | None = None) -> np.ndarray:
        m = np.array([k == kind for k in self.kinds])
        if fast is not None:
            m &= np.array(self.fast) == fast
        return m

    def describe(self) -> str:
        parts = []
        for kind in (UNCHANGED, BROKEN, DROPPED):
            n = self.kinds.count(kind)
            f = sum(1 for k, s in zip(self.kinds, self.fast) if k == kind and s)
            if n:
                parts.append(f"{n} {kind} ({f} fast, {n - f} slow)")
        return ", ".join(parts)


def verdict_of(fast: bool) -> bool:
    """Whether the speed rule calls a simulated cell credibly not faster (SpeedVerdict.not_faster): a fast cell is
    not, a slow one is."""
    return not fast


# ----------------------------------------------------------------------------------------------------- the replica

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
        return cls(n, binary | still, lost, gained, estimate, se, ref, cell)

    def p_above(self, margin: float) -> np.ndarray:
        z_score = tango_z(self.lost, self.gained, self.n, margin)
        with np.errstate(divide="ignore", invalid="ignore"):
            z_t = np.where(self.se > 0, (self.estimate - margin) / np.where(self.se > 0, self.se, 1.0),
                           np.sign(self.estimate - margin) * np.inf)
        return np.where(self.score, 1.0 - norm.cdf(z_score), 1.0 - student_t.cdf(z_t, self.n - 1))

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


class Equivalence:
    """One task's TOST at a look (repeats `point`) and level, cached: with `calibrate`, the package's calibrated
    test, computed only for the (trial, cell) entries a design asks for (a task still running at that look), a few
    ms each; without, the t's for every entry at once."""

    def __init__(self, evidence: dict[int, Evidence], margin: float, calibrate: bool):
        self.evidence, self.margin, self.calibrate = evidence, margin, calibrate
        self.known: dict[tuple[int, float], tuple[np.ndarray, np.ndarray]] = {}

    def at(self, point: int, level: float, need: np.ndarray) -> np.ndarray:
        """(T, C) bool, meaningful where `need` is True."""
        evidence = self.evidence[point]
        if level <= 0:
            return np.zeros(evidence.estimate.shape, bool)
        key = (point, level)
        if key not in self.known:
            if not self.calibrate:
                self.known[key] = (evidence.equivalent(self.margin, level), np.ones(evidence.estimate.shape, bool))
            else:
                self.known[key] = (np.zeros(evidence.estimate.shape, bool), np.zeros(evidence.estimate.shape, bool))
        value, done = self.known[key]
        missing = need & ~done
        if np.any(missing):
            value |= evidence.calibrated_equivalent(self.margin, level, missing)
            done |= missing
        return value


@functools.lru_cache(maxsize=None)
def _score_interval(n: int, lost: int, gained: int, confidence: float) -> tuple[float, float]:
    """The package's own score-test interval (it depends only on the flips and n)."""
    return PairedEvidence(method="score", n=n, estimate=(lost - gained) / n, lost=lost,
                          gained=gained).interval(confidence)
