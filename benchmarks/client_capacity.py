"""How much CPU does the load client spend per event, and does it keep up? Side by side, in one run, against the null
server that knows the truth.

1. Paced (the headline): the null server behaves like an engine's decode loop (--step-ms): every step, each running
   stream gets one event in its own socket write, at a fixed pace the same for every client. Engines write one event
   per stream per step, so this is the regime a load client meets in practice. Reported per client: CPU microseconds
   per event (the client process's user+system time over the events it received), the event rate it measured against
   the server's own, and the ratio of CPU per event to the best peer's. Two paces: 64 streams at ~13,600 events/s
   (a busy single engine) and 256 streams at ~100,000 events/s (the goal: a client that is never the bottleneck).
2. Bursty (secondary): the server writes 64 events per socket write, as fast as it can. This measures the client's
   parsing ceiling when many events arrive in one read (our fast path reads one usage count per read and parses
   nothing else); engines do not write like this, so it is an upper bound, not a figure a user will see.
3. Error: each client against the server streaming 200 tokens/s per request, with 1, 2 and 4 tokens per chunk (what
   speculative decoding looks like on the wire): measured output tokens/s and mean inter-token latency against the
   truth (5 ms).

Each client is pinned to one core and the server to the other (2 cores here). Peers: vLLM's benchmark client
(vllm.benchmarks.lib.endpoint_request_func, run from the engine environment: offline, it needs only the installed
vllm package) and SGLang's bench_serving client where it imports.

    .venv/bin/python benchmarks/client_capacity.py [--vllm-python .engine/venv/bin/python] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from evalharness.serving.host import free_port  # noqa: E402

DRIVER_OURS = """
import asyncio, json, resource, sys, time
from evalharness.phases.throughput.client import LoadClient
from evalharness.phases.throughput.eventloop import run_loop
from evalharness.phases.throughput.shards import run_sharded
from evalharness.phases.throughput.stats import summarize
url, c, n, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
processes = int(sys.argv[5]) if len(sys.argv) > 5 else 1
client = LoadClient(url + "/v1", "null", ignore_eos=True)
t0 = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_SELF)
if processes > 1:  # CPU of the shards while they measured (their start-up is not the client's per-event cost)
    records, _, shard_cpu = run_sharded(LoadClient, client.settings, processes, requests=n, duration_s=None,
                                        concurrency=c, request_rate=None, input_len=16, output_len=L, seed=0)
else:
    _, records = run_loop(client.run(requests=n, duration_s=None, concurrency=c, request_rate=None, input_len=16,
                                     output_len=L, warmup=0))
    shard_cpu = 0.0
wall = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
s = summarize("x", records, concurrency=c, request_rate=None, input_len=16, output_len=L)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime) + shard_cpu
print(json.dumps({"tokens": s.output_tokens, "wall_s": wall, "cpu_s": cpu,
                  "sys_s": None if processes > 1 else r1.ru_stime - r0.ru_stime, "output_tok_s": s.output_tok_s,
                  "itl_mean_s": s.itl_s.mean, "ok": s.completed, "tokens_per_chunk": s.tokens_per_chunk}))
"""

DRIVER_VLLM = """
import asyncio, json, resource, sys, time
import aiohttp
from vllm.benchmarks.lib.endpoint_request_func import RequestFuncInput, async_request_openai_completions
url, c, n, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
async def main():
    sem = asyncio.Semaphore(c)
    conn = aiohttp.TCPConnector(limit=c + 8)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=600)) as session:
        async def one(i):
            async with sem:
                inp = RequestFuncInput(prompt="hello " * 16, api_url=url + "/v1/completions", prompt_len=16,
                                       output_len=L, model="null", ignore_eos=True)
                return await async_request_openai_completions(inp, session)
        return await asyncio.gather(*(one(i) for i in range(n)))
t0 = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_SELF)
outs = asyncio.run(main())
wall = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
ok = [o for o in outs if o.success]
tokens = sum(o.output_tokens for o in ok)
span = max(o.start_time + o.latency for o in ok) - min(o.start_time for o in ok) if ok else 0
itls = [g for o in ok for g in o.itl]
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"tokens": tokens, "wall_s": wall, "cpu_s": cpu, "output_tok_s": tokens / span if span else 0,
                  "itl_mean_s": sum(itls) / len(itls) if itls else None, "ok": len(ok),
                  "sys_s": r1.ru_stime - r0.ru_stime}))
"""

DRIVER_SGLANG = """
import argparse, asyncio, json, resource, sys, time
import sglang.benchmark.serving as sv
class Args(argparse.Namespace):
    def __getattr__(self, name):  # bench_serving reads its CLI flags from a module-level `args`
        return None
sv.args = Args(disable_stream=False, disable_ignore_eos=False, return_logprob=False, top_logprobs_num=0)
url, c, n, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
async def main():
    sem = asyncio.Semaphore(c)
    async def one(i):
        async with sem:
            inp = sv.RequestFuncInput(prompt="hello " * 16, api_url=url + "/v1/completions", prompt_len=16,
                                      output_len=L, model="null", lora_name="", image_data=None, extra_request_body={})
            return await sv.async_request_openai_completions(inp)
    return await asyncio.gather(*(one(i) for i in range(n)))
