"""What batch dependence costs a launch, for `evalharness plan` (measures/prices.py). Pure: imports its spec only."""

from __future__ import annotations

from evalharness.measures.batching.spec import BatchingSection
from evalharness.measures.catalog import Price, PriceInputs


def price(section: BatchingSection, given: PriceInputs) -> Price:
    """At most: `count` greedy prompts of `max_tokens` answered one at a time and again among `concurrency` in flight
    (the other requests asking twice as many tokens), and each of `tasks`' documents (at most `task_documents`, at
    most the task's own) answered one at a time; the rates are PriceInputs' lower bounds, so the time is an upper
    bound."""
    stream, loaded = given.stream(), given.loaded(section.concurrency)
    if stream is None or loaded is None:
        return Price(None, "needs the quality phase's tok/s")
    seconds = section.count * section.max_tokens / stream + 3 * section.count * section.max_tokens / loaded
    answered = []
    for task in section.tasks:
        docs = min(section.task_documents, given.documents.get(task) or 0)
        length = given.tokens.get(task)
        if length is None:
            return Price(None, f"needs {task}'s answer length")
        seconds += docs * length / stream
        answered.append(f"{docs} {task} documents")
    alone = " and ".join([f"{section.count} prompts x {section.max_tokens} tokens", *answered])
    return Price(seconds, f"at most: {alone} one at a time at {stream:,.0f} tok/s a stream, the prompts again among "
                 f"{section.concurrency} in flight", bound=True)
