"""A scenario's streams sharded across client processes, so that the client is never the bottleneck.

One Python process of this client spends about 20 us of CPU per streamed event when an engine writes one event per
stream per step (benchmarks/client_capacity.py, paced regime): one core keeps up with some 40,000 events/s. An
engine serving 256 streams at 2.5 ms per step sends 100,000. Above one core's worth, the streams are split over
`client_processes` processes (a scenario key), each with its own event loop and connections; their request records
come back to the parent and are summarised together, so every figure is the same as from one process. The clocks
agree: time.perf_counter is CLOCK_MONOTONIC, one clock for every process of the machine.

The processes are spawned (not forked: the runner has threads), signal the parent when ready, and start together when
told; they ignore SIGINT (the parent handles Ctrl-C and terminates them), so an interrupt still tears down the server.
"""

from __future__ import annotations

import multiprocessing
import resource
import signal
from typing import Any

from evalharness.phases.throughput.eventloop import run_loop
from evalharness.phases.throughput.sse import RequestRecord


def shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` near-equal shares, larger ones first (pure)."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _shard(conn, client_class: type, client_kwargs: dict[str, Any], run_kwargs: dict[str, Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    client = client_class(**client_kwargs)  # the class comes pickled by name: no import of client.py here
    conn.send("ready")
    if conn.recv() != "go":
        return
    before = resource.getrusage(resource.RUSAGE_SELF)
    _, measured = run_loop(client.run(**run_kwargs))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    conn.send((measured, client.hung, cpu_s))
    conn.close()


def run_sharded(client_class: type, client_kwargs: dict[str, Any], processes: int, *, requests: int | None,
                duration_s: float | None, concurrency: int | None, request_rate: float | None, input_len: int,
                output_len: int, seed: int) -> tuple[list[RequestRecord], bool, float]:
    """The measured requests of one repeat over `processes` client processes: (records, whether one stopped hung,
    the processes' CPU seconds while they measured: what benchmarks/client_capacity.py reports per event)."""
    parts = max(1, min(processes, concurrency or processes, requests or processes))
    request_shares = shares(requests, parts) if requests is not None else [None] * parts
    concurrency_shares = shares(concurrency, parts) if concurrency else [None] * parts
    context = multiprocessing.get_context("spawn")
    procs, conns = [], []
    try:
        offset = 0
        for i in range(parts):
            parent_end, child_end = context.Pipe()
            run_kwargs = dict(requests=request_shares[i], duration_s=duration_s, concurrency=concurrency_shares[i],
                              request_rate=request_rate / parts if request_rate else None, input_len=input_len,
                              output_len=output_len, warmup=0, seed=seed + offset)
            offset += request_shares[i] if request_shares[i] is not None else 100_000
            proc = context.Process(target=_shard, args=(child_end, client_class, client_kwargs, run_kwargs),
                                   daemon=True)
            proc.start()
            procs.append(proc)
            conns.append(parent_end)
        for conn in conns:
            conn.recv()  # ready: imported, client built
        for conn in conns:
            conn.send("go")
        records: list[RequestRecord] = []
        hung = False
        cpu_s = 0.0
        for conn in conns:
            measured, shard_hung, shard_cpu_s = conn.recv()
            records += measured
            hung = hung or shard_hung
            cpu_s += shard_cpu_s
        return records, hung, cpu_s
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.terminate()
            proc.join(5)
