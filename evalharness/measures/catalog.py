"""The measures, by key, in the order the runner runs them: the one line a new measure adds outside its folder
(issue 59). Each key names a folder, evalharness/measures/<key>/, whose modules expose the registries' entries:
spec.SPEC, phase.run_phase, compare.compare, report.tables (tests/unit/test_layout.py checks each). Imports nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MEASURES = ("batching", "prefix_cache", "calls_modes")


@dataclass(frozen=True)
class MeasureSpec:
    key: str  # the folder, the matrix section, the phase's name and the key of its record in results.json
    title: str  # how the report and the verdict name it
    section: Any  # the matrix section (a pydantic model); every section has `enabled`, off by default
    record: Any  # what one cell's run writes (a pydantic model)
    change: Any  # the cell against the reference (a pydantic model with `flagged` and `summary()`)


def role_module(key: str, role: str) -> str:
    """The module of one measure's role: spec, phase, compare or report."""
    return f"evalharness.measures.{key}.{role}"
