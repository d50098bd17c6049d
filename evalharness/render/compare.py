"""The comparison of two runs as Markdown: compare.md (everything) and its short form for a pull-request comment (the
cells that changed first, one line each, then a collapsed details section). Pure: a RunComparison in, text out; every
value that came from a record (ids, settings, warnings, crash kinds) goes through markdown.py's escaping.
"""

from __future__ import annotations

import re
from typing import Any

from evalharness.analysis.compare import CellComparison, RunComparison, ScenarioChange
from evalharness.analysis.evidence import CONFIDENCE
from evalharness.render.drift import interval_text
from evalharness.render.markdown import markdown_table, md_text
from evalharness.render.numerics import kl_text

VERDICTS = {"fails": "**fails the gate**", "changed": "**changed beyond noise**", "differs": "differs",
            "same": "unchanged within noise", "only": "in one run only"}
ORDER = ["fails", "changed", "only", "differs", "same"]
COUNTED = {"fails": "fail the gate", "changed": "changed beyond noise", "only": "in one run only",
           "differs": "differ in settings, warnings or figures without noise", "same": "unchanged within noise"}


def _id(cell: str) -> str:
    return f"`{cell}`" if re.fullmatch(r"[\w.=+-]+", cell) else md_text(cell)


def _name(cell: CellComparison) -> str:
    renamed = f" (was {_id(cell.base_id)})" if cell.base_id and cell.base_id != cell.cell else ""
    return _id(cell.cell) + renamed


def _ratio(s: ScenarioChange) -> str:
    """'1.30x' measured once; where repeated, the speed rule's words ('1.30x [99.1%: 1.21–1.40] faster'): its
    interval's level beside the ends (the alpha its last look spent), never a bare bracket."""
    if s.ratio is None:
        return "not measured in " + ("base" if s.base_tok_s is None else "head")
    if s.ci_low is None or not s.speed:
        return f"{s.ratio:.2f}x"
    return s.speed  # the harness's own words (numbers and the rule's outcome): nothing to escape


def _value(value: Any) -> str:
    return "(unset)" if value is None else md_text(value, 80)


def _version(value: Any) -> str:
    """A git revision cut to 12 characters (its +dirty kept); other versions whole."""
    text = str(value or "")
    if re.fullmatch(r"[0-9a-f]{40}(\+dirty)?", text):
        text = text[:12] + text[40:]
    return _value(text or None)


def _accuracy(cell: CellComparison) -> str:
    acc = cell.accuracy
    if acc is None or acc.accuracy_delta is None:
        return ""
    p = f", p={acc.p_value:.3g}" if acc.p_value is not None else ""
    return (f"accuracy Δ {interval_text(acc.accuracy_delta, acc.ci_low, acc.ci_high, CONFIDENCE)} on {acc.paired} "
            f"paired samples{p}, "
            f"flips {acc.right_to_wrong} r→w / {acc.wrong_to_right} w→r")


def cell_line(cell: CellComparison) -> str:
    """One line for one cell: its verdict, why, then its paired accuracy change and throughput ratios."""
    parts = [md_text("; ".join(cell.why), 300)] if cell.why else []
    if cell.presence == "both" and cell.head_status != "ok" and not cell.transitions:
        parts.insert(0, f"still {md_text(cell.head_status)}")
    launch = [f"{md_text(d.key)} {_value(d.reference)} → {_value(d.cell)}" for d in cell.launch[:3]]
    if launch:
        parts.append(", ".join(launch))
    if _accuracy(cell):
        parts.append(_accuracy(cell))
    ratios = [f"{md_text(s.name)} {_ratio(s)}" for s in cell.scenarios if s.ratio is not None]
    if ratios:
        single = not any(s.ci_low is not None for s in cell.scenarios)
        parts.append("tok/s head/base " + ", ".join(ratios) + (" (one measurement each: no noise estimate)"
                                                               if single else ""))
    return f"- {_name(cell)} {VERDICTS[cell.verdict]}: " + "; ".join(parts)


def _sorted(cmp: RunComparison) -> list[CellComparison]:
    return sorted(cmp.cells, key=lambda c: ORDER.index(c.verdict))


