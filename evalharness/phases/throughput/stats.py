"""Statistics of one throughput scenario from its request records (pure): tokens from the server's usage, latency per
token.

Speculative decoding sends several tokens in one streamed chunk, so counting chunks overstates nothing less than the
speed itself, and timing one gap per chunk overstates inter-token latency by the acceptance length. Here:
- output tokens come from the server's usage (per chunk where the engine sends continuous usage); where a chunk's own
  count is unknown, the request's usage total is spread evenly over its chunks; never the chunks themselves. The
  request's token source says which: `usage` (per-chunk counts from the server), `spread` (the usage total spread
  over the chunks: its inter-token latencies are interpolated), `tokenizer` (no usage at all: the engine's tokenizer
  counted the text, spread the same way);
- a chunk carrying k tokens contributes k inter-token gaps of g/k, where g is the time since the last chunk that
  carried tokens (a chunk of zero tokens moves no clock: the time before it belongs to the next token); the first
  chunk's tokens belong to the time to first token;
- TPOT is (end-to-end - TTFT) / (tokens after the first chunk), and per-request decode tokens/s is its inverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalharness.phases.throughput.sse import RequestRecord
from evalharness.records.measures import ScenarioResult, percentiles


def chunk_token_counts(record: RequestRecord) -> list[int] | None:
    """Tokens per content chunk: the server's own per-chunk counts, or the usage total spread evenly (pure)."""
    n = len(record.chunk_times)
    if n == 0:
        return []
    if all(k is not None for k in record.chunk_tokens) and len(record.chunk_tokens) == n:
        return [int(k) for k in record.chunk_tokens]  # type: ignore[arg-type]
    total = record.completion_tokens
    if total is None:
        return None
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


def token_source(record: RequestRecord) -> str:
    """Where a request's per-chunk token counts came from: 'usage' (the server counted each chunk, or there was at
    most one chunk), 'spread' (the server's usage total spread evenly over the chunks, so the inter-token latencies
    are interpolated) or 'tokenizer' (no usage: the engine's tokenizer counted the text, spread the same way)."""
    if record.token_source != "usage":
        return record.token_source
    n = len(record.chunk_times)
    known = len(record.chunk_tokens) == n and all(k is not None for k in record.chunk_tokens)
    return "usage" if known or n <= 1 else "spread"


def request_latencies(records: list[RequestRecord]) -> list[list[float | None]]:
    """[ttft_s, tpot_s, e2e_s, output_tokens] of every request of a repeat, in order; a failed request is
    [None, None, None, 0] (pure: what goodput under an SLO is counted from, analysis/goodput.py)."""
    out: list[list[float | None]] = []
    for r in records:
        if not r.ok:
            out.append([None, None, None, 0])
            continue
        counts = chunk_token_counts(r) or []
        tokens = r.completion_tokens if r.completion_tokens is not None else sum(counts)
        tpot = request_timings(r, counts)[1] if counts else None
        out.append([None if r.ttft is None else round(r.ttft, 6), None if tpot is None else round(tpot, 6),
                    round(r.end - r.start, 6), tokens])
    return out


def request_timings(record: RequestRecord, counts: list[int]) -> tuple[list[float], float | None, float | None]:
    """(inter-token gaps, TPOT, decode tokens/s) of one request: a chunk of k tokens after gap g gives k gaps of g/k."""
    gaps: list[float] = []
    times = record.chunk_times
    last = times[0] if times else 0.0  # the first chunk starts the clock, whatever it carried
    for i in range(1, len(times)):
        k = counts[i]
        if k <= 0:
            continue  # nothing arrived: the gap runs on to the next chunk that carries tokens
        gaps.extend([(times[i] - last) / k] * k)
        last = times[i]
    after_first = sum(counts[1:])
    if after_first <= 0 or record.ttft is None:
        return gaps, None, None
    decode_time = (record.end - record.start) - record.ttft
    if decode_time <= 0:
        return gaps, None, None
    return gaps, decode_time / after_first, after_first / decode_time


def summarize(name: str, records: list[RequestRecord], *, concurrency: int | None, request_rate: float | None,
              input_len: int, output_len: int) -> ScenarioResult:
    """Statistics of the measured (non-warm-up) requests of one scenario (pure)."""
    done = [r for r in records if r.ok]
    errors: dict[str, int] = {}
    for r in records:
        if not r.ok:
            kind = (r.error or "unknown").split(":", 1)[0]
            errors[kind] = errors.get(kind, 0) + 1
    ttfts, tpots, itls, e2es, decode_rates = [], [], [], [], []
    output_tokens = 0
    prompt_tokens = 0
    chunks = 0
    sources: dict[str, int] = {}
    for r in done:
        counts = chunk_token_counts(r) or []
        tokens = r.completion_tokens if r.completion_tokens is not None else sum(counts)
        output_tokens += tokens
        prompt_tokens += r.prompt_tokens or 0
        chunks += len(r.chunk_times)
        source = token_source(r)
        sources[source] = sources.get(source, 0) + 1
        if r.ttft is not None:
            ttfts.append(r.ttft)
        e2es.append(r.end - r.start)
        if counts:
            gaps, tpot, rate = request_timings(r, counts)
            itls.extend(gaps)
            if tpot is not None:
                tpots.append(tpot)
                decode_rates.append(rate)
    spec = [r for r in done if r.spec_verify_ct and r.completion_tokens]
    request_spec = {"requests": len(spec), "completion_tokens": sum(r.completion_tokens or 0 for r in spec),
                    "verify_calls": sum(r.spec_verify_ct or 0 for r in spec)} if spec else {}
    if records:
        span = max(r.end for r in records) - min(r.start for r in records)
    else:
        span = 0.0
    return ScenarioResult(
        name=name, concurrency=concurrency, request_rate=request_rate, input_len=input_len, output_len=output_len,
        requests=len(records), completed=len(done), errors=errors, duration_s=round(span, 4),
        output_tokens=output_tokens, prompt_tokens=prompt_tokens or None,
        output_tok_s=output_tokens / span if span > 0 else 0.0,
        request_decode_tok_s=percentiles(decode_rates), ttft_s=percentiles(ttfts), tpot_s=percentiles(tpots),
        itl_s=percentiles(itls), e2e_s=percentiles(e2es), token_sources=sources,
        tokens_per_chunk=output_tokens / chunks if chunks else None, request_spec=request_spec,
    )


