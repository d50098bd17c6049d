"""SGLang's per-request speculative figures (sglext.spec_tokens_details) read from the stream, and the cross-check of
the counters' acceptance length against them (phases/throughput/sse.py, stats.py)."""

import json

import pytest

from evalharness.phases.throughput.sse import RequestRecord, StreamState, ingest_block
from evalharness.phases.throughput.stats import acceptance_crosscheck


def _event(payload: dict) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


@pytest.mark.parametrize("details", [{"spec_verify_ct": 20, "spec_accept_length": 3.2}, [{"spec_verify_ct": 20}]])
def test_the_sglext_event_gives_the_requests_verify_steps(details):
    # sglang/srt/entrypoints/openai/serving_chat.py: after the finish chunk, choices [] and sglext, then usage
    record, stream = RequestRecord(start=0.0), StreamState()
    block = (_event({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "length"}],
                     "usage": {"prompt_tokens": 3, "completion_tokens": 64}})
             + _event({"choices": [], "usage": None, "sglext": {"routed_experts": None, "spec_tokens_details": details}})
             + _event({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 64}}) + b"data: [DONE]\n\n")
    ingest_block(record, stream, block, 1.0)
    assert record.spec_verify_ct == 20 and record.completion_tokens == 64 and stream.done


def test_no_sglext_leaves_it_unknown():
    record, stream = RequestRecord(start=0.0), StreamState()
    ingest_block(record, stream, _event({"choices": [{"index": 0, "text": "x"}], "usage": {"completion_tokens": 1}}),
                 1.0)
    assert record.spec_verify_ct is None


@pytest.mark.parametrize("engine,spec,completed,expect", [
    # nothing per request (vLLM, or SGLang without speculation): the counters' figure alone
    ({"spec_mean_acceptance_length": 2.0}, {}, 6, {}),
    # agreement: the requests' own figure is shown, the counters beside it
    ({"spec_mean_acceptance_length": 2.01}, {"requests": 6, "completion_tokens": 384, "verify_calls": 192}, 6,
     {"spec_mean_acceptance_length": 2.0, "spec_source": "per-request details (counters agree)"}),
    # another client's requests in the counters
    ({"spec_mean_acceptance_length": 1.5}, {"requests": 6, "completion_tokens": 384, "verify_calls": 192}, 6,
     {"spec_mean_acceptance_length": 2.0, "spec_source": "per-request details"}),
    # no counters (a refused flush): the requests' own figure still stands
    ({"spec_unavailable": "flush refused"}, {"requests": 6, "completion_tokens": 384, "verify_calls": 128}, 6,
     {"spec_mean_acceptance_length": 3.0, "spec_source": "per-request details"}),
    # some requests sent no details: a partial sum is no figure for the scenario; the counters' stays
    ({"spec_mean_acceptance_length": 2.0}, {"requests": 4, "completion_tokens": 256, "verify_calls": 64}, 6,
     {"spec_details_missing": 2}),
])
def test_acceptance_crosscheck(engine, spec, completed, expect):
    out = acceptance_crosscheck(engine, spec, completed)
    for key, value in expect.items():
        assert out[key] == pytest.approx(value) if isinstance(value, float) else out[key] == value
    if not spec:
        assert out == {}
    disagree = "spec_disagreement" in out
    assert disagree == (engine.get("spec_mean_acceptance_length") == 1.5)
    if "spec_details_missing" in out:
        assert "spec_mean_acceptance_length" not in out