def _headline(cmp: RunComparison) -> list[str]:
    counts = {v: sum(c.verdict == v for c in cmp.cells) for v in ORDER}
    told = ", ".join(f"{n} {COUNTED[v]}" for v, n in counts.items() if n)
    gate = (f"**FAIL**: {len(cmp.violations)} violation(s) of the matrix's gate thresholds" if cmp.failed()
            else "pass: no change fails the matrix's gate thresholds")
    limits = ", ".join(f"{k} {v}" for k, v in cmp.thresholds.items())
    lines = [f"Gate {gate} ({md_text(limits)}). {len(cmp.cells)} cells: {told or 'none'}."]
    if cmp.versions:
        lines += ["", "Versions: " + "; ".join(f"{md_text(v.key)} {_version(v.reference)} → {_version(v.cell)}"
                                                for v in cmp.versions) + "."]
    if cmp.matrix_changes:
        lines += ["", f"Matrix sections that changed: {md_text(', '.join(cmp.matrix_changes))}."]
    if cmp.machine_warning:
        lines += ["", f"> warning: {md_text(cmp.machine_warning, 400)}"]
    return lines


def _table(cmp: RunComparison) -> str:
    rows = []
    for cell in _sorted(cmp):
        acc = cell.accuracy
        status = cell.base_status or "–"
        status += f" → {cell.head_status or '–'}" if cell.head_status != cell.base_status else ""
        agreement = acc.agreement if acc else None
        dist = acc.numerics() if acc else None
        rows.append([
            _name(cell), VERDICTS[cell.verdict], md_text(status),
            interval_text(acc.accuracy_delta, acc.ci_low, acc.ci_high) if acc else "",
            f"{cell.accuracy_p:.3g}" if cell.accuracy_p is not None else "",
            f"{acc.right_to_wrong} / {acc.wrong_to_right}" if acc and acc.paired else "",
            ", ".join(f"{md_text(s.name)} {_ratio(s)}" for s in cell.scenarios),
            f"{agreement.identical}/{agreement.total}" if agreement else "",
            kl_text(dist.forward) if dist and dist.forward else "",
        ])
    return markdown_table(["cell", "verdict", "status", "accuracy Δ [90%]", "p (adjusted)", "flips r→w / w→r",
                           "tok/s head/base (the speed rule where repeated)", "probes identical",
                           "log p_base − log p_head per token [90%]"], rows)


def summary_markdown(cmp: RunComparison) -> str:
    """The short form: fits a pull-request comment; changed cells first, everything else folded away."""
    lines = [f"### evalharness compare: {md_text(cmp.matrix_name)} (base {md_text(cmp.base_label)} → head "
             f"{md_text(cmp.head_label)})", "", *_headline(cmp), ""]
    notable = [c for c in _sorted(cmp) if c.verdict != "same"]
    lines += [cell_line(c) for c in notable] or ["Every cell is unchanged within noise."]
    if cmp.violations:
        lines += ["", "Gate violations:", "", *(f"- {md_text(v, 500)}" for v in cmp.violations)]
    same = [c for c in cmp.cells if c.verdict == "same"]
    lines += ["", f"<details><summary>All {len(cmp.cells)} cells ({len(same)} unchanged within noise): accuracy "
                  "paired per sample across the runs, throughput ratios</summary>", "", _table(cmp), ""]
    lines += [cell_line(c) for c in same]
    lines += ["", *(f"> {md_text(n, 500)}" for n in cmp.notes), "</details>"]
    return "\n".join(lines).rstrip() + "\n"


def compare_markdown(cmp: RunComparison) -> str:
    """compare.md: the headline, every cell's line, then per task, per scenario, settings and warnings."""
    parts = [f"# evalharness compare: {md_text(cmp.matrix_name)}", "",
             f"Base: {md_text(cmp.base_dir)} ({md_text(cmp.base_label)}); head: {md_text(cmp.head_dir)} "
             f"({md_text(cmp.head_label)}). Accuracy Δ is head minus base over the samples both runs scored (paired by "
             "document), with the interval of the test that decides it (Tango's paired score test on single 0/1 "
             "samples, a t-test over documents on means over repeats, its ends calibrated by a bootstrap of t under "
             "the null at each margin; its confidence beside it), the flips, and the exact McNemar p-value beside "
             "them on single samples; tok/s is head over base by the speed rule, with its "
             "interval (its level beside its ends: each end a one-sided bound at the alpha the last look spent) only "
             "where the runs repeated the scenario.", "", *_headline(cmp), "",
             "## Cells", "", *(cell_line(c) for c in _sorted(cmp)), "", _table(cmp), ""]
    if cmp.violations:
        parts += ["## Gate violations", "", *(f"- {md_text(v, 500)}" for v in cmp.violations), ""]
    parts += _tasks(cmp) + _scenarios(cmp) + _extras(cmp) + _settings(cmp) + _warnings(cmp)
    parts += [f"> {md_text(n, 500)}" for n in cmp.notes]
    return "\n".join(parts).rstrip() + "\n"


