"""Every measure's phase, in the order the runner runs them after the batch-dependence phase (issue 59): the
runner's loop (runner/cell.py) calls each enabled one with the served cell and its section."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from evalharness.measures.calls_modes import phase as calls_modes
from evalharness.measures.prefix_cache import phase as prefix_cache
from evalharness.measures.specs import BY_KEY, MeasureSpec
from evalharness.phases.served import Served
from evalharness.records.measures import RequestTally

Phase = Callable[[Served, BaseModel], tuple[BaseModel, RequestTally]]
PHASES: tuple[tuple[MeasureSpec, Phase], ...] = (
    (BY_KEY["prefix_cache"], prefix_cache.run_phase),
    (BY_KEY["calls_modes"], calls_modes.run_phase),
)
