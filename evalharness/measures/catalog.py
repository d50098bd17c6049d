"""The measures, by key, in the order the runner runs them: the one line a new measure adds outside its folder
(issue 59). Each key names a folder, evalharness/measures/<key>/ (or FOLDERS' where the folder owns more than its
key's check), whose modules expose the registries' entries: spec.SPEC, phase.run_phase, compare.compare,
report.tables, price.price, compare.compare_run where its spec has `across`, and for a measure in TASK_KINDS
task.claim (tests/unit/test_layout.py checks each).
Imports nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

MEASURES = ("distribution", "batching", "prefix_cache", "calls_modes")
# measures/numerics/ owns the numerics check, whose matrix section and record kept their key, `distribution`;
# measures/calls/ owns tool calls and JSON output whole: the calls tasks (a kind of quality task) and their check
# streamed and under load, whose matrix section and record stay `calls_modes`
FOLDERS = {"distribution": "numerics", "calls_modes": "calls"}
# measures whose folder also answers quality tasks of its own kind, with its own worker (measures/tasks.py)
TASK_KINDS = ("calls_modes",)


@dataclass(frozen=True)
class MeasureSpec:
    key: str  # the folder, the matrix section, the phase's name and the key of its record in results.json
    title: str  # how the report and the verdict name it
    section: Any  # the matrix section (a pydantic model); every section has `enabled`
    record: Any  # what one cell's run writes (a pydantic model)
    change: Any  # the cell against the reference (a pydantic model with `flagged` and `summary()`)
    # the run's cells compared as one family (a pydantic model; None: the measure compares each cell with the
    # reference only): compare.py's `compare_run` writes it, kept in RunResult.measures by the key
    across: Any = None


@dataclass(frozen=True)
class PriceInputs:
    """What `evalharness plan` knows when it prices a measure's phase for one launch (analysis/plan_stages.py)."""

    tok_s: float | None  # the box's output tok/s in the quality phase (None: neither measured nor stated)
    concurrency: int  # the quality phase's requests in flight, at which tok_s holds
    documents: Mapping[str, int | None]  # each quality task's documents
    tokens: Mapping[str, float | None]  # each quality task's output tokens per answer

    def stream(self) -> float | None:
        """One request's tok/s when it is alone, taken as one of the quality phase's streams': a lone stream is at
        least that fast, so a time priced at it is an upper bound."""
        return self.tok_s / self.concurrency if self.tok_s else None

    def loaded(self, in_flight: int) -> float | None:
        """The box's tok/s with `in_flight` requests, taken as the quality phase's streams' share (each stream at
        least as fast as there), the quality phase's whole rate at most (more streams are not counted faster)."""
        return self.tok_s * min(in_flight, self.concurrency) / self.concurrency if self.tok_s else None


@dataclass(frozen=True)
class Price:
    """A measure's seconds a launch (None: a figure it needs is missing, `source` says which), and how they were
    reached; `bound`: an upper bound (every answer as long as its max_tokens)."""

    seconds: float | None
    source: str
    bound: bool = False


def role_module(key: str, role: str) -> str:
    """The module of one measure's role: spec, phase, compare, report, price or task."""
    return f"evalharness.measures.{FOLDERS.get(key, key)}.{role}"
