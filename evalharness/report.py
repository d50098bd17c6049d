"""Rendering a saved run as Markdown. Pure: a RunResult in, text out; anything from a model or a log is escaped.

Model output and engine logs are untrusted text: in a table cell, pipes, backticks, HTML and @-mentions are neutralised
so nothing can break the table, inject markup or ping anyone on a pull request; longer text goes in fenced blocks whose
fence is longer than any backtick run inside.
"""

from __future__ import annotations

import re
from typing import Any

from evalharness.compare import asked_names, resolved_differences
from evalharness.results import CellResult, RunResult

_MD_SPECIAL = re.compile(r"([\\*_\[\]#~!])")


def md_text(value: Any, limit: int = 200) -> str:
    """Untrusted text made safe for one Markdown table cell (and for inline prose)."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return text.replace("|", "\\|").replace("`", "&#96;").replace("@", "&#64;")


def code_block(text: str, info: str = "text") -> str:
    """Untrusted text in a fenced block that nothing inside can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    inert = text.replace("@", "@\u200b")  # a zero-width space after @ keeps a mention from pinging anyone
    return f"{fence}{info}\n{inert}\n{fence}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _known_warnings(cell: CellResult) -> list[str]:
    return [w.key + (f" ({', '.join(f'{k}={v}' for k, v in w.values.items())})" if w.values else "")
            for w in cell.warnings if w.key != "other"]


def render_markdown(run: RunResult) -> str:
    meta = run.meta
    parts = [f"# evalharness: {md_text(meta.matrix_name)}", ""]
    state = "complete" if run.complete else ("interrupted" if run.interrupted else "in progress")
    parts.append(
        f"Run {state}; engine {md_text(meta.engine)} {md_text(meta.engine_version or '(version unknown)')}; "
        f"harness {md_text(meta.harness_version)} at {md_text(meta.git_revision or 'no git revision')}; "
        f"started {md_text(meta.started_at)} on {md_text(meta.machine.get('hostname', '?'))} "
        f"({meta.machine.get('cpus', '?')} CPUs, {meta.machine.get('memory_gib', '?')} GiB)."
    )
    parts += ["", "## Cells", ""]
    tasks = _task_names(run)
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        name = f"`{cid}`" + (" (reference)" if cid == run.reference else "")
        if cell is None:
            rows.append([name, "not run", *([""] * (5 + len(tasks)))])
            continue
        scores = {t.task: t for t in cell.quality}
        rows.append([
            name,
            f"**{cell.status}**" if cell.status != "ok" else "ok",
            md_text(cell.phase),
            _seconds(cell.startup_s),
            f"{cell.probes.flagged}/{cell.probes.total}" if cell.probes else "",
            *(_score(scores.get(task)) for task in tasks),
            md_text(cell.reason or ""),
            md_text("; ".join(_known_warnings(cell))),
        ])
    header = ["cell", "status", "phase", "startup s", "garbage probes", *(md_text(t) for t in tasks), "reason", "warnings"]
    parts.append(markdown_table(header, rows))
    if tasks:
        parts += ["", "Scores are the task's headline metric (exact match, or accuracy for multiple choice) "
                      "± its standard error, from lm-eval's per-sample records in `cells/<id>/quality/<task>/`."]
    parts += ["", *_throughput_section(run), *_garbage_section(run), *_differences_section(run)]
    parts += _warnings_section(run)
    parts += _crashes_section(run)
    for note in run.notes:
        parts += [f"> {md_text(note, 1000)}", ""]
    return "\n".join(parts).rstrip() + "\n"


def _task_names(run: RunResult) -> list[str]:
    names: list[str] = []
    for cid in run.cell_order:
        for task in (run.cells[cid].quality if cid in run.cells else []):
            if task.task not in names:
                names.append(task.task)
    return names


def _score(task) -> str:
    if task is None:
        return ""
    if task.error or task.value is None:
        return "failed"
    text = f"{task.value:.3f}"
    return text + (f" ± {task.stderr:.3f}" if task.stderr is not None else "")


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value * 1000:.1f}"


def throughput_rows(scenarios, label: str = "") -> list[list[str]]:
    """Table rows for scenario results (shared by the report and `evalharness bench`)."""
    rows = []
    for sc in scenarios:
        mode = f"c={sc.concurrency}" if sc.concurrency else f"{sc.request_rate}/s"
        spec = sc.engine.get("spec_mean_acceptance_length")
        rate = sc.engine.get("spec_acceptance_rate")
        spec_text = "" if spec is None else f"{spec:.2f}" + (f" ({rate:.0%})" if rate is not None else "")
        errors = ", ".join(f"{k} {v}" for k, v in sc.errors.items())
        rows.append([*([label] if label else []), md_text(sc.name), mode, f"{sc.completed}/{sc.requests}",
                     f"{sc.output_tok_s:.1f}",
                     "" if sc.request_decode_tok_s.p50 is None else f"{sc.request_decode_tok_s.p50:.1f}",
                     _ms(sc.ttft_s.p50), _ms(sc.ttft_s.p99), _ms(sc.tpot_s.p50), _ms(sc.itl_s.p50), _ms(sc.itl_s.p99),
                     _ms(sc.e2e_s.p50), spec_text, md_text(errors)])
    return rows


