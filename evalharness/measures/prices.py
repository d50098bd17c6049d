"""Every measure's price for `evalharness plan` (issue 60): analysis/plan_stages.py asks each enabled measure what
its phase costs a launch of exploration, from the matrix's section and what the plan knows (catalog.PriceInputs)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any, Mapping

from pydantic import BaseModel

from evalharness.measures.catalog import MEASURES, Price, PriceInputs, role_module
from evalharness.measures.specs import BY_KEY, MeasureSpec

Pricing = Callable[[BaseModel, PriceInputs], "Price | None"]  # None: the plan leaves the measure out
PRICES: tuple[tuple[MeasureSpec, Pricing], ...] = tuple(
    (BY_KEY[key], import_module(role_module(key, "price")).price) for key in MEASURES)


def price_measures(matrix: Mapping[str, Any], given: PriceInputs) -> dict[str, Price]:
    """Each measure the matrix enables, by its title: its seconds a launch and how they were reached."""
    out = {}
    for spec, price in PRICES:
        section = spec.section.model_validate(matrix.get(spec.key) or {})
        priced = price(section, given) if section.enabled else None
        if priced is not None:
            out[spec.title] = priced
    return out
