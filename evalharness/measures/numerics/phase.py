"""The numerics check's part in one cell (issue 26), through phases/distribution.py's requests:

- the reference cell (first to run) tokenizes each prompt of the section's file (base-model text and pieces of the
  shipped tasks' prompts, some long: trimmed from the front to fit the served context, or `max_context_tokens`) and
  samples a continuation of each at temperature 1: cells/<ref>/contexts.jsonl;
- every cell, the reference included, scores those contexts by echo: cells/<id>/distribution.jsonl; every other
  cell also samples its own continuation of each: cells/<id>/own_samples.jsonl (their reverse scores are written
  after the cells, by runner/reverse.py).

An engine that gives no log-probabilities by token id is not asked (`skipped`): its record says why, and the report
says "not measured". Returns the record (how it asked and how much it got) and the requests' tally."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from evalharness.measures.numerics.spec import DistributionSection, NumericsRecord
from evalharness.phases.distribution import (DEFAULT_PROMPTS, FALLBACK_CONTEXT, load_prompts, make_contexts,
                                             own_samples, score_samples)
from evalharness.phases.logprobs import open_path
from evalharness.phases.served import Served
from evalharness.records.cellfiles import load_scored, save_scored
from evalharness.records.measures import RequestTally, Scored


def skipped(served: Served, section: DistributionSection) -> NumericsRecord | None:
    """The record of a cell whose engine has nothing to ask (no phase time, no requests), else None."""
    if served.logprob_path is not None:
        return None
    return NumericsRecord(path=None, scored=0, error=f"{served.engine_label} returns no log-probabilities by token id")


def run_phase(served: Served, section: DistributionSection) -> tuple[NumericsRecord, RequestTally]:
    summary, tally = measure(
        served.base_url, served.model, served.cell_dir, served.reference_dir or served.cell_dir, served.is_reference,
        served.timeout_s, Path(section.prompts) if section.prompts else None, section.max_tokens,
        retries=served.retries, hung_after=served.hung_after, path_kind=served.logprob_path or "completions",
        root_url=served.root_url, max_context_tokens=section.max_context_tokens,
        whole_prompts=served.length_documents() if served.length_documents is not None else None)
    return NumericsRecord.model_validate(summary), tally


def _first_error(*groups: list[Scored]) -> str | None:
    errors = [s.error for g in groups for s in g if s.error]
    return errors[0] if errors else None


def measure(base_url: str, model: str, cell_dir: Path, reference_dir: Path, is_reference: bool,
            timeout_s: float, prompts_path: Path | None = None, max_tokens: int = 96, retries: int = 2,
            hung_after: int = 3, path_kind: str = "completions", root_url: str | None = None,
            max_context_tokens: int | None = None,
            whole_prompts: list[dict[str, str]] | None = None) -> tuple[dict[str, Any], RequestTally]:
    """The cell's part (see the module docstring). `whole_prompts` ({id, prompt}): contexts sampled beside the
    prompts file's and never cut to `max_context_tokens` (the length buckets' documents). Returns a small summary and
    the tally of its requests."""
    begin = time.monotonic()
    path = open_path(path_kind, base_url, root_url or base_url.rsplit("/v1", 1)[0], model, timeout_s, retries,
                     hung_after)
    summary: dict[str, Any] = {"path": path_kind}
    try:
        ctx_path = reference_dir / "contexts.jsonl"
        if is_reference:
            context = path.context_length()
            summary["context"] = context or f"{FALLBACK_CONTEXT} (the engine did not say)"
            if max_context_tokens is not None:
                summary["max_context_tokens"] = max_context_tokens
            whole = list(whole_prompts or [])
            contexts = make_contexts(path, load_prompts(prompts_path or DEFAULT_PROMPTS) + whole, max_tokens,
                                     context or FALLBACK_CONTEXT, longest=max_context_tokens,
                                     whole=frozenset(p["id"] for p in whole))
            save_scored(ctx_path, contexts)
        elif not ctx_path.exists():
            return {**summary, "scored": 0, "error": "the reference cell has no contexts (it did not run, failed, "
                    "or ran before issue 26)"}, path.tally
        else:
            contexts = load_scored(ctx_path)
        echoed = score_samples(path, contexts)
        save_scored(cell_dir / "distribution.jsonl", echoed)
        own: list[Scored] = []
        if not is_reference:  # the reference's own samples are its contexts
            own = own_samples(path, contexts, max_tokens)
            save_scored(cell_dir / "own_samples.jsonl", own)
            (cell_dir / "reverse_scored.jsonl").unlink(missing_ok=True)  # scored again from these samples
        summary.update(contexts=len(contexts), scored=sum(1 for s in echoed if not s.error),
                       own_samples=sum(1 for s in own if not s.error),
                       positions=sum(len(s.token_ids) for s in contexts if not s.error),
                       error=_first_error(contexts, echoed, own), seconds=round(time.monotonic() - begin, 2))
        return summary, path.tally
    finally:
        path.close()
