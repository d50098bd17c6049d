"""Runs one lm-eval task against one endpoint, in its own process, and writes what the harness reads back.

Usage: python -m evalharness.phases._lmeval_worker SPEC.json
       python -m evalharness.phases._lmeval_worker --check SPEC.json   (load every task's data; run nothing)
SPEC: {task, include_path, extra_include_paths, include_defaults, base_url, model, api ("completions" | "chat"),
       tokenizer ("local" | "remote" | "none"), tokenizer_path (local: a folder or hub id; default the one the engine
       reports), concurrency, max_retries, timeout_s, limit, max_gen_toks, gen_kwargs, chat_template_kwargs,
       think_end_token, stop_strings, headline, subset, subset_seed, fraction, data, seed, out_dir}; --check takes
       {tasks: {name: data or null}, include_path, include_defaults}.
Writes OUT_DIR/summary.json (headline, value, subtasks, generation statistics, versions; _lmeval_results.py),
OUT_DIR/samples.jsonl (one row per subtask, document and filter, with every metric, the answer's finish_reason and
its reasoning) and OUT_DIR/answers.jsonl (the recording client's side file, _lmeval_models.py). Runs in a subprocess
because lm-eval aborts a whole evaluation when one request keeps failing, and a hung request must be killable.

Local data (`data`: the matrix's quality.data.<task>) replaces the hub dataset of every leaf task this process loads
(one requested task per process, so a group's subtasks all take it): lm-eval's own task config runs unchanged except
for dataset_path (the `format` builder: json, csv, parquet), dataset_name (none) and dataset_kwargs (data_files, in
which {task} and {dataset_name} name the leaf task and its hub config, for groups whose subtasks have a file each).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_DATA: dict[str, Any] | None = None  # the local data of the task being loaded (None: its hub dataset)


def _local_data_hook() -> None:
    """Make ConfigurableTask.download read _DATA's files instead of the hub: lm-eval builds and downloads a task in
    one step (TaskManager.load), with no argument for another dataset, and a group builds its subtasks itself."""
    from lm_eval.api.task import ConfigurableTask

    original = ConfigurableTask.download

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if _DATA is None:
            try:
                return original(self, dataset_kwargs, **kwargs)
            except Exception as exc:  # name the task and what it wanted, then let the worker fail with it
                raise RuntimeError(f"task {self.config.task}: dataset {self.DATASET_PATH!r} (config "
                                   f"{self.DATASET_NAME!r}) could not be loaded offline: {type(exc).__name__}: "
                                   f"{str(exc)[:300]}; give its files in the matrix (quality.data) or fetch it "
                                   "into the Hugging Face cache (docs/quality.md)") from exc
        names = {"task": self.config.task, "dataset_name": self.DATASET_NAME or ""}
        files = {split: [p.format(**names) for p in paths] if isinstance(paths, list) else paths.format(**names)
                 for split, paths in _DATA["data_files"].items()}
        local = {**(_DATA.get("dataset_kwargs") or {}), "data_files": files}
        self.DATASET_PATH, self.DATASET_NAME = _DATA.get("format", "json"), None
        self.config.dataset_path, self.config.dataset_name, self.config.dataset_kwargs = self.DATASET_PATH, None, local
        return original(self, dict(local), **kwargs)

    ConfigurableTask.download = download


def _seed_langdetect() -> None:
    """ifeval's scorer calls langdetect.detect, which samples: unseeded, one answer can score differently between
    runs. langdetect's own switch for determinism is DetectorFactory.seed (read when each detector is made)."""
    try:
        from langdetect import DetectorFactory
    except ImportError:
        return  # no task here needs it (ifeval's check names it when it does)
    DetectorFactory.seed = 0


def document_subsets(manager, task: str, limit: int | None, seed: int, fraction: float = 1.0,
                     first: bool = False, skip: int = 0) -> tuple[dict[str, list[int]], dict[str, int]]:
    """The documents of each leaf task to score (stratified by subtask for a group: each leaf keeps its own share).
    `limit` keeps a seeded random `limit` of them, instead of lm-eval's `limit`, which takes the first N (lm-eval
    warns it is for testing: the first 15 questions of a subject are not a sample of it); `first` keeps lm-eval's
    first N. `fraction` keeps that share of them (a screened cell's first look, analysis/sequential.py): the first
    documents of one seeded order, so a smaller share is always part of a larger one and of the whole subset. The same
    seed gives every cell and the reference the same documents; `skip` passes over each leaf's first documents of that
    order (subsets.subset_indices). Returns (leaf -> sorted document indices, leaf -> documents in the leaf)."""
    from evalharness.phases.subsets import subset_indices

    documents, populations = {}, {}
    for name, leaf in manager.load([task])["tasks"].items():  # every leaf task, a group's subtasks included
        total = len(leaf.eval_docs)
        populations[name] = total
        documents[name] = subset_indices(name, total, limit, seed, fraction, first, skip)
    return documents, populations


