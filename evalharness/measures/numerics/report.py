"""The numerics check's section of the report (issue 26): per cell both directions of the per-token KL divergence
against the reference with their intervals, whether the reverse figure came from the cell's own tokens, and the
coarse top-k figures as secondary columns. Its own layout (a paragraph, a table, or why nothing was measured), so
it gives `section`, which report.md places after the length buckets, and no `tables` (report.html shows its
figures in the Pareto table). Reads records only."""

from __future__ import annotations

from evalharness.measures.numerics.spec import KEY, NumericsRecord
from evalharness.measures.specs import read
from evalharness.records.drift import DistributionDrift, KLEstimate
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text
from evalharness.render.numerics import kl_number, kl_text


def tables(run: RunResult) -> None:
    """None: its section is laid out by `section`."""
    return None


def _figures(run: RunResult) -> dict[str, DistributionDrift]:
    """Each cell's figures against the reference, where it has them."""
    out = {}
    for cid, cell in run.cells.items():
        figures = cell.drift.numerics() if cell.drift is not None else None
        if figures is not None:
            out[cid] = figures
    return out


def _own(est: KLEstimate | None) -> str:
    if est is None or not est.available or est.own_samples_identical is None:
        return ""
    return f"{est.contexts - est.own_samples_identical}/{est.contexts} differ"


def _floor_text(run: RunResult) -> str:
    floors = {cid: figures.reverse.floor for cid, figures in _figures(run).items()
              if figures.reverse is not None and figures.reverse.floor is not None}
    if not floors:
        return "not subtracted in this run: its records have no decode-time figures of the reference"
    values = sorted(set(floors.values()))
    if values == [0.0]:
        return "0 here: the reference's decode and prefill agreed to the last bit"
    return f"{kl_number(values[0])} nats per token here" if len(values) == 1 else \
        f"{kl_number(values[0])} to {kl_number(values[-1])} nats per token here, over the contexts each cell shares"


def section(run: RunResult) -> list[str]:
    """report.md's numerics section: one row per cell with figures, or why none were measured."""
    rows, figures = [], _figures(run)
    for cid in run.cell_order:
        cell, dist = run.cells.get(cid), figures.get(cid)
        if dist is None:
            continue
        coarse = f"{dist.mean_kld:.4f} / {dist.p99_kld:.4f}" if dist.mean_kld is not None else ""
        rows.append([f"`{cid}`" + (" (garbage)" if cell.status == "garbage" else ""),
                     kl_text(dist.forward) if dist.forward else "unavailable: " + md_text(dist.reason or "", 80),
                     kl_text(dist.reverse), _own(dist.reverse),
                     "" if dist.disjoint_topk is None else f"{dist.disjoint_topk:.1%}",
                     "" if dist.same_top_token is None else f"{dist.same_top_token:.1%}", coarse])
    reference = run.cells.get(run.reference)
    if not rows:
        said = read(reference.measures, KEY, NumericsRecord) if reference is not None else None
        if said is not None and said.path is None and said.error:  # the engine has no way to give the figures
            return ["## Numerics: per-token KL divergence against the reference", "",
                    f"Not measured: {md_text(said.error, 200)}.", ""]
        return []
    said = read(reference.measures, KEY, NumericsRecord) if reference is not None else None
    longest = said.max_context_tokens if said is not None else None
    some_long = "some long" if longest is None else \
        f"any longer than {longest} tokens cut to its last {longest}: distribution.max_context_tokens"
    return ["## Numerics: per-token KL divergence against the reference", "",
            "Nats per token, with a 90% bootstrap interval over contexts. **KL(ref‖cell)**: "
            f"on the reference's own samples at temperature 1 (task-like prompts, {some_long}), both sides scoring "
            "the same token ids by echo (prefill). **KL(cell‖ref)**: on the cell's own samples with its decode-time "
            "log-probabilities (decode kernels, CUDA graphs, speculative decoding, the sampler), the reference "
            "scoring them by echo, less the reference's own decode-time minus prefill figure on its own samples "
            f"({_floor_text(run)}: what two passes of one engine differ by, so that a cell with the reference's "
            "settings measures zero); *own samples* says how many of them differ from the reference's at the same "
            "seed (samples can differ where the distribution does not: a speculative cell draws its random numbers "
            "in another order, so its samples differ at a KL of 0). Each is the mean of log p(x) − log q(x) over the "
            "sampled tokens x, an unbiased estimate that "
            "no top-k list can hide (it can come out slightly below 0 when nothing differs). The last three columns "
            "are the coarse top-5 figures: the share of positions whose top-5 sets are disjoint, the share with "
            "the same top token, and KL over the shared top-5 plus a rest bucket (mean / p99), a **lower bound** "
            "that two disjoint top-5 sets drive to 0.", "",
            markdown_table(["cell", "KL(ref‖cell) [90%]", "KL(cell‖ref) [90%]", "own samples", "disjoint top-5",
                            "same top token", "top-5 KL, lower bound (mean / p99)"], rows), ""]
