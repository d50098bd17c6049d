"""Which documents of a task a run scores (pure): quality.limit as a seeded random subset, or lm-eval's first N, and a
screened cell's share of them. One implementation for lm-eval's tasks (phases/_lmeval_worker.py, per leaf task) and
the calls tasks (measures/calls/worker.py)."""

from __future__ import annotations

import math
import random


def subset_indices(name: str, total: int, limit: int | None, seed: int, fraction: float = 1.0,
                   first: bool = False, skip: int = 0) -> list[int]:
    """The sorted indices kept of `total` documents of leaf task `name`: `limit` of them in one order seeded by
    (seed, name) (lm-eval's own limit takes the first N, which `first` keeps), then the first `fraction` of those, so a
    smaller share is always part of a larger one and of the whole subset; the same seed gives every cell and the
    reference the same documents. `skip` passes over the order's first documents (a confirmation launch passes over
    exploration's, issue 61), coming back to them only where the task has too few others."""
    order = list(range(total))
    if not first:
        random.Random(f"{seed}:{name}").shuffle(order)
    start = min(max(0, skip), total)
    order = order[start:] + order[:start]
    kept = min(limit or total, total)
    return sorted(order[: max(1, math.ceil(kept * fraction))])