def headline_problem(manager, task: str, headline: str | None) -> str | None:
    """Why the matrix's headline cannot be one of the task's figures, from its leaf configs (metric_list x
    filter_list), before any request is sent; None when it can, or when a config names no metrics to check."""
    from evalharness.phases._lmeval_results import chosen_headline

    choice = chosen_headline(headline)
    if choice is None:
        return None
    offered = set()
    for leaf in manager.load([task])["tasks"].values():
        metrics = [m.get("metric") for m in leaf.config.metric_list or [] if isinstance(m, dict)]
        filters = [f.get("name") for f in leaf.config.filter_list or [] if isinstance(f, dict)] or ["none"]
        if not metrics or not all(isinstance(m, str) for m in metrics):
            return None  # lm-eval's defaults or a metric given as a function: checked on the results instead
        offered |= {f"{m},{f}" for m in metrics for f in filters}
    if choice in offered:
        return None
    return f"headline {choice!r} is not a figure of this task; its configs offer {', '.join(sorted(offered))}"


def _setup(spec: dict[str, Any]):
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from lm_eval.tasks import TaskManager

    import evalharness.phases._lmeval_models  # noqa: F401  (registers evalharness-chat, evalharness-completions)

    _local_data_hook()
    _seed_langdetect()
    include = spec.get("include_path")
    if include:
        os.chdir(include)  # the shipped tasks name their data files relative to their own folder
    # the run's own generated tasks (the length section's eh_long_<B>: absolute data paths) beside them
    paths = [p for p in [include, *(spec.get("extra_include_paths") or [])] if p]
    return TaskManager(include_path=paths or None, include_defaults=bool(spec.get("include_defaults", False)))


def check(spec: dict[str, Any]) -> int:
    """Load every task's data as the run will, and name each task whose data is missing (exit 3)."""
    global _DATA
    manager = _setup(spec)
    failed = 0
    for task, data in spec["tasks"].items():
        _DATA = data
        try:
            manager.load([task])
        except Exception as exc:  # KeyError for an unknown task, the hook's message for absent data, nltk, ...
            failed += 1
            text = str(exc).strip().strip('"')
            if isinstance(exc, ImportError):  # ifeval's scorer: langdetect, immutabledict, nltk and its punkt_tab
                text += " (the task's code needs it: install it into the harness's environment; docs/quality.md)"
            print(text if text.startswith(f"task {task}") else f"task {task}: {type(exc).__name__}: {text}",
                  file=sys.stderr)
    return 3 if failed else 0


def local_tokenizer(spec: dict[str, Any], base_url: str, timeout_s: float) -> dict[str, Any]:
    """`tokenizer: local`: the folder of the tokenizer the engine serves (spec `tokenizer_path` over what the engine
    reports), loaded and checked against the engine's /tokenize; what was used, for the summary. Raises
    TokenizerProblem."""
    from evalharness.phases._local_tokenizer import (LocalTokenizer, engine_agreement, served_tokenizer,
                                                     tokenizer_folder)

    where = spec.get("tokenizer_path") or served_tokenizer(base_url, timeout_s, spec["model"])
    tokenizer = LocalTokenizer(tokenizer_folder(where))
    return {**tokenizer.describe(), "served": where,
            "engine_agrees": engine_agreement(tokenizer, base_url, spec["model"], timeout_s)}