THROUGHPUT_HEADER = ["scenario", "load", "done", "output tok/s", "decode tok/s per request (p50)", "TTFT p50 ms",
                     "TTFT p99 ms", "TPOT p50 ms", "ITL p50 ms", "ITL p99 ms", "E2E p50 ms",
                     "spec acceptance length (rate)", "errors"]


def _throughput_section(run: RunResult) -> list[str]:
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is not None and cell.throughput:
            rows += throughput_rows(cell.throughput, f"`{cid}`")
    if not rows:
        return []
    return ["## Throughput", "",
            "Output tokens counted from the server's usage, never from chunks; a chunk of k tokens gives k "
            "inter-token gaps. Speculative acceptance is the engine's own figure over the scenario.", "",
            markdown_table(["cell", *THROUGHPUT_HEADER], rows), ""]


def _garbage_section(run: RunResult) -> list[str]:
    cells = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].status == "garbage"]
    if not cells:
        return []
    out = ["## Garbage", ""]
    for cell in cells:
        assert cell.probes is not None
        out += [f"### `{cell.id}`", "", md_text(cell.probes.reason, 500) + ".", ""]
        for sample in cell.probes.offending[:2]:
            fired = ", ".join(f"{f['detector']} ({f['evidence']})" for f in sample.findings)
            out += [f"Prompt {md_text(sample.id)}: {md_text(sample.prompt, 120)}", "",
                    f"Detectors: {md_text(fired, 400)}", "", code_block(sample.output[:600]), ""]
    return out


def _differences_section(run: RunResult) -> list[str]:
    out = ["## Resolved settings that differ from the reference", ""]
    reference = run.cells.get(run.reference)
    if reference is None or not reference.resolved:
        out += ["The reference cell has no resolved configuration (not run, or it never became ready).", ""]
        return out
    out += ["What each engine reported after startup. **not asked** marks a difference that none of the cell's own "
            "flags or variables names: a consequence of them or a switch the engine made by itself; worth a look.", ""]
    any_rows = False
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cid == run.reference or not cell.resolved:
            continue
        asked = asked_names(cell.args, cell.env, reference.args, reference.env)
        diffs = resolved_differences(reference.resolved, cell.resolved, asked)
        out.append(f"### `{cid}`")
        out.append("")
        if not diffs:
            out += ["Same resolved settings as the reference.", ""]
            continue
        any_rows = True
        rows = [[md_text(d.key), md_text(d.reference, 80), md_text(d.cell, 80), "asked" if d.asked else "**not asked**"]
                for d in diffs[:40]]
        out += [markdown_table(["setting", "reference", "this cell", ""], rows), ""]
        if len(diffs) > 40:
            out += [f"... and {len(diffs) - 40} more in results.json.", ""]
    if not any_rows:
        out += ["No ready cell differs from the reference in its resolved settings.", ""]
    return out


def _warnings_section(run: RunResult) -> list[str]:
    out = ["## Warnings", ""]
    listed = False
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or not cell.warnings:
            continue
        known = [w for w in cell.warnings if w.key != "other"]
        others = [w for w in cell.warnings if w.key == "other"]
        out.append(f"- `{cid}`: {len(known)} known, {len(others)} other warning lines (full log: `{cell.log}`)")
        for warning in known:
            count = f" (x{warning.count})" if warning.count > 1 else ""
            out.append(f"  - **{md_text(warning.key)}**{count}: {md_text(warning.message, 300)}")
        listed = True
    if not listed:
        out.append("No warnings in any cell's log.")
    return out + [""]


def _crashes_section(run: RunResult) -> list[str]:
    failed = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].status in ("crashed", "timeout", "error")]
    if not failed:
        return []
    out = ["## Crashes, timeouts and errors", ""]
    for cell in failed:
        out.append(f"### `{cell.id}`: {cell.status} at {md_text(cell.phase)}")
        out.append("")
        if cell.crash:
            out.append(f"Kind **{md_text(cell.crash.kind)}**" + (f": {md_text(cell.crash.hint)}" if cell.crash.hint else "") + ".")
            out.append("")
            out.append(code_block(cell.crash.excerpt))
        elif cell.reason:
            out.append(md_text(cell.reason, 1000))
        out += ["", f"Full log: `{cell.log}`" if cell.log else "", ""]
    return out