def _tasks(cmp: RunComparison) -> list[str]:
    rows = []
    for cell in cmp.cells:
        for t in cell.accuracy.tasks if cell.accuracy else []:
            if not t.comparable:
                rows.append([_name(cell), md_text(t.task), "", "", "", "", "", "", md_text(t.reason or "")])
                continue
            rows.append([_name(cell), md_text(t.task), str(t.paired), f"{t.reference:.3f}", f"{t.cell:.3f}",
                         interval_text(t.delta, t.ci_low, t.ci_high, t.confidence), f"{t.p_value:.3g}",
                         f"{t.right_to_wrong} / {t.wrong_to_right}" if t.method == "score" else "",
                         f"{t.outcome or ''}; repeats {t.repeats[0]} / {t.repeats[1]}"])
    return ["## Accuracy per task, paired across the runs", "",
            "Δ head minus base with the interval its verdict was decided on and that interval's confidence; p of no "
            "difference from the same test (paired score test on "
            "single 0/1 samples, t over documents on means over repeats), before the adjustment across cells; the "
            "verdict is against the task's margin.", "",
            markdown_table(["cell", "task", "paired", "base", "head", "Δ [interval, confidence]", "p",
                            "flips r→w / w→r", "verdict; repeats"], rows), ""] if rows else []


def _scenarios(cmp: RunComparison) -> list[str]:
    rows = [[_name(c), md_text(s.name), "" if s.base_tok_s is None else f"{s.base_tok_s:.1f}",
             "" if s.head_tok_s is None else f"{s.head_tok_s:.1f}", _ratio(s),
             f"{s.repeats[0]} / {s.repeats[1]}" if s.ci_low is not None else "one measurement each"]
            for c in cmp.cells for s in c.scenarios]
    return ["## Throughput", "", markdown_table(["cell", "scenario", "base tok/s", "head tok/s",
                                                 "head/base (the speed rule)", "repeats base / head"], rows),
            ""] if rows else []


def _extras(cmp: RunComparison) -> list[str]:
    rows = [[_name(c), md_text(e.task), md_text(e.field), _value(e.reference), _value(e.cell),
             "" if e.p_adjusted is None else f"{e.p_adjusted:.3g}", "yes" if e.material else "no",
             "**changed**" if e.changed else "within noise"]
            for c in cmp.cells for e in c.extras]
    return ["## Reasoning, truncation and empty answers", "",
            "Paired per document (means over repeats); p after Benjamini-Hochberg over the cell's figures; material: "
            "at least 2 points of the answers, or a tenth of the reasoning length.", "",
            markdown_table(["cell", "task", "figure", "base", "head", "p (BH)", "material", ""], rows),
            ""] if rows else []


def _settings(cmp: RunComparison) -> list[str]:
    out = []
    for cell in cmp.cells:
        if not (cell.launch or cell.resolved or cell.settings_changed):
            continue
        out += [f"### {_name(cell)}", ""]
        if cell.settings_changed and not cell.launch:
            out += ["The settings hash changed without a flag or variable changing: the tasks, scenarios, probes or "
                    "the scoring code's version differ between the runs.", ""]
        rows = [[md_text(d.key), _value(d.reference), _value(d.cell), "launch"] for d in cell.launch]
        rows += [[md_text(d.key), _value(d.reference), _value(d.cell), "resolved" if d.asked else
                  "resolved, **not asked**"] for d in cell.resolved[:40]]
        if rows:
            out += [markdown_table(["setting", "base", "head", "kind"], rows), ""]
    return ["## Settings that changed", "", "**not asked**: a resolved setting that changed though none of the cell's "
            "flags or variables did: a switch the engine made by itself.", "", *out] if out else []


def _warnings(cmp: RunComparison) -> list[str]:
    out = [f"- {_name(c)}: " + "; ".join(md_text(w, 300) for w in c.warnings) for c in cmp.cells if c.warnings]
    return ["## Warnings that came, went or changed", "", *out, ""] if out else []
