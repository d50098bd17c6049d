"""results.csv: one row per cell and throughput scenario, through a pandas DataFrame.

Like report.md, it is rebuilt from results.json alone, so `evalharness report DIR` re-renders an old run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from evalharness.analysis.speed import kept_rates, side_of
from evalharness.records.run import RunResult


def rows(run: RunResult) -> list[dict[str, Any]]:
    """One row per cell and throughput scenario (one row for a cell without scenarios)."""
    out = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None:
            out.append({"cell": cid, "status": "not run"})
            continue
        base: dict[str, Any] = {"cell": cid, "reference": cid == run.reference,
                                **{f"axis.{k}": v for k, v in cell.axes.items()},
                                "status": cell.status, "phase": cell.phase, "reason": cell.reason,
                                "startup_s": cell.startup_s, "duration_s": cell.duration_s}
        for task in cell.quality:
            base[f"score.{task.task}"] = task.value
            base[f"stderr.{task.task}"] = task.stderr
        if cell.drift is not None:
            base.update({"accuracy_delta": cell.drift.accuracy_delta, "accuracy_ci_low": cell.drift.ci_low,
                         "accuracy_ci_high": cell.drift.ci_high, "mcnemar_p": cell.drift.p_value,
                         "right_to_wrong": cell.drift.right_to_wrong, "wrong_to_right": cell.drift.wrong_to_right})
            dist = cell.drift.numerics()
            if dist and dist.available:
                for prefix, est in (("kl_forward", dist.forward), ("kl_reverse", dist.reverse)):
                    if est is not None and est.available:
                        base.update({prefix: est.estimate, f"{prefix}_ci_low": est.ci_low,
                                     f"{prefix}_ci_high": est.ci_high})
                base.update({"topk_kld_mean_lower_bound": dist.mean_kld, "topk_kld_p99_lower_bound": dist.p99_kld,
                             "same_top_token": dist.same_top_token, "disjoint_topk": dist.disjoint_topk})
        if not cell.throughput:
            out.append(base)
        for sc in cell.throughput:
            kept = kept_rates(side_of(sc))  # min..max of the repeats the speed rule kept
            out.append({**base, "scenario": sc.name, "concurrency": sc.concurrency, "request_rate": sc.request_rate,
                        "prompts": sc.prompts, "repeats": len(sc.repeat_tok_s) or 1,
                        "disturbed_repeats": len(sc.disturbed_repeats()), "stopped": sc.stopped,
                        "output_tok_s": sc.output_tok_s, "output_tok_s_min": min(kept) if len(kept) > 1 else None,
                        "output_tok_s_max": max(kept) if len(kept) > 1 else None,
                        "decode_tok_s_p50": sc.request_decode_tok_s.p50,
                        "ttft_p50_s": sc.ttft_s.p50, "tpot_p50_s": sc.tpot_s.p50, "itl_p50_s": sc.itl_s.p50,
                        "itl_p99_s": sc.itl_s.p99, "e2e_p50_s": sc.e2e_s.p50, "errors": sum(sc.errors.values()),
                        **{f"engine.{k}": v for k, v in sc.engine.items()}})
    return out


def write_csv(run: RunResult, path: Path) -> None:
    pd.DataFrame(rows(run)).to_csv(path, index=False)
