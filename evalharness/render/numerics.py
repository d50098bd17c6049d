"""The report's numerics section (issue 26): per cell both directions of the per-token KL divergence against the
reference with their intervals, whether the reverse figure came from the cell's own tokens, and the coarse top-k
figures as secondary columns. Pure; reads records only (records/drift.py)."""

from __future__ import annotations

from evalharness.records.drift import KLEstimate
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def kl_text(est: KLEstimate | None) -> str:
    """'0.0123 [0.0101, 0.0150]', or 'unavailable: why' (the reason escaped for Markdown)."""
    return kl_plain(est, lambda reason: md_text(reason, 80))


def kl_plain(est: KLEstimate | None, escape=lambda reason: reason[:80]) -> str:
    """kl_text as plain text (for report.html, which inserts it as text)."""
    if est is None:
        return ""
    if not est.available or est.estimate is None:
        return "unavailable: " + escape(est.reason or "")
    if est.ci_low is None or est.ci_high is None:
        return (f"{_num(est.estimate)} ({est.contexts} context{'s' if est.contexts != 1 else ''}: too few for an "
                "interval)")
    return f"{_num(est.estimate)} [{_num(est.ci_low)}, {_num(est.ci_high)}]"


def _num(value: float) -> str:
    """Four decimals, or two significant digits below 0.001 (float-noise figures of an exact cell stay readable)."""
    return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 else f"{value:.1e}"


def _own(est: KLEstimate | None) -> str:
    if est is None or not est.available or est.own_samples_identical is None:
        return ""
    return f"{est.contexts - est.own_samples_identical}/{est.contexts} differ"


def _floor_text(run: RunResult) -> str:
    floors = {cid: cell.drift.distribution.reverse.floor for cid, cell in run.cells.items()
              if cell.drift is not None and cell.drift.distribution is not None
              and cell.drift.distribution.reverse is not None and cell.drift.distribution.reverse.floor is not None}
    if not floors:
        return "not subtracted in this run: its records have no decode-time figures of the reference"
    values = sorted(set(floors.values()))
    if values == [0.0]:
        return "0 here: the reference's decode and prefill agreed to the last bit"
    return f"{_num(values[0])} nats per token here" if len(values) == 1 else \
        f"{_num(values[0])} to {_num(values[-1])} nats per token here, over the contexts each cell shares"


def numerics_section(run: RunResult) -> list[str]:
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        dist = cell.drift.distribution if cell is not None and cell.drift is not None else None
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
        said = (reference.distribution or {}) if reference is not None else {}
        if said.get("path", "") is None and said.get("error"):  # the engine has no way to give the figures
            return ["## Numerics: per-token KL divergence against the reference", "",
                    f"Not measured: {md_text(said['error'], 200)}.", ""]
        return []
    longest = (reference.distribution or {}).get("max_context_tokens") if reference is not None else None
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
