"""What report.html shows, as plain JSON-able data: the recommendation, the Pareto points with their intervals, each
cell's load sweep as a curve, the cells table, per cell and task the documents paired with the reference's (flips,
truncated, empty and stop-cut answers, the extracted answer), the garbage probes with where each detector's evidence
sits, every measure's tables, and the settings that differ between every two cells.

Built from the saved run folder only (results.json and the per-cell files, read through records and analysis), so an
old run renders without an engine. Pure apart from reading that folder; must not import phases, serving, the runner
or the command line. Every string here is untrusted (model output, logs, task data): html.py embeds it as escaped
JSON and the page inserts it as text only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from evalharness.analysis.pairing import Headline, UnpairableMetric, pair, record_key, side_scores
from evalharness.analysis.pareto import cell_figure, curves
from evalharness.analysis.secondary import answer_figures
from evalharness.analysis.settings import asked_names, resolved_differences
from evalharness.records.cellfiles import CellFileError, load_probe_outputs, load_samples
from evalharness.records.measures import ProbeOutput, TaskScore
from evalharness.records.run import CellResult, RunResult
from evalharness.measures.reports import measure_data, task_pages
from evalharness.render.length import length_table
from evalharness.render.drift import interval_text, verdict_text
from evalharness.render.nodes import measured_on
from evalharness.render.reading import glossary
from evalharness.render.plot import CURVE_X_LABEL, CURVE_Y_LABEL, load_label
from evalharness.render.recommend import launch_command, recommendation_lines
from evalharness.render.verdict import chart_of, verdict_plain
from evalharness.render.pareto import vs_reference_text
from evalharness.render.throughput import disturbed_notes, tok_s_text


def _text(value: Any) -> str | None:
    """A sample's field as text (lm-eval's targets and extracted answers may be numbers or lists)."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def extracted_span(answer: str, extracted: str | None, filter_name: str | None) -> tuple[int, int] | None:
    """Where the scorer's extracted answer sits in the answer it was taken from: the last occurrence (lm-eval's
    extraction filters take the last match: gsm8k's flexible-extract, 'the answer is (X)'), the first for a filter
    that says so (this project's first_number); None when it is not in the text (a choice task, a mapped answer)."""
    if not extracted or not answer:
        return None
    at = answer.find(extracted) if "first" in (filter_name or "") else answer.rfind(extracted)
    return None if at < 0 else (at, at + len(extracted))


def _sample(row: dict, score: float | None, repeats: int) -> dict:
    """One side's answer to one document, with what the filters need: the answer as scored (content, never the
    reasoning), the scorer's extracted answer, the reasoning, how it ended, and the score (mean over repeats)."""
    figures = answer_figures(row)
    stop = row.get("stop_reason")
    answer, extracted = _text(row.get("answer")) or "", _text(row.get("response"))
    return {"answer": answer, "extracted": extracted, "mark": extracted_span(answer, extracted, row.get("filter")),
            "reasoning": row.get("reasoning") or None, "finish": row.get("finish_reason"),
            "stop": stop if isinstance(stop, str) else None, "score": score, "repeats": repeats,
            # a loglikelihood task's rows carry no finish_reason: neither truncated nor empty means anything there
            "truncated": row.get("finish_reason") is not None and figures["truncated_share"] == 1.0,
            "empty": row.get("finish_reason") is not None and figures["empty_share"] == 1.0,
            "stop_cut": row.get("finish_reason") == "stop" and isinstance(stop, str),
            # a calls task's (tool calls, JSON): whether the answer was a valid call / valid JSON, and why not
            "invalid": "valid" in row and not row["valid"], "errors": [str(e) for e in row.get("errors") or []],
            "refused": row.get("refused") or None}


def _headline_rows(run_dir: Path, score: TaskScore, headline: Headline) -> dict[str, dict]:
    """Repeat 0's sample row of each headline record (the answer the page shows; scores are over every repeat)."""
    rows: dict[str, dict] = {}
    for row in load_samples(run_dir / score.samples) if score.samples else []:
        subtask = row.get("task") or score.task
        filt = row.get("filter") or headline.of_subtask(subtask)[1]
        for metric in row.get("metrics") or {}:
            key = record_key(subtask, row.get("doc_id"), row.get("doc_hash"), filt, metric)
            if headline(key):
                rows.setdefault(key, row)
    return rows


