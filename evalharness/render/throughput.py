"""The throughput table of the report and of `evalharness bench`: one row per scenario, with the marks that say how
a figure was obtained (interpolated inter-token latency)."""

from __future__ import annotations

from evalharness.analysis.speed import Side, kept_rates, set_aside, side_of
from evalharness.records.decision import ParetoPoint
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1000:.1f}"


def kept_range(side: Side | None) -> tuple[float, float] | None:
    """(lowest, highest) of the repeats the speed rule kept (a disturbed repeat set aside is never in it); None with
    fewer than two kept."""
    kept = kept_rates(side) if side is not None else []
    return (min(kept), max(kept)) if len(kept) > 1 else None


def tok_s_text(value: float, side: Side | None) -> str:
    """A cell's figure (the kept repeats' mean) with the range of those repeats written min..max, never in brackets
    (a bracket is an interval, its level beside it): '13.7' measured once, '13.7 (repeats 12.1..14.5)', '13.7 (kept
    repeats 12.1..14.5; 1 set aside)' where the speed rule set disturbed ones aside (Throughput names them)."""
    if side is None:
        return f"{value:.1f}"
    return _figure_text(value, len(side.rates), kept_range(side), len(set_aside(side)))


def point_tok_s_text(point: ParetoPoint) -> str:
    """`tok_s_text` of a decided Pareto point (records/decision.py: its kept range and set-aside count)."""
    kept = (point.kept_low, point.kept_high) if point.kept_low is not None and point.kept_high is not None else None
    return _figure_text(point.throughput, len(point.rates), kept, point.set_aside)


def _figure_text(value: float, repeats: int, kept: tuple[float, float] | None, aside: int) -> str:
    if repeats < 2:
        return f"{value:.1f}"
    parts = [] if kept is None else [f"{'kept repeats' if aside else 'repeats'} {kept[0]:.1f}..{kept[1]:.1f}"]
    parts += [f"{aside} set aside"] if aside else []
    return f"{value:.1f} ({'; '.join(parts)})"


def prompts_text(sc: ScenarioResult) -> str:
    """The prompt source and the mean prompt tokens the engine counted; runs before the source was recorded used
    random words."""
    source = sc.prompts or "random (not recorded)"
    mean = f", {sc.prompt_tokens / sc.completed:.0f} tok" if sc.prompt_tokens and sc.completed else ""
    return md_text(source) + mean


def throughput_rows(scenarios: list[ScenarioResult], label: str = "") -> list[list[str]]:
    """Table rows for scenario results (shared by the report and `evalharness bench`)."""
    rows = []
    for sc in scenarios:
        mode = f"c={sc.concurrency}" if sc.concurrency else f"{sc.request_rate}/s"
        spec = sc.engine.get("spec_mean_acceptance_length")
        rate = sc.engine.get("spec_acceptance_rate")
        spec_text = "" if spec is None else f"{spec:.2f}" + (f" ({rate:.0%})" if rate is not None else "")
        since_start = sc.engine.get("spec_acceptance_length_since_start")
        if spec is None and since_start is not None:  # older records: SGLang refused the reset
            spec_text = f"{since_start:.2f} since startup (not reset)"
        if spec is None and sc.engine.get("spec_unavailable"):  # no figure rather than a wrong one, and why
            spec_text = "no figure: " + md_text(sc.engine["spec_unavailable"], 160)
        elif spec is not None and sc.engine.get("spec_source", "").startswith("per-request"):
            # the measured requests' own details; what the counters said beside it, when it is not the same
            spec_text += " per request"
            if sc.engine.get("spec_disagreement"):
                spec_text += "; **counters disagree**: " + md_text(sc.engine["spec_disagreement"], 160)
            elif sc.engine.get("spec_unavailable"):
                spec_text += "; counters: no figure: " + md_text(sc.engine["spec_unavailable"], 160)
        errors = ", ".join(f"{k} {v}" for k, v in sc.errors.items())
        itl = ITL_INTERPOLATED if sc.itl_interpolated() else ""
        repeats = f" ×{len(sc.repeat_tok_s)}" if len(sc.repeat_tok_s) > 1 else ""
        rows.append([*([label] if label else []), md_text(sc.name), mode + repeats, prompts_text(sc),
                     f"{sc.completed}/{sc.requests}", tok_s_text(sc.output_tok_s, side_of(sc)),
                     "" if sc.request_decode_tok_s.p50 is None else f"{sc.request_decode_tok_s.p50:.1f}",
                     _ms(sc.ttft_s.p50), _ms(sc.ttft_s.p99), _ms(sc.tpot_s.p50), _marked(itl, _ms(sc.itl_s.p50)),
                     _marked(itl, _ms(sc.itl_s.p99)), _ms(sc.e2e_s.p50), spec_text, md_text(errors)])
    return rows


