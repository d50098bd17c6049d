"""Secondary endpoints of a task, paired per document between two sides: the share of answers cut by the token
budget (finish_reason "length"), the share of chains that end inside a loop (a reasoning model's failure: the
samples' `loops`, phases/detectors/loops.py), the share of empty answers and of those empty behind non-empty
reasoning (a reasoning parser that swallows the answer: sgl-project/sglang#33995, 127 of 700), the share a stop
string the engine matched ended, and the reasoning length; for a calls task (measures/calls/) the share of answers that
are not a valid call or valid JSON, and of requests the engine refused. A backend that makes a model
think twice as long or truncate more drifts even at equal accuracy, yet two runs of one sampled configuration always
differ in these as floats: a figure is *changed* only when its paired test says so after Benjamini-Hochberg over the
cell's secondary tests AND the change is material (MATERIAL_SHARE points for a share, MATERIAL_RATIO for a length).

Reads records (the samples files) only.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.stats import benjamini_hochberg, paired_evidence
from evalharness.records.cellfiles import load_samples
from evalharness.records.drift import SecondaryChange
from evalharness.records.measures import TaskScore

MATERIAL_SHARE = 0.02  # two points of the answers cut or empty
MATERIAL_RATIO = 0.10  # a tenth longer or shorter reasoning
FIELDS = ("truncated_share", "looping_share", "empty_share", "empty_with_reasoning_share", "stop_string_share",
          "reasoning_chars", "invalid_share", "refused_share")
# how a generation task's answers ended, each its own outcome paired against the reference's in the drift (issue 60,
# 4): cut off by the budget, ending inside a loop, an empty answer behind non-empty reasoning
ENDING_FIELDS = ("truncated_share", "looping_share", "empty_with_reasoning_share")
# a calls task's (measures/calls/): answers that are not a valid call / valid JSON, requests the engine refused
CALLS_FIELDS = ("invalid_share", "refused_share")


def answer_figures(row: dict) -> dict[str, float]:
    looping = {} if "loops" not in row else {"looping_share": float(bool(row["loops"]))}  # kept since issue 42
    calls = {} if "valid" not in row else {"invalid_share": float(not row["valid"]),
                                           "refused_share": float(bool(row.get("refused")))}
    tokens = row.get("completion_tokens")
    counted = {"completion_tokens": float(tokens)} if isinstance(tokens, int) and not isinstance(tokens, bool) else {}
    return {**looping, **calls, **counted, "truncated_share": float(row.get("finish_reason") == "length"),
            "empty_share": float(not str(row.get("answer") or "").strip()),
            "empty_with_reasoning_share": float(not str(row.get("answer") or "").strip()
                                                and bool(str(row.get("reasoning") or "").strip())),
            # ended by a stop string the engine matched: sent to the engine, one said while thinking ends the chain
            "stop_string_share": float(isinstance(row.get("stop_reason"), str)),
            "reasoning_chars": float(len(row.get("reasoning") or ""))}


def per_document(run_dir: Path, score: TaskScore, fields: tuple[str, ...] = FIELDS) -> dict[str, dict[str, float]]:
    """field -> document -> mean over the task's repeats (one answer per document and repeat: its filters share it).
    Rows without a finish_reason (loglikelihood tasks, records before it was kept) give nothing."""
    sums: dict[str, dict[str, list[float]]] = {f: {} for f in fields}
    for _, samples, error in score.all_repeats():
        if not samples or error:
            continue
        seen = set()
        for row in load_samples(run_dir / samples):
            doc = f"{row.get('task') or score.task}|{row.get('doc_id')}|{row.get('doc_hash')}"
            if doc in seen or row.get("finish_reason") is None:
                continue
            seen.add(doc)
            for field, value in answer_figures(row).items():
                if field in sums:
                    sums[field].setdefault(doc, []).append(value)
    return {f: {d: sum(v) / len(v) for d, v in docs.items()} for f, docs in sums.items()}


def secondary_changes(ref_score: TaskScore, ref_dir: Path, cell_score: TaskScore, cell_dir: Path,
                      alpha: float, documents: tuple[dict, dict] | None = None) -> list[SecondaryChange]:
    """Each secondary figure of one task, both sides paired per document, tested and judged for materiality.
    `documents`: both sides' `per_document` already read (the drift reads each file once a refresh)."""
    ref, cell = documents or (per_document(ref_dir, ref_score), per_document(cell_dir, cell_score))
    out = []
    for field in FIELDS:
        docs = [d for d in ref[field] if d in cell[field]]
        if not docs:
            continue
        before, after = [ref[field][d] for d in docs], [cell[field][d] for d in docs]
        mean_b, mean_a = sum(before) / len(docs), sum(after) / len(docs)
        if field in ("reasoning_chars", "empty_with_reasoning_share") and mean_b == 0 and mean_a == 0:
            continue  # no reasoning on either side: nothing to test, and the family stays what it was without it
        evidence = paired_evidence(before, after)
        material = (abs(mean_a - mean_b) >= MATERIAL_SHARE if field != "reasoning_chars" else
                    abs(mean_a - mean_b) >= MATERIAL_RATIO * max(mean_b, 1.0))
        out.append(SecondaryChange(task=ref_score.task, field=field, reference=mean_b, cell=mean_a,
                                   p_value=evidence.p_no_difference(), material=material))
    for change, adjusted in zip(out, benjamini_hochberg([c.p_value or 1.0 for c in out])):
        change.p_adjusted = adjusted
        change.changed = change.material and adjusted < alpha
    return out
