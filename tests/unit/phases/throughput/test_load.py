"""The load generator: token accounting and per-token latency, against hand-made records and against the null
streaming server, which knows the truth of what it sent (benchmarks/null_server.py)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from evalharness.cli import main
from evalharness.phases.throughput.client import LoadClient, run_scenario
from evalharness.phases.throughput.sse import RequestRecord, ingest_block
from evalharness.phases.throughput.sse import StreamState as _StreamState
from evalharness.phases.throughput.stats import chunk_token_counts, request_timings, summarize
from evalharness.records.measures import percentiles
from evalharness.render.throughput import ITL_NOTE, THROUGHPUT_HEADER, throughput_rows
from evalharness.serving.host import free_port

REPO = Path(__file__).resolve().parents[4]


def test_percentiles_of_known_values():
    p = percentiles([1.0, 2.0, 3.0, 4.0, 5.0])
    assert (p.mean, p.p50, p.p90) == (3.0, 3.0, 4.6)
    assert percentiles([]).mean is None


def test_chunk_counts_prefer_the_servers_own_then_spread_the_usage_total():
    record = RequestRecord(start=0.0, chunk_times=[1.0, 2.0, 3.0], chunk_tokens=[1, 4, 3], completion_tokens=8)
    assert chunk_token_counts(record) == [1, 4, 3]
    record = RequestRecord(start=0.0, chunk_times=[1.0, 2.0, 3.0], chunk_tokens=[None, None, None], completion_tokens=8)
    assert chunk_token_counts(record) == [3, 3, 2]
    record = RequestRecord(start=0.0, chunk_times=[1.0], chunk_tokens=[None], completion_tokens=None)
    assert chunk_token_counts(record) is None


def test_a_chunk_of_k_tokens_gives_k_gaps():
    # first chunk (2 tokens) at 0.5 s; then 4 tokens 0.4 s later; then 1 token 0.1 s later; end at 1.0 s
    record = RequestRecord(start=0.0, end=1.0, ttft=0.5, chunk_times=[0.5, 0.9, 1.0])
    gaps, tpot, rate = request_timings(record, [2, 4, 1])
    assert gaps == pytest.approx([0.1] * 5)
    assert tpot == pytest.approx(0.5 / 5) and rate == pytest.approx(10.0)


def test_a_chunk_carrying_zero_tokens_keeps_the_time_before_it():
    """Issue 13.7: the inter-token gaps of a request add up to its decode time, whatever a chunk carried."""
    # first token at 0.2 s, a chunk with nothing in it at 0.6 s, the second token at 1.0 s: 0.8 s of decode
    record = RequestRecord(start=0.0, end=1.0, ttft=0.2, chunk_times=[0.2, 0.6, 1.0])
    gaps, tpot, _ = request_timings(record, [1, 0, 1])
    assert sum(gaps) == pytest.approx(0.8) and gaps == pytest.approx([0.8])
    assert tpot == pytest.approx(0.8)


@pytest.mark.parametrize("chunk_tokens,completion,source", [
    ([1, 3, 4], 8, "usage"),          # the server counted every chunk
    ([None, None, None], 8, "spread"),  # usage only at the end: its total spread evenly over the chunks
    ([None], 8, "usage"),             # one chunk: nothing to spread
])
def test_usage_only_at_the_end_is_recorded_as_spread_and_marked_in_the_table(chunk_tokens, completion, source):
    """Issue 13.7: a total spread over the chunks says `spread`, and the table marks its ITL as interpolated."""
    times = [0.1 * (i + 1) for i in range(len(chunk_tokens))]
    record = RequestRecord(start=0.0, end=times[-1], ttft=times[0], ok=True, chunk_times=times,
                           chunk_tokens=chunk_tokens, completion_tokens=completion)
    result = summarize("s", [record], concurrency=1, request_rate=None, input_len=8, output_len=8)
    assert result.token_sources == {source: 1}
    [row] = throughput_rows([result])
    itl_p50 = row[THROUGHPUT_HEADER.index("ITL p50 ms")]
    assert itl_p50.startswith("≈") == (source == "spread") and ITL_NOTE.startswith("≈")


def _event(text, count=None, prompt=7):
    body = {"choices": [{"index": 0, "text": text}]}
    if count is not None:
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": count}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _ingest(*blocks):
    """Feed blocks (one per read, at t=1, 2, ...) and return what was recorded."""
    record, stream = RequestRecord(start=0.0), _StreamState()
    for t, block in enumerate(blocks, start=1):
        ingest_block(record, stream, block, float(t))
    return record, stream


def test_one_read_is_one_arrival_with_the_usage_delta():
    record, stream = _ingest(_event("a", 1), _event(" b", 2) + _event(" c d", 4),
                             b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 4}}\n\n'
                             b"data: [DONE]\n\n")
    assert record.chunk_times == [1.0, 2.0] and record.chunk_tokens == [1, 3]
    assert (record.completion_tokens, record.prompt_tokens, record.ttft, stream.done) == (4, 7, 1.0, True)


def test_text_that_looks_like_the_protocol_is_not_mistaken_for_it():
    # JSON escapes the quotes and newlines of model text; raw "data:" and "[DONE]" in it push the block to the full
    # parse, which must count the same tokens
    tricky = 'data: [DONE] "completion_tokens": 99\n{"error": 1}'
    record, stream = _ingest(_event(tricky, 1), _event("x", 2) + b"data: [DONE]\n\n")
    assert record.chunk_tokens == [1, 1] and record.completion_tokens == 2 and stream.done and not stream.error


def test_without_per_chunk_usage_the_text_is_kept_for_the_tokenizer():
    record, stream = _ingest(_event("a b"), _event(" c") + _event(" d"))
    assert record.chunk_tokens == [None, None] and record.text_parts == ["a b", " c", " d"]
    assert record.completion_tokens is None and not stream.done


def test_a_final_usage_total_is_not_tokens_arriving_in_its_own_read():
    final = b'data: {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 4}}\n\n'
    record, stream = _ingest(_event("a b"), _event(" c d"), final, b"data: [DONE]\n\n")
    assert record.chunk_times == [1.0, 2.0] and record.chunk_tokens == [None, None]
    assert record.completion_tokens == 4 and stream.done


def test_a_stream_that_ends_with_a_finish_reason_and_no_done_is_whole_and_one_without_either_is_not():
    """transformers serve (5.19) closes its stream after the chunk that carries finish_reason and usage, with no
    data: [DONE]; every request of its first throughput run was called truncated (2026-12-07)."""
    last = b'data: {"choices": [{"delta": {}, "index": 0, "finish_reason": "length"}], "usage": ' \
           b'{"prompt_tokens": 7, "completion_tokens": 3}}\n\n'
    record, stream = _ingest(_event("a b"), _event(" c"), last)
    assert stream.finished and not stream.done and record.completion_tokens == 3
    record, stream = _ingest(_event("a b"), _event(" c"))  # cut mid-answer: nothing says it ended
    assert not (stream.finished or stream.done)


def test_an_error_event_in_the_stream_is_an_error():
    record, stream = _ingest(_event("a", 1), b'data: {"error": {"message": "engine died", "code": 500}}\n\n')
    assert stream.error == "stream_error: engine died"


@pytest.mark.parametrize("block", [b"data: [1, 2]\n\n", b"data: {not json\n\n"])
def test_a_malformed_event_raises_value_error(block):
    with pytest.raises(ValueError):
        _ingest(block)


@pytest.fixture()
def null_server(request):
    args = getattr(request, "param", [])
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(REPO / "benchmarks" / "null_server.py"), "--port", str(port), *args])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


def _measure(url, concurrency=4, requests=8, output_len=128):
    httpx.post(f"{url}/truth/reset")
    client = LoadClient(f"{url}/v1", "null", tokenize_url=f"{url}/tokenize")
    result = run_scenario(client, name="t", concurrency=concurrency, request_rate=None, input_len=16,
                          output_len=output_len, requests=requests, duration_s=None, warmup=0)
    return result, httpx.get(f"{url}/truth").json()


@pytest.mark.parametrize("null_server,k,source", [
    (["--tokens-per-chunk", "1", "--token-rate", "200", "--measure-lag"], 1, "usage"),
    (["--tokens-per-chunk", "2", "--token-rate", "200", "--measure-lag"], 2, "usage"),
    (["--tokens-per-chunk", "4", "--token-rate", "200", "--measure-lag"], 4, "usage"),
    # usage only at the end: the total is exact, the tokens per chunk are spread (right here: the truth is even)
    (["--tokens-per-chunk", "4", "--token-rate", "200", "--no-continuous-usage", "--measure-lag"], 4, "spread"),
], indirect=["null_server"])
def test_throughput_matches_the_truth_whatever_the_chunking(null_server, k, source):
    with _Lateness() as lateness:  # how late this process got the CPU while it measured: a busy machine's share
        result, truth = _measure(null_server, concurrency=4, requests=12, output_len=256)
    assert result.completed == 12 and result.output_tokens == truth["tokens"] == 12 * 256
    # the whole run takes about 4 s, each request about 1.3 s: a client woken late at either end of a span is off by
    # at most twice its worst lateness, and the server, stamping arrivals and pacing chunks on its own loop, by twice
    # its own; so the tolerance is that (never below 1% and 5%) on a busy machine
    late = lateness.worst_s + truth["worst_lag_s"]
    run_rel = max(0.01, 2 * late / 4.0)
    request_rel = max(0.05, 2 * late / 1.28)
    assert result.output_tok_s == pytest.approx(truth["output_tok_s"], rel=run_rel), (lateness.worst_s,
                                                                                     truth["worst_lag_s"])
    # events that land in one read are one arrival, so a client may see larger chunks, never smaller (how often it
    # keeps up with the server is a matter of speed: benchmarks/client_capacity.py measures that, not a test)
    assert result.tokens_per_chunk >= k
    # 200 tokens/s per request is 5 ms per token, whatever the number of tokens per chunk; the server paces on its
    # own clock and may be late too on a busy machine, so the truth is the time per token it really took (first to
    # last chunk, on its clock), which is 5 ms on a quiet one
    per_token = sorted((r["last"] - r["first"]) / (r["tokens"] - k) for r in truth["per_request"])
    true_tpot = per_token[len(per_token) // 2]
    assert true_tpot == pytest.approx(0.005, rel=0.5)
    assert result.itl_s.mean == pytest.approx(sum(per_token) / len(per_token), rel=request_rel), lateness.worst_s
    assert result.tpot_s.p50 == pytest.approx(true_tpot, rel=request_rel), lateness.worst_s
    assert result.request_decode_tok_s.p50 == pytest.approx(1 / true_tpot, rel=request_rel), lateness.worst_s
    assert result.token_sources == {source: 12}


class _Lateness:
    """The worst oversleep of a 2 ms sleep in a side thread while the block runs: how late this process is scheduled
    on this machine right now (the GIL and the other core's load included)."""

    def __enter__(self):
        import threading
        self.worst_s, self._stop = 0.0, threading.Event()

        def watch():
            while not self._stop.is_set():
                begin = time.monotonic()
                time.sleep(0.002)
                self.worst_s = max(self.worst_s, time.monotonic() - begin - 0.002)

        self._thread = threading.Thread(target=watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "2", "--no-usage"]], indirect=True)
