"""Runs one lm-eval task against one endpoint, in its own process, and writes what the harness reads back.

Usage: python -m evalharness.phases._lmeval_worker SPEC.json
SPEC: {task, include_path, include_defaults, base_url, model, api ("completions" | "chat"), tokenizer ("remote" |
       "none"), concurrency, max_retries, timeout_s, limit, max_gen_toks, out_dir, cache}
Writes OUT_DIR/summary.json ({task, version, metrics, n_samples, ...}) and OUT_DIR/samples.jsonl (one line per
document: doc_id, doc_hash, prompt_hash, target, filtered response, per-sample metrics). Runs in a subprocess because
lm-eval aborts a whole evaluation when one request keeps failing, and a hung request must be killable.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return str(value)


def main(spec_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    out_dir = Path(spec["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    include = spec.get("include_path")
    if include:
        os.chdir(include)  # the shipped tasks name their data files relative to their own folder
    manager = TaskManager(include_path=include, include_defaults=bool(spec.get("include_defaults", False)))
    chat = spec.get("api") == "chat"
    base = spec["base_url"].rstrip("/")
    model_args = {
        "model": spec["model"],
        "base_url": f"{base}/chat/completions" if chat else f"{base}/completions",
        "num_concurrent": spec.get("concurrency", 4),
        "max_retries": spec.get("max_retries", 5),
        "timeout": int(spec.get("timeout_s", 300)),
        "max_gen_toks": spec.get("max_gen_toks", 256),
        # the engine's own tokenizer through its /tokenize endpoint: no hub download, same tokens as the server
        "tokenizer_backend": "none" if chat else spec.get("tokenizer", "remote"),
        "tokenized_requests": False,
    }
    results = simple_evaluate(
        model="local-chat-completions" if chat else "local-completions",
        model_args=model_args,
        tasks=[spec["task"]],
        task_manager=manager,
        limit=spec.get("limit"),
        use_cache=spec.get("cache"),
        log_samples=True,
        apply_chat_template=chat,
        random_seed=1234,
        numpy_random_seed=1234,
        torch_random_seed=1234,
        fewshot_random_seed=1234,
    )
    if results is None:
        print("lm-eval returned no results", file=sys.stderr)
        return 1
    task = spec["task"]
    samples = results.get("samples", {}).get(task, [])
    with open(out_dir / "samples.jsonl", "w", encoding="utf-8") as handle:
        for sample in samples:
            filtered = sample.get("filtered_resps")
            metric_names = sample.get("metrics") or []
            record = {
                "doc_id": sample.get("doc_id"),
                "doc_hash": sample.get("doc_hash"),
                "prompt_hash": sample.get("prompt_hash"),
                "target": _jsonable(sample.get("target")),
                "response": _jsonable(filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else filtered),
                "filter": sample.get("filter"),
                "metrics": {name: _jsonable(sample.get(name)) for name in metric_names},
            }
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    summary = {
        "task": task,
        "version": _jsonable(results.get("versions", {}).get(task)),
        "metrics": {k: _jsonable(v) for k, v in results.get("results", {}).get(task, {}).items() if k != "alias"},
        "n_samples": _jsonable(results.get("n-samples", {}).get(task)),
        "config_hash": _jsonable((results.get("task_hashes") or {}).get(task)),
        "lm_eval_version": _jsonable((results.get("config") or {}).get("lm_eval_version") or results.get("lm_eval_version")),
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
