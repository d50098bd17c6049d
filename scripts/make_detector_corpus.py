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
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

# The script lives in these modules beside it; everything it defined is importable from here as before.
from detector_corpus_build import DETOK, build, detok, replace_lines, split_of  # noqa: E402,F401
from detector_corpus_engine import (LAUNCHES, Engine, Launch, chat, complete, free_port,  # noqa: E402,F401
                                    make_tokenizer, run_launch)
from detector_corpus_prompts import (BAD_TEMPLATES, CHAT_PROMPTS, DATA, ROOT, lm_eval_prompts,  # noqa: E402,F401
                                     request_faults)


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
                    print(f"[{launch.name}] skipped: the engine-time budget ({args.budget_s:.0f} s) is spent",
                          flush=True)
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


if __name__ == "__main__":
    sys.exit(main())