def test_without_usage_the_engine_tokenizer_counts(null_server):
    result, truth = _measure(null_server, concurrency=2, requests=4, output_len=32)
    assert result.token_sources == {"tokenizer": 4} and result.output_tokens == truth["tokens"] == 128


def test_errors_are_counted_by_kind():
    client = LoadClient(f"http://127.0.0.1:{free_port()}/v1", "x", timeout_s=5)
    result = run_scenario(client, name="dead", concurrency=2, request_rate=None, input_len=8, output_len=8,
                          requests=4, duration_s=None, warmup=0)
    assert result.completed == 0 and sum(result.errors.values()) == 4


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "4", "--token-rate", "400"]], indirect=True)
def test_bench_command(null_server, tmp_path, capsys):
    out = tmp_path / "bench.json"
    code = main(["bench", "--base-url", f"{null_server}/v1", "--model", "null", "--concurrency", "1,4",
                 "--output-len", "64", "--requests", "8", "--json", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    assert "| c1 | c=1 | natural, " in table and "| c4 | c=4 | natural, " in table and "| 8/8 |" in table
    saved = json.loads(out.read_text())
    assert [s["name"] for s in saved] == ["c1", "c4"] and saved[1]["output_tokens"] == 8 * 64


class _FinishedRequestsEngine:
    """Stands in for an engine's speculative-decoding counters (vLLM's /metrics, SGLang's cumulative acceptance): the
    null server's own count of the requests it finished, read before and after a scenario."""

    name = "null"
    launches = True  # the null server is a process of its own, watched like a launched engine
    load_request_extras: dict = {}

    @staticmethod
    def _finished(client, plan):
        return float(client.get(f"{plan.root_url}/truth").json()["requests"])

    def before_load(self, client, plan):
        return {"finished": self._finished(client, plan)}

    def after_load(self, client, plan, before):
        return {"requests_counted": self._finished(client, plan) - before["finished"]}

    def scenario_log_summary(self, log_text):
        return {}


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "2", "--token-rate", "2000"]], indirect=True)
def test_speculative_acceptance_counts_the_measured_requests_not_the_warmup(null_server, tmp_path):
    """Issue 13.6: the engine's counters are read after the warm-up, so their delta covers the measured requests."""
    from evalharness.matrix.schema import Cell, Matrix
    from evalharness.runner.cellphases import throughput_phase as _throughput_phase
    from evalharness.runner.cellstate import CellRun
    from evalharness.runner.progress import Progress
    from evalharness.serving.engines import LaunchPlan

    httpx.post(f"{null_server}/truth/reset")
    matrix = Matrix(name="t", engine="vllm", model="null", throughput={"scenarios": [
        {"name": "s", "concurrency": 1, "input_len": 8, "output_len": 16, "requests": 3, "warmup_requests": 2}]})
    plan = LaunchPlan(argv=["null"], env={}, root_url=null_server, base_url=f"{null_server}/v1",
                      health_path="/health", served_model_name="null")
    state = CellRun(Cell(id="c", axes={}, args={}, env={}, settings_hash="h", engine="vllm"), plan, tmp_path)
    _throughput_phase(matrix, _FinishedRequestsEngine(), state, Progress(total=1), lambda: True)
    [scenario] = state.throughput
    assert scenario.completed == 3 and scenario.engine == {"requests_counted": 3.0}  # not 5: the warm-up's 2 excluded


