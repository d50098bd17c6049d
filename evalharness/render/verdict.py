"""The verdict box (issue 58, 2): the first lines of report.md and summary.md, at most five, each short. The pick
and what it changes against the reference, with its speed-up and lower bound at the operating point (at most 40
words), and a note where its answers are credibly shorter or longer (issue 60, 3); its answers against the margin
with documents and answers a document; the runner-up and what held it back; the gate's outcome where a baseline was
given; the run's health. The full statements (levels, Holm, envelopes) follow below it, then what qualifies the
decision (`qualifier_lines`). Also the accessors renderers read the decided verdicts through (`chart_of`,
`speed_of`).

Reads the decision already made and saved (records/decision.py, computed by analysis/decision.py with the drift), a
two-stage run's confirmation record and the drift verdicts in the records. Decides nothing: imports records,
render/names.py and analysis/equivalence's `envelope_task` (which tasks are length buckets) only.
"""

from __future__ import annotations

import html
import math
import re

from evalharness.analysis.equivalence import envelope_task
from evalharness.records.decision import GateRecord, Held, Pareto, SpeedWords
from evalharness.records.run import CellResult, RunResult
from evalharness.render.markdown import md_text
from evalharness.render.names import flag_changes, short_names

MOST_LINES = 5


def _name(names: dict[str, str], cid: str) -> str:
    return f"`{names.get(cid, cid)}`"


def _changes(run: RunResult, cid: str) -> str:
    cell, reference = run.cells.get(cid), run.cells.get(run.reference)
    if cell is None or reference is None:
        return ""
    said = flag_changes(cell.args, reference.args, words=True)
    return f" ({md_text(said, 120)})" if said else ""


def _margins(margins: list[float]) -> str:
    low, high = min(margins), max(margins)
    return f"±{low:g}" if low == high else f"±{low:g} to ±{high:g}"


def _documents(counts: list[int]) -> str:
    low, high = min(counts), max(counts)
    return f"{low} documents" + (" each" if len(counts) > 1 else "") if low == high else f"{low}-{high} documents"


def _answers_line(cell: CellResult) -> str:
    """The pick's answers as the drift tested them: its verdict on the matrix's tasks (margins, documents, answers a
    document), and the length buckets measured beside them in a word."""
    drift = cell.drift
    compared = [t for t in (drift.tasks if drift else []) if t.comparable and t.margin is not None]
    tasks = [t for t in compared if not envelope_task(t.task)]
    if not tasks:
        return "Answers: not compared with the reference (no quality task)."
    ref_repeats, cell_repeats = tasks[0].repeats
    worst = max((-t.ci_low for t in tasks if t.ci_low is not None), default=None)
    bound = f"; largest drop at most {worst:.3f}" if worst is not None else ""
    outcomes = {t.outcome for t in tasks}
    verdict = "worse than" if "worse" in outcomes else "equivalent to" if outcomes == {"equivalent"} else \
        "not shown equivalent to"
    lengths = [t for t in compared if envelope_task(t.task)]
    beside = "" if not lengths else "; lengths: " + (
        "equivalent" if all(t.outcome == "equivalent" for t in lengths) else "not shown equivalent at every one")
    return (f"Answers: {verdict} the reference within {_margins([t.margin for t in tasks])} on {len(tasks)} "
            f"task{'s' if len(tasks) != 1 else ''} ({_documents([t.paired for t in tasks])}, {cell_repeats} / "
            f"{ref_repeats} answers a document{bound}){beside}.")


def _held_words(held: Held) -> str:
    """What held a faster cell back, in a few words (records/decision.py Held)."""
    if held.reason in ("worse", "inconclusive"):
        bound = f": drop up to {held.bound:.3f} against ±{held.margin:g}" if held.bound is not None else ""
        return f"{held.reason} on {md_text(held.task or '')}{bound}"
    if held.reason == "choice":
        return (f"equivalent by its own tests, not once the choice among {held.candidates} faster cells is counted "
                f"(Holm-adjusted p {held.p_adjusted:.2g})")
    if held.reason == "slower":
        return "equivalent, but slower than the cell named above"
    return "its answers were not compared"