def main(spec_path: str) -> int:
    global _DATA
    spec = json.loads(Path(spec_path).read_text())
    out_dir = Path(spec["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    _DATA = spec.get("data")
    manager = _setup(spec)
    problem = headline_problem(manager, spec["task"], spec.get("headline"))
    if problem:  # before any request: a typo must not cost a whole task's generation
        print(f"task {spec['task']}: quality.task_settings.{spec['task']}.{problem}", file=sys.stderr)
        return 3
    from lm_eval import simple_evaluate

    from evalharness.phases._lmeval_results import HeadlineMissing, prompt_key, read_answers, read_failures, summarize
    from evalharness.phases._local_tokenizer import TokenizerProblem

    chat = spec.get("api") == "chat"
    base = spec["base_url"].rstrip("/")
    answers_path = out_dir / "answers.jsonl"
    model_args = {
        "model": spec["model"],
        "base_url": f"{base}/chat/completions" if chat else f"{base}/completions",
        "num_concurrent": spec.get("concurrency", 4),
        "max_retries": spec.get("max_retries", 5),
        "timeout": int(spec.get("timeout_s", 300)),
        "max_gen_toks": spec.get("max_gen_toks") or 256,
        # remote: the engine's own tokenizer through its /tokenize endpoint; local: its files read here (below)
        "tokenizer_backend": "none" if chat else spec.get("tokenizer") or "remote",
        "tokenized_requests": False,
        "record_path": str(answers_path),
        # every finished request, kept as it finishes: a retry or a resume sends only the others (_lmeval_requests.py)
        "journal_path": str(out_dir / "requests.jsonl"),
        "failures_path": str(out_dir / "request_failures.jsonl"),
        # sent with every request (lm-eval's TemplateAPI puts its `seed` into each payload): repeat k of a task
        # sends seed+k, so repeats are fresh draws on an engine that honours it and the same seeds in every cell
        "seed": int(spec.get("seed", 1234)),
    }
    if model_args["tokenizer_backend"] == "local":
        try:
            tokenizer = local_tokenizer(spec, base, int(model_args["timeout"]))
        except TokenizerProblem as exc:  # a setting the engine cannot meet: no retry helps
            print(f"task {spec['task']}: quality.{exc}", file=sys.stderr)
            return 3
        model_args["local_tokenizer"] = str(tokenizer["folder"])
    if chat:
        model_args.update(chat_template_kwargs=spec.get("chat_template_kwargs"),
                          think_end_token=spec.get("think_end_token"),
                          stop_strings=spec.get("stop_strings") or "answer")
    # the matrix's generation settings override the task config's (max_gen_toks included: mmlu_pro's own is 2048)
    documents = populations = None
    first = spec.get("subset", "random") == "first"
    fraction = float(spec.get("fraction") or 1.0)
    skip = int(spec.get("skip") or 0)
    if (spec.get("limit") and not first) or fraction < 1 or skip:
        documents, populations = document_subsets(manager, spec["task"], spec.get("limit"),
                                                  int(spec.get("subset_seed", 1234)), fraction, first, skip)
    gen_kwargs = {**(spec.get("gen_kwargs") or {})}
    if spec.get("max_gen_toks"):
        gen_kwargs["max_gen_toks"] = spec["max_gen_toks"]
    results = simple_evaluate(
        model="evalharness-chat" if chat else "evalharness-completions",
        model_args=model_args,
        tasks=[spec["task"]],
        task_manager=manager,
        limit=None if documents is not None else spec.get("limit"),
        samples=documents,
        log_samples=True,
        apply_chat_template=chat,
        gen_kwargs=gen_kwargs or None,
        random_seed=1234,
        numpy_random_seed=1234,
        torch_random_seed=1234,
        fewshot_random_seed=1234,
    )
    if results is None:
        print("lm-eval returned no results", file=sys.stderr)
        return 1
    try:
        summary, rows = summarize(spec["task"], results, read_answers(answers_path), headline=spec.get("headline"),
                                  failures=read_failures(out_dir / "request_failures.jsonl"))
    except HeadlineMissing as exc:
        print(f"task {spec['task']}: quality.task_settings.{spec['task']}.{exc}", file=sys.stderr)
        return 3
    if model_args["tokenizer_backend"] == "local":
        summary["tokenizer"] = tokenizer
    if documents is not None:
        summary["subset"] = {"seed": None if first else int(spec.get("subset_seed", 1234)),
                             "documents": sum(len(ids) for ids in documents.values()),
                             "of": sum(populations.values()), "fraction": fraction if fraction < 1 else None,
                             "skipped": skip or None}
    for row in rows:
        row["seed"] = model_args["seed"]
        # what the document was asked with (analysis/pairing.py): lm-eval's prompt hash, and the template switches
        # that change the prompt the engine renders (sent through chat only)
        row["prompt_key"] = prompt_key(row.get("prompt_hash"), spec.get("chat_template_kwargs") if chat else None)
    with open(out_dir / "samples.jsonl", "w", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "--check":
        raise SystemExit(check(json.loads(Path(sys.argv[2]).read_text())))
    raise SystemExit(main(sys.argv[1]))
