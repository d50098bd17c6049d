"""What the calls-modes check costs a launch, for `evalharness plan` (measures/prices.py). Pure: imports its spec
only."""

from __future__ import annotations

from evalharness.measures.calls.spec import CallsModesSection
from evalharness.measures.catalog import Price, PriceInputs


def price(section: CallsModesSection, given: PriceInputs) -> Price:
    """At most: each task's first `cases` answered to `max_tokens` in four modes, two of them one request at a time
    and two among `concurrency` in flight, at PriceInputs' lower bounds on the rates. A task with fewer cases costs
    less: the bound counts `cases` for each."""
    stream, loaded = given.stream(), given.loaded(section.concurrency)
    if stream is None or loaded is None:
        return Price(None, "needs the quality phase's tok/s")
    tokens = len(section.tasks) * section.cases * section.max_tokens
    seconds = 2 * tokens / stream + 2 * tokens / loaded
    return Price(seconds, f"at most: {len(section.tasks)} task(s) x {section.cases} cases x {section.max_tokens} "
                 f"tokens, streamed and not, one at a time at {stream:,.0f} tok/s a stream and among "
                 f"{section.concurrency} in flight", bound=True)
