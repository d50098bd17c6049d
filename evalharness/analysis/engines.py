"""Engines side by side: what a cell served by another engine than the reference's resolved differently, by meaning
rather than by key (vLLM's `engine.dtype` and SGLang's `dtype` are one setting under two names), and what the two
servers did with the same requests (prompt tokens per chat request: the chat template and the tokenizer at work).

Reads records only (analysis/ never imports serving/): the concept table below names, per engine, where each engine's
record holds the setting: `resolved` (vLLM: its startup log's config line and /v1/models, serving/engines/vllm.py;
SGLang: /server_info, serving/engines/sglang.py) or `server` (SGLang's measured facts). Pure functions.
"""

from __future__ import annotations

from typing import Any, Callable

from pydantic import BaseModel

from evalharness.records.run import CellResult, RunResult


def _dtype(value: Any) -> Any:
    return value.removeprefix("torch.") if isinstance(value, str) else value


def _negated(value: Any) -> Any:
    return (not value) if isinstance(value, bool) else value


_Source = tuple[str, str, Callable[[Any], Any]]  # (record part, key, how its value reads as the concept's)
_same: Callable[[Any], Any] = lambda value: value  # noqa: E731
MODEL_OWN = "the model's own"
# vLLM records only the flags a launch gave (`args.*`, vllm.py parse_log_config): an absent one is its default, which
# for these two is the model folder's own (vllm/config/model.py: generation_config "auto" reads
# generation_config.json; no --chat-template: the tokenizer's). SGLang reports every setting, None for the model's.
ABSENT_MEANS = {"args.chat_template": MODEL_OWN, "args.generation_config": "auto"}


def _model_sampling(value: Any) -> Any:
    # vLLM "auto" and SGLang "model" both take the model's generation_config.json (sglang/srt/server_args.py:
    # sampling_defaults); "vllm"/"openai" are the engine's own neutral defaults
    return MODEL_OWN if value in ("auto", "model") else value

# concept -> engine -> where it is; what an engine does not report is shown as such, never guessed
CONCEPTS: dict[str, dict[str, _Source]] = {
    "weights dtype": {"vllm": ("resolved", "engine.dtype", _dtype), "sglang": ("resolved", "dtype", _dtype)},
    "KV cache dtype": {"vllm": ("resolved", "engine.kv_cache_dtype", _same),
                       "sglang": ("resolved", "kv_cache_dtype", _same)},
    "context length": {"vllm": ("resolved", "served.max_model_len", _same),
                       "sglang": ("resolved", "context_length", _same)},
    "KV cache tokens": {"vllm": ("resolved", "kv_cache.tokens", _same), "sglang": ("server", "token_capacity", _same)},
    "requests at once (ceiling)": {"vllm": ("resolved", "engine.max_num_seqs", _same),
                                   "sglang": ("server", "max_running_requests", _same)},
    "tokenizer mode": {"vllm": ("resolved", "engine.tokenizer_mode", _same),
                       "sglang": ("resolved", "tokenizer_mode", _same)},
    "quantization": {"vllm": ("resolved", "engine.quantization", _same), "sglang": ("resolved", "quantization", _same)},
    "prefix caching": {"vllm": ("resolved", "engine.enable_prefix_caching", _same),
                       "sglang": ("resolved", "disable_radix_cache", _negated)},
    "chunked prefill": {"vllm": ("resolved", "engine.enable_chunked_prefill", _same),
                        "sglang": ("resolved", "chunked_prefill_size", lambda v: v is not None and v > 0)},
    "default sampling": {"vllm": ("resolved", "args.generation_config", _model_sampling),
                         "sglang": ("resolved", "sampling_defaults", _model_sampling)},
    "chat template": {"vllm": ("resolved", "args.chat_template", _same),
                      "sglang": ("resolved", "chat_template", lambda v: v or MODEL_OWN)},
}


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


def _read(cell: CellResult, engine: str, concept: str) -> Any:
    where = CONCEPTS[concept].get(engine)
    if where is None:
        return None
    part, key, reads = where
    record = cell.resolved if part == "resolved" else cell.server
    if key in record:
        return reads(record[key])
    return reads(ABSENT_MEANS[key]) if key in ABSENT_MEANS and cell.resolved else None


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


def engine_comparisons(run: RunResult) -> list[EngineComparison]:
    """One comparison per finished cell that another engine served than the reference's, in cell order."""
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
        for concept in CONCEPTS:
            a, b = _read(reference, ref_engine, concept), _read(cell, engine, concept)
            settings.append(EngineSetting(concept=concept, reference=a, cell=b,
                                          same=None if a is None or b is None else a == b))
        out.append(EngineComparison(cell=cid, reference_engine=ref_engine, cell_engine=engine, settings=settings,
                                    prompt_tokens=_prompt_tokens(reference, cell)))
    return out