class _Stop(Exception):
    pass


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "1", "--token-rate", "50"]], indirect=True)
def test_a_signal_during_a_scenario_interrupts_it(null_server):
    """The runner turns SIGINT/SIGTERM into an exception raised by a signal handler; the event loop must let it out
    (uvloop does not), or a Ctrl-C during throughput would be lost."""
    import os
    import signal
    import threading

    def handler(signum, frame):
        raise _Stop(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGTERM))
    begin = time.monotonic()
    try:
        timer.start()
        with pytest.raises(_Stop):
            run_scenario(LoadClient(f"{null_server}/v1", "null"), name="t", concurrency=2, request_rate=None,
                         input_len=8, output_len=512, requests=8, duration_s=None, warmup=0)
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    assert time.monotonic() - begin < 5  # 8 x 512 tokens at 50 tok/s would take 40 s


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "1", "--token-rate", "400"]], indirect=True)
def test_repeats_measure_the_scenario_several_times_on_fresh_natural_prompts(null_server):
    """Issue 14: `repeats` runs the measured requests N times (the warm-up once), each repeat on prompts of its own,
    and keeps each repeat's output tok/s beside their mean; the prompts come from the named source."""
    from evalharness.phases.throughput.prompts import load_source

    httpx.post(f"{null_server}/truth/reset")
    source = load_source("natural")
    client = LoadClient(f"{null_server}/v1", "null", prompts=source)
    result = run_scenario(client, name="t", concurrency=2, request_rate=None, input_len=16, output_len=32,
                          requests=4, duration_s=None, warmup=1, repeats=3)
    truth = httpx.get(f"{null_server}/truth").json()
    assert truth["requests"] == 1 + 3 * 4 and result.completed == result.requests == 12
    assert len(result.repeat_tok_s) == 3 and result.output_tok_s == pytest.approx(sum(result.repeat_tok_s) / 3)
    low, high = result.tok_s_range()
    assert low <= result.output_tok_s <= high and result.prompts == "natural"
    # the null server counts prompt words: 12 distinct natural prompts (the warm-up's is not among the measured)
    expected = sum(len(source.prompt(1000 + r * 4 + i, 16).split()) for r in range(3) for i in range(4))
    assert result.prompt_tokens == expected


