"""Where a run keeps the length section's generated tasks and prompts (issue 39): <run>/length/, written before any
cell starts (and again on a node that lacks them: the documents are deterministic). Imports the matrix and
phases/longcontext.py only."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.matrix.base import LENGTH_SCENARIO_PREFIX, LENGTH_TASK_PREFIX
from evalharness.matrix.schema import Matrix
from evalharness.phases.longcontext import write_tasks


def length_folder(run_dir: Path) -> Path:
    return run_dir / "length"


def length_files(matrix: Matrix, run_dir: Path) -> dict[str, Path]:
    """Each bucket's prompt source (`length:B`, as the length scenarios name it) -> its data file in the run."""
    return {f"length:{b}": length_folder(run_dir) / f"{LENGTH_TASK_PREFIX}{b}.jsonl"
            for b in matrix.length.buckets} if matrix.length.enabled else {}


def ensure_length_files(matrix: Matrix, run_dir: Path) -> str | None:
    """Write the buckets' documents and tasks when the section is on and the run's files were not written from the
    same settings (a manifest beside them: a resumed run does not size them again, minutes for 100 documents of
    65,536 tokens); returns how documents were sized when it wrote them."""
    section = matrix.length
    if not section.enabled:
        return None
    manifest = length_folder(run_dir) / "settings.json"
    settings = json.dumps({"length": section.model_dump(mode="json"), "model": matrix.model}, sort_keys=True)
    if all(p.exists() for p in length_files(matrix, run_dir).values()) and manifest.exists() \
            and manifest.read_text(encoding="utf-8") == settings:
        return None
    sizing = write_tasks(length_folder(run_dir), section.seed, {b: f"{LENGTH_TASK_PREFIX}{b}" for b in section.buckets},
                         section.documents, section.depths, section.max_gen_toks, matrix.model)
    manifest.write_text(settings, encoding="utf-8")
    return sizing


def numerics_documents(matrix: Matrix, run_dir: Path) -> list[dict[str, str]]:
    """The documents the numerics check samples from per bucket ({id, prompt}, ids `length-<B>/<doc>`: the analysis
    reads the bucket from them), the first `length.numerics` of each."""
    if not matrix.length.enabled or not matrix.length.numerics:
        return []
    ensure_length_files(matrix, run_dir)  # a Ray node's run folder may lack them
    out = []
    for bucket in matrix.length.buckets:
        path = length_folder(run_dir) / f"{LENGTH_TASK_PREFIX}{bucket}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out += [{"id": f"{LENGTH_SCENARIO_PREFIX}{bucket}/{row['id']}", "prompt": row["prompt"]}
                for row in rows[:matrix.length.numerics]]
    return out


def extra_include_paths(matrix: Matrix, run_dir: Path) -> list[str]:
    """The folders of the run's own lm-eval tasks, beside the matrix's include_path."""
    return [str(length_folder(run_dir).absolute())] if matrix.length.task_names() else []
