"""Engines side by side: what a cell served by another engine than the reference's resolved differently, by meaning
rather than by key (vLLM's `engine.dtype` and SGLang's `dtype` are one setting under two names), and what the two
servers did with the same requests (prompt tokens per chat request: the chat template and the tokenizer at work).

Reads records only (analysis/ never imports serving/): where each engine's record holds a setting is the engine's
own declaration (serving/engines/, its `settings`: records/engine_profile.py), handed in by the caller. Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from evalharness.records.engine_profile import SETTING_CONCEPTS, EngineProfile, profile_of
from evalharness.records.run import CellResult, RunResult


class EngineSetting(BaseModel):
    concept: str
    reference: Any
    cell: Any
    same: bool | None  # None: one side does not report it


class PromptTokens(BaseModel):
    """The same chat requests (the throughput scenarios both ran: the same seeded prompts, in the same order, in every
    cell) as each server counted their prompt tokens, paired request by request."""

    scenario: str  # the scenarios, comma-separated
    requests: int  # paired: both servers counted the request's prompt
    differing: int  # of them, counted differently
    reference_mean: float
    cell_mean: float


class EngineComparison(BaseModel):
    cell: str
    reference_engine: str
    cell_engine: str
    settings: list[EngineSetting]
    prompt_tokens: PromptTokens | None = None


def _read(cell: CellResult, engine: EngineProfile, concept: str) -> Any:
    where = engine.settings.get(concept)
    if where is None:
        return None
    record = cell.resolved if where.part == "resolved" else cell.server
    if where.key in record:
        return where.reads(record[where.key])
    return where.reads(where.absent) if where.absent is not None and cell.resolved else None


def _prompt_tokens(reference: CellResult, cell: CellResult) -> PromptTokens | None:
    """Every scenario both ran (same name, same prompts), their requests paired by the order they were sent."""
    theirs = {sc.name: sc for sc in cell.throughput}
    names: list[str] = []
    pairs: list[tuple[int, int]] = []
    for ours in reference.throughput:
        other = theirs.get(ours.name)
        if other is None:
            continue
        found = [(a, b) for a, b in zip(ours.request_prompt_tokens, other.request_prompt_tokens)
                 if a is not None and b is not None]
        if found:
            names.append(ours.name)
            pairs += found
    if not pairs:
        return None
    return PromptTokens(scenario=", ".join(names), requests=len(pairs), differing=sum(a != b for a, b in pairs),
                        reference_mean=sum(a for a, _ in pairs) / len(pairs),
                        cell_mean=sum(b for _, b in pairs) / len(pairs))


def engine_comparisons(run: RunResult, engines: Mapping[str, EngineProfile] | None) -> list[EngineComparison]:
    """One comparison per finished cell that another engine served than the reference's, in cell order, each setting
    read where its engine's profile (`engines`, by name) says its record holds it."""
    reference = run.cells.get(run.reference)
    if reference is None:
        return []
    ref_engine = run.cell_engine(run.reference)
    out = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cid == run.reference or run.cell_engine(cid) == ref_engine:
            continue
        engine = run.cell_engine(cid)
        settings = []
        for concept in SETTING_CONCEPTS:
            a = _read(reference, profile_of(engines, ref_engine), concept)
            b = _read(cell, profile_of(engines, engine), concept)
            settings.append(EngineSetting(concept=concept, reference=a, cell=b,
                                          same=None if a is None or b is None else a == b))
        out.append(EngineComparison(cell=cid, reference_engine=ref_engine, cell_engine=engine, settings=settings,
                                    prompt_tokens=_prompt_tokens(reference, cell)))
    return out
