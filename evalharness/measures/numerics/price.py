"""What the numerics check costs a launch, for `evalharness plan` (measures/prices.py): not priced. Pure."""

from __future__ import annotations

from evalharness.measures.catalog import Price, PriceInputs
from evalharness.measures.numerics.spec import DistributionSection


def price(section: DistributionSection, given: PriceInputs) -> Price | None:
    """None: the plan leaves it out. Its cost is prefill of a few dozen contexts and one short continuation of each
    (tens of seconds on the demo's CPU engine, minutes' worth of nothing against a launch on the story's box), and
    the plan prices no prefill: no prefill rate is stated or measured."""
    return None