def _health(run: RunResult) -> str:
    failed = sum(t.failed for c in run.cells.values() for t in c.requests.values())
    requests = sum(t.requests for c in run.cells.values() for t in c.requests.values())
    set_aside = sum(len(s.disturbed_repeats()) for c in run.cells.values() for s in c.throughput)
    aside = f"; {set_aside} repeat{'s' if set_aside != 1 else ''} set aside (host busy)" if set_aside else ""
    asked = f"; {failed} of {requests:,} requests failed" if requests else ""
    names = short_names(run)
    shorter = [_name(names, cid) for cid in run.cell_order if (cell := run.cells.get(cid)) is not None and cell.drift
               and any(x.outcome == "shorter" for x in cell.drift.lengths)]
    early = (f"; answers credibly shorter than the reference's: {', '.join(shorter[:3])}"
             + (f" and {len(shorter) - 3} more" if len(shorter) > 3 else "")) if shorter else ""
    return (f"Run: {len(run.cells)}/{len(run.cell_order)} cells ({run.status_summary() or 'none finished'})"
            f"{asked}{aside}{early}.")


def gate_line(gate: GateRecord) -> str:
    """The gate's outcome against its baseline, with its thresholds, in one line (issue 58, 2)."""
    margins = list(gate.margin.values()) if isinstance(gate.margin, dict) else \
        [gate.margin] if gate.margin is not None else []
    limits = f"margin {_margins(margins)}, alpha {gate.alpha:g}" if margins else f"alpha {gate.alpha:g}"
    count = {"pass": (gate.passed, "pass"), "fail": (gate.failed, "fail"),
             "inconclusive": (gate.inconclusive, "not settled")}[gate.outcome]
    first = f"; first: {md_text(gate.first, 140)}" if gate.first else ""
    machine = "; the baseline's machine differs or is unrecorded" if gate.warning else ""
    baseline = " ".join(gate.baseline.replace("`", "'").split())  # a code span: no escapes inside it
    return (f"Gate: **{gate.outcome.upper()}** against `{baseline}`: {count[0]} of {gate.cells} "
            f"cell{'s' if gate.cells != 1 else ''} {count[1]} ({limits}){first}{machine}.")


def length_note(run: RunResult, cid: str | None) -> str:
    """Where a cell's answers are credibly shorter or longer than the reference's (analysis/outputlength.py): the
    furthest task or scenario in words, '' where none is (issue 60, 3: its speed-up is never shown without it)."""
    cell = run.cells.get(cid) if cid else None
    outside = [x for x in (cell.drift.lengths if cell is not None and cell.drift is not None else []) if x.outside]
    if not outside:
        return ""
    worst = max(outside, key=lambda x: abs(math.log(x.ratio)) if x.ratio else math.inf)
    more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
    if worst.task.startswith("throughput:"):
        where = f"its requests return {worst.ratio:.2f}x the reference's tokens in {md_text(worst.task[11:])}"
    else:
        where = (f"its answers are {worst.ratio:.2f}x the reference's length on {md_text(worst.task)} "
                 f"[{worst.confidence:.0%}: {worst.low:.2f}–{worst.high:.2f}]")
    return f"{where}{more}, outside ±{worst.tolerance:.0%}"


def _short_point(point: str) -> str:
    """'at p90 TTFT ≤ 1000 ms and p90 TPOT ≤ 100 ms, concurrency 4 (where ...)' without its parenthesis."""
    return point.split(" (", 1)[0].strip()


def _confirmed_box(run: RunResult, names: dict[str, str]) -> list[str]:
    record = run.confirmation
    assert record is not None
    shipped = next((t for t in record.tries if t.verdict and t.verdict.confirmed), None)
    if shipped is None:
        done = [t for t in record.tries if t.verdict is not None]
        if not record.complete:
            first = "**Not decided yet**: the confirmation has not finished (`run --resume` finishes it)."
        else:
            first = "**No recommendation: keep the reference.** " + (
                "No finalist was confirmed." if done else "Exploration found no cell to confirm.")
        lines = [first]
        lines += [f"Tried {_name(names, t.finalist)}: {md_text(t.verdict.why_not, 200)}." for t in done[:2]]
        return lines
    verdict = shipped.verdict
    assert verdict is not None
    low = f" (at least {verdict.low:.2f}x)" if verdict.low is not None else ""
    at = f" at `{shipped.scenario}`" if shipped.scenario else ""
    first = (f"**Ship {_name(names, shipped.finalist)}**{_changes(run, shipped.finalist)}: "
             f"{verdict.ratio:.2f}x{low} the reference's {verdict.unit}{at}, confirmed on "
             f"{verdict.launches[0]} fresh launches against {verdict.launches[1]}")
    note = length_note(run, shipped.finalist)  # exploration's answers: confirmation's are paired on accuracy
    first += f"; but {note}." if note else "."
    tasks = verdict.tasks
    answers = "Answers: no task confirmed." if not tasks else (
        f"Answers: not worse than the reference by {_margins([t.margin for t in tasks])} on {len(tasks)} "
        f"task{'s' if len(tasks) != 1 else ''} ({_documents([t.documents for t in tasks])} of confirmation's "
        f"own" + (f"; largest drop at most {worst:.3f}" if (worst := max(
            (t.upper for t in tasks if t.upper is not None), default=None)) is not None else "") + ").")
    lines = [first, answers]
    before = [t for t in record.tries if t is not shipped and t.verdict is not None]
    if before:
        lines.append(f"Tried first: {_name(names, before[0].finalist)}: {md_text(before[0].verdict.why_not, 160)}.")
    return lines


