"""Where each cell was measured, for the report: the run's machine, or per cell the Ray node that ran it; and the
caveat when cells ran on different kinds of machine (throughputs then compare machines as well as settings).

Reads records only (records/provenance.py says what a kind of machine is)."""

from __future__ import annotations

from evalharness.records.provenance import cell_kind, kinds, machine_kind
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def measured_on(run: RunResult) -> str:
    found = kinds(run)
    if not any(c.node for c in run.cells.values()) or not found:
        return machine_kind(run.meta.machine)
    if len(found) == 1:
        return f"Ray nodes of one kind: {next(iter(found))}"
    return "Ray nodes of several kinds: " + "; ".join(f"{k} ({', '.join(v)})" for k, v in found.items())


def mixed_caveat(run: RunResult) -> str | None:
    """A sentence when finished cells ran on more than one kind of machine, else None."""
    found = kinds(run)
    if len(found) < 2:
        return None
    return (f"**Cells ran on {len(found)} kinds of machine** "
            f"({'; '.join(f'{md_text(k)}: {len(v)} cells' for k, v in found.items())}): "
            "throughputs of cells on different kinds are not comparable; the column 'vs reference' says "
            "'other machine' where a cell's kind differs from the reference's.")


def other_kind(run: RunResult, cid: str) -> bool:
    ref = run.cells.get(run.reference)
    return ref is not None and cid in run.cells and len(kinds(run)) > 1 and \
        cell_kind(run, run.cells[cid]) != cell_kind(run, ref)


def nodes_section(run: RunResult) -> list[str]:
    """A table of which node ran each cell, for runs that ran cells on Ray nodes."""
    if not any(c.node for c in run.cells.values()):
        return []
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None:
            continue
        node = cell.node or {}
        rows.append([f"`{cid}`", md_text(node.get("hostname") or f"{run.meta.machine.get('hostname')} (the driver)"),
                     md_text(node.get("ip") or ""), md_text((node.get("ray_node_id") or "")[:12]),
                     md_text(cell_kind(run, cell)), md_text(cell.started_at), f"{cell.duration_s:.0f}"])
    out = ["## Nodes", "", "Which machine ran each cell (a Ray run: the cell's server, probes, quality and throughput "
           "all ran on that node, against localhost).", "",
           markdown_table(["cell", "host", "ip", "Ray node", "kind of machine", "started", "seconds"], rows), ""]
    caveat = mixed_caveat(run)
    return out + ([caveat, ""] if caveat else [])
