"""The simulation model of benchmarks/sequential_design.py and its numpy replica of the package's evidence.

Owns the shared constants (outcome codes, kinds of cell, the sm120 sizes, the screened share of documents), a task
(`Task`: the Beta model of its documents, its fixed repeats and looks), the cells of a run (`Mix`: what each is and
whether it is faster) and `Equivalence`: the TOST for every (trial, cell) at once at each look, on the benchmarks'
one replica of paired_evidence (paired_replica.py `Evidence`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from benchmarks.paired_replica import Evidence
from evalharness.analysis.sequential import default_plan
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


# ------------------------------------------------------------------------ the TOST at each look (paired_replica.py)

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
