"""The designs benchmarks/sequential_design.py compares and what a simulation of them returns.

Owns `Design` (looks, screening, the cell stop, raised repeats, the equivalence-only look), the named designs (the
fixed one, the runner's, the three compared at equal per-task power and the default), the equal-power search's
offsets and power floor, the designs a regime measures (`equal_power_designs`) and `Result`: every design's outcomes
and repeats reached on the same draws, with their tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from benchmarks.sequential_model import EQUIVALENCE_LOOK, EQUIVALENT, INCONCLUSIVE, WORSE, Mix, Task
from evalharness.analysis.sequential import default_plan
from evalharness.matrix.quality import DEFAULT_EQUIVALENCE_LOOKS

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