class _Strings:
    """Long texts that many samples share (a task's prompts, the same in every cell) kept once, by index."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._index: dict[str, int] = {}

    def add(self, text: str | None) -> int | None:
        if text is None:
            return None
        if text not in self._index:
            self._index[text] = len(self.values)
            self.values.append(text)
        return self._index[text]


def _task_documents(run: RunResult, run_dir: Path, strings: _Strings) -> tuple[list[dict], list[str]]:
    """Per task the reference's documents, and per cell its answers to them paired with the reference's."""
    notes: list[str] = []
    reference = run.cells.get(run.reference)
    if reference is None:
        return [], notes
    tasks = []
    for ref_score in reference.quality:
        if not ref_score.samples or ref_score.error:
            continue
        headline = Headline.of(ref_score)
        try:
            ref_side = side_scores(run_dir, ref_score, headline)
            ref_rows = _headline_rows(run_dir, ref_score, headline)
        except (CellFileError, UnpairableMetric) as exc:
            notes.append(f"{ref_score.task}: the reference's documents cannot be shown: {exc}")
            continue
        keys = [k for k in ref_side.means if k in ref_rows]
        docs = []
        for key in keys:
            row = ref_rows[key]
            docs.append({"key": key, "subtask": row.get("task") or ref_score.task, "doc_id": row.get("doc_id"),
                         "target": _text(row.get("target")), "prompt": strings.add(row.get("prompt")),
                         "reference": _sample(row, ref_side.means[key], ref_side.repeats)})
        cells = {}
        for cid in run.cell_order:
            cell = run.cells.get(cid)
            score = next((t for t in cell.quality if t.task == ref_score.task), None) if cell else None
            if cid == run.reference or score is None or not score.samples or score.error:
                continue
            try:
                side = side_scores(run_dir, score, headline)  # read by the reference's headline, as drift pairs
                rows = _headline_rows(run_dir, score, headline)
            except (CellFileError, UnpairableMetric) as exc:
                notes.append(f"{cid} / {ref_score.task}: its answers cannot be shown: {exc}")
                continue
            flips = pair(ref_side.means, side.means).flips()
            answers = []
            for doc in docs:
                row = rows.get(doc["key"])
                if row is None or doc["key"] not in side.means:
                    answers.append(None)
                    continue
                answer = _sample(row, side.means[doc["key"]], side.repeats)
                answer["flip"] = flips.get(doc["key"])
                prompt = row.get("prompt")
                # the same document sends the same prompt in every cell: say so instead of keeping it twice
                answer["prompt"] = (None if prompt is None or strings.add(prompt) == doc["prompt"]
                                    else strings.add(prompt))
                answers.append(answer)
            cells[cid] = answers
        tasks.append({"task": ref_score.task, "metric": ref_score.metric, "documents": docs, "cells": cells,
                      "prompts_recorded": any(d["prompt"] is not None for d in docs),
                      "stop_recorded": any("stop_reason" in r for r in ref_rows.values())})
    return tasks, notes


_QUOTED = re.compile(r"'((?:[^'\\]|\\.)+)'")


def finding_spans(output: str, evidence: str) -> list[tuple[int, int]]:
    """Where a detector's evidence sits in the output: each quoted excerpt in the evidence ('wis' x5, "60/64 symbols:
    '--_---…'", runs joined by spaces), unescaped and cut at a trailing ellipsis, split at whitespace, and every
    occurrence of each piece of two characters or more. Sorted, overlaps merged; [] when nothing is quoted."""
    found: list[tuple[int, int]] = []
    for quoted in _QUOTED.findall(evidence):
        text = quoted.replace("\\n", "\n").replace("\\t", "\t").replace("\\'", "'").replace("\\\\", "\\")
        text = text.removesuffix("…")
        for piece in text.split():
            if len(piece) < 2:
                continue
            start = output.find(piece)
            while start != -1:
                found.append((start, start + len(piece)))
                start = output.find(piece, start + len(piece))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _probe(output: ProbeOutput, reference: ProbeOutput | None) -> dict:
    findings = [{"detector": f.get("detector"), "strength": f.get("strength"), "evidence": f.get("evidence"),
                 "spans": finding_spans(output.output, str(f.get("evidence") or ""))} for f in output.findings]
    return {"id": output.id, "prompt": output.prompt, "output": output.output, "reasoning": output.reasoning,
            "finish": output.finish_reason, "findings": findings,
            "reference_output": reference.output if reference else None}


def _probes(run: RunResult, run_dir: Path) -> dict[str, list[dict]]:
    """The probe answers a detector marked, per cell (results.json keeps them with their findings), beside the
    reference's answer to the same probe."""
    ref_cell = run.cells.get(run.reference)
    ref_outputs = load_probe_outputs(run_dir / "cells" / run.reference / "probes.jsonl") if ref_cell else {}
    out = {}
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cell.probes is None or not cell.probes.offending:
            continue
        out[cid] = [_probe(o, ref_outputs.get(o.id)) for o in cell.probes.offending]
    return out


