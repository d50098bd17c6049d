"""report.html at the size of a real matrix: a synthetic 24-cell x 4-task run of about 20,000 samples (gsm8k-like
answers of a few hundred characters with reasoning, prompts with a few-shot prefix), written through the records
models, rendered by render/html.py, then opened from disk in headless chromium: page size, render time, load time
(navigation until the page's script has drawn it), and the time to switch the documents view to the flips.

`write_synthetic_run` is also the tests' run folder (tests/unit/render/test_html_report.py), with hostile text on
request.

Measured 2026-12-01 on this project's machine (2 cores, AMD EPYC, beside other work), 24 cells x 4 tasks x 218
documents (20,056 samples): see benchmarks/README.md for the figures.

    .venv/bin/python benchmarks/html_report.py [--cells 24 --tasks 4 --documents 210] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalharness.records.drift import CellDrift
from evalharness.records.io import save_run
from evalharness.records.measures import Percentiles, ProbeOutput, ProbeSummary, ScenarioResult, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult

HOSTILE = "</script><script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\"> & \u2028 <!--"
FEW_SHOT = "".join(f"Question: What is {a} + {a * 3}?\nAnswer: {a} + {a * 3} = {a * 4}. #### {a * 4}\n\n"
                   for a in range(1, 9))


def _scenario(tok_s: float, spread: float) -> ScenarioResult:
    p = Percentiles()
    return ScenarioResult(name="single", concurrency=1, input_len=128, output_len=128, requests=8, completed=8,
                          duration_s=10, output_tokens=1024, output_tok_s=tok_s, request_decode_tok_s=p, ttft_s=p,
                          tpot_s=p, itl_s=p, e2e_s=p,
                          repeat_tok_s=[tok_s - spread, tok_s, tok_s + spread])


def _row(task: str, doc: int, right: bool, rng: random.Random, hostile: bool, truncated: bool) -> dict:
    target = str(doc * 7 % 97)
    said = target if right else str((doc * 7 + 1 + rng.randrange(5)) % 97)
    reasoning = " ".join(rng.choice(["so", "then", "we", "add", "carry", "the", "tens", "units", "first"])
                         for _ in range(rng.randrange(20, 80)))
    answer = (f"Let me work it out. {HOSTILE if hostile else ''} Adding the numbers gives {said}. #### {said}"
              if not truncated
              else f"Let me work it out step by step, first the units then {HOSTILE if hostile else 'the'}")
    return {"task": task, "doc_id": doc, "doc_hash": f"{task}-{doc}", "prompt_hash": f"p-{task}-{doc}",
            "prompt": f"{FEW_SHOT}Question: what is document {doc} of {task}?{HOSTILE if hostile else ''}\nAnswer:",
            "target": target, "response": said if not truncated else "[invalid]", "answer": answer,
            "filter": "flexible-extract", "metrics": {"exact_match": float(right and not truncated)},
            "finish_reason": "length" if truncated else "stop", "completion_tokens": 120, "reasoning": reasoning,
            "stop_reason": "Question:" if doc % 11 == 0 else None, "seed": 1234}


def write_synthetic_run(folder: Path, cells: int = 24, tasks: int = 4, documents: int = 218, hostile: bool = False,
                        seed: int = 0) -> RunResult:
    """A finished run folder: results.json, each cell's samples per task and one garbage cell's probes. The first
    cell is the reference; every other cell answers each document like it, but for a few flips either way and a few
    truncated answers (so every filter of the page has documents). Its drift is refreshed as `report` would."""
    from evalharness.analysis.drift import refresh_drift

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    task_names = [f"task_{t}" for t in range(tasks)]
    right = {(t, d): rng.random() < 0.7 for t in task_names for d in range(documents)}
    ids = [f"cell-{i:02d}" + (".hostile" if hostile and i == 1 else "") for i in range(cells)]
    results = {}
    for index, cid in enumerate(ids):
        quality = []
        for task in task_names:
            rows = []
            for doc in range(documents):
                ok = right[(task, doc)]
                if index and rng.random() < 0.03:
                    ok = not ok  # a flip
                truncated = index > 0 and rng.random() < 0.01
                rows.append(_row(task, doc, ok, rng, hostile and index == 1 and doc < 3, truncated))
            rel = f"cells/{cid}/quality/{task}/samples.jsonl"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            value = sum(r["metrics"]["exact_match"] for r in rows) / len(rows)
            quality.append(TaskScore(task=task, version=1, metric="exact_match,flexible-extract", value=value,
                                     stderr=0.03, n=documents, samples=rel, aggregation="mean",
                                     higher_is_better=True, seed=1234))
        garbage = index == cells - 1
        output = (HOSTILE if hostile else "") + " wis wis wis wis wis --_------_-- wis"
        probes = ProbeSummary(garbage=garbage, flagged=12 if garbage else 0, total=12, errors=0,
                              reason="12/12 probe outputs marked as garbage" if garbage else "0/12 marked",
                              offending=[ProbeOutput(id="capital", prompt="What is the capital of France?",
                                                     output=output, finish_reason="length", garbage=True,
                                                     findings=[{"detector": "word_repeat", "strength": "hard",
                                                                "evidence": "'wis' x5"}])] if garbage else [],
                              seconds=1.0)
        (folder / "cells" / cid).mkdir(parents=True, exist_ok=True)
        (folder / "cells" / cid / "probes.jsonl").write_text(json.dumps(
            {"id": "capital", "prompt": "What is the capital of France?", "output": "Paris."}) + "\n")
        results[cid] = CellResult(
            id=cid, axes={"cell": cid}, settings_hash=f"h{index}",
            args={"--dtype": "bfloat16" if index % 2 else "float32", "--note": HOSTILE if hostile else "x"},
            env={}, argv=["serve", "--dtype", "bfloat16" if index % 2 else "float32"],
            status="garbage" if garbage else "ok", phase="probes" if garbage else "done",
            reason=(HOSTILE if hostile else "garbage") if garbage else None, probes=probes,
            quality=[] if garbage else quality,
            throughput=[] if garbage else [_scenario(100 + 7 * index + rng.random(), 2.0)],
            resolved={"engine.dtype": "torch.bfloat16" if index % 2 else "torch.float32", "version": "0.32.0"},
            drift=None if index == 0 else CellDrift(cell=cid), started_at="2026-12-01T00:00:00+00:00",
            finished_at="2026-12-01T00:00:01+00:00", duration_s=1.0)
    meta = RunMeta(harness_version="0.1.0", engine="vllm", engine_version="0.32.0", matrix_name="synthetic" +
                   (HOSTILE if hostile else ""), matrix_path="synthetic.yaml", started_at="2026-12-01T00:00:00+00:00",
                   matrix={"quality": {"margin": 0.1}, "throughput": {"scenarios": [{"name": "single"}]}})
    run = RunResult(meta=meta, reference=ids[0], cell_order=ids, cells=results, complete=True)
    refresh_drift(run, folder)
    save_run(run, folder)
    return run


def measure(folder: Path, rounds: int = 3) -> dict:
    from tests.headless import open_page, start_browser

    from evalharness.render.html import write_html

    run = write_synthetic_run(folder)
    samples = sum(len((folder / t.samples).read_text().splitlines()) for c in run.cells.values() for t in c.quality)
    started = time.perf_counter()
    path = write_html(run, folder)
    render_s = time.perf_counter() - started
    driver = start_browser()  # the tests' chromium, same flags; the page opened afresh each round
    loads, switches = [], []
    for _ in range(rounds):
        loads.append(open_page(driver, path))
        started = time.perf_counter()
        driver.execute_script("const s=document.getElementById('doc-filter'); s.value='flips';"
                              "s.dispatchEvent(new Event('change'));")
        switches.append(time.perf_counter() - started)
    drawn_ms = int(driver.execute_script("return document.body.getAttribute('data-ready')"))
    driver.quit()
    return {"cells": len(run.cells), "tasks": len(run.cells[run.reference].quality), "samples": samples,
            "page_mb": path.stat().st_size / 1e6, "render_s": render_s, "load_s": statistics.median(loads),
            "load_max_s": max(loads), "script_ms": drawn_ms, "flip_filter_s": statistics.median(switches)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", help="write the run folder here (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp) / "run"
        figures = measure(folder)
    print(f"{figures['cells']} cells x {figures['tasks']} tasks, {figures['samples']:,} samples: report.html "
          f"{figures['page_mb']:.1f} MB, rendered in {figures['render_s']:.1f} s; loaded from file:// in "
          f"{figures['load_s']:.2f} s (median of 3, max {figures['load_max_s']:.2f}; the page's script "
          f"{figures['script_ms']} ms); flip filter {figures['flip_filter_s'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
