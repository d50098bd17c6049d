"""Regenerate the labelled garbage-detector corpus, tests/data/detector_corpus.jsonl, from the real embedded engine.

Each launch serves SmolLM2-135M-Instruct on vLLM's CPU build, healthy or under a fault that really breaks a model, and
asks it the same kinds of prompts: the probe set, the shipped lm-eval tasks' prompts, and the chat prompts below (code,
tables, lists, terse answers, non-English answers, legitimate repetition). Request-level faults (extreme sampling
temperature, a logit bias forcing one token, a repetition reward, a wrong chat template sent with the request) run on
the healthy server. Broken model folders (a scrambled vocabulary, a tokenizer without its byte-level decoder) are built
in a temporary folder outside git from symlinks to the real weights plus an altered tokenizer.json, and removed after.

Every record says how it was made (`source`: the launch; `how`: its flags and the request's parameters), which split
it belongs to (by a hash of its prompt, so the answers of two launches to one prompt never straddle the split), and
its label: launches and request faults marked `breaks=True` give `garbage`, the rest `healthy`; `--review FILE`
(a JSONL of {"id", "label", "class", "note"}) overrides single records after reading them (the review file of the
committed corpus is tests/data/detector_corpus_review.jsonl). Hand-written examples come from detector_handwritten.py
beside the corpus and are marked `source: hand-written`. The probe answers of the healthy float32, healthy bfloat16
and rope_theta=10 launches also go to tests/data/probe_outputs.jsonl, for the cell-verdict test.

    VLLM_CPU_KVCACHE_SPACE=1 .venv/bin/python scripts/make_detector_corpus.py --engine-dir .engine   # ~20 minutes
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"

CHAT_PROMPTS = [
    # (class, prompt, max_tokens)
    ("code", "Write a Python function that checks whether a number is prime.", 160),
    ("code", "Write a JavaScript function that reverses a string.", 120),
    ("code", "Write a SQL query that selects all users older than 30 from a table named users.", 100),
    ("code", "Write a bash command that counts the lines in all .txt files in a folder.", 100),
    ("code", "Show a Python class for a bank account with deposit and withdraw methods.", 200),
    ("code", "Write a C function that returns the maximum of an array of integers.", 160),
    ("code", "Write a Python list comprehension that squares the numbers from 1 to 10.", 80),
    ("code", "Write an HTML page with a heading and a paragraph.", 140),
    ("table", "Make a Markdown table of three planets and their number of moons.", 140),
    ("table", "Create a table with the days of the week and one activity for each day.", 180),
    ("table", "Give me a CSV with three rows of names and ages.", 100),
    ("list", "List five vegetables that are green.", 100),
    ("list", "Give me a numbered list of four steps to make tea.", 140),
    ("list", "Name three famous painters.", 80),
    ("list", "What are the primary colours? Answer as a bullet list.", 80),
    ("terse", "What is 7 times 6? Reply with the number only.", 16),
    ("terse", "Is water wet? Answer yes or no.", 16),
    ("terse", "What is the chemical symbol for gold? One word.", 16),
    ("terse", "How many legs does a spider have? Answer with a number.", 16),
    ("terse", "What is the largest ocean on Earth? Answer in one word.", 16),
    ("terse", "Spell the word cat backwards.", 16),
    ("non_english", "Translate into French: Good morning, how are you?", 60),
    ("non_english", "Translate into Spanish: The house is big and the garden is green.", 60),
    ("non_english", "Translate into German: I like to read books in the evening.", 60),
    ("non_english", "Réponds en français : quelle est la couleur du ciel ?", 80),
    ("non_english", "¿Cuál es la capital de España? Responde en español.", 60),
    ("non_english", "Wie viele Tage hat eine Woche? Antworte auf Deutsch.", 60),
    ("non_english", "Переведи на русский: I love my cat.", 60),
    ("non_english", "Translate 'thank you' into Japanese, Chinese and Korean.", 80),
    ("repetition", "Write a short chant for a football team that repeats the team name.", 100),
    ("repetition", "How do people write laughter in a text message?", 100),
    ("repetition", "Repeat the word 'hello' five times.", 40),
    ("repetition", "Write the lyrics of a lullaby with a refrain.", 160),
    ("repetition", "Count from 1 to 20.", 100),
    ("repetition", "Write the letter A ten times.", 40),
    ("structured", "Write the 3x3 identity matrix.", 100),
    ("structured", "Give a 2x2 matrix and its determinant.", 120),
    ("structured", "Write a JSON object describing a book with title, author and year.", 100),
    ("structured", "Write a short Markdown document with a title, a horizontal rule and a paragraph.", 140),
    ("structured", "Write a YAML config with a name, a port and a list of hosts.", 100),
    ("structured", "Print the multiplication table of 3 from 1 to 5.", 120),
    ("prose", "Write a haiku about autumn.", 60),
    ("prose", "Describe a sunset in three sentences.", 120),
    ("prose", "What is photosynthesis?", 160),
    ("prose", "Why is the sea salty?", 160),
    ("prose", "Tell me a short joke.", 80),
    ("prose", "Write a short email asking a colleague for a meeting.", 160),
    ("prose", "What are the benefits of exercise?", 160),
    ("prose", "Explain what a computer virus is to a child.", 160),
    ("prose", "Summarize the story of Cinderella in two sentences.", 120),
    ("prose", "What should I pack for a weekend trip to the mountains?", 160),
    ("prose", "Give me a recipe for pancakes.", 200),
    ("prose", "Who was Albert Einstein?", 160),
    ("prose", "What is the difference between weather and climate?", 160),
    ("prose", "Write a limerick about a dog.", 80),
    ("prose", "How does a bicycle work?", 160),
]

BAD_TEMPLATES = {
    # content only, no roles and no generation prompt: the model continues the user's text as if it were its own
    "no_roles": "{% for m in messages %}{{ m['content'] }}{% endfor %}",
    # the special tokens of another family and the content reversed character by character
    "reversed": "{% for m in messages %}[INST] {{ m['content'][::-1] }} [/INST]{% endfor %}",
}


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
               "VLLM_CACHE_ROOT": os.environ.get("VLLM_CACHE_ROOT", str(Path(tempfile.gettempdir()) / "evh-vllm-cache"))}
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


def lm_eval_prompts(per_task: int) -> list[tuple[str, str, int]]:
    """(class, completion prompt, max_tokens) from the shipped tasks' own templates."""
    out = []
    data = ROOT / "tasks" / "lm_eval" / "data"
    rows = [json.loads(line) for line in (data / "capitals.jsonl").read_text().splitlines() if line.strip()]
    head = ("Q: What is the capital of Italy?\nA: Rome\n\nQ: What is the capital of Kenya?\nA: Nairobi\n\n"
            "Q: What is the capital of Japan?\nA: Tokyo\n\n")
    out += [("lm_eval_capitals", f"{head}Q: What is the capital of {r['country']}?\nA:", 16) for r in rows[:per_task]]
    rows = [json.loads(line) for line in (data / "arithmetic.jsonl").read_text().splitlines() if line.strip()]
    out += [("lm_eval_arithmetic", f"Q: What is 2 plus 3?\nA: 5\n\nQ: What is 4 plus 4?\nA: 8\n\n"
             f"Q: What is {r['a']} plus {r['b']}?\nA:", 8) for r in rows[:per_task]]
    rows = [json.loads(line) for line in (data / "copy.jsonl").read_text().splitlines() if line.strip()]
    out += [("lm_eval_copy", f"Repeat the word.\nWord: table\nAnswer: table\n\nWord: {r['word']}\nAnswer:", 8)
            for r in rows[:per_task]]
    return out


