"""Every measure's phase, in the catalog's order (issue 59): the runner's loop (runner/cell.py) calls each enabled
one with the served cell and its section; first, where the measure's phase.py has `skipped`, it asks that whether the
cell has nothing to measure (the record that says why, written without a phase or a request)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from pydantic import BaseModel

from evalharness.measures.catalog import MEASURES, role_module
from evalharness.measures.specs import BY_KEY, MeasureSpec
from evalharness.phases.served import Served
from evalharness.records.measures import RequestTally

Phase = Callable[[Served, BaseModel], tuple[BaseModel, RequestTally]]
PHASES: tuple[tuple[MeasureSpec, Phase], ...] = tuple(
    (BY_KEY[key], import_module(role_module(key, "phase")).run_phase) for key in MEASURES)
Skipped = Callable[[Served, BaseModel], BaseModel | None]
SKIPPED: dict[str, Skipped] = {key: found for key in MEASURES
                               if (found := getattr(import_module(role_module(key, "phase")), "skipped", None))}
