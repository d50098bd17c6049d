"""The per-cell files beside results.json: probe outputs (probes.jsonl), the numerics check's samples and scores
(contexts.jsonl, distribution.jsonl, own_samples.jsonl, reverse_scored.jsonl) and lm-eval's per-sample records
(quality/<task>/samples.jsonl). Phases write them; analysis reads them back."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.records.io import ResultsError, read_jsonl
from evalharness.records.measures import ProbeOutput, Scored


class CellFileError(ResultsError):
    """A per-cell file that results.json names but that is missing or not what it should hold (bad input: exit 2)."""


def save_probe_outputs(path: Path, outputs: list[ProbeOutput]) -> None:
    path.write_text("".join(json.dumps(o.model_dump(), ensure_ascii=False) + "\n" for o in outputs), encoding="utf-8")


def load_probe_outputs(path: Path) -> dict[str, ProbeOutput]:
    """A cell's probe outputs, by probe id (empty if it has none)."""
    if not path.exists():
        return {}
    outputs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            out = ProbeOutput.model_validate_json(line)
            outputs[out.id] = out
    return outputs


def save_scored(path: Path, scored: list[Scored]) -> None:
    path.write_text("".join(s.model_dump_json() + "\n" for s in scored), encoding="utf-8")


def load_scored(path: Path) -> list[Scored]:
    if not path.exists():
        return []
    return [Scored.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


SAMPLES_EXPECTED = "one JSON object per line, lm-eval's per-sample record (doc_id, doc_hash, metrics)"


def load_samples(path: Path) -> list[dict]:
    """lm-eval's per-sample rows of one task, in file order. Raises CellFileError naming the file (and the line)
    when it is missing, unreadable or holds something else."""
    return [row for _, row in read_jsonl(path, CellFileError, reading="the task's samples",
                                          line_is="a sample record", expected=SAMPLES_EXPECTED)]