ITL_INTERPOLATED = "≈"
ITL_NOTE = ("≈ marks interpolated inter-token latency: the engine sent no per-chunk usage (only a total at the end, "
            "or none, counted by its tokenizer), so each request's tokens were spread evenly over its chunks.")


def _marked(mark: str, text: str) -> str:
    return f"{mark}{text}" if text and mark else text


def throughput_notes(scenarios: list[ScenarioResult]) -> list[str]:
    """What the throughput table's marks mean, for the scenarios that carry one."""
    return [ITL_NOTE] if any(sc.itl_interpolated() for sc in scenarios) else []


THROUGHPUT_HEADER = ["scenario", "load", "prompts", "done", "output tok/s", "decode tok/s per request (p50)",
                     "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "ITL p50 ms", "ITL p99 ms", "E2E p50 ms",
                     "spec acceptance length (rate)", "errors"]


def throughput_section(run: RunResult) -> list[str]:
    rows = []
    scenarios = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is not None and cell.throughput:
            rows += throughput_rows(cell.throughput, f"`{cid}`")
            scenarios += cell.throughput
    if not rows:
        return []
    notes = " ".join(throughput_notes(scenarios))
    return ["## Throughput", "",
            "Output tokens counted from the server's usage, never from chunks; a chunk of k tokens gives k "
            "inter-token gaps. Speculative acceptance is the engine's own figure over the scenario, from the "
            "measured requests only (read after the warm-up). Prompts: where the scenario's prompts came from "
            "(`natural`: the shipped corpus of natural requests; `task:NAME`: a task's prompts; `random`: random "
            "words, for capacity figures only: speculative decoding finds its own loops in them and overstates its "
            "acceptance) and the mean prompt tokens; ×N: the scenario ran N times, output tok/s is the mean of the "
            "repeats the speed rule kept with their lowest..highest beside it, and how many it "
            "set aside as disturbed (listed below)." +
            (" " + notes if notes else ""), "",
            markdown_table(["cell", *THROUGHPUT_HEADER], rows), "", *repeats_section(run)]


def repeat_notes(sc: ScenarioResult) -> list[str]:
    """One line per repeat the speed rule set aside or kept although disturbed, with what disturbed it, and per
    repeat whose own streams stalled (kept: the engine's behaviour)."""
    side = side_of(sc)
    aside = set_aside(side)
    out = []
    for i, why in enumerate(side.reasons()):
        if i in aside:
            out.append(f"repeat {i + 1}: {side.rates[i]:.1f} tok/s, set aside: {aside[i]}")
        elif why:
            out.append(f"repeat {i + 1}: {side.rates[i]:.1f} tok/s, kept although disturbed (too few clean "
                       f"repeats; the verdict rests on it): {why}")
    for i, figures in enumerate(sc.repeat_figures):
        if figures.stalled:
            out.append(f"repeat {i + 1}: {figures.tok_s:.1f} tok/s, kept (the engine's own): {figures.stalled}")
    return out


def disturbed_notes(run: RunResult) -> list[str]:
    """Every disturbed repeat of every cell as one plain line (report.html's notes)."""
    return [f"{cid} {sc.name}: {note}" for cid in run.cell_order if cid in run.cells
            for sc in run.cells[cid].throughput for note in repeat_notes(sc)]


def repeats_section(run: RunResult) -> list[str]:
    """How many repeats each scenario took and why it stopped; each disturbed repeat and what disturbed it."""
    lines = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        for sc in cell.throughput if cell else []:
            notes = repeat_notes(sc)
            if not notes and not sc.stopped:
                continue
            plan = f" (plan {sc.repeat_plan[0]}-{sc.repeat_plan[1]})" if sc.repeat_plan else ""
            stop = f"; stopped: {md_text(sc.stopped, 300)}" if sc.stopped else ""
            lines.append(f"- `{cid}` {md_text(sc.name)}: {len(sc.repeat_tok_s) or 1} repeats{plan}{stop}")
            lines += [f"  - {md_text(n, 400)}" for n in notes]
    if not lines:
        return []
    return ["Repeats: a repeat is disturbed when other processes kept the host's cores busy, the hypervisor stole CPU "
            "time or another process held a GPU while it ran; a disturbed repeat is "
            "measured again (`remeasure`) and set aside while two clean ones remain. A repeat whose own streams "
            "stalled (gaps far above their median) or whose figure lies far below the others is the engine's "
            "behaviour: kept, and named here.", "",
            *lines, ""]
