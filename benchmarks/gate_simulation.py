"""The simulated runs of benchmarks/gate_false_alarms.py: a task's Beta model (`TaskSpec`), `simulate_run` (cells
against one shared reference, some with a true drop, decided by the replica and checked against the package) and
its outcomes (`RunResult`), and the repeats analysis/sizing.py plans for a task (`planned_repeats`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from benchmarks.gate_replica import FAIL, _decide_fast, decide_exact
from evalharness.analysis import sizing

@dataclass(frozen=True)
class TaskSpec:
    """One task of a simulated run: `docs` documents at `accuracy` with `consistency` (the Beta model), or the
    per-document probabilities `p` themselves (then docs and accuracy follow from p and consistency is unused; an
    empirical A/A can supply them). `cell_repeats` / `reference_repeats`: samples per document on each side."""

    name: str
    docs: int | None = None
    accuracy: float | None = None
    consistency: float = 0.5
    p: np.ndarray | None = field(default=None, compare=False)
    cell_repeats: int = 1
    reference_repeats: int = 1

    def __post_init__(self) -> None:
        if self.p is not None:
            p = np.asarray(self.p, dtype=float)
            if p.ndim != 1 or len(p) < 2 or np.any((p < 0) | (p > 1)):
                raise ValueError(f"{self.name}: p must be a 1-d array of probabilities, at least 2 documents")
            object.__setattr__(self, "p", p)
            object.__setattr__(self, "docs", len(p))
            object.__setattr__(self, "accuracy", float(p.mean()))
        elif self.docs is None or self.accuracy is None or self.docs < 2:
            raise ValueError(f"{self.name}: give p, or docs (at least 2) and accuracy")
        if self.cell_repeats < 1 or self.reference_repeats < 1:
            raise ValueError(f"{self.name}: repeats must be at least 1")

    def draw_p(self, rng: np.random.Generator, trials: int) -> np.ndarray:
        """(trials, docs) per-document probabilities, one draw per simulated run (fixed p: the same every run)."""
        n, mu, rho = self.docs, self.accuracy, self.consistency
        if self.p is not None:
            return np.broadcast_to(self.p, (trials, n))
        if mu <= 0 or mu >= 1 or rho <= 0:
            return np.full((trials, n), float(mu))
        if rho >= 1:
            return (rng.random((trials, n)) < mu).astype(float)
        scale = 1 / rho - 1
        return rng.beta(mu * scale, (1 - mu) * scale, size=(trials, n))


@dataclass
class RunResult:
    """Outcomes of `trials` simulated runs: `outcome[t, c]` (PASS / INCONCLUSIVE / FAIL), `worse[t, c, k]` (task k
    of cell c called worse), and how many runs the package's own functions decided alike (`checked`, `agreed`)."""

    tasks: list[TaskSpec]
    cells: int
    drops: dict[int, float]
    outcome: np.ndarray
    worse: np.ndarray
    checked: int = 0
    agreed: int = 0

    @property
    def trials(self) -> int:
        return int(self.outcome.shape[0])

    def unchanged(self) -> np.ndarray:
        return np.array([c not in self.drops or self.drops[c] == 0 for c in range(self.cells)])

    def cell_false_fail(self) -> float:
        """Share of (run, unchanged cell) pairs that fail."""
        return float(np.mean(self.outcome[:, self.unchanged()] == FAIL))

    def run_false_fail(self) -> float:
        """Share of runs in which any unchanged cell fails."""
        return float(np.mean(np.any(self.outcome[:, self.unchanged()] == FAIL, axis=1)))

    def share(self, code: int) -> float:
        """Share of (run, unchanged cell) pairs with this outcome."""
        return float(np.mean(self.outcome[:, self.unchanged()] == code))

    def caught(self, cell: int) -> float:
        """Share of runs in which `cell` fails."""
        return float(np.mean(self.outcome[:, cell] == FAIL))

    def caught_per_task(self, cell: int) -> list[float]:
        return [float(v) for v in np.mean(self.worse[:, cell, :], axis=0)]


