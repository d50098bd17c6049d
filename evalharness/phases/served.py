"""What a measure's phase is given of a served cell (measures/*/phase.py): its URLs, its served name, the request
settings every phase shares, its folder, what its engine answers about itself, and the quality phase's way of
answering lm-eval tasks, and where the reference's files are. Plain data; imports nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Served:
    base_url: str  # the OpenAI-compatible root, http://host:port/v1
    root_url: str  # http://host:port: the engine's own endpoints
    model: str  # the served model name
    timeout_s: float  # one request's timeout
    retries: int
    hung_after: int
    cell_dir: Path
    engine_label: str  # how a person names its engine: "vLLM", "SGLang", "the endpoint"
    cache_flush_path: str | None = None  # the engine's endpoint that empties its prefix cache (POST), if it has one
    include_path: str | None = None  # the matrix's own task files (quality.include_path), where calls tasks live too
    # the matrix's quality tasks answered with the quality section's settings, for a measure that asks some again its
    # own way: (tasks, a sub-folder of the cell's, requests in flight, documents of each) -> their TaskScores, in
    # order (None: the matrix has no quality section)
    answer_tasks: Callable[[list[str], str, int, int], list[Any]] | None = None
    # the numerics check's: the reference cell's folder (where its sampled contexts are), whether this is it, how its
    # engine gives log-probabilities by token id (phases/logprobs.py; None: it gives none), and the length section's
    # documents ({id, prompt}) that its contexts take whole (None: no length section)
    reference_dir: Path | None = None
    is_reference: bool = False
    logprob_path: str | None = None
    length_documents: Callable[[], list[dict[str, str]]] | None = None
