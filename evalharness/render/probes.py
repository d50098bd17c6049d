"""The probe phase's part of the report: the probes' token budgets and the Garbage section (what marked each garbage
cell, with a few of its outputs). Reads records only; model output is escaped (render/markdown.py)."""

from __future__ import annotations

from evalharness.records.run import RunResult
from evalharness.render.markdown import code_block, md_text


def probe_budget_lines(run: RunResult) -> list[str]:
    """The probes' token budgets: a loop in a reasoning model's thinking shows only past the first few hundred
    tokens, so cells that reason get a larger one, and the report says which did."""
    probed = [(cid, run.cells[cid].probes) for cid in run.cell_order if cid in run.cells and run.cells[cid].probes]
    budgets = {p.max_tokens for _, p in probed if p.max_tokens and not p.reasoning}
    thinking = [(cid, p.max_tokens) for cid, p in probed if p.reasoning and p.max_tokens]
    if not budgets and not thinking:
        return []
    words = "Garbage probes were answered greedily within " + (
        " / ".join(f"{b} tokens" for b in sorted(budgets)) or "their budget")
    if thinking:
        words += ("; cells that reason (a reasoning parser in their args, or thinking in their first answers) within "
                  + ", ".join(f"{n} (`{cid}`)" for cid, n in thinking)
                  + ", so that a loop in the thinking has room to show")
    return ["", words + "."]


def garbage_section(run: RunResult) -> list[str]:
    cells = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].status == "garbage"]
    if not cells:
        return []
    out = ["## Garbage", ""]
    for cell in cells:
        if cell.probes is None:  # judged garbage elsewhere than by its probes (records written by other tools)
            out += [f"### `{cell.id}`", "", md_text(cell.reason or "garbage", 500) + ".", ""]
            continue
        out += [f"### `{cell.id}`", "", md_text(cell.probes.reason, 500) + ".", ""]
        for sample in cell.probes.offending[:2]:
            fired = ", ".join(f"{f['detector']} ({f['evidence']})" for f in sample.findings)
            out += [f"Prompt {md_text(sample.id)}: {md_text(sample.prompt, 120)}", "",
                    f"Detectors: {md_text(fired, 400)}", "", code_block(sample.output[:600]), ""]
    return out