# a wait per token this many times the repeat's median wait, and at least STALL_MIN_S, is a stall; a repeat whose
# streams spent STALLED_SHARE of their time in stalls is disturbed. The busy minute of 2026-12-03 held one request
# 30 s (inter-token p99 1.49 s against a median of 0.056 s). Quiet repeats of the float32 CPU engine the same day
# (natural prompts, 64 tokens, measured per chunk, one token each): single-stream, no gap above 4.5x the median;
# batch8, longest gaps 0.47-0.65 s, 10-13x the median (the arrivals' prefill stalls the batch), but at most 2.2% of
# the streams' time in gaps above 10x.
STALL_FACTOR = 10.0
STALL_MIN_S = 0.25
STALLED_SHARE = 0.10


def stream_stalls(records: list[RequestRecord]) -> dict[str, float | None]:
    """The longest wait per token, the median one and the share of the streams' time spent in stalls, over one
    repeat's completed requests (pure): what a disturbance shows in the stream itself, whoever caused it. Per token,
    as the inter-token latency is (a chunk of k tokens after a gap g is k waits of g/k): a stream delivered late in
    one read is not a stall of the engine (2026-12-03, a busy demo: 64 tokens arrived in one read after 2.9 s, at
    the engine's usual 22 tok/s)."""
    waits: list[tuple[float, float]] = []  # (wait per token, the gap it came from)
    total = 0.0
    for r in records:
        counts = chunk_token_counts(r)
        if not r.ok or len(r.chunk_times) < 2 or not counts:
            continue
        last = r.chunk_times[0]
        for i in range(1, len(r.chunk_times)):
            if counts[i] <= 0:
                continue  # nothing arrived: the gap runs on to the next chunk that carries tokens
            gap = r.chunk_times[i] - last
            waits += [(gap / counts[i], gap)] * counts[i]
            last = r.chunk_times[i]
        total += r.chunk_times[-1] - r.chunk_times[0]
    if not waits or total <= 0:
        return {"longest_gap_s": None, "median_gap_s": None, "stalled_share": None}
    median = float(np.median([w for w, _ in waits]))
    limit = max(STALL_FACTOR * median, STALL_MIN_S)
    stalled = sum(w for w, _ in waits if w > limit)  # k waits of g/k add up to the gap g
    return {"longest_gap_s": round(max(w for w, _ in waits), 4), "median_gap_s": round(median, 5),
            "stalled_share": round(stalled / total, 4)}


def judge_stalls(figures: dict[str, float | None]) -> str:
    """Why a repeat's streams say it was disturbed, in words; '' when they do not (pure)."""
    share = figures.get("stalled_share")
    if share is None or share < STALLED_SHARE:
        return ""
    return (f"its streams stalled {share:.0%} of their time (longest gap {figures['longest_gap_s']:.2f} s against a "
            f"median of {figures['median_gap_s']:.3f} s)")


SPEC_AGREEMENT = 0.02  # counters and per-request figures further apart than this: something else ran on the server


def acceptance_crosscheck(engine: dict[str, Any], request_spec: dict[str, int], completed: int) -> dict[str, Any]:
    """The engine's counters' acceptance length (a before/after delta) against the one its per-request details give
    over exactly the measured requests (SGLang's formula, completion_tokens / spec_verify_ct,
    sglang/srt/managers/tokenizer_manager.py). The per-request figure cannot count anyone else's requests, so where
    every measured request carried it, it is the figure shown; the counters' figure stays beside it and a
    disagreement is flagged (pure). Returns the keys to add to the scenario's engine figures."""
    if not request_spec or not request_spec.get("verify_calls"):
        return {}
    per_request = request_spec["completion_tokens"] / request_spec["verify_calls"]
    out: dict[str, Any] = {"spec_acceptance_length_per_request": per_request,
                           "spec_requests_with_details": request_spec["requests"]}
    if request_spec["requests"] < completed:
        out["spec_details_missing"] = completed - request_spec["requests"]
        return out  # a partial sum is no figure for the scenario; the counters' stays
    counters = engine.get("spec_mean_acceptance_length")
    if counters is not None and abs(counters - per_request) > SPEC_AGREEMENT * per_request:
        out["spec_disagreement"] = (f"the counters' delta says {counters:.2f}, the measured requests' own details "
                                    f"{per_request:.2f}: other requests ran on the server during the scenario")
    if counters is not None:
        out["spec_counters_acceptance_length"] = counters
    out["spec_mean_acceptance_length"] = per_request
    out["spec_source"] = "per-request details" + (" (counters agree)" if counters is not None and
                                                   "spec_disagreement" not in out else "")
    return out
