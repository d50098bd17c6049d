"""Axes that changed nothing: two cells that differ in one axis only, whose engines resolved the same settings and
answered the probes word for word the same. On SM120, SGLang turns DeepGEMM off by itself when the installed deep_gemm
lacks its SM120 functions, so `deepgemm: on` and `off` run the same kernels; the report says so instead of leaving a
reader to compare two identical rows. Reads records and the cells' saved probe outputs only."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

from evalharness.records.cellfiles import load_probe_outputs
from evalharness.records.run import NoEffect, RunResult


def no_effect_pairs(run: RunResult, out_dir: Path) -> list[NoEffect]:
    ready = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].status in ("ok", "garbage")
             and run.cells[c].resolved]
    outputs = {c.id: load_probe_outputs(out_dir / "cells" / c.id / "probes.jsonl") for c in ready}
    found = []
    for a, b in combinations(ready, 2):
        differing = [axis for axis in a.axes if a.axes[axis] != b.axes.get(axis)]
        if len(differing) != 1 or a.resolved != b.resolved:
            continue
        left, right = outputs[a.id], outputs[b.id]
        if not left or left.keys() != right.keys() or any(
                left[k].error or left[k].output != right[k].output for k in left):
            continue
        axis = differing[0]
        found.append(NoEffect(axis=axis, values=[a.axes[axis], b.axes[axis]], cells=[a.id, b.id],
                              probes=len(left)))
    return found