def simulate_run(tasks: Sequence[TaskSpec], *, cells: int, margin: float | Mapping[str, float], alpha: float = 0.05,
                 drops: Mapping[int, float] | None = None, trials: int = 1000, seed: int | Sequence[int] = 0,
                 check: int = 0, exact: bool = False, chunk: int = 250) -> RunResult:
    """`trials` simulated runs of `cells` cells against one shared reference, each cell with every task in `tasks`;
    `drops`: cell index -> true accuracy drop on every task of that cell (the others are unchanged). `margin`: one,
    or per task name. The first `check` runs are decided by the package's own functions as well and compared
    (`RunResult.checked`, `.agreed`); `exact`: decide every run with them (slow: for tests of the replica)."""
    drops = {int(c): float(d) for c, d in (drops or {}).items() if d}
    for c, d in drops.items():
        if not 0 <= c < cells:
            raise ValueError(f"drop for cell {c} of {cells}")
    margins = [float(margin[t.name]) if isinstance(margin, Mapping) else float(margin) for t in tasks]
    if len(set(margins)) > 1:
        raise ValueError("one margin per run: decide_family takes a margin per comparison, the replica one")
    rng = np.random.default_rng(seed)
    outcomes, worses = [], []
    checked = agreed = 0
    done = 0
    while done < trials:
        size = min(chunk, trials - done)
        refs, cell_scores = [], []
        for task in tasks:
            p = task.draw_p(rng, size)
            keep = np.ones(cells)
            for c, d in drops.items():
                if d > task.accuracy:
                    raise ValueError(f"{task.name}: a drop of {d} exceeds the accuracy {task.accuracy}")
                keep[c] = 1 - d / task.accuracy if task.accuracy > 0 else 1.0
            refs.append(rng.binomial(task.reference_repeats, p) / task.reference_repeats)
            cell_p = np.clip(p[:, None, :] * keep[None, :, None], 0.0, 1.0)
            cell_scores.append(rng.binomial(task.cell_repeats, cell_p) / task.cell_repeats)
        if exact:
            rows = [decide_exact([r[i] for r in refs], [c[i] for c in cell_scores], [t.name for t in tasks],
                                 margins[0], alpha) for i in range(size)]
            outcome = np.stack([o for o, _ in rows])
            worse = np.stack([w for _, w in rows])
            checked += size
            agreed += size
        else:
            outcome, worse = _decide_fast(refs, cell_scores, margins[0], alpha)
            for i in range(min(size, check - checked)):
                o, w = decide_exact([r[i] for r in refs], [c[i] for c in cell_scores], [t.name for t in tasks],
                                    margins[0], alpha)
                checked += 1
                agreed += bool(np.array_equal(o, outcome[i]) and np.array_equal(w, worse[i]))
        outcomes.append(outcome)
        worses.append(worse)
        done += size
    return RunResult(tasks=list(tasks), cells=cells, drops=drops, outcome=np.concatenate(outcomes),
                     worse=np.concatenate(worses), checked=checked, agreed=agreed)


def planned_repeats(task: TaskSpec, *, margin: float, alpha: float, power: float, cells: int, tasks: int,
                    under_drop: bool = False) -> tuple[int, int] | None:
    """Repeats for this task's Beta model such that a drop of twice the margin is caught with `power`. Plain:
    sizing.repeats_needed with the null's within-document variance on both sides and normal quantiles (the
    brief's formula); `under_drop`: sizing.repeats_for_task, the variance the test sees at that drop (the cell's
    own within-document variance and the drop's spread between documents) and Student's t at docs - 1."""
    if under_drop:
        return sizing.repeats_for_task(task.accuracy, task.consistency, task.docs, margin, alpha=alpha, power=power,
                                       cells=cells, tasks=tasks)
    within = sizing.within_doc_variance(task.accuracy, task.consistency)
    return sizing.repeats_needed(within, task.docs, margin, alpha=alpha, power=power, cells=cells, tasks=tasks)