def _settings(cell: CellResult) -> dict[str, Any]:
    return {**{f"flag {k}": v for k, v in cell.args.items()}, **{f"env {k}": v for k, v in cell.env.items()}}


def settings_diffs(run: RunResult) -> dict[str, list[list[Any]]]:
    """'a|b' -> [[setting, a's value, b's value, asked], ...] for every two finished cells, a before b in the run's
    order: their flags, variables and resolved settings that differ ('asked' as analysis/settings.py marks it: one of
    the flags or variables in which they differ names it)."""
    cells = [run.cells[c] for c in run.cell_order if c in run.cells]
    out = {}
    for i, a in enumerate(cells):
        for b in cells[i + 1:]:
            asked = asked_names(b.args, b.env, a.args, a.env)
            diffs = resolved_differences(_settings(a), _settings(b)) + \
                resolved_differences(a.resolved, b.resolved, asked)
            engines = (run.cell_engine(a.id), run.cell_engine(b.id))
            # cells on two engines: the engine first (their resolved keys are two engines' names for their settings;
            # report.md compares them by meaning)
            out[f"{a.id}|{b.id}"] = ([["engine", engines[0], engines[1], True]] if engines[0] != engines[1] else []) + \
                [[d.key, _text(d.reference), _text(d.cell), d.asked or d.key.startswith(("flag ", "env "))]
                 for d in diffs]
    return out


def _chart(run: RunResult) -> dict:
    chart = chart_of(run)
    points = []
    for p in chart.points:
        d = run.cells[p.cell].drift
        interval = (-d.ci_high, -d.ci_low) if chart.measure == "accuracy" and d is not None and \
            d.ci_low is not None and d.ci_high is not None else (None, None)
        # the bar: the kept repeats' lowest..highest (a disturbed repeat set aside is not the cell's speed)
        points.append({"cell": p.cell, "x": p.throughput, "x_low": p.kept_low, "x_high": p.kept_high, "y": p.drift,
                       "y_low": interval[0], "y_high": interval[1], "on_front": p.on_front,
                       "reference": p.cell == run.reference,
                       "verdict": "reference" if p.cell == run.reference else
                       verdict_text(p.verdict, p.drop_upper, bold=False) if p.verdict else None})
    return {"scenario": chart.scenario, "measure": chart.measure, "points": points,
            "x_label": chart.axis, "point": chart.point_words,
            "y_label": "accuracy drop vs reference (pooled, 90% interval)" if chart.measure == "accuracy"
            else "mean KL divergence vs reference"}


def _curves(run: RunResult) -> dict:
    """Each ok cell's sweep: per step x = tok/s per user, y = output tok/s per GPU with its 90% interval, the load,
    and whether it met the SLO (None without one); steps without a per-user figure are left out."""
    cells = [{"cell": c.cell, "reference": c.reference, "gpus": c.gpus, "stopped": c.stopped,
              "points": [{"x": p.per_user, "y": p.tok_s_per_gpu, "y_low": p.low, "y_high": p.high,
                          "label": load_label(p), "meets": p.meets if p.goodput_per_gpu is not None else None}
                         for p in c.points if p.per_user is not None]} for c in curves(run)]
    return {"cells": [c for c in cells if c["points"]], "x_label": CURVE_X_LABEL, "y_label": CURVE_Y_LABEL,
            "point": chart_of(run).point_words}


