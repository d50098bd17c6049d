"""The Markdown report of a saved run (report.md) and its short form (summary.md). Pure: a RunResult in, text out;
anything from a model or a log goes through markdown.py's escaping.

Reads records and what analysis computes from them (Pareto front, resolved-settings differences); must not import
phases, serving, the runner or the command line.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalharness.analysis.settings import asked_names, resolved_differences
from evalharness.records.engine_profile import EngineProfile
from evalharness.records.measures import TaskScore
from evalharness.render.nodes import measured_on, mixed_caveat, nodes_section
from evalharness.records.run import CellResult, RunResult
from evalharness.render.drift import drift_section, verdict_text
from evalharness.measures.reports import measure_sections, own_sections, task_sections
from evalharness.render.length import length_section
from evalharness.render.engines import engines_section
from evalharness.render.load import load_section
from evalharness.render.markdown import code_block, markdown_table, md_text
from evalharness.render.names import key_table, named, short_names
from evalharness.render.reading import reading_section
from evalharness.render.verdict import chart_of, qualifier_lines, verdict_box
from evalharness.render.pareto import pareto_section
from evalharness.render.probes import garbage_section, probe_budget_lines
from evalharness.render.quality import quality_section
from evalharness.render.confirmation import confirmation_section
from evalharness.render.recommend import recommendation_lines
from evalharness.render.server import server_section
from evalharness.render.throughput import point_tok_s_text, throughput_section
from evalharness.render.timing import timing_section


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _known_warnings(cell: CellResult) -> list[str]:
    return [w.key + (f" ({', '.join(f'{k}={v}' for k, v in w.values.items())})" if w.values else "")
            for w in cell.warnings if w.key != "other"]


def render_markdown(run: RunResult, engines: Mapping[str, EngineProfile] | None = None) -> str:
    """report.md; `engines` (by name: serving/engines' ENGINES, handed in by the runner and the CLI) say what each
    engine does with a seed and where its record holds a setting; without them an engine reads as unknown."""
    meta = run.meta
    parts = [f"# evalharness: {md_text(meta.matrix_name)}", ""]
    state = "complete" if run.complete else ("interrupted" if run.interrupted else "in progress")
    parts.append(
        f"Run {state}; {'engines' if len(run.engines()) > 1 else 'engine'} {md_text(run.engine_line())}; "
        f"harness {md_text(meta.harness_version)} at {md_text(meta.git_revision or 'no git revision')}; "
        f"started {md_text(meta.started_at)} on {md_text(meta.machine.get('hostname', '?'))} "
        f"({meta.machine.get('cpus', '?')} CPUs, {meta.machine.get('memory_gib', '?')} GiB); "
        f"measured on {md_text(measured_on(run))}."
    )
    if mixed_caveat(run):
        parts += ["", mixed_caveat(run)]
    names = short_names(run)
    parts += ["", *verdict_box(run), *recommendation_lines(run), *qualifier_lines(run), *confirmation_section(run),
              *pareto_section(run), *load_section(run),
              "## Cells", ""]
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
            _seconds(cell.startup_s) + (f" ({len(cell.port_relaunches)} port lost, relaunched)"
                                        if cell.port_relaunches else ""),
            f"{cell.probes.flagged}/{cell.probes.total}" if cell.probes else "",
            *(_score(scores.get(task)) for task in tasks),
            md_text(cell.reason or ""),
            md_text("; ".join(_known_warnings(cell))),
        ])
    header = ["cell", "status", "phase", "startup s", "garbage probes", *(md_text(t) for t in tasks),
              "reason", "warnings"]
    parts.append(markdown_table(header, rows))
    parts += probe_budget_lines(run)
    relaunched = [(cid, note) for cid in run.cell_order if run.cells.get(cid)
                  for note in run.cells[cid].port_relaunches]
    if relaunched:
        parts += ["", "Ports lost during startup (another process took the port before the engine bound it; the "
                      "cell was relaunched on a new port and measured there):", ""]
        parts += [f"- `{cid}`: {md_text(note, 400)}" for cid, note in relaunched]
    if tasks:
        parts += ["", "Scores are the task's headline metric (the first metric and filter of its lm-eval config; "
                      "named in Quality tasks) ± its standard error, from lm-eval's per-sample records in "
                      "`cells/<id>/quality/<task>/`."]
    parts += ["", *quality_section(run), *drift_section(run, engines), *task_sections(run),
              *measure_sections(run), *length_section(run), *own_sections(run), *throughput_section(run),
              *timing_section(run), *server_section(run), *garbage_section(run), *engines_section(run, engines),
              *_differences_section(run)]
    parts += _no_effect_section(run)
    parts += _warnings_section(run)
    parts += _requests_section(run)
    parts += _crashes_section(run)
    parts += nodes_section(run)
    for note in run.notes:
        parts += [f"> {md_text(note, 1000)}", ""]
    parts += ["", *reading_section()]
    text = named("\n".join(parts).rstrip() + "\n", names)
    return _after_first_table(text, key_table(run, names))


def _task_names(run: RunResult) -> list[str]:
    names: list[str] = []
    for cid in run.cell_order:
        for task in (run.cells[cid].quality if cid in run.cells else []):
            if task.task not in names:
                names.append(task.task)
    return names


def _score(task: TaskScore | None) -> str:
    if task is None:
        return ""
    if task.error or task.value is None:
        return "failed"
    text = f"{task.value:.3f}"
    return text + (f" ± {task.stderr:.3f}" if task.stderr is not None else "")


def summary_markdown(run: RunResult, limit: int = 12) -> str:
    """The short form for a pull-request comment or $GITHUB_STEP_SUMMARY: fits on a screen."""
    chart = chart_of(run)
    points = chart.points
    lines = [f"### evalharness: {md_text(run.meta.matrix_name)}", ""]
    lines.append(f"{len(run.cells)}/{len(run.cell_order)} cells: {run.status_summary()}; measured on "
                 f"{md_text(measured_on(run))}")
    lines.append("")
    lines += verdict_box(run)
    lines += recommendation_lines(run)
    lines += qualifier_lines(run)
    if points:
        rows = []
        for p in sorted(points, key=lambda p: -p.throughput)[:limit]:
            d = run.cells[p.cell].drift
            acc = "reference" if p.cell == run.reference else (verdict_text(d.outcome, d.worst_drop_upper) if d else "")
            rows.append([f"`{p.cell}`", "**front**" if p.on_front else "", point_tok_s_text(p), acc])
        unit = chart.axis.split(" ", 2)[0] + " tok/s" if "goodput" in chart.axis else "output tok/s"
        lines += [f"Throughput: {md_text(chart.axis)}.", "",
                  markdown_table(["cell", "", f"{md_text(unit)} ↑", "accuracy verdict"], rows), ""]
    bad = [c for c in run.cells.values() if c.status != "ok"]
    for cell in bad[:limit]:
        lines.append(f"- `{cell.id}` **{cell.status}**: {md_text(cell.reason or '', 160)}")
    names = short_names(run)
    return named("\n".join([*lines, "", *key_table(run, names)]).rstrip() + "\n", names)


def _after_first_table(text: str, block: list[str]) -> str:
    """`block` inserted after the report's first table (where a reader first meets the names), else at the end."""
    if not block:
        return text
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return text.rstrip() + "\n\n" + "\n".join(block).rstrip() + "\n"
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join([*lines[:end], "", *block, *lines[end:]])


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
        if run.cell_engine(cid) != run.cell_engine(run.reference):
            out += [f"### `{cid}`", "", f"Served by {md_text(run.cell_engine(cid))}, whose settings have other names: "
                    "compared by meaning in Engines side by side (every key in results.json).", ""]
            any_rows = True
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


def _no_effect_section(run: RunResult) -> list[str]:
    if not run.no_effect:
        return []
    out = ["## Axes that changed nothing", "",
           "These cells differ in one axis only, yet resolved the same settings and answered every probe word for word "
           "alike: the axis had no effect here (e.g. DeepGEMM that SGLang turns off by itself on SM120).", ""]
    out += [f"- **{md_text(n.axis)}** {md_text(n.values[0])} vs {md_text(n.values[1])}: `{n.cells[0]}` and "
            f"`{n.cells[1]}` ({n.probes} probe answers identical)" for n in run.no_effect]
    return out + [""]


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


def _requests_section(run: RunResult) -> list[str]:
    """Phases whose requests needed retries or failed: what was kept rests on how many answers came back."""
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        for phase, tally in (cell.requests if cell else {}).items():
            if tally.failed or tally.retried or tally.hung:
                kinds = ", ".join(f"{md_text(k)} ×{n}" for k, n in sorted(tally.kinds.items(), key=lambda kv: -kv[1]))
                rows.append([f"`{cid}`", md_text(phase), str(tally.requests), str(tally.failed), str(tally.retried),
                             "yes" if tally.hung else "", kinds])
    if not rows:
        return []
    return ["## Requests retried or failed", "",
            "Failures counted after retries (resets, 5xx and 429 are retried; timeouts and throughput requests are "
            "not); a cell is marked error when a phase's share of failures exceeds `requests.max_error_rate`.", "",
            markdown_table(["cell", "phase", "requests", "failed", "retries", "stopped answering", "errors"], rows),
            ""]


def _crashes_section(run: RunResult) -> list[str]:
    failed = [run.cells[c] for c in run.cell_order
              if c in run.cells and run.cells[c].status in ("crashed", "timeout", "error")]
    if not failed:
        return []
    out = ["## Crashes, timeouts and errors", ""]
    for cell in failed:
        out.append(f"### `{cell.id}`: {cell.status} at {md_text(cell.phase)}")
        out.append("")
        if cell.crash:
            out.append(f"Kind **{md_text(cell.crash.kind)}**"
                       + (f": {md_text(cell.crash.hint)}" if cell.crash.hint else "") + ".")
            out.append("")
            out.append(code_block(cell.crash.excerpt))
        elif cell.reason:
            out.append(md_text(cell.reason, 1000))
        if cell.teardown is not None and cell.teardown.leftover:
            out += ["", f"**Engine processes left behind after teardown**: {cell.teardown.leftover} (the next cell "
                        "ran beside them)."]
        out += ["", f"Full log: `{cell.log}`" if cell.log else "", ""]
    return out
