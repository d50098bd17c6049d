"""What the prefix-cache check costs a launch, for `evalharness plan` (measures/prices.py). Pure: imports its spec
only."""

from __future__ import annotations

from evalharness.measures.catalog import Price, PriceInputs
from evalharness.measures.prefix_cache.spec import PrefixCacheSection


def price(section: PrefixCacheSection, given: PriceInputs) -> Price:
    """At most: each of `count` prompts answered twice (warm and cold) to `max_tokens`, one request at a time, at
    PriceInputs' lower bound on a lone stream's rate; the sibling's one-token warm-up and the flushes are not priced,
    nor the shared prefix's prefill (no prefill rate is stated or measured)."""
    stream = given.stream()
    if stream is None:
        return Price(None, "needs the quality phase's tok/s")
    seconds = 2 * section.count * section.max_tokens / stream
    return Price(seconds, f"at most: {section.count} prompts x {section.max_tokens} tokens, cold and warm, one at a "
                 f"time at {stream:,.0f} tok/s a stream (their {section.prefix_words}-word prefixes' prefill not "
                 "priced)", bound=True)
