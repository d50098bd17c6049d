"""The engine launches of scripts/make_detector_corpus.py and what each one answers.

Owns `Launch` and `LAUNCHES` (healthy and broken configurations, in order of importance), the model folders with an
altered tokenizer.json (`make_tokenizer`), the vLLM server of one launch (`Engine`), its chat and completion requests
and `run_launch`: one launch's records and probe answers.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from detector_corpus_prompts import CHAT_PROMPTS, ROOT, lm_eval_prompts, request_faults

@dataclass
class Launch:
    name: str
    args: list[str] = field(default_factory=list)
    dtype: str = "float32"
    tokenizer: str | None = None  # "no_decoder" | "scrambled"
    breaks: bool = False
    prompts: int = 60  # how many chat prompts
    max_tokens: int | None = None  # overrides each prompt's own
    probes: bool = False
    lm_eval: int = 0  # lm-eval prompts per task
    request_faults: bool = False
    why: str = ""


LAUNCHES = [  # in order of importance: a run out of budget skips the last ones
    Launch("healthy-float32", probes=True, lm_eval=12, request_faults=True, args=["--trust-request-chat-template"],
           why="the reference configuration"),
    Launch("rope-theta-10", breaks=True, probes=True, prompts=40, max_tokens=80, lm_eval=3,
           args=["--hf-overrides", json.dumps({"rope_parameters": {"rope_theta": 10.0, "rope_type": "default"}})],
           why="the demo's garbage cell: rope_theta 10 instead of 100000"),
    Launch("healthy-bfloat16", dtype="bfloat16", probes=True, prompts=0, why="the demo's drift cell"),
    Launch("no-bytelevel-decoder", breaks=True, prompts=30, max_tokens=80, lm_eval=2, tokenizer="no_decoder",
           why="tokenizer.json without its ByteLevel decoder: tokens printed as stored (Ġ for space, Ċ for newline)"),
    Launch("scrambled-vocab", breaks=True, prompts=30, max_tokens=80, lm_eval=2, tokenizer="scrambled",
           why="tokenizer.json vocabulary ids shuffled (special tokens kept): the model reads and writes other tokens"),
    Launch("rope-linear-64", breaks=True, prompts=30, max_tokens=80, lm_eval=2,
           args=["--hf-overrides", json.dumps({"rope_parameters": {"rope_theta": 100000.0, "rope_type": "linear",
                                                                   "factor": 64.0}})],
           why="wrong rope scaling: linear factor 64 on a model trained without scaling"),
    Launch("rms-norm-eps-100", breaks=True, prompts=30, max_tokens=80, lm_eval=2,
           args=["--hf-overrides", json.dumps({"rms_norm_eps": 100.0})],
           why="rms_norm_eps 100 instead of 1e-5: every hidden state squashed toward zero"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tokenizer(model: Path, kind: str, tmp: Path) -> Path:
    """A model folder of symlinks to the real files with an altered tokenizer.json (never inside the repository)."""
    out = tmp / f"model-{kind}"
    out.mkdir()
    for item in model.iterdir():
        if item.name != "tokenizer.json":
            (out / item.name).symlink_to(item.resolve())
    tok = json.loads((model / "tokenizer.json").read_text(encoding="utf-8"))
    if kind == "no_decoder":
        tok["decoder"] = None
    elif kind == "scrambled":
        vocab = tok["model"]["vocab"]
        special = {t["content"] for t in tok["added_tokens"]}
        keys = [k for k in vocab if k not in special]
        ids = [vocab[k] for k in keys]
        random.Random(17).shuffle(ids)
        vocab.update(zip(keys, ids))
    (out / "tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    return out


class Engine:
    def __init__(self, python: Path, model: Path, launch: Launch, log: Path):
        self.port = free_port()
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"),
               "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
               "VLLM_CACHE_ROOT": os.environ.get("VLLM_CACHE_ROOT",
                                                 str(Path(tempfile.gettempdir()) / "evh-vllm-cache"))}
        argv = [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
                "--served-model-name", "smollm2", "--host", "127.0.0.1", "--port", str(self.port),
                "--dtype", launch.dtype, "--max-model-len", "1024", "--enforce-eager", *launch.args]
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait(self, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"engine exited with {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(1)
        raise RuntimeError("engine not ready in time")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


def chat(url: str, prompt: str, body: dict) -> dict:
    req = {"model": "smollm2", "messages": [{"role": "user", "content": prompt}], "temperature": 0.0, "seed": 0,
           **body}
    r = httpx.post(f"{url}/v1/chat/completions", json=req, timeout=300)
    r.raise_for_status()
    choice = r.json()["choices"][0]
    return {"text": choice["message"].get("content") or "", "finish_reason": choice.get("finish_reason")}


def complete(url: str, prompt: str, max_tokens: int) -> dict:
    req = {"model": "smollm2", "prompt": prompt, "temperature": 0.0, "max_tokens": max_tokens, "stop": ["\n"]}
    r = httpx.post(f"{url}/v1/completions", json=req, timeout=300)
    r.raise_for_status()
    choice = r.json()["choices"][0]
    return {"text": choice["text"], "finish_reason": choice.get("finish_reason")}


def run_launch(launch: Launch, python: Path, model: Path, tmp: Path, logs: Path) -> tuple[list[dict], list[dict]]:
    folder = make_tokenizer(model, launch.tokenizer, tmp) if launch.tokenizer else model
    engine = Engine(python, folder, launch, logs / f"{launch.name}.log")
    flags = " ".join(a if a.startswith("--") else repr(a) for a in launch.args)
    if launch.tokenizer:
        flags += f" (model folder with an altered tokenizer.json: {launch.why})"
    base_how = f"vLLM CPU 0.32 --dtype {launch.dtype} --enforce-eager {flags}".strip()
    label = "garbage" if launch.breaks else "healthy"
    jobs = []  # (record fields, callable)
    probes = []
    try:
        t0 = time.monotonic()
        engine.wait()
        print(f"[{launch.name}] ready in {time.monotonic() - t0:.0f} s", flush=True)
        if launch.probes:
            for line in (ROOT / "tasks" / "probes" / "default.jsonl").read_text().splitlines():
                p = json.loads(line)
                prompt = p["messages"][-1]["content"]
                jobs.append(({"class": "probe", "prompt": prompt, "expect_stop": p.get("expect_stop", False),
                              "probe_id": p["id"], "how": f"{base_how}; chat, temperature 0, max_tokens 64"},
                             lambda pr=prompt: chat(engine.url, pr, {"max_tokens": 64})))
        for cls, prompt, max_tokens in CHAT_PROMPTS[: launch.prompts]:
            mt = launch.max_tokens or min(max_tokens, 128)
            jobs.append(({"class": cls, "prompt": prompt, "expect_stop": cls == "terse",
                          "how": f"{base_how}; chat, temperature 0, max_tokens {mt}"},
                         lambda pr=prompt, mt=mt: chat(engine.url, pr, {"max_tokens": mt})))
        for cls, prompt, mt in lm_eval_prompts(launch.lm_eval):
            jobs.append(({"class": cls, "prompt": prompt, "expect_stop": True,
                          "how": f"{base_how}; completions, temperature 0, max_tokens {mt}, stop newline"},
                         lambda pr=prompt, mt=mt: complete(engine.url, pr, mt)))
        fault_jobs = []
        if launch.request_faults:
            for cls, body, index in request_faults(engine.url):
                prompt = CHAT_PROMPTS[index % len(CHAT_PROMPTS)][1]
                shown = {k: (v if k != "chat_template" else f"<{cls.removeprefix('chat_template_')} template>")
                         for k, v in body.items()}
                fault_jobs.append(({"class": cls, "prompt": prompt, "expect_stop": False,
                                    "how": f"{base_how}; chat request {json.dumps(shown)}"},
                                   lambda pr=prompt, b=body: chat(engine.url, pr, b)))
        records = []

        def attempt(job):
            try:
                return job, job[1]()
            except httpx.HTTPError as exc:  # one refused request (a parameter this build rejects) costs one record
                body = exc.response.text[:200] if isinstance(exc, httpx.HTTPStatusError) else ""
                print(f"[{launch.name}] {job[0]['how'][-120:]}: {exc.__class__.__name__} {body}", flush=True)
                return job, None

        with ThreadPoolExecutor(8) as pool:
            results = [(job, result) for job, result in pool.map(attempt, [*jobs, *fault_jobs]) if result is not None]
        for (fields, _), result in results:
            faulty = launch.breaks or any(job[0] is fields for job in fault_jobs)
            rec = {"id": "", "text": result["text"], "label": "garbage" if faulty else label,
                   "class": fields["class"] if not launch.breaks else f"{launch.name}/{fields['class']}",
                   "source": f"engine:{launch.name}", "how": fields["how"], "prompt": fields["prompt"],
                   "finish_reason": result["finish_reason"], "expect_stop": fields["expect_stop"]}
            if "probe_id" in fields:
                probes.append({"cell": launch.name, "id": fields["probe_id"], "prompt": fields["prompt"],
                               "output": result["text"], "finish_reason": result["finish_reason"]})
            records.append(rec)
        print(f"[{launch.name}] {len(records)} outputs in {time.monotonic() - t0:.0f} s", flush=True)
        return records, probes
    finally:
        engine.stop()
