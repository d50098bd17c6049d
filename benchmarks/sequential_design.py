"""The fixed design against sequential stopping (analysis/sequential.py) and screening, apart and together, at EQUAL
PER-TASK POWER: generated tokens, false alarms, power, and what is left inconclusive, on the same simulated runs.

The model is benchmarks/gate_false_alarms.py's: per task and simulated run, each document's success probability
p_i ~ Beta(mean accuracy, intra-class correlation `consistency`) (or p_i given: `--from-run`); a side's score of a
document is Binomial(repeats, p_i) / repeats; a cell with a true drop d answers with p_i (1 - d / accuracy); a
broken cell (stated model) answers with p_i x `--broken-factor` (0.3: a damaged model, about a 0.6 drop).

The designs (`Design`), on the SAME draws (a cell's repeats are nested: its data after R repeats is the first R of
the draws any longer design uses, so designs differ only by their rule and their repeats); the reference runs all
its Rr in every one, and the final analysis is always `decide_family` over every cell x task of the matrix with
`alphas[(cell, task)] = final_levels(alpha, looks, repeats reached, cells x tasks)`:

- fixed: every cell runs all its repeats Rc of every task (`sizing.repeats_for_task`, cells x tasks of the matrix),
  decided once at alpha;
- screening alone: a cell that is not faster than the reference (`screened(verdict, full_quality=False)`; here a
  stated half of the cells) runs one repeat of every task (or, of a task it runs once, `--screen-documents`,
  quality.screen_documents, 0.25, of its documents), decided as a fixed design of it at the full alpha; the others
  run all their repeats, decided once;
- looks alone: every cell runs each task in looks `default_plan(R, [])` (1, a quarter, a half and all of R) and
  after each look `decide_look(evidence so far, margin, quality_levels(alpha, looks, cells x tasks)[k],
  family_size=cells x tasks)`; the task stops at its first stop ("equivalent" or "worse");
- looks + screening: both;
- looks + screening + equivalence-only look: both, with the equivalence test's own look at three quarters
  (`quality.equivalence_looks: [0.75]`, the package's default since 2026-12-05: `DEFAULT_DESIGN` says which row is
  the default), and "looks + screening, equivalence-only look at 3/4", the same at looks + screening's repeats;
  `equivalence_look_criterion` says whether the look earns its place;
- looks + screening + cell stop: also the runner's rule (runner/cellphases.py) that once one task of a cell is worse
  its other tasks stop at their next look; and "sequential + screening", the runner's design (with the package's
  default looks) at the fixed design's repeats: the design the 2026-12-01 figure (37.4%) measured.

Equal per-task power (issue 37, finding 8: the 37.4% compared designs of different power), of both tests. The
per-task power is the rate at which each task of a fast cell with a true drop (`--drop-multiple` x the margin) is
called worse on its own; the equivalence power the rate at which each task of a fast cell truly worse by half the
margin is called equivalent (a cell a little worse than the reference, which should ship). Looks spend the worse
test's alpha early (its last look is at about 0.046, not 0.05), an equivalence-only look the equivalence test's (its
last look 0.040, not 0.044), and a screened cell's one repeat weakens Holm's step-down for the others, so each
design's maximum repeats R per task are raised: the equal-power search (`search_equal_power`, `--search-trials`
runs of its own, and as many near the margin) takes, per task, the smallest R = Rc + j at which both are at least
the fixed design's on the same draws; then every design is measured on FRESH draws (`--trials`, `--near-trials`),
so the power reached is not the search's luck. The cell stop is off in the designs compared:
a task stopped because another task of its cell was worse is rarely called worse itself (per-task power 61-67%
against the fixed design's 84%, at the fixed repeats and at the equal-power ones), which costs the cell's call
nothing; the cell-stop rows say what the rule saves on top, and a "fixed repeats" row what the raised repeats cost.
Where the fixed design's per-task power is below MIN_POWER (cells that answer once: about 0.5%) there is nothing to
match and the repeats stay. Each regime is measured on the stated mix and on the same mix without broken cells
(`--no-without-broken` skips it); the null, least-favourable-null and near-the-margin scenarios use the stated mix's
designs (and the other mix's where their repeats differ; near the margin, the designs without the cell stop).

Every run is decided by a numpy replica of those functions (the t-test over documents, the continuity-corrected
score test where both sides are 0/1, Holm's step-down; score-test intervals come from the package's own
`PairedEvidence`, cached). The first `--check` runs of every scenario (the search's first run) are also decided by
the package's own functions, look by look, for every design; the script says how many agreed and exits 1 if any
did not. Equivalence (a look's stop and the verdict) is decided two ways:
- by default the t (and the score test), in the replica and in the package's check (`paired_evidence(...,
  calibrate=False)`): fast, 4,000 runs a scenario; a worse stop is the package's exactly, an equivalence stop is a
  little earlier than the package's where the t is too liberal at a look's small levels;
- `--calibrated`: as the package decides it, by the calibrated test (analysis/nullboot.py; the replica asks
  `PairedEvidence.equivalent` for each (run, cell, task) still running at a look, a few ms each, and the package's own
  functions decide the checked runs with their calibrated evidence). Slow: a few hundred runs. The equal-power
  search still uses the t (see `measure`); the fresh runs then say whether the calibrated test keeps the power.
benchmarks/README.md gives both; benchmarks/recommendation.py measures the calibrated verdicts' errors.

Tokens: documents x repeats x tokens per answer (stated assumptions, reasoning chains), summed over the cells and
the reference. Rates carry one standard error over runs (+-); design differences are paired (same draws).

    .venv/bin/python benchmarks/sequential_design.py [--trials 4000] [--search-trials 2000] [--null-trials 4000]
        [--boundary-trials 2000] [--no-without-broken] [--from-run DIR] [--cells 24 --slow-share 0.5 ...] (--help)
    .venv/bin/python benchmarks/sequential_design.py --calibrated --trials 400 --null-trials 0 --boundary-trials 0 \
        --check 2 --no-without-broken      # the package's calibrated equivalence: the stated mix
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np
from scipy.stats import norm, t as student_t

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks.gate_false_alarms import holm_adjusted  # noqa: E402
from evalharness.analysis import sizing  # noqa: E402
from evalharness.analysis.equivalence import cell_outcome, decide_family  # noqa: E402
from evalharness.analysis.sequential import (decide_look, default_plan, final_levels,  # noqa: E402
                                             quality_levels, screened)
from evalharness.analysis.stats import PairedEvidence, paired_evidence, tango_z  # noqa: E402
from evalharness.matrix.quality import DEFAULT_EQUIVALENCE_LOOKS, QualitySection  # noqa: E402

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


# -------------------------------------------------------------------------------------------------- the simulation

@dataclass(frozen=True)
class Design:
    """One way to run the cells' quality tasks (the reference always runs all its repeats Rr, in every design).

    looks: a cell runs each task in looks `default_looks(R)` (1, a quarter, a half and all of R; with
      `equivalence_look`, three quarters too) and stops it at its first stop (`decide_look`); without, it runs R
      repeats and is decided once (at alpha);
    screening: a cell that is not faster (`screened(verdict, full_quality=False)`) runs only a first look, one repeat
      (or, of a task it runs once, `screen_documents` of its documents), decided as a fixed design of it at alpha;
    cell_stop: once a task of a cell is worse, the cell's other tasks stop at their next look (the runner's rule,
      runner/cellphases.py): the cell is worse whatever they say, so it saves tokens at no cost to the CELL's power,
      but a task stopped that way is called worse less often (the per-task power);
    repeats: each task's maximum cell repeats R (None: the fixed design's, `repeats_for_task`'s): raised above the
      fixed design's to buy back the per-task power the looks spend (the equal-power search);
    equivalence_look: with looks, also the equivalence test's own look at three quarters of the repeats
      (`quality.equivalence_looks: [0.75]`, the package's default; False: `[]`), on the same draws."""

    name: str
    looks: bool = False
    screening: bool = False
    cell_stop: bool = False
    repeats: tuple[int, ...] | None = None
    equivalence_look: bool = False

    def max_repeats(self, tasks: Sequence[Task]) -> list[int]:
        return [t.cell_repeats for t in tasks] if self.repeats is None else list(self.repeats)

    def plans(self, tasks: Sequence[Task]) -> list[list[int]]:
        """Each task's looks for a cell that runs in full (a screened cell runs [1], the first of them)."""
        return [self._plan(r)[0] if self.looks else [r] for r in self.max_repeats(tasks)]

    def equivalence_only(self, tasks: Sequence[Task]) -> list[list[int]]:
        """Each task's looks at which only the equivalence test looks."""
        return [self._plan(r)[1] if self.looks else [] for r in self.max_repeats(tasks)]

    def _plan(self, repeats: int) -> tuple[list[int], list[int]]:
        return default_plan(repeats, EQUIVALENCE_LOOK if self.equivalence_look else [])


FIXED = Design("fixed")
# whether the package's default plan has the equivalence test's own look (the benchmark measures [0.75] or none)
if DEFAULT_EQUIVALENCE_LOOKS not in ([], EQUIVALENCE_LOOK):
    raise SystemExit(f"the benchmark measures equivalence_looks {EQUIVALENCE_LOOK} or none, not the package's default "
                     f"{DEFAULT_EQUIVALENCE_LOOKS}")
DEFAULT_HAS_LOOK = DEFAULT_EQUIVALENCE_LOOKS == EQUIVALENCE_LOOK
# the design the runner runs (runner/cellphases.py) at the fixed design's repeats: looks, screening, and a worse cell
# stopping its other tasks; the 2026-12-01 figure (37.4%) was this design, at lower per-task power than the fixed one
PACKAGE = Design("sequential + screening", looks=True, screening=True, cell_stop=True,
                 equivalence_look=DEFAULT_HAS_LOOK)
# the three designs compared at equal per-task power (issue 37, finding 8): each task to its own stop
SCREENING_ALONE = Design("screening alone", screening=True)
LOOKS_ALONE = Design("looks alone", looks=True)
BOTH = Design("looks + screening", looks=True, screening=True)
# both with the equivalence test's own look at three quarters (quality.equivalence_looks: [0.75]), searched like the
# others: at equal power of both tests the look may need a repeat more than looks + screening
BOTH_LOOK = Design("looks + screening + equivalence-only look", looks=True, screening=True, equivalence_look=True)
BASES = (SCREENING_ALONE, LOOKS_ALONE, BOTH, BOTH_LOOK)
# the design the package runs by default (quality.equivalence_looks' default decides which of the two)
DEFAULT_DESIGN = BOTH_LOOK if DEFAULT_HAS_LOOK else BOTH
# the equal-power search tries each task's maximum repeats Rc + j for these j
OFFSETS = (0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15)
# below this per-task power of the fixed design the search does not raise repeats (matching noise, not power: cells
# that answer each task once have about 0.5% at the sm120 sizes)
MIN_POWER = 0.5


@dataclass
class Result:
    """Per design, per (trial, cell, task): its outcome codes and the repeats it ran (a share of one for a screened
    cell that answered a share of the documents). All designs on the same draws."""

    tasks: list[Task]
    mix: Mix
    designs: list[Design]
    outcomes: dict[str, np.ndarray]  # name -> (T, C, K) outcome codes
    reached_by: dict[str, np.ndarray]  # name -> (T, C, K) repeats run
    alpha: float = 0.05
    checked: int = 0
    agreed: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def trials(self) -> int:
        return int(next(iter(self.outcomes.values())).shape[0])

    # the first two designs (by default the fixed one and the runner's): the names the tests and reports used
    @property
    def fixed(self) -> np.ndarray:
        return self.outcomes[self.designs[0].name]

    @property
    def seq(self) -> np.ndarray:
        return self.outcomes[self.designs[1].name]

    @property
    def reached(self) -> np.ndarray:
        return self.reached_by[self.designs[1].name]

    @staticmethod
    def cell_level(outcome: np.ndarray) -> np.ndarray:
        """cell_outcome per (trial, cell): worse if any task is, equivalent if all are, else inconclusive."""
        return np.where(np.any(outcome == WORSE, axis=-1), WORSE,
                        np.where(np.all(outcome == EQUIVALENT, axis=-1), EQUIVALENT, INCONCLUSIVE))

    def _per(self) -> np.ndarray:
        return np.array([t.docs * t.tokens for t in self.tasks])

    def fixed_tokens(self) -> float:
        return float(sum(t.docs * t.tokens * (self.mix.cells * t.cell_repeats + t.reference_repeats)
                         for t in self.tasks))

    def reference_tokens(self) -> float:
        return float(sum(t.docs * t.tokens * t.reference_repeats for t in self.tasks))

    def tokens(self, name: str | None = None, cells: np.ndarray | None = None) -> np.ndarray:
        """(T,) tokens of a design (default the second): the reference in full plus what each cell ran."""
        reached = self.reached_by[name or self.designs[1].name]
        reached = reached if cells is None else reached[:, cells, :]
        return self.reference_tokens() + np.sum(reached * self._per(), axis=(1, 2))

    def seq_tokens(self, cells: np.ndarray | None = None) -> np.ndarray:
        return self.tokens(None, cells)

    def cell_tokens(self, cells: np.ndarray, name: str | None = None) -> float:
        reached = self.reached_by[name or self.designs[1].name]
        return float(np.mean(np.sum(reached[:, cells, :] * self._per(), axis=(1, 2))))


def _factors(task: Task, mix: Mix, drop: float, broken_factor: float) -> np.ndarray:
    out = np.ones(mix.cells)
    for c, kind in enumerate(mix.kinds):
        if kind == BROKEN:
            out[c] = broken_factor
        elif kind == DROPPED:
            if drop > task.accuracy:
                raise ValueError(f"{task.name}: a drop of {drop} exceeds the accuracy {task.accuracy}")
            out[c] = 1 - drop / task.accuracy if task.accuracy > 0 else 1.0
    return out


def simulate(tasks: Sequence[Task], mix: Mix, *, margin: float, alpha: float, drop: float, broken_factor: float,
             trials: int, seed: int | Sequence[int], check: int = 0, chunk: int = 100,
             screen_documents: float = SCREEN_DOCUMENTS, designs: Sequence[Design] = (FIXED, PACKAGE),
             calibrate: bool = False) -> Result:
    """`trials` simulated runs of every design on the same draws: a cell's repeats are nested (its data after R
    repeats is the first R of the draws any longer design uses), so the designs differ only by their rule and their
    repeats. A screened cell answers `screen_documents` of the documents of a task it runs once (the first of them:
    draws are exchangeable, like the seeded order's prefix). The first `check` runs are also decided by the package's
    own functions for every design. `calibrate`: equivalence (a look's stop and the verdict) by the package's
    calibrated test, as the package decides it (slow: a few ms a (trial, cell, task) still running at a look);
    without, by the t (the worse test is the t either way, as in the package)."""
    tasks, designs = list(tasks), list(designs)
    if len({d.name for d in designs}) != len(designs):
        raise ValueError("designs need distinct names")
    cells, family = mix.cells, mix.cells * len(tasks)
    fast = np.array([not screened(verdict_of(f), False) for f in mix.fast])
    slow_cells = np.broadcast_to(~fast, (min(chunk, trials), cells))
    plans = {d.name: d.plans(tasks) for d in designs}
    eq_only = {d.name: d.equivalence_only(tasks) for d in designs}
    maxima = {d.name: d.max_repeats(tasks) for d in designs}
    runs_all = {d.name: fast | (not d.screening) for d in designs}  # (C,) the cells that run the design's looks
    # every repeat count any design looks at, per task (the first look, one repeat, is where a screened cell stops)
    points = [sorted({1}.union(*(plans[d.name][k] for d in designs))) for k in range(len(tasks))]
    rng = np.random.default_rng(seed)
    acc = {d.name: ([], []) for d in designs}
    result = Result(tasks, mix, designs, {}, {}, alpha=alpha)
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        n_check = max(0, min(size, check - done))
        refs, looks_data = [], []
        per_design = {d.name: [] for d in designs}  # per task: (p, eq, alpha, reached, first worse look's repeats)
        for k, task in enumerate(tasks):
            p = task.draw_p(rng, size)
            ref = rng.binomial(task.reference_repeats, p) / task.reference_repeats
            cell_p = np.clip(p[:, None, :] * _factors(task, mix, drop, broken_factor)[None, :, None], 0.0, 1.0)
            counts, before, evid, p_above, kept = np.zeros(cell_p.shape), 0, {}, {}, {}
            for point in points[k]:  # nested repeats: each point adds its repeats to the ones before
                counts = counts + rng.binomial(point - before, cell_p)
                before = point
                data = counts / point
                evid[point] = Evidence.of(ref, data)
                p_above[point] = evid[point].p_above(margin)
                if point == 1:
                    first = data
                if n_check:
                    kept[point] = data[:n_check]
            refs.append(ref[:n_check])
            looks_data.append(kept)
            eq = Equivalence(evid, margin, calibrate)
            screens: dict[int | None, tuple] = {}
            for d in designs:
                looks, only = plans[d.name][k], eq_only[d.name][k]
                levels = quality_levels(alpha, looks, family, only)
                finals = np.array([final_levels(alpha, looks, r, family, only).worse for r in looks])
                stop = np.zeros((len(looks), size, cells), bool)
                worse_at = np.zeros((len(looks), size, cells), bool)
                running = np.broadcast_to(runs_all[d.name][None, :], (size, cells)).copy()
                for j, lv in enumerate(levels[:-1]):  # the last look is the final analysis, not a stopping look
                    worse_at[j] = p_above[looks[j]] < lv.worse / max(1, family)
                    stop[j] = worse_at[j] | (eq.at(looks[j], lv.equivalent, running & ~worse_at[j]) & running)
                    running &= ~stop[j]
                first_stop = np.where(stop.any(axis=0), np.argmax(stop, axis=0), len(looks) - 1)
                # a task finds the cell worse only where its first stop is a worse (an equivalent stop ends it first)
                stopped_worse = np.take_along_axis(worse_at, first_stop[None], axis=0)[0]
                first_worse = np.where(stopped_worse, first_stop, len(looks))
                # a screened cell's evidence: one repeat, which for a task it runs once is a batch of documents
                sub = task.screened_docs(screen_documents, maxima[d.name][k])
                if sub not in screens:  # a slow cell's: the same cells in every design that screens
                    sub_evid = evid[1] if sub is None else Evidence.of(ref[:, :sub], first[..., :sub])
                    screens[sub] = (sub_evid.p_above(margin),
                                    Equivalence({1: sub_evid}, margin, calibrate).at(1, alpha, slow_cells[:size]),
                                    1.0 if sub is None else sub / task.docs)
                per_design[d.name].append((looks, finals, first_stop, first_worse, screens[sub],
                                           [p_above[r] for r in looks], (eq, [lv.equivalent for lv in levels])))
        for d in designs:
            tasks_of = per_design[d.name]
            cut_round = np.full((size, cells), np.inf)
            if d.cell_stop:  # a cell is worse once any task is: its other tasks stop at the look that found it
                for looks, _, _, first_worse, *_ in tasks_of:
                    rounds = np.where(first_worse < len(looks), np.asarray(looks)[np.minimum(first_worse,
                                                                                             len(looks) - 1)], np.inf)
                    cut_round = np.minimum(cut_round, rounds)
            ps, eqs, alphas, reached = [], [], [], []
            full = runs_all[d.name][None, :]
            for looks, finals, first_stop, _, screen, p_looks, (eq, eq_levels) in tasks_of:
                looks_arr = np.asarray(looks)
                # the look each task ends at: its first stop, the cell's worse round, or the last look
                cut = np.searchsorted(looks_arr, np.minimum(cut_round, looks_arr[-1]))
                idx = np.where(full, np.minimum(first_stop, cut), 0)
                pick = lambda arrays: np.take_along_axis(np.stack(arrays), idx[None], axis=0)[0]  # noqa: E731
                ps.append(np.where(full, pick(p_looks), screen[0]))
                # decide()'s interval at final_levels = the look's levels: the same test, asked only where the task
                # ended at that look; a screened cell is a fixed design of its first look, at the full alpha
                ended = np.zeros((size, cells), bool)
                for j, (r, level) in enumerate(zip(looks, eq_levels)):
                    here = full & (idx == j)
                    if np.any(here):
                        ended |= eq.at(r, level, here) & here
                eqs.append(np.where(full, ended, screen[1]))
                alphas.append(np.where(full, finals[idx], alpha))
                reached.append(np.where(full, looks_arr[idx], screen[2]))  # repeats, or a share of one
            p = np.stack(ps, axis=-1).reshape(size, family)
            level = np.stack(alphas, axis=-1).reshape(size, family)
            worse = (holm_adjusted(p) < level).reshape(size, cells, len(tasks))
            acc[d.name][0].append(np.where(worse, WORSE, np.where(np.stack(eqs, axis=-1), EQUIVALENT, INCONCLUSIVE)))
            acc[d.name][1].append(np.stack(reached, axis=-1))
        for i in range(n_check):
            _check(result, tasks, mix, refs, looks_data, i, margin, alpha, designs,
                   {d.name: acc[d.name][0][-1][i] for d in designs}, {d.name: acc[d.name][1][-1][i] for d in designs},
                   done + i, screen_documents, calibrate)
        done += size
    result.outcomes = {d.name: np.concatenate(acc[d.name][0]) for d in designs}
    result.reached_by = {d.name: np.concatenate(acc[d.name][1]) for d in designs}
    return result


def decide_with_package(tasks: Sequence[Task], mix: Mix, refs: Sequence[np.ndarray],
                        looks_data: Sequence[dict[int, np.ndarray]], margin: float, alpha: float,
                        design: Design = PACKAGE, screen_documents: float = SCREEN_DOCUMENTS, calibrate: bool = False
                        ) -> tuple[np.ndarray, np.ndarray, list]:
    """One run of one design decided by the package's own functions, look by look. refs[k] (n,); looks_data[k][R]
    (C, n): each cell's mean per document after R repeats. (outcomes (C, K), repeats reached (C, K), cell outcomes).
    `calibrate`: the package's evidence as it decides (the calibrated equivalence test); without, the t alone
    (`paired_evidence(..., calibrate=False)`), the replica's fast mode."""
    cells, family = mix.cells, mix.cells * len(tasks)
    plans_all, maxima = design.plans(tasks), design.max_repeats(tasks)
    evidence_of, alphas = {}, {}
    reached = np.zeros((cells, len(tasks)))
    for c in range(cells):
        runs_all = not (design.screening and screened(verdict_of(mix.fast[c]), full_quality=False))
        # as the quality phase does it, repeat by repeat: a task looks at its own looks and stops when settled;
        # with cell_stop, once one is worse every other task of the cell stops at its next look; a screened cell
        # is a fixed design of its first look
        plans = {k: list(plans_all[k]) if runs_all else [1] for k in range(len(tasks))}
        only = {k: design.equivalence_only(tasks)[k] if runs_all else [] for k in range(len(tasks))}
        end = {k: v[-1] for k, v in plans.items()}
        chosen: dict[int, tuple] = {}
        for done in sorted({r for v in plans.values() for r in v}):
            found_worse = False
            for k, task in enumerate(tasks):
                if done not in plans[k] or done > end[k]:
                    continue
                # a screened cell of a task it runs once answers the first documents of the seeded order
                kept = None if runs_all else task.screened_docs(screen_documents, maxima[k])
                evidence = paired_evidence(refs[k][:kept], looks_data[k][done][c][:kept], calibrate=calibrate)
                chosen[k] = (evidence, done, 1.0 if kept is None else kept / task.docs)
                if done == end[k]:
                    continue
                levels = quality_levels(alpha, plans[k], family, only[k])
                stop = decide_look(evidence, margin, levels[plans[k].index(done)], family_size=family).stop
                if stop is not None:
                    end[k] = done
                    found_worse |= stop == "worse"
            if found_worse and design.cell_stop:
                for k in plans:
                    if end[k] > done:
                        end[k] = next(r for r in plans[k] if r >= done)
        for k, task in enumerate(tasks):
            evidence, look, share = chosen[k]
            reached[c, k] = look * share
            evidence_of[(c, task.name)] = (evidence, margin)
            alphas[(c, task.name)] = final_levels(alpha, plans[k], look, family, only[k])
    decisions = decide_family(evidence_of, alpha, alphas)
    out = np.array([[CODE[decisions[(c, t.name)].outcome] for t in tasks] for c in range(cells)])
    cell_level = [cell_outcome(decisions[(c, t.name)].outcome for t in tasks) for c in range(cells)]
    return out, reached, cell_level


def _check(result: Result, tasks, mix, refs, looks_data, i, margin, alpha, designs: Sequence[Design],
           outcomes: dict[str, np.ndarray], reached: dict[str, np.ndarray], run: int, screen_documents: float,
           calibrate: bool) -> None:
    """Run i of the chunk decided by the package for every design; a run agrees when every design's does."""
    wrong = []
    for d in designs:
        o, r, cl = decide_with_package(tasks, mix, [x[i] for x in refs], [{k: v[i] for k, v in x.items()}
                                                                             for x in looks_data],
                                       margin, alpha, d, screen_documents, calibrate)
        same = (np.array_equal(o, outcomes[d.name]) and np.array_equal(r, reached[d.name])
                and [CODE[x] for x in cl] == Result.cell_level(outcomes[d.name][None])[0].tolist())
        if not same:
            wrong.append(f"{d.name}: {int(np.sum(o != outcomes[d.name]))} outcomes, "
                         f"{int(np.sum(r != reached[d.name]))} repeats reached differ")
    result.checked += 1
    result.agreed += not wrong
    if wrong:
        result.disagreements.append(f"run {run}: " + "; ".join(wrong))


# --------------------------------------------------------------------------------------------------------- report

CHECK_FAILURES: list[str] = []


def _seed(seed: int, label: str) -> list[int]:
    return [seed, zlib.crc32(label.encode())]


def _rate(hits: np.ndarray) -> tuple[float, float]:
    """Mean of a (T, ...) 0/1 array and its standard error over runs (cells of a run are not independent)."""
    if hits.size == 0:
        return float("nan"), float("nan")
    per_run = hits.reshape(hits.shape[0], -1).mean(axis=1)
    return float(per_run.mean()), float(per_run.std(ddof=1) / math.sqrt(len(per_run))) if len(per_run) > 1 else 0.0


def _pct(hits: np.ndarray) -> str:
    rate, se = _rate(hits)
    return "n/a" if math.isnan(rate) else f"{rate:6.2%} +-{se:.2%}"


def _diff(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Paired difference of two rates on the same runs (a - b) and its standard error."""
    if a.size == 0:
        return float("nan"), float("nan")
    d = (a.reshape(a.shape[0], -1).mean(axis=1) - b.reshape(b.shape[0], -1).mean(axis=1))
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else 0.0


def _verdict(ok: bool, what: str) -> str:
    return f"  [{'met' if ok else 'NOT MET'}] {what}"


def _note(result: Result, label: str) -> None:
    if result.checked and result.agreed != result.checked:
        CHECK_FAILURES.append(f"{label}: {result.checked - result.agreed} of {result.checked} runs decided "
                              "differently by the package's functions: " + "; ".join(result.disagreements[:3]))


def _mtok(x: float) -> str:
    return f"{x / 1e6:,.1f}M"


def per_task_power(res: Result, name: str) -> np.ndarray:
    """(K,) each task of a fast dropped cell called worse on its own, by task (the per-task power)."""
    dm = np.array(res.mix.fast) & res.mix.mask(DROPPED)
    return np.mean(res.outcomes[name][:, dm, :] == WORSE, axis=(0, 1))


def _repeats(design: Design, tasks: Sequence[Task]) -> str:
    reps = design.max_repeats(tasks)
    total = sum(t.docs * t.tokens * r for t, r in zip(tasks, reps))
    base = sum(t.docs * t.tokens * t.cell_repeats for t in tasks)
    return "/".join(str(r) for r in reps) + f" (x{total / base:.2f})"


def report_mixed(res: Result, label: str = "") -> dict:
    """Every design's tokens, per-task and cell power, false alarms and what it leaves open, on the same draws.
    Returns rows by design name, and the first two designs' as 'fixed' and 'seq' (with 'ratio', the second's)."""
    mix, T, tasks = res.mix, res.trials, res.tasks
    fast = np.array(mix.fast)
    unchanged, dm = mix.mask(UNCHANGED), fast & mix.mask(DROPPED)
    fixed_tok = res.fixed_tokens()
    print(f"  generated tokens per run of the fixed design {_mtok(fixed_tok)} (the reference "
          f"{_mtok(res.reference_tokens())}, each cell {_mtok((fixed_tok - res.reference_tokens()) / mix.cells)})")
    rows = {}
    names = [d.name for d in res.designs]
    width = max(len(n) for n in names) + 2
    first = res.designs[0].name
    print(f"\n  {'design':{width}}max repeats (x fixed)    tokens, % of fixed (runs)  per-task power, fast dropped "
          f"cells ({', '.join(t.name for t in tasks)}); mean, vs {first}")
    for d in res.designs:
        tok = res.tokens(d.name)
        ratio = tok / fixed_tok
        out, cell = res.outcomes[d.name], Result.cell_level(res.outcomes[d.name])
        fa = cell[:, unchanged] == WORSE
        row = dict(
            name=d.name, design=d, ratio=float(ratio.mean()), ratio_runs=ratio[:, None], ratio_min=float(ratio.min()),
            ratio_max=float(ratio.max()), tokens=float(tok.mean()), repeats=d.max_repeats(tasks),
            repeats_text=_repeats(d, tasks),
            fa=fa, any_fa=np.any(fa, axis=1)[:, None],
            power_fast=cell[:, dm] == WORSE,
            power_all=cell[:, mix.mask(DROPPED)] == WORSE,
            power_task_fast=out[:, dm, :] == WORSE,
            power_by_task=per_task_power(res, d.name) if dm.any() else np.full(len(tasks), np.nan),
            eq_fast=cell[:, fast & unchanged] == EQUIVALENT,
            eq_all=cell[:, unchanged] == EQUIVALENT,
            inc_all=out == INCONCLUSIVE,
            inc_fast=out[:, fast, :] == INCONCLUSIVE,
            broken_fast=cell[:, fast & mix.mask(BROKEN)] == WORSE,
            broken_slow=cell[:, ~fast & mix.mask(BROKEN)] == WORSE,
            unchanged_fast_tokens=np.sum(res.reached_by[d.name][:, fast & unchanged, :] * res._per(), axis=(1, 2)),
            unchanged_fast_cells=int(np.sum(fast & unchanged)),
        )
        rows[d.name] = row
        p, _ = _rate(row["power_task_fast"])
        diff = ""
        if d.name != first and dm.any():
            dd, se = _diff(row["power_task_fast"], rows[first]["power_task_fast"])
            diff = f", {dd * 100:+.1f} +-{se * 100:.1f} points"
        by_task = " ".join(f"{x:.1%}" for x in row["power_by_task"])
        print(f"  {d.name:{width}}{_repeats(d, tasks):25}{row['ratio']:6.1%} ({row['ratio_min']:.1%}-"
              f"{row['ratio_max']:.1%})  {by_task}; {p:.1%}{diff}")
    print(f"\n  {'design':{width}}cell power: fast; all  unchanged called worse: per cell; runs with any  unchanged "
          "called equivalent: fast; all  inconclusive: all; fast  broken called worse: fast; slow")
    for name, row in rows.items():
        def r(key: str, spec: str = "7.2%") -> str:
            v = _rate(row[key])[0]
            return f"{'n/a':>{spec.split('.')[0]}}" if math.isnan(v) else format(v, spec)
        print(f"  {name:{width}}{r('power_fast')}; {r('power_all')}  {r('fa')}; {r('any_fa')}{'':22}{r('eq_fast')}; "
              f"{r('eq_all')}{'':10}{r('inc_all', '6.2%')}; {r('inc_fast', '6.2%')}  {r('broken_fast', '.0%')}; "
              f"{r('broken_slow', '.0%')}")
    print("\n  tokens as shares of the fixed design's, by kind of cell (the reference "
          f"{res.reference_tokens() / fixed_tok:.1%} in every design):")
    for d in res.designs[1:]:
        parts = []
        for kind in (UNCHANGED, BROKEN, DROPPED):
            for f in (True, False):
                m = mix.mask(kind, f)
                if m.any():
                    parts.append(f"{kind} {'fast' if f else 'slow'} {res.cell_tokens(m, d.name) / fixed_tok:.1%}")
        reach = ", ".join(f"{t.name} {res.reached_by[d.name][:, fast & unchanged, k].mean():.1f}"
                          for k, t in enumerate(tasks)) if (fast & unchanged).any() else "n/a"
        print(f"    {d.name}: " + ", ".join(parts) + f"; mean repeats reached by a fast unchanged cell: {reach}")
    second = rows[names[1]] if len(names) > 1 else rows[first]
    return dict(designs=rows, fixed=rows[first], seq=second, ratio=second["ratio"], ratio_max=second["ratio_max"],
                trials=T, label=label)


def report_null(res: Result) -> dict:
    out = {}
    fast = np.array(res.mix.fast)
    for d in res.designs:
        cell = Result.cell_level(res.outcomes[d.name])
        fa = cell == WORSE
        ratio = res.tokens(d.name) / res.fixed_tokens()
        out[d.name] = dict(any=np.any(fa, axis=1)[:, None], cell=fa, ratio=float(ratio.mean()))
        print(f"  {d.name}: runs with any cell called worse {_pct(out[d.name]['any'])} "
              f"({int(np.sum(out[d.name]['any']))} of {res.trials}); per cell {_pct(fa)}; fast cells called "
              f"equivalent {_pct(cell[:, fast] == EQUIVALENT)}; tokens {ratio.mean():.1%} of the fixed design's")
    return out


def report_boundary(res: Result) -> dict:
    fast = np.array(res.mix.fast)
    out = {}
    for d in res.designs:
        outcome = res.outcomes[d.name]
        cell = Result.cell_level(outcome)
        out[d.name] = dict(cell=cell[:, fast] == WORSE, any=np.any(cell == WORSE, axis=1)[:, None],
                           equivalent=outcome[:, fast, :] == EQUIVALENT)
        print(f"  {d.name}: fast cells called worse {_pct(out[d.name]['cell'])}; slow cells "
              f"{_pct(cell[:, ~fast] == WORSE)}; runs with any cell called worse {_pct(out[d.name]['any'])}; "
              f"fast cells' tasks called equivalent {_pct(outcome[:, fast, :] == EQUIVALENT)}")
    return out


def report_near(res: Result) -> dict:
    """Every cell truly worse by half the margin: how often each task of a fast cell is called equivalent (the
    equivalence test's power where it matters: a cell a little worse that should still ship)."""
    fast = np.array(res.mix.fast)
    out = {}
    for d in res.designs:
        outcome = res.outcomes[d.name][:, fast, :] == EQUIVALENT
        out[d.name] = dict(by_task=[outcome[:, :, k] for k in range(len(res.tasks))])
        tokens = res.tokens(d.name) / res.fixed_tokens()
        print(f"  {d.name}: fast cells' tasks called equivalent " + ", ".join(
            f"{t.name} {_pct(outcome[:, :, k])}" for k, t in enumerate(res.tasks))
            + f"; tokens {tokens.mean():.1%} of the fixed design's")
    return out


# ------------------------------------------------------------------------------------------ the equal-power search

def per_task_equivalence(res: Result, name: str) -> np.ndarray:
    """(K,) each task of a fast cell called equivalent, by task (the equivalence power where every cell is truly a
    little worse than the reference: the near-the-margin scenario)."""
    fast = np.array(res.mix.fast)
    return np.mean(res.outcomes[name][:, fast, :] == EQUIVALENT, axis=(0, 1))


def all_dropped(mix: Mix) -> Mix:
    """Every cell truly worse by the scenario's drop (the margin at the boundary, half of it near the margin),
    with `mix`'s fast / slow split."""
    return Mix(tuple(DROPPED for _ in mix.kinds), mix.fast)


def search_equal_power(tasks: Sequence[Task], mix: Mix, *, bases: Sequence[Design] = BASES,
                       offsets: Sequence[int] = OFFSETS, near: bool = True,
                       **simulate_kw) -> tuple[list[Design], dict]:
    """Each base design's smallest maximum repeats per task, Rc + j for j in `offsets`, at which BOTH tests have at
    least the fixed design's per-task power on the same draws (nested repeats: every candidate shares the fixed
    design's first Rc repeats): the worse test's (each task of a fast cell with a true drop called worse on its own,
    on `mix`) and, with `near`, the equivalence test's (each task of a fast cell truly worse by half the margin
    called equivalent, on draws of their own: `all_dropped`). Looks spend the worse test's alpha early, and an
    equivalence-only look the equivalence test's, so each may need its own repeats. Returns the chosen designs (the
    bases' names) and what the search saw: {base: {task: [(repeats, power, equivalence power or nan), ...]},
    'fixed': powers, 'fixed_equivalence': ..., 'result': the mixed draws' Result, 'near': the near draws'}."""
    tasks = list(tasks)
    if not (np.array(mix.fast) & mix.mask(DROPPED)).any():
        print("  (no fast dropped cell: nothing to match the per-task power on; the designs keep the fixed repeats)")
        return list(bases), {}
    cand = {b.name: [replace(b, name=f"{b.name} +{j}", repeats=tuple(t.cell_repeats + j for t in tasks))
                     for j in offsets] for b in bases}
    designs = [FIXED] + [d for v in cand.values() for d in v]
    res = simulate(tasks, mix, designs=designs, **simulate_kw)
    fixed = per_task_power(res, FIXED.name)
    if float(np.mean(fixed)) < MIN_POWER:
        print(f"  (the fixed design's per-task power is {np.mean(fixed):.1%}: below {MIN_POWER:.0%} there is no "
              "power to match, only noise; the designs keep the fixed repeats)")
        return list(bases), {"result": res}
    near_res, fixed_eq = None, np.full(len(tasks), np.nan)
    if near:
        near_kw = {**simulate_kw, "drop": simulate_kw["margin"] / 2, "check": 0,
                   "seed": [*np.atleast_1d(simulate_kw["seed"]).tolist(), 2]}
        near_res = simulate(tasks, all_dropped(mix), designs=designs, **near_kw)
        fixed_eq = per_task_equivalence(near_res, FIXED.name)
    chosen, seen, short = [], {"fixed": fixed, "fixed_equivalence": fixed_eq}, {}
    for b in bases:
        powers = np.array([per_task_power(res, d.name) for d in cand[b.name]])  # (J, K)
        eqs = (np.array([per_task_equivalence(near_res, d.name) for d in cand[b.name]]) if near
               else np.full(powers.shape, np.nan))
        reps, table = [], {}
        for k, t in enumerate(tasks):
            reach = powers[:, k] >= fixed[k] - 1e-12
            if near:
                reach &= eqs[:, k] >= fixed_eq[k] - 1e-12
            ok = np.nonzero(reach)[0]
            j = int(ok[0]) if ok.size else len(offsets) - 1
            if not ok.size:
                short[(b.name, t.name)] = (float(powers[j, k]), float(eqs[j, k]))
            reps.append(t.cell_repeats + offsets[j])
            table[t.name] = [(t.cell_repeats + offsets[i], float(powers[i, k]), float(eqs[i, k]))
                             for i in range(j + 1)]
        seen[b.name] = table
        chosen.append(replace(b, repeats=tuple(reps)))
    seen["short"], seen["result"], seen["near"] = short, res, near_res
    return chosen, seen


SEARCH_KEYS = ("fixed", "fixed_equivalence", "short", "result", "near")


def print_search(seen: dict, tasks: Sequence[Task], trials: int, seconds: float) -> None:
    if "fixed" not in seen:
        return
    eq = np.isfinite(seen["fixed_equivalence"]).all()
    near = " (and as many near the margin)" if eq else ""
    print(f"  equal-power search, {trials} simulated runs on the same draws{near} ({seconds:.0f} s): each design's "
          "smallest maximum repeats per task whose per-task power (fast dropped cells called worse) " + ("and equivalence power (fast cells truly worse by half the margin called "
                                    "equivalent) are" if eq else "is")
          + " at least the fixed design's: " + ", ".join(f"{t.name} {p:.1%}" for t, p in zip(tasks, seen["fixed"]))
          + ("; equivalence " + ", ".join(f"{t.name} {p:.1%}" for t, p in zip(tasks, seen["fixed_equivalence"]))
             if eq else ""))
    for name, table in seen.items():
        if name in SEARCH_KEYS:
            continue
        print(f"    {name}: " + "; ".join(
            f"{task} " + ", ".join(f"{r}: {p:.1%}" + (f"/{e:.1%}" if eq else "") for r, p, e in steps)
            for task, steps in table.items()))
    for (name, task), (p, e) in seen["short"].items():
        print(f"    NOT REACHED: {name} on {task} reaches only {p:.1%}" + (f" (equivalence {e:.1%})" if eq else "")
              + " at the largest repeats tried")


def done_when(measured: Sequence[dict], null: dict | None, boundary: dict | None, token_goal: float,
              points: float, near: dict | None = None) -> list[str]:
    """measured[0]: the stated mix (the headline); further ones (without broken cells) for tokens and power."""
    lines = equivalence_look_criterion(measured[0]["designs"], boundary, near, points)
    for m in measured:
        rows = m["designs"]
        f = rows[FIXED.name]
        both = rows.get(DEFAULT_DESIGN.name)
        if both is not None:
            others = ", ".join(f"{n} {rows[n]['ratio']:.1%}" for n in (b.name for b in BASES)
                               if n in rows and n != DEFAULT_DESIGN.name)
            lines.append(_verdict(both["ratio"] <= token_goal, f"{m['label']}: at equal per-task power, "
                                  f"{DEFAULT_DESIGN.name} (the package's default) uses at most {token_goal:.0%} of "
                                  f"the fixed design's generated tokens: {both['ratio']:.1%} (highest run "
                                  f"{both['ratio_max']:.1%}); {others}"))
        for base in BASES:
            row = rows.get(base.name)
            if row is None or not np.isfinite(row["power_by_task"]).all():
                continue
            d, se = _diff(row["power_task_fast"], f["power_task_fast"])
            short = float(np.max(f["power_by_task"] - row["power_by_task"]))
            # whole repeats: the smallest that reach the fixed design's power can overshoot it by a point or two,
            # which only makes the design's token share a little larger than at exactly equal power
            over = (f"; above it by more than {points:.0%}: the whole repeat that reaches it, so the tokens are at "
                    "that higher power" if d > points else "")
            lines.append(_verdict(d >= -points and short <= 2 * points, f"{m['label']}: {base.name}'s per-task "
                                  f"power not below the fixed design's by more than {points:.0%} (no task by more "
                                  f"than {2 * points:.0%}): {_rate(row['power_task_fast'])[0]:.2%} against "
                                  f"{_rate(f['power_task_fast'])[0]:.2%} (difference {d:+.2%} +-{se:.2%}; the "
                                  f"task furthest below {short:+.2%}) at max repeats {row['repeats_text']}{over}"))
    rows = measured[0]["designs"]
    f = rows[FIXED.name]
    if near is not None:
        for base in BASES:
            if base.name in near:
                lines.append(_near_line(near, base.name, FIXED.name, f"{base.name}'s equivalence power near the "
                                        "margin", points))
    compared = [n for n in (SCREENING_ALONE.name, LOOKS_ALONE.name, BOTH.name, BOTH_LOOK.name) if n in rows]
    if not compared:  # a run of other designs: the second one
        compared = [n for n in rows if n != FIXED.name][:1]
    for n in compared:
        s = rows[n]
        d, se = _diff(s["fa"], f["fa"])
        lines.append(_verdict(abs(d) <= points, f"{n}: false-alarm rate per unchanged cell within {points:.0%} of the "
                              f"fixed design's: fixed {_rate(f['fa'])[0]:.2%}, {n} {_rate(s['fa'])[0]:.2%} "
                              f"(difference {d:+.2%} +-{se:.2%})"))
        if null is not None and n in null:
            d2, se2 = _diff(null[n]["any"], null[FIXED.name]["any"])
            lines.append(_verdict(abs(d2) <= points, f"{n}: whole-run false-alarm rate (nothing changed) within "
                                  f"{points:.0%}: fixed {_rate(null[FIXED.name]['any'])[0]:.2%}, {n} "
                                  f"{_rate(null[n]['any'])[0]:.2%} (difference {d2:+.2%} +-{se2:.2%})"))
        if boundary is not None and n in boundary:
            b, bf = boundary[n], boundary[FIXED.name]
            d3, se3 = _diff(b["cell"], bf["cell"])
            lines.append(_verdict(abs(d3) <= points or d3 < 0, f"{n}: false alarms at the least favourable null "
                                  f"(every cell truly worse by exactly the margin; fast cells) within {points:.0%}: "
                                  f"fixed {_rate(bf['cell'])[0]:.2%}, {n} {_rate(b['cell'])[0]:.2%} per cell "
                                  f"(difference {d3:+.2%} +-{se3:.2%}); runs with any: fixed "
                                  f"{_rate(bf['any'])[0]:.2%}, {n} {_rate(b['any'])[0]:.2%}"))
        d, se = _diff(s["power_fast"], f["power_fast"])
        lines.append(_verdict(abs(d) <= points or d > 0, f"{n}: power on the FAST cells (a cell is worse when any task "
                              f"is) within {points:.0%} of the fixed design's: fixed {_rate(f['power_fast'])[0]:.2%}, "
                              f"{n} {_rate(s['power_fast'])[0]:.2%} (difference {d:+.2%} +-{se:.2%})"))
    if AT_FIXED in rows:
        row = rows[AT_FIXED]
        d, se = _diff(row["power_task_fast"], f["power_task_fast"])
        lines.append(f"  [info] {AT_FIXED} (x1.00): {row['ratio']:.1%} of the fixed design's tokens at per-task power "
                     f"{_rate(row['power_task_fast'])[0]:.2%} ({d:+.2%} +-{se:.2%} against the fixed design's): what "
                     "the raised repeats buy back")
    for n, row in rows.items():
        if row["design"].cell_stop:
            lines.append(f"  [info] {n}: {row['ratio']:.1%} of the fixed design's tokens; per-task power "
                         f"{_rate(row['power_task_fast'])[0]:.2%}, cell power on fast cells "
                         f"{_rate(row['power_fast'])[0]:.2%}: once one task of a cell is worse its other tasks stop "
                         "at their next look, which saves tokens at no cost to the cell's call and lowers the "
                         "per-task power (not compared at equal per-task power)")
    return lines


def equivalence_look_criterion(rows: dict, boundary: dict | None, near: dict | None, points: float) -> list[str]:
    """Whether the equivalence test's own look at three quarters earns its place in the default plan (issue 37),
    judged as every design here is, at equal per-task power of BOTH tests against the fixed design: on the same
    draws, each design at the repeats its equal-power search chose, the look must cut the tokens, keep the per-task
    worse power, keep the false "equivalent" at the margin at most the fixed design's + the tolerance, and keep each
    task's equivalence power near the margin (every cell truly worse by half of it) at least the fixed design's
    within the tolerance. The criterion first stated (2026-12-05) compared the equivalence power with looks + screening
    WITHOUT the look at the same repeats, which the look loses by about half a point to a point (its alpha comes out
    of the equivalence test's last look, 0.044 -> 0.040): a design whose repeats were raised for the worse test's power
    has equivalence power to spare over the fixed design's. That comparison is printed as information."""
    if BOTH.name not in rows or BOTH_LOOK.name not in rows:
        return []
    a, b = rows[BOTH_LOOK.name], rows[BOTH.name]
    what = f"{BOTH_LOOK.name} (at {a['repeats_text']}, against {b['repeats_text']} without it)"
    lines = []
    d, se = _diff(a["ratio_runs"], b["ratio_runs"])
    lines.append(_verdict(d + 2 * se < 0, f"{what} cuts the tokens at equal power of both tests: {a['ratio']:.1%} of "
                          f"the fixed design's against {b['ratio']:.1%} ({d * 100:+.2f} +-{se * 100:.2f} points)"))
    d, se = _diff(a["power_task_fast"], b["power_task_fast"])
    lines.append(_verdict(d >= -points, f"{what} keeps the per-task worse power: "
                          f"{_rate(a['power_task_fast'])[0]:.2%} against {_rate(b['power_task_fast'])[0]:.2%} "
                          f"({d:+.2%} +-{se:.2%})"))
    if boundary is not None and BOTH_LOOK.name in boundary:
        fixed, eq = boundary[FIXED.name]["equivalent"], boundary[BOTH_LOOK.name]["equivalent"]
        without = _rate(boundary[BOTH.name]["equivalent"])[0]
        lines.append(_verdict(_rate(eq)[0] <= _rate(fixed)[0] + points, f"with {what}, a task truly worse by the "
                              f"margin is called equivalent {_rate(eq)[0]:.2%} of the time (the fixed design "
                              f"{_rate(fixed)[0]:.2%}; without the look {without:.2%})"))
    if near is not None and BOTH_LOOK.name in near:
        lines.append(_near_line(near, BOTH_LOOK.name, FIXED.name, f"with {what}", points))
        lines.append("  [info] " + _near_compare(near, BOTH_LOOK.name, BOTH.name, "against the design without the "
                                                 "look (the criterion first stated)", 0.0)[1])
    if WITH_EQUIVALENCE_LOOK in rows:  # the same repeats: what a matrix that keeps its repeats trades
        c = rows[WITH_EQUIVALENCE_LOOK]
        d, se = _diff(c["ratio_runs"], b["ratio_runs"])
        info = (f"  [info] {WITH_EQUIVALENCE_LOOK} (the same repeats as without it): {c['ratio']:.1%} of the fixed "
                f"design's tokens ({d * 100:+.2f} +-{se * 100:.2f} points)")
        if near is not None and WITH_EQUIVALENCE_LOOK in near:
            info += "; " + _near_compare(near, WITH_EQUIVALENCE_LOOK, BOTH.name, "near the margin", 0.0)[1]
        lines.append(info)
    return lines


def _near_compare(near: dict, name: str, against: str, what: str, points: float) -> tuple[bool, str]:
    """Each task's equivalence power near the margin against another design's on the same draws: met where no task
    is below it by more than `points` beyond two standard errors of the paired difference."""
    parts, ok = [], True
    for x, y in zip(near[name]["by_task"], near[against]["by_task"]):
        d, se = _diff(x, y)
        ok &= d >= -points - 2 * se
        parts.append(f"{_rate(x)[0]:.1%} against {_rate(y)[0]:.1%} ({d:+.1%} +-{se:.1%})")
    within = f"by more than {points:.0%} " if points else ""
    return ok, (f"{what}, a task truly worse by half the margin is called equivalent no less often than {against} "
                f"{within}(per task, beyond two standard errors): " + "; ".join(parts))


def _near_line(near: dict, name: str, against: str, what: str, points: float) -> str:
    return _verdict(*_near_compare(near, name, against, what, points))


# ---------------------------------------------------------------------------------------------------------- setup

def parse_tasks(spec: str, consistency: float) -> list[tuple[str, int, float, float]]:
    out = []
    for part in spec.split(","):
        name, docs, acc, tok = part.split(":")
        out.append((name, int(docs), float(acc), float(tok)))
    return out


def sized_tasks(sizes, *, consistency: float, margin: float, alpha: float, cells: int,
                p: dict[str, np.ndarray] | None = None, cell_repeats: int | None = None) -> list[Task]:
    """Each task's repeats from repeats_for_task; `cell_repeats` fixes the cells' (a matrix's `repeats`, the demo's
    1), the reference keeping its sized ones."""
    tasks = []
    for name, docs, acc, tok in sizes:
        rho = consistency if not isinstance(consistency, dict) else consistency[name]
        reps = sizing.repeats_for_task(acc, rho, docs, margin, alpha=alpha, cells=cells, tasks=len(sizes))
        if reps is None:
            print(f"  {name}: repeats_for_task finds no repeats (the documents' own spread of the drop is the "
                  "floor); left out")
            continue
        tasks.append(Task(name, docs, acc, rho, tok, cell_repeats or reps[0], reps[1], None if p is None else p[name]))
    return tasks


def print_tasks(tasks: Sequence[Task], cells: int, alpha: float) -> None:
    family = cells * len(tasks)
    for t in tasks:
        levels = quality_levels(alpha, t.looks, family, t.equivalence_only)
        print(f"  {t.name}: {t.docs} docs at {t.accuracy:.3f}, consistency {t.consistency:.2f}, {t.tokens:,.0f} "
              f"tokens per answer (assumed); repeats_for_task (cell, reference) ({t.cell_repeats}, "
              f"{t.reference_repeats}); looks {t.looks} (equivalence only {t.equivalence_only}), levels worse "
              "(x family) "
              + ", ".join(f"{v.worse:.2g}" for v in levels) + "; equivalent "
              + ", ".join(f"{v.equivalent:.2g}" for v in levels))


def equal_power_designs(chosen: Sequence[Design]) -> list[Design]:
    """The designs a regime measures: the fixed one, the three at equal per-task power, the last with the runner's
    cell stop (same repeats), and the runner's design at the fixed repeats (the 2026-12-01 figure)."""
    both = next(d for d in chosen if d.name == BOTH.name)
    return [FIXED, *chosen, replace(both, name=WITH_EQUIVALENCE_LOOK, equivalence_look=True),
            replace(BOTH, name=AT_FIXED), replace(both, name=CELL_STOP, cell_stop=True), PACKAGE]


AT_FIXED = BOTH.name + ", fixed repeats"  # what the raised repeats buy: the same design at the fixed design's
CELL_STOP = BOTH.name + " + cell stop"
# the same repeats with the equivalence test's own look at three quarters: the option measured on the same draws
WITH_EQUIVALENCE_LOOK = BOTH.name + ", equivalence-only look at 3/4"


def measure(tasks: Sequence[Task], mix: Mix, *, what: str, label: str, seed: int, trials: int, search_trials: int,
            check: int, offsets: Sequence[int] = OFFSETS, **kw) -> tuple[dict, list[Design]]:
    """The equal-power search on its own draws, then every design measured on fresh ones (so the power reached is
    not the search's luck). Returns report_mixed's figures and the designs."""
    start = time.perf_counter()
    # the search decides equivalence by the t (calibrate=False; the calibrated test over 45 candidate designs would
    # take hours): the worse test is the t either way, and the equivalence power it matches is the t's, which the
    # calibrated test tracks (it is more conservative in every design alike); the designs are then measured as
    # configured (`calibrate`) on fresh draws, near the margin too, which says whether the power holds
    chosen, seen = search_equal_power(tasks, mix, offsets=offsets, trials=search_trials,
                                      seed=_seed(seed, f"{label}/{what}/search"), check=min(check, 1),
                                      **{**kw, "calibrate": False})
    if seen:
        _note(seen["result"], f"{label} {what} search")
    print_search(seen, tasks, search_trials, time.perf_counter() - start)
    if seen:
        print(f"  (the search's runs checked against the package, every candidate design: {seen['result'].agreed} of "
              f"{seen['result'].checked} runs decided alike)")
    designs = equal_power_designs(chosen)
    start = time.perf_counter()
    res = simulate(tasks, mix, designs=designs, trials=trials, seed=_seed(seed, f"{label}/{what}/mixed"), check=check,
                   **kw)
    _note(res, f"{label} {what}")
    print(f"\n  -- {what}: {trials} fresh simulated runs, every design on the same draws "
          f"({time.perf_counter() - start:.0f} s)")
    figures = report_mixed(res, label=what)
    print(f"  (checked against the package's decide_look / final_levels / decide_family, every design: {res.agreed} "
          f"of {res.checked} runs decided alike)")
    return figures, designs


def run_regime(tasks: list[Task], mixes: Sequence[tuple[str, Mix]], *, margin: float, alpha: float, drop: float,
               broken_factor: float, trials: int, null_trials: int, seed: int, check: int, label: str,
               token_goal: float, points: float, boundary_trials: int = 0, near_trials: int = 0,
               screen_documents: float = SCREEN_DOCUMENTS, search_trials: int = 2000,
               offsets: Sequence[int] = OFFSETS, calibrate: bool = False) -> bool:
    """mixes: (what, Mix), the first the headline (the null and boundary scenarios use its cells' fast / slow split
    and its designs, plus any other mix's designs whose repeats differ)."""
    kw = dict(margin=margin, alpha=alpha, drop=drop, broken_factor=broken_factor, screen_documents=screen_documents,
              calibrate=calibrate)
    print("\n  equivalence (a look's stop and the verdict) decided by " + (
        "the package's calibrated test (PairedEvidence.equivalent, analysis/nullboot.py), as the package decides it"
        if calibrate else "the t (and the score test), not the package's calibrated test: --calibrated for that"))
    first = mixes[0][1]
    print(f"\n  a broken cell answers with p_i x {broken_factor}; a dropped cell with p_i (1 - {drop:.3g} / accuracy) "
          f"(a true drop of {drop:.3g}) on every task; a slow cell is screened where the design screens "
          f"(screened(verdict, full_quality=False)): one repeat, which for a task it runs once is "
          f"{screen_documents:.0%} of the documents (quality.screen_documents); family {first.cells} x {len(tasks)} "
          f"= {first.cells * len(tasks)}")
    measured, headline = [], []
    for i, (what, mix) in enumerate(mixes):
        print(f"\n  == {what}: {mix.describe()}")
        figures, designs = measure(tasks, mix, what=what, label=label, seed=seed, trials=trials,
                                   search_trials=search_trials, check=check, offsets=offsets, **kw)
        measured.append(figures)
        if i == 0:
            headline = list(designs)
        else:
            for d in designs:
                same = next((h for h in headline if h.name == d.name), None)
                if same is not None and same.repeats != d.repeats:
                    headline.append(replace(d, name=f"{d.name} [{what}]"))
    null = boundary = None
    if null_trials:
        null_mix = Mix(tuple(UNCHANGED for _ in first.kinds), first.fast)
        start = time.perf_counter()
        nres = simulate(tasks, null_mix, designs=headline, trials=null_trials, seed=_seed(seed, f"{label}/null"),
                        check=check, **kw)
        _note(nres, f"{label} null")
        print(f"\n  -- null only: every one of {first.cells} cells unchanged (the same fast / slow split), "
              f"{null_trials} simulated runs ({time.perf_counter() - start:.0f} s)")
        null = report_null(nres)
        print(f"  (checked against the package: {nres.agreed} of {nres.checked} runs decided alike)")
    if boundary_trials:
        edge = all_dropped(first)
        start = time.perf_counter()
        bres = simulate(tasks, edge, designs=headline, trials=boundary_trials, seed=_seed(seed, f"{label}/boundary"),
                        check=min(check, 2), **{**kw, "drop": margin})
        _note(bres, f"{label} boundary")
        print(f"\n  -- the least favourable null: every one of {first.cells} cells truly worse by exactly the margin "
              f"({margin:.3g}) on every task (a 'worse' call is an error here), {boundary_trials} simulated runs "
              f"({time.perf_counter() - start:.0f} s)")
        boundary = report_boundary(bres)
        print(f"  (checked against the package: {bres.agreed} of {bres.checked} runs decided alike)")
    near = None
    if near_trials:
        edge = all_dropped(first)
        start = time.perf_counter()
        # equivalence power: the designs compared at equal power and the look at the same repeats (the calibrated
        # test is slow, and the cell stop rows differ only where a task is worse)
        near_designs = [d for d in headline if not d.cell_stop and not d.name.startswith(AT_FIXED)]
        nres = simulate(tasks, edge, designs=near_designs, trials=near_trials, seed=_seed(seed, f"{label}/near"),
                        check=min(check, 2), **{**kw, "drop": margin / 2})
        _note(nres, f"{label} near")
        print(f"\n  -- near the margin: every one of {first.cells} cells truly worse by half the margin "
              f"({margin / 2:.3g}) on every task (an 'equivalent' call is right here), {near_trials} simulated runs "
              f"({time.perf_counter() - start:.0f} s)")
        near = report_near(nres)
        print(f"  (checked against the package: {nres.agreed} of {nres.checked} runs decided alike)")
    print(f"\n  Done-when ({label}):")
    lines = done_when(measured, null, boundary, token_goal, points, near)
    print("\n".join(lines))
    return all("[NOT MET]" not in line for line in lines)


def from_run(args: argparse.Namespace) -> None:
    from evalharness.analysis.equivalence import margin_for
    from evalharness.analysis.pairing import side_scores
    from evalharness.records.io import load_run

    run_dir = Path(args.from_run)
    run = load_run(run_dir)
    reference = run.cells[run.reference]
    gate = run.meta.matrix.get("gate") or {}
    sizes, probs, rhos, margins, lines = [], {}, {}, set(), []
    for score in reference.quality:
        side = side_scores(run_dir, score)
        p = np.array(list(side.means.values()), dtype=float)
        if len(p) < 2:
            continue
        mu = float(p.mean())
        # the consistency (intra-class correlation) of the recorded repeats, by moments; greedy: 1
        r = side.repeats
        within = float(np.mean(p * (1 - p))) * r / (r - 1) if r > 1 else 0.0
        between = max(0.0, float(np.var(p)) - within / max(1, r))
        rho = 1.0 if mu in (0.0, 1.0) else float(np.clip(between / (mu * (1 - mu)), 0.01, 1.0))
        sizes.append((score.task, len(p), mu, args.from_run_tokens))
        probs[score.task], rhos[score.task] = p, rho
        margins.add(margin_for(score.task, gate))
        lines.append(f"  {score.task}: {len(p)} documents, {r} reference repeats, accuracy {mu:.3f}, documents "
                     f"whose repeats disagree {int(np.sum((p > 0) & (p < 1)))}, consistency {rho:.2f}")
    if not sizes:
        print(f"\n=== from run {run_dir}: no task to replay")
        return
    margin = max(margins)
    alpha = float(gate.get("alpha") or args.alpha)
    several = f" (the largest of {sorted(margins)})" if len(margins) > 1 else ""
    print(f"\n=== replay of {run_dir}: the reference {run.reference}'s per-document means are the p_i (fixed over "
          f"runs); the run's margin {margin}{several}, alpha {alpha}; {args.cells} cells (--cells), "
          f"{args.from_run_tokens:,.0f} tokens per answer on every task (assumed; the ratio does not depend on it)")
    print("\n".join(lines))
    tasks = sized_tasks(sizes, consistency=rhos, margin=margin, alpha=alpha, cells=args.cells, p=probs,
                        cell_repeats=args.cell_repeats)
    print_tasks(tasks, args.cells, alpha)
    run_regime(tasks, mixes_of(args), margin=margin, alpha=alpha, drop=args.drop_multiple * margin,
               broken_factor=args.broken_factor, trials=args.from_run_trials, null_trials=args.from_run_trials,
               seed=args.seed, check=args.check, label="from run", token_goal=args.token_goal, points=args.points,
               boundary_trials=args.from_run_trials, screen_documents=args.screen_documents,
               search_trials=args.from_run_trials)


def mixes_of(args: argparse.Namespace) -> list[tuple[str, Mix]]:
    """The stated mix, and the same without broken cells (unless there are none, or --no-without-broken)."""
    out = [("the stated mix", Mix.of(args.cells, args.broken_share, args.dropped_share, args.slow_share))]
    if args.broken_share > 0 and not args.no_without_broken:
        out.append(("without broken cells", Mix.of(args.cells, 0.0, args.dropped_share, args.slow_share)))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000, help="simulated runs of the mixed cells (default 4000)")
    parser.add_argument("--null-trials", type=int, default=4000, help="simulated runs with every cell unchanged")
    parser.add_argument("--boundary-trials", type=int, default=2000,
                        help="simulated runs with every cell truly worse by exactly the margin")
    parser.add_argument("--near-trials", type=int, default=2000,
                        help="simulated runs with every cell truly worse by half the margin (equivalence power)")
    parser.add_argument("--search-trials", type=int, default=2000,
                        help="simulated runs of the equal-power search (its own draws; default 2000)")
    parser.add_argument("--no-without-broken", action="store_true",
                        help="measure the stated mix only, not also the same mix without broken cells")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--check", type=int, default=6, help="runs per scenario also decided by the package")
    parser.add_argument("--tasks", default=SM120, help="name:docs:accuracy:tokens_per_answer,... (default sm120)")
    parser.add_argument("--consistency", type=float, default=0.5)
    parser.add_argument("--margin", type=float, default=0.02)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--cells", type=int, default=24, help="cells besides the reference")
    parser.add_argument("--broken-share", type=float, default=0.25)
    parser.add_argument("--dropped-share", type=float, default=0.25)
    parser.add_argument("--slow-share", type=float, default=0.5, help="share of each kind not faster (screened)")
    parser.add_argument("--cell-repeats", type=int, help="every cell answers every task this many times (a matrix's "
                        "`repeats`; 1: the demo's, where screening answers a share of the documents); default: "
                        "repeats_for_task's")
    parser.add_argument("--screen-documents", type=float, default=SCREEN_DOCUMENTS,
                        help="a screened cell's share of the documents of a task it runs once (quality."
                             f"screen_documents, default {SCREEN_DOCUMENTS}; 1: its whole first repeat)")
    parser.add_argument("--broken-factor", type=float, default=0.3, help="a broken cell's p_i multiplier")
    parser.add_argument("--drop-multiple", type=float, default=2.0, help="a dropped cell's true drop in margins")
    parser.add_argument("--token-goal", type=float, default=0.40)
    parser.add_argument("--points", type=float, default=0.01, help="tolerance of FA and power (default one point)")
    parser.add_argument("--from-run", metavar="DIR", help="also replay a run folder's reference per-document means")
    parser.add_argument("--from-run-trials", type=int, default=300)
    parser.add_argument("--from-run-tokens", type=float, default=1000.0)
    parser.add_argument("--calibrated", action="store_true",
                        help="decide equivalence (stops and verdicts) by the package's calibrated test, as the package "
                             "does (a few ms a comparison still running at a look: use a few hundred --trials)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    sizes = parse_tasks(args.tasks, args.consistency)
    print(f"=== regime: {args.cells} cells against one shared reference; "
          + ", ".join(f"{n} {d} docs at {a}" for n, d, a, _ in sizes)
          + f" (binary); consistency {args.consistency}; margin {args.margin}, alpha {args.alpha}; repeats per task "
          f"from repeats_for_task(cells={args.cells}, tasks={len(sizes)}); tokens per answer (assumptions, reasoning "
          "chains): " + ", ".join(f"{n} {tok:,.0f}" for n, _, _, tok in sizes))
    print("  model: p_i ~ Beta(accuracy, consistency) per run; a side's per-document score Binomial(R, p_i) / R; "
          "both designs on the same draws (nested repeats)")
    tasks = sized_tasks(sizes, consistency=args.consistency, margin=args.margin, alpha=args.alpha, cells=args.cells,
                        cell_repeats=args.cell_repeats)
    print_tasks(tasks, args.cells, args.alpha)
    run_regime(tasks, mixes_of(args), margin=args.margin, alpha=args.alpha, drop=args.drop_multiple * args.margin,
               broken_factor=args.broken_factor, trials=args.trials, null_trials=args.null_trials, seed=args.seed,
               check=args.check, label="sm120" + (f", cells answer {args.cell_repeats}x" if args.cell_repeats else ""),
               token_goal=args.token_goal, points=args.points,
               boundary_trials=args.boundary_trials, near_trials=args.near_trials,
               screen_documents=args.screen_documents,
               search_trials=args.search_trials, calibrate=args.calibrated)
    if args.from_run:
        from_run(args)
    print(f"\n{time.perf_counter() - start:.0f} s in all")
    if CHECK_FAILURES:
        print("\nTHE REPLICA DISAGREES WITH THE PACKAGE'S DECISIONS:\n  " + "\n  ".join(CHECK_FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