@pytest.mark.parametrize("null_server", [["--tokens-per-chunk", "1", "--token-rate", "400"]], indirect=True)
def test_streams_sharded_over_client_processes_measure_the_same(null_server):
    """Issue 14.3: `client_processes` splits the streams over processes; their records are summarised together."""
    from evalharness.phases.throughput.prompts import load_source
    from evalharness.phases.throughput.shards import shares

    assert shares(10, 3) == [4, 3, 3] and shares(2, 2) == [1, 1]
    httpx.post(f"{null_server}/truth/reset")
    client = LoadClient(f"{null_server}/v1", "null", prompts=load_source("natural"))
    result = run_scenario(client, name="t", concurrency=4, request_rate=None, input_len=16, output_len=128,
                          requests=8, duration_s=None, warmup=1, repeats=2, processes=2)
    truth = httpx.get(f"{null_server}/truth").json()
    assert truth["requests"] == 1 + 16 and result.completed == 16 and result.output_tokens == 16 * 128
    assert len(result.repeat_tok_s) == 2 and result.itl_s.mean == pytest.approx(0.0025, rel=0.1)
    # four streams in flight over two processes: each repeat's rate is that of four streams at 400 tok/s
    assert all(r == pytest.approx(1600, rel=0.15) for r in result.repeat_tok_s)
    # the shards draw the same prompts one process would have: each repeat's 8, none twice
    source = load_source("natural")
    assert result.prompt_tokens == sum(len(source.prompt(1000 + r * 8 + i, 16).split()) for r in range(2)
                                       for i in range(8))
    assert not client.hung


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "http://"])
def test_bench_with_a_base_url_that_is_no_http_url_is_one_line_and_exit_2(url, capsys):
    assert main(["bench", "--base-url", url, "--model", "x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"evalharness: error: --base-url {url!r}: not an http(s) URL")
