"""How fast and how right is the load client? Side by side, in one run, against the null server that knows the truth.

1. Capacity: each client, pinned to one core (the null server on the other), streams as many tokens as it can
   (1 token per chunk, the server writing bursts of chunks so it is never the bottleneck). Reported: tokens per second
   of wall time and tokens per CPU-second of the client process, and the ratio to the best peer.
2. Error: each client against the server streaming 200 tokens/s per request, with 1, 2 and 4 tokens per chunk (what
   speculative decoding looks like on the wire). Reported: measured output tokens/s against the truth, and the mean
   inter-token latency against the truth (5 ms).

Peers: vLLM's benchmark client (vllm.benchmarks.lib.endpoint_request_func) and SGLang's bench_serving client
(sglang.benchmark.serving), both run in the engine environment where scripts/setup.sh installed them.

    .venv/bin/python benchmarks/client_capacity.py [--requests 64 --output-len 2048 --concurrency 32]
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
from evalharness.phases.throughput.client import LoadClient, run_loop
from evalharness.phases.throughput.stats import summarize
url, c, n, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
client = LoadClient(url + "/v1", "null", ignore_eos=True)
t0 = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_SELF)
_, records = run_loop(client.run(requests=n, duration_s=None, concurrency=c, request_rate=None, input_len=16,
                                 output_len=L, warmup=0))
wall = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
s = summarize("x", records, concurrency=c, request_rate=None, input_len=16, output_len=L)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"tokens": s.output_tokens, "wall_s": wall, "cpu_s": cpu, "output_tok_s": s.output_tok_s,
                  "itl_mean_s": s.itl_s.mean, "ok": s.completed}))
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
                  "itl_mean_s": sum(itls) / len(itls) if itls else None, "ok": len(ok)}))
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


def run_client(python: str, driver: str, url: str, c: int, n: int, length: int, core: int | None) -> dict:
    cmd = [python, "-c", driver, url, str(c), str(n), str(length)]
    if core is not None:
        cmd = ["taskset", "-c", str(core), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=900)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_capacity(clients: dict, args: argparse.Namespace, burst: int, server_core, client_core) -> dict:
    print(f"\n# capacity: {args.requests} requests x {args.output_len} tokens, concurrency {args.concurrency}, "
          f"1 token per chunk, {burst} chunk(s) per server write; server on core {server_core}, "
          f"client on core {client_core}")
    server, url = start_server(["--token-rate", "0", "--tokens-per-chunk", "1", "--burst", str(burst)], server_core)
    capacity = {}
    try:
        for name, (python, driver) in clients.items():
            httpx.post(f"{url}/truth/reset")
            result = run_client(python, driver, url, args.concurrency, args.requests, args.output_len, client_core)
            truth = httpx.get(f"{url}/truth").json()
            capacity[name] = result
            if result.get("error") or not result.get("tokens"):
                print(f"{name:12s} failed: {result.get('error')}")
                continue
            print(f"{name:12s} {result['tokens'] / result['wall_s']:10.0f} tok/s wall  "
                  f"{result['tokens'] / max(result['cpu_s'], 1e-9):10.0f} tok/CPU-s  "
                  f"(tokens {result['tokens']}, truth {truth['tokens']})")
    finally:
        server.terminate()
        server.wait(10)
    return capacity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=2048)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--vllm-python", default=str(REPO / ".engine" / "venv" / "bin" / "python"))
    parser.add_argument("--sglang-python", default=str(REPO / ".engine" / "venv" / "bin" / "python"),
                        help="a python with sglang importable, for SGLang's bench_serving client")
    parser.add_argument("--bursts", type=lambda v: [int(x) for x in v.split(",")], default=[64, 1],
                        help="chunks per server write: 64 (many events per read: the client's per-event cost) and 1 "
                             "(one event per read, the server then often the bottleneck: read tok/CPU-s)")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = (cores[0], cores[1]) if len(cores) >= 2 else (None, None)

    clients = {"evalharness": (sys.executable, DRIVER_OURS)}
    if Path(args.vllm_python).exists():
        clients["vllm bench"] = (args.vllm_python, DRIVER_VLLM)
    if Path(args.sglang_python).exists() and subprocess.run(
            [args.sglang_python, "-c", "import sglang.benchmark.serving"], capture_output=True).returncode == 0:
        clients["sglang bench"] = (args.sglang_python, DRIVER_SGLANG)

    for burst in args.bursts:
        capacity = measure_capacity(clients, args, burst, server_core, client_core)
        ours = capacity.get("evalharness", {})
        peers = {k: v for k, v in capacity.items() if k != "evalharness" and v.get("tokens") and not v.get("error")}
        if ours.get("tokens") and peers:
            best_name, best = max(peers.items(), key=lambda kv: kv[1]["tokens"] / kv[1]["cpu_s"])
            print(f"ratio vs best peer ({best_name}): "
                  f"wall {ours['tokens'] / ours['wall_s'] / (best['tokens'] / best['wall_s']):.2f}x, "
                  f"per CPU-second {ours['tokens'] / ours['cpu_s'] / (best['tokens'] / best['cpu_s']):.2f}x")

    print("\n# error: 200 tokens/s per request, concurrency 4, 16 requests x 256 tokens; truth ITL 5.00 ms")
    for k in (1, 2, 4):
        server, url = start_server(["--token-rate", "200", "--tokens-per-chunk", str(k)], server_core)
        try:
            for name, (python, driver) in clients.items():
                httpx.post(f"{url}/truth/reset")
                result = run_client(python, driver, url, 4, 16, 256, client_core)
                truth = httpx.get(f"{url}/truth").json()
                if result.get("error") or not result.get("tokens"):
                    print(f"k={k} {name:12s} failed: {result.get('error')}")
                    continue
                err = result["output_tok_s"] / truth["output_tok_s"] - 1
                itl = result["itl_mean_s"]
                print(f"k={k} {name:12s} output tok/s {result['output_tok_s']:7.1f} vs truth {truth['output_tok_s']:7.1f} "
                      f"({err:+.2%}); ITL mean {itl * 1000 if itl else float('nan'):6.2f} ms")
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