def request_faults(url: str) -> list[dict]:
    """Request-level faults on a healthy server: (class, body overrides, prompt index)."""
    tokens = {}
    for text in [" 0", "Paris", " the", "ha", "!", " Buffalo", "42", "xyz", "ing", " Ġ"]:
        ids = httpx.post(f"{url}/tokenize", json={"model": "smollm2", "prompt": text, "add_special_tokens": False},
                         timeout=10).json()["tokens"]
        tokens[text] = ids[-1]
    faults = []
    for i, temp in enumerate([2.0] * 24):  # vLLM 0.32 refuses temperatures above 2 ("must be in [0, 2]")
        faults.append(("high_temperature", {"temperature": temp, "top_p": 1.0, "seed": i, "max_tokens": 64}, i))
    for i, (text, tid) in enumerate(tokens.items()):
        faults.append(("logit_bias", {"logit_bias": {str(tid): 100}, "temperature": 0.0, "max_tokens": 64}, i + 3))
        faults.append(("logit_bias", {"logit_bias": {str(tid): 12}, "temperature": 0.0, "max_tokens": 64}, i + 20))
    for i, pen in enumerate([0.05, 0.1, 0.2]):
        for j in range(4):
            faults.append(("repetition_reward", {"repetition_penalty": pen, "temperature": 0.0, "max_tokens": 64},
                           i * 7 + j))
    for i in range(8):
        faults.append(("frequency_reward", {"frequency_penalty": -2.0, "presence_penalty": -2.0, "temperature": 0.0,
                                            "max_tokens": 64}, 30 + i))
    for name, template in BAD_TEMPLATES.items():
        for i in range(8):
            faults.append((f"chat_template_{name}", {"chat_template": template, "temperature": 0.0, "max_tokens": 64},
                           i * 5 + 1))
    return faults


