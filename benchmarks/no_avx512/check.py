"""Does the emulation take? The embedded engine serving float32 and bfloat16, natively and with the kernels limited to
AVX2 (env.sh and sitecustomize.py here), side by side in one run: single-stream greedy decode tok/s, prefill tok/s
(4 new prompts of about 900 tokens at once), and which kernels library vLLM loaded. The figures, and what the
emulation does and does not reproduce, are in README.md here. Imports only the standard library (runs from the
harness's .venv or any python); launches argv lists, tears every server down.

    .venv/bin/python benchmarks/no_avx512/check.py            # about 4 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def emulation_env() -> dict[str, str]:
    """What env.sh exports, read from it so that the two never disagree."""
    env: dict[str, str] = {"PYTHONPATH": str(HERE)}
    for line in (HERE / "env.sh").read_text().splitlines():
        if line.startswith("export ") and "PYTHONPATH" not in line:
            for pair in line.removeprefix("export ").split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.load(answer)


def wait_ready(url: str, proc: subprocess.Popen, limit_s: float) -> float:
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        if proc.poll() is not None:
            raise RuntimeError(f"the engine exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return time.monotonic() - start
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise RuntimeError(f"not ready after {limit_s:.0f} s")


def measure(python: str, model: str, dtype: str, emulated: bool, tokens: int, repeats: int, log: Path) -> dict:
    port = free_port()
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    if emulated:
        env.update(emulation_env())
    argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model, "--served-model-name", "m",
            "--dtype", dtype, "--max-model-len", "1024", "--enforce-eager", "--port", str(port)]
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        startup = wait_ready(url, proc, 600)
        body = {"model": "m", "prompt": PROMPT, "max_tokens": tokens, "temperature": 0, "ignore_eos": True}
        post(url + "/v1/completions", {**body, "max_tokens": 8})  # warm-up
        rates, prefill = [], []
        for _ in range(repeats):
            start = time.monotonic()
            answer = post(url + "/v1/completions", body)
            rates.append(answer["usage"]["completion_tokens"] / (time.monotonic() - start))
        # prefill, as the quality tasks' few-shot prompts and loglikelihood requests are: 4 prompts of about 900
        # tokens at once, one token each
        for repeat in range(-1, repeats):  # -1: a warm-up, not counted
            # each prompt new to the server: a cached prefix would be no prefill at all
            long = {**body, "prompt": [f"{repeat}.{i} " + PROMPT * 50 for i in range(4)], "max_tokens": 1}
            start = time.monotonic()
            answer = post(url + "/v1/completions", long)
            if repeat >= 0:
                prefill.append(answer["usage"]["prompt_tokens"] / (time.monotonic() - start))
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return {"dtype": dtype, "emulated": emulated, "startup_s": round(startup, 1),
            "tok_s": sorted(round(r, 1) for r in rates), "prefill_tok_s": sorted(round(r) for r in prefill)}


# vLLM picks its kernels library at import (vllm/platforms/cpu.py, import_kernels) and logs nothing about it: ask a
# process that does the same which of vllm/_C*.so it mapped
KERNELS_PROBE = """
from vllm.platforms.cpu import CpuPlatform
CpuPlatform.import_kernels()
print(sorted({line.strip().split("/")[-1] for line in open("/proc/self/maps") if "/vllm/_C" in line}))
"""


def kernels_loaded(python: str, emulated: bool) -> str:
    env = {**os.environ, **(emulation_env() if emulated else {})}
    done = subprocess.run([python, "-c", KERNELS_PROBE], env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 or not done.stdout.strip():
        return f"probe failed: {done.stderr.strip()[-200:]}"
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=str(REPO / ".engine" / "venv" / "bin" / "python"))
    parser.add_argument("--model", default=str(REPO / ".engine" / "models" / "SmolLM2-135M-Instruct"))
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--logs", default="/tmp/no_avx512-check")
    args = parser.parse_args()
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    flags = [f for f in open("/proc/cpuinfo").read().split() if f in ("avx512f", "avx512_bf16", "amx_tile")]
    print(f"processor flags: {' '.join(sorted(set(flags))) or 'none of avx512f, avx512_bf16, amx_tile'}")
    rows = []
    for emulated in (False, True):
        kernels = kernels_loaded(args.python, emulated)
        for dtype in ("float32", "bfloat16"):
            row = measure(args.python, args.model, dtype, emulated, args.tokens, args.repeats,
                          logs / f"{dtype}-{'avx2' if emulated else 'native'}.log")
            row["kernels"] = kernels
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| kernels | library loaded | dtype | startup s | single-stream decode tok/s (repeats) | bf16 / f32 | "
          "prefill tok/s, 4 prompts at once (repeats) | bf16 / f32 |")
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        f32 = next(r for r in rows if r["emulated"] == row["emulated"] and r["dtype"] == "float32")
        cells = []
        for key in ("tok_s", "prefill_tok_s"):
            median = row[key][len(row[key]) // 2]
            cells.append(f"{median} ({', '.join(map(str, row[key]))}) | {median / f32[key][len(f32[key]) // 2]:.2f}")
        print(f"| {'AVX2 (emulated)' if row['emulated'] else 'native'} | {row['kernels']} | {row['dtype']} | "
              f"{row['startup_s']} | {' | '.join(cells)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