t0 = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_SELF)
outs = asyncio.run(main())
wall = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
ok = [o for o in outs if o.success]
tokens = sum(o.output_len for o in ok)  # bench_serving takes the requested length as the count
span = max(o.start_time + o.latency for o in ok) - min(o.start_time for o in ok) if ok else 0
itls = [g for o in ok for g in o.itl]
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"tokens": tokens, "wall_s": wall, "cpu_s": cpu, "output_tok_s": tokens / span if span else 0,
                  "itl_mean_s": sum(itls) / len(itls) if itls else None, "ok": len(ok),
                  "error": None if ok else (outs[0].error if outs else "no output")}))
"""


def start_server(args: list[str], core: int | None) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, str(HERE / "null_server.py"), "--port", str(port), *args]
    proc = subprocess.Popen(cmd, preexec_fn=(lambda: os.sched_setaffinity(0, {core})) if core is not None else None)
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("null server did not start")


def run_client(python: str, driver: str, url: str, c: int, n: int, length: int, core: int | None,
               extra: tuple[str, ...] = ()) -> dict:
    cmd = [python, "-c", driver, url, str(c), str(n), str(length), *extra]
    if core is not None:
        cmd = ["taskset", "-c", str(core), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _ok(result: dict) -> bool:
    return bool(result.get("tokens")) and not result.get("error")


def measure_paced(clients: dict, streams: int, step_ms: float, length: int, waves: int, server_core,
                  client_core, shards: int = 1, rounds: int = 1) -> dict:
    target = streams / (step_ms / 1000)
    print(f"\n## paced: {streams} streams, one event per stream every {step_ms} ms (target {target:,.0f} events/s), "
          f"one event per socket write; {waves * streams} requests x {length} tokens per client")
    server, url = start_server(["--step-ms", str(step_ms), "--tokens-per-chunk", "1"], server_core)
    runs = [(name, python, driver, (), client_core) for name, (python, driver) in clients.items()]
    if shards > 1:  # the same client sharded over processes, free to use every core (the server's too: say so)
        runs.append((f"evalharness x{shards}", sys.executable, DRIVER_OURS, (str(shards),), None))
    per: dict[str, list[dict]] = {name: [] for name, *_ in runs}
    try:
        for round_ in range(rounds):  # clients alternate, so a shared machine's load falls on each alike
            for name, python, driver, extra, core in runs:
                httpx.post(f"{url}/truth/reset")
                result = run_client(python, driver, url, streams, waves * streams, length, core, extra)
                truth = httpx.get(f"{url}/truth").json()
                if not _ok(result):
                    print(f"{name:14s} failed: {result.get('error')}")
                    continue
                result["truth_tok_s"] = truth["output_tok_s"]
                result["us_per_event"] = result["cpu_s"] / result["tokens"] * 1e6
                per[name].append(result)
                chunk = result.get("tokens_per_chunk")
                sys_share = (f", {result['sys_s'] / result['cpu_s']:.0%} in the kernel"
                             if result.get("sys_s") is not None and result["cpu_s"] > 0 else "")
                print(f"{name:14s} {result['us_per_event']:6.1f} us CPU/event{sys_share}  "
                      f"({result['cpu_s'] / result['wall_s']:4.0%} of a core)  measured {result['output_tok_s']:9,.0f}"
                      f" events/s, server sent {truth['output_tok_s']:9,.0f}/s; ITL mean "
                      f"{(result['itl_mean_s'] or 0) * 1000:5.2f} ms (step {step_ms} ms); ok {result['ok']}/"
                      f"{waves * streams}" + (f"; {chunk:.2f} events per read" if chunk else ""))
    finally:
        server.terminate()
        server.wait(10)
    out = {name: sorted(results, key=lambda r: r["us_per_event"])[len(results) // 2]
           for name, results in per.items() if results}  # the median round
    ours = out.get("evalharness", {})
    peers = {k: v for k, v in out.items() if not k.startswith("evalharness")}
    if ours and peers:
        best_name, best = min(peers.items(), key=lambda kv: kv[1]["us_per_event"])
        ratio = best["us_per_event"] / ours["us_per_event"]
        print(f"HEADLINE paced {streams} streams, {target:,.0f} events/s (median of {rounds} rounds): evalharness "
              f"{ours['us_per_event']:.1f} us CPU/event vs {best_name} {best['us_per_event']:.1f}: {ratio:.2f}x less "
              f"CPU per event (goal >= 2x); at this cost one process keeps up with about "
              f"{1e6 / ours['us_per_event']:,.0f} events/s on one core")
    return out


def measure_bursty(clients: dict, args: argparse.Namespace, burst: int, server_core, client_core) -> dict:
    print(f"\n## bursty (secondary: {burst} events per server write, as fast as the server can; the client's parse "
          f"ceiling when many events share one read, which engines do not do): {args.requests} requests x "
          f"{args.output_len} tokens, concurrency {args.concurrency}")
    server, url = start_server(["--token-rate", "0", "--tokens-per-chunk", "1", "--burst", str(burst)], server_core)
    capacity = {}
    try:
        for name, (python, driver) in clients.items():
            httpx.post(f"{url}/truth/reset")
            result = run_client(python, driver, url, args.concurrency, args.requests, args.output_len, client_core)
            truth = httpx.get(f"{url}/truth").json()
            capacity[name] = result
            if not _ok(result):
                print(f"{name:12s} failed: {result.get('error')}")
                continue
            print(f"{name:12s} {result['tokens'] / result['wall_s']:10.0f} tok/s wall  "
                  f"{result['cpu_s'] / result['tokens'] * 1e6:6.2f} us CPU/event  "
                  f"(tokens {result['tokens']}, truth {truth['tokens']}, ok {result['ok']}/{args.requests})")
    finally:
        server.terminate()
        server.wait(10)
    ours = capacity.get("evalharness", {})
    peers = {k: v for k, v in capacity.items() if k != "evalharness" and _ok(v)}
    if _ok(ours) and peers:
        best_name, best = max(peers.items(), key=lambda kv: kv[1]["tokens"] / kv[1]["cpu_s"])
        print(f"bursty ratio vs {best_name}: per CPU-second "
              f"{ours['tokens'] / ours['cpu_s'] / (best['tokens'] / best['cpu_s']):.2f}x "
              "(an upper bound: not the regime engines produce)")
    return capacity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=1024)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--paced", type=lambda v: [(int(a), float(b)) for a, b in (x.split("@") for x in v.split(","))],
                        default=[(64, 4.7), (256, 2.56)], help="STREAMS@STEP_MS,...: the paced regimes")
    parser.add_argument("--paced-len", type=int, default=384, help="tokens per request in the paced regimes")
    parser.add_argument("--waves", type=int, default=2, help="requests per stream in the paced regimes")
    parser.add_argument("--quick", action="store_true", help="the paced headline only")
    parser.add_argument("--rounds", type=int, default=3, help="paced runs per client, alternating (median shown)")
    parser.add_argument("--shards", type=int, default=2, help="also run ours sharded over this many processes in "
                        "paced regimes of 256 streams or more (1: not)")
    parser.add_argument("--vllm-python", default=str(REPO / ".engine" / "venv" / "bin" / "python"))
    parser.add_argument("--sglang-python", default=str(REPO / ".engine" / "venv" / "bin" / "python"),
                        help="a python with sglang importable, for SGLang's bench_serving client")
    parser.add_argument("--bursts", type=lambda v: [int(x) for x in v.split(",")], default=[64])
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = (cores[0], cores[1]) if len(cores) >= 2 else (None, None)
    load = os.getloadavg()
    print(f"# client capacity; {len(cores)} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} at the "
          "start (a shared machine: figures move with the load; compare clients within one run)")

    clients = {"evalharness": (sys.executable, DRIVER_OURS)}
    if Path(args.vllm_python).exists():
        clients["vllm bench"] = (args.vllm_python, DRIVER_VLLM)
    else:
        print(f"(vLLM's client not measured: no {args.vllm_python}; pass --vllm-python)")
    if Path(args.sglang_python).exists() and subprocess.run(
            [args.sglang_python, "-c", "import sglang.benchmark.serving"], capture_output=True).returncode == 0:
        clients["sglang bench"] = (args.sglang_python, DRIVER_SGLANG)

    for streams, step_ms in args.paced:
        measure_paced(clients, streams, step_ms, args.paced_len, args.waves, server_core, client_core,
                      args.shards if streams >= 256 else 1, args.rounds)
    if args.quick:
        return
    for burst in args.bursts:
        measure_bursty(clients, args, burst, server_core, client_core)

    print("\n## error: 200 tokens/s per request, concurrency 4, 16 requests x 256 tokens; truth ITL 5.00 ms")
    for k in (1, 2, 4):
        server, url = start_server(["--token-rate", "200", "--tokens-per-chunk", str(k)], server_core)
        try:
            for name, (python, driver) in clients.items():
                httpx.post(f"{url}/truth/reset")
                result = run_client(python, driver, url, 4, 16, 256, client_core)
                truth = httpx.get(f"{url}/truth").json()
                if not _ok(result):
                    print(f"k={k} {name:12s} failed: {result.get('error')}")
                    continue
                err = result["output_tok_s"] / truth["output_tok_s"] - 1
                itl = result["itl_mean_s"]
                print(f"k={k} {name:12s} output tok/s {result['output_tok_s']:7.1f} "
                      f"vs truth {truth['output_tok_s']:7.1f} "
                      f"({err:+.2%}); ITL mean {itl * 1000 if itl else float('nan'):6.2f} ms")
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