def split_of(prompt: str | None, text: str) -> str:
    key = prompt if prompt else text
    return "train" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 10 < 6 else "test"


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


def replace_lines(path: Path, stale, records: list[dict]) -> None:
    """Rewrite a JSONL file without the records of a launch that ran again, plus its new ones."""
    kept = [r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if not stale(r)] \
        if path.exists() else []
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*kept, *records]), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine-dir", type=Path, default=ROOT / ".engine")
    ap.add_argument("--only", nargs="*", help="launch names to run (default: all)")
    ap.add_argument("--raw", type=Path, default=DATA / "detector_corpus_raw.jsonl",
                    help="engine outputs, appended per launch (the corpus is rebuilt from it)")
    ap.add_argument("--build-only", action="store_true", help="rebuild the corpus from --raw and the hand-written set")
    ap.add_argument("--detok", action="store_true", help="with --build-only: redo the detokenizer faults")
    ap.add_argument("--budget-s", type=float, default=1380, help="start no launch after this many seconds")
    args = ap.parse_args(argv)
    python = args.engine_dir / "venv" / "bin" / "python"
    model = args.engine_dir / "models" / "SmolLM2-135M-Instruct"
    if not args.build_only:
        tmp = Path(tempfile.mkdtemp(prefix="evh-corpus-"))
        logs = tmp / "logs"
        logs.mkdir()
        started = time.monotonic()
        try:
            for launch in LAUNCHES:
                if args.only and launch.name not in args.only:
                    continue
                if time.monotonic() - started > args.budget_s:
                    print(f"[{launch.name}] skipped: the engine-time budget ({args.budget_s:.0f} s) is spent", flush=True)
                    continue
                try:
                    records, probes = run_launch(launch, python, model, tmp, logs)
                except (RuntimeError, httpx.HTTPError) as exc:
                    log = (logs / f"{launch.name}.log").read_text(errors="replace")[-1500:]
                    print(f"[{launch.name}] failed: {exc}\n{log}", flush=True)
                    continue
                replace_lines(args.raw, lambda r, name=launch.name: r["source"] == f"engine:{name}", records)
                if probes:
                    replace_lines(DATA / "probe_outputs.jsonl", lambda r, name=launch.name: r["cell"] == name, probes)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if not args.build_only or args.detok:
        detok(python, model, args.raw)
    build(args.raw)
    return 0


DETOK = DATA / "detector_corpus_raw_detok.jsonl"


def detok(python: Path, model: Path, raw: Path) -> None:
    """Detokenizer and vocabulary faults on the healthy float32 answers (scripts/detector_corpus_detok.py, run by the
    engine's Python for its `tokenizers`)."""
    healthy = [r for r in map(json.loads, raw.read_text(encoding="utf-8").splitlines())
               if r["source"] == "engine:healthy-float32" and r["label"] == "healthy" and r["text"].strip()]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in healthy))
    try:
        subprocess.run([str(python), str(ROOT / "scripts" / "detector_corpus_detok.py"), str(model), f.name,
                        str(DETOK)], check=True)
    finally:
        os.unlink(f.name)


def build(raw: Path) -> None:
    """Raw engine outputs + review overrides + hand-written examples -> the corpus, with ids and splits."""
    sys.path.insert(0, str(DATA))
    from detector_handwritten import HANDWRITTEN  # noqa: E402

    review_path = DATA / "detector_corpus_review.jsonl"
    review = {}
    if review_path.exists():
        review = {r["id"]: r for r in map(json.loads, review_path.read_text().splitlines()) if r}
    records = [json.loads(line) for path in (raw, DETOK) if path.exists()
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records += [{"text": text, "label": label, "class": cls, "source": "hand-written", "how": "hand-written",
                 "prompt": prompt, "finish_reason": None, "expect_stop": False, **extra}
                for label, cls, text, prompt, extra in HANDWRITTEN]
    seen: set[str] = set()
    out = []
    for rec in records:
        rec["id"] = hashlib.sha256(f"{rec['source']}|{rec['how']}|{rec['prompt']}|{rec['text']}".encode()).hexdigest()[:12]
        if rec["id"] in seen:
            continue
        seen.add(rec["id"])
        if rec["id"] in review:
            fix = review[rec["id"]]
            rec.update({k: fix[k] for k in ("label", "class") if k in fix})
            rec["review"] = fix.get("note", "")
            if fix.get("drop"):
                continue
        rec["split"] = split_of(rec.get("prompt"), rec["text"])
        out.append(rec)
    (DATA / "detector_corpus.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out),
                                                encoding="utf-8")
    by = {}
    for r in out:
        by[(r["label"], r["split"])] = by.get((r["label"], r["split"]), 0) + 1
    print(f"{len(out)} records: {by}")


if __name__ == "__main__":
    sys.exit(main())
