"""Measure throughput repeats of the embedded engine the way a cell does (the harness's own client, natural chat
prompts, each repeat inside a host window and judged for stream stalls), for one setting over one or more launches,
and write one JSON row per repeat. What benchmarks/data/speed_repeats.json was recorded with (2026-12-03).

    .venv/bin/python scripts/measure_repeats.py --dtype float32 --launches 2 --out rows.json
    .venv/bin/python scripts/measure_repeats.py --dtype float32 --arg=--stream-interval --arg=8 --label si8 --out r.json

The launch is the demo matrix's (matrices/cpu-smollm2.yaml: --max-model-len 2048, --enforce-eager unless
--compiled, its environment); scenarios `single` (1 stream, 2 requests of 64 tokens a repeat) and `batch8`
(8 streams, 8 requests); or with --sweep a load sweep (the figures the demo's sweep and SLO were chosen from):

    .venv/bin/python scripts/measure_repeats.py --sweep 1,2,4,8,16,32 --batch-repeats 2 --out sweep.json
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalharness.phases.throughput.client import LoadClient, measure_repeat  # noqa: E402
from evalharness.phases.throughput.prompts import load_source  # noqa: E402
from evalharness.phases.throughput.stats import judge_stalls, stream_stalls, summarize  # noqa: E402
from evalharness.serving import interference  # noqa: E402
from evalharness.serving.host import free_port  # noqa: E402


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--launches", type=int, default=1)
    parser.add_argument("--arg", action="append", default=[], help="one more engine argument (repeatable)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for the engine (repeatable)")
    parser.add_argument("--compiled", action="store_true", help="without --enforce-eager")
    parser.add_argument("--label", default="plain")
    parser.add_argument("--single-repeats", type=int, default=8)
    parser.add_argument("--batch-repeats", type=int, default=4)
    parser.add_argument("--sweep", default="", help="concurrencies, e.g. 1,2,4,8,16: measure a load sweep instead "
                        "(2 requests per stream a repeat, --batch-repeats repeats a step), with latency percentiles")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    rows = []
    for launch in range(args.launches):
        port = free_port()
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="2", HF_HUB_OFFLINE="1", VLLM_ENABLE_V1_MULTIPROCESSING="0",
                   VLLM_NO_USAGE_STATS="1", VLLM_CACHE_ROOT=str(ROOT / ".cache" / "vllm"))
        env.update(dict(e.split("=", 1) for e in args.env))
        argv = [str(ROOT / ".engine/venv/bin/python"), "-m", "vllm.entrypoints.openai.api_server", "--model",
                str(ROOT / ".engine/models/SmolLM2-135M-Instruct"), "--served-model-name", "m", "--port", str(port),
                "--max-model-len", "2048", *([] if args.compiled else ["--enforce-eager"]), "--dtype", args.dtype,
                *args.arg]
        log = open(f"{args.out}.server-{launch}.log", "w")
        server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        began = time.monotonic()
        try:
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if server.poll() is not None:
                    raise SystemExit(f"the engine exited during startup: see {log.name}")
                time.sleep(1)
            startup = time.monotonic() - began
            plan = [(f"c{c}", c, 2 * c, args.batch_repeats) for c in map(int, args.sweep.split(","))] \
                if args.sweep else [("single", 1, 2, args.single_repeats), ("batch8", 8, 8, args.batch_repeats)]
            for name, streams, requests, repeats in plan:
                client = LoadClient(f"http://127.0.0.1:{port}/v1", "m", api="chat", timeout_s=120,
                                    prompts=load_source("natural"))
                for repeat in range(repeats):
                    window = interference.open_window()
                    records = measure_repeat(client, repeat=repeat, concurrency=streams, request_rate=None,
                                             input_len=128, output_len=64, requests=requests, duration_s=None,
                                             warmup=1 if repeat == 0 else 0)
                    host = window.close()
                    one = summarize(name, records, concurrency=streams, request_rate=None, input_len=128,
                                    output_len=64)
                    stalls = stream_stalls(records)
                    disturbed = "; ".join(r for r in (interference.judge(host), judge_stalls(stalls)) if r)
                    row = dict(setting=args.label, dtype=args.dtype, launch=launch, startup_s=round(startup, 1),
                               scenario=name, repeat=repeat, tok_s=round(one.output_tok_s, 3), **stalls, **host,
                               seconds=round(one.duration_s, 2), tpot_p50_ms=_ms(one.tpot_s.p50),
                               tpot_p90_ms=_ms(one.tpot_s.p90), ttft_p90_ms=_ms(one.ttft_s.p90),
                               e2e_p90_ms=_ms(one.e2e_s.p90),
                               disturbed=disturbed)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
    Path(args.out).write_text(json.dumps(rows, indent=0) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