def chart_of(run: RunResult) -> Pareto:
    """The decision's Pareto view (every ready cell's figure and verdicts at the operating point); an empty one where
    the run was not decided (nothing to show, nothing computed here)."""
    if run.decision is not None and run.decision.pareto is not None:
        return run.decision.pareto
    return Pareto(scenario=None, measure="accuracy", throughput={}, points=[])


def speed_of(run: RunResult, cid: str | None) -> SpeedWords | None:
    """A cell's speed verdict against the reference as the decision recorded it (None: not measured there)."""
    return run.decision.speed.get(cid) if run.decision is not None and cid else None


def pick_of(run: RunResult) -> str | None:
    """The cell the run ships (the decision record's), None: keep the reference (the charts mark it)."""
    return run.decision.pick if run.decision is not None else None


def verdict_box(run: RunResult) -> list[str]:
    """At most MOST_LINES lines, as a Markdown quote block, then a blank line; [] where nothing was decided."""
    decision = run.decision
    if decision is None or run.reference not in run.cells or len(run.cells) < 2:
        return []
    names = short_names(run)
    rec = decision.recommendation
    if run.confirmation is not None:
        lines = _confirmed_box(run, names)
    elif decision.pick is not None and rec is not None:
        low = f" (at least {rec.low:.2f}x)" if rec.low is not None else ""
        ratio = f"{rec.ratio:.2f}x" if rec.ratio is not None else "faster than"
        note = length_note(run, decision.pick)
        lines = [f"**Ship {_name(names, decision.pick)}**{_changes(run, decision.pick)}: {ratio}{low} the "
                 f"reference's {md_text(rec.unit)} {md_text(_short_point(rec.point)) or 'at the measured load'}"
                 + (f"; but {note}." if note else "."),
                 _answers_line(run.cells[decision.pick])]
    elif decision.candidate is not None:
        ratio = f" ({decision.candidate.ratio:.2f}x)" if decision.candidate.ratio is not None else ""
        lines = [f"**No recommendation: keep the reference.** The fastest candidate, "
                 f"{_name(names, decision.candidate.cell)}{ratio}, is {_held_words(decision.candidate)}."]
    else:
        why = ((rec.why_none if rec else None) or "").strip().removesuffix(".").removesuffix(": keep the reference")
        lines = [f"**No recommendation: keep the reference.** {md_text(why[:1].upper() + why[1:], 200)}."]
    if decision.runner_up is not None:
        up = decision.runner_up
        ratio = f", {up.ratio:.2f}x" if up.ratio is not None else ""
        note = length_note(run, up.cell)
        lines.append(f"Runner-up: {_name(names, up.cell)}{ratio}, held back: {_held_words(up)}"
                     + (f"; {note}." if note else "."))
    tail = ([gate_line(decision.gate)] if decision.gate is not None else []) + [_health(run)]
    lines = lines[:MOST_LINES - len(tail)] + tail  # the pick's lines first; the gate and health always said
    return [f"> {line}" + ("  " if i < len(lines) - 1 else "") for i, line in enumerate(lines)] + [""]


def qualifier_lines(run: RunResult) -> list[str]:
    """The decision's qualifications (records/decision.py `warnings`) as one Markdown line after the full statement;
    [] where there are none."""
    warnings = run.decision.warnings if run.decision is not None else []
    if not warnings:
        return []
    return [f"What qualifies it: {'; '.join(md_text(w, 600) for w in warnings)}.", ""]


def verdict_plain(run: RunResult) -> list[str]:
    """The verdict box as plain lines for a terminal and for report.html (no Markdown marks, nothing escaped: the
    caller prints or inserts them as text)."""
    out = []
    for line in verdict_box(run):
        if not line:
            continue
        text = line.removeprefix("> ").rstrip().replace("**", "").replace("`", "")
        out.append(re.sub(r"\\([\\`*_{}\[\]()#+\-.!|<>])", r"\1", html.unescape(text)))
    return out