def _cells_table(run: RunResult, tasks: list[str]) -> dict:
    """The cells table: per row each column's text and the value it sorts by."""
    chart = chart_of(run)
    front = {p.cell for p in chart.points if p.on_front}
    ref_tp = chart.throughput.get(run.reference)
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None:
            rows.append({"cell": cid,
                         "columns": [[cid, cid], ["not run", "not run"]] + [["", None]] * (6 + len(tasks))})
            continue
        figure = cell_figure(run, cid)
        tp = None if figure is None else figure.value
        d = cell.drift
        scores = {t.task: t for t in cell.quality}
        verdict = ("reference" if cid == run.reference else
                   verdict_text(d.outcome, d.worst_drop_upper, bold=False) if d else "not measured")
        columns = [
            [cid + (" (reference)" if cid == run.reference else ""), cid],
            [cell.status, cell.status],
            ["yes" if cid in front else "", int(cid in front)],
            ["" if figure is None else tok_s_text(figure.value, figure.side)
             + (f" at {figure.scenario}" if figure.scenario and figure.scenario != chart.scenario else ""), tp],
            ["" if tp is None or not ref_tp else vs_reference_text(run, cid),
             tp / ref_tp if tp is not None and ref_tp else None],
            [verdict, verdict],
            [interval_text(d.accuracy_delta, d.ci_low, d.ci_high) if d else "", d.accuracy_delta if d else None],
            [f"{d.right_to_wrong} / {d.wrong_to_right}" if d else "",
             (d.right_to_wrong + d.wrong_to_right) if d else None],
            [f"{cell.probes.flagged}/{cell.probes.total}" if cell.probes else "",
             cell.probes.flagged if cell.probes else None],
            *([_score_text(scores.get(t)), scores[t].value if t in scores else None] for t in tasks),
            [" ".join((cell.reason or "").split())[:300], cell.reason or ""],
        ]
        rows.append({"cell": cid, "columns": columns})
    header = ["cell", "status", "on front", chart.axis, "vs reference", "accuracy verdict",
              "pooled Δ [90%]", "flips r→w / w→r", "garbage probes", *tasks, "reason"]
    return {"header": header, "rows": rows}


def _score_text(score: TaskScore | None) -> str:
    if score is None:
        return ""
    if score.error or score.value is None:
        return "failed"
    return f"{score.value:.3f}" + (f" ± {score.stderr:.3f}" if score.stderr is not None else "")


def page_data(run: RunResult, run_dir: Path) -> dict[str, Any]:
    """Everything report.html shows of a saved run (html.py embeds it; html_page.js draws it)."""
    run_dir = Path(run_dir)
    strings = _Strings()
    tasks, notes = _task_documents(run, run_dir, strings)
    task_names = list(dict.fromkeys(t.task for cid in run.cell_order if cid in run.cells
                                    for t in run.cells[cid].quality))
    meta = run.meta
    state = "complete" if run.complete else ("interrupted" if run.interrupted else "in progress")
    pick = run.decision.pick if run.decision is not None else None  # the saved decision's (analysis/decision.py)
    shipped = run.cells.get(pick) if pick else None
    return {
        "title": f"evalharness: {meta.matrix_name}",
        "summary": (f"Run {state}; {len(run.cells)}/{len(run.cell_order)} cells: {run.status_summary()}; "
                    f"{'engines' if len(run.engines()) > 1 else 'engine'} {run.engine_line()}; harness "
                    f"{meta.harness_version} at {meta.git_revision or 'no git revision'}; started {meta.started_at}; "
                    f"measured on {measured_on(run)}."),
        "reference": run.reference,
        "verdict": verdict_plain(run),  # the report's verdict box (render/verdict.py), plain text
        "recommendation": " ".join(line for line in recommendation_lines(run, with_command=False, plain=True) if line),
        "recommended": pick,
        "launch": launch_command(shipped.argv, shipped.env) if shipped is not None else None,
        "chart": _chart(run),
        "curves": _curves(run),
        "table": _cells_table(run, task_names),
        "tasks": tasks,
        **task_pages(run),  # "calls": the calls tasks' section
        "length": length_table(run),
        "measures": measure_data(run),
        "strings": strings.values,
        "probes": _probes(run, run_dir),
        "cells": [c for c in run.cell_order if c in run.cells],
        "settings": settings_diffs(run),
        "notes": notes + disturbed_notes(run) + list(run.notes),
        "glossary": glossary(),  # "How to read this page", each term linked on its first use
    }
