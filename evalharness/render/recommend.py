"""The report's and the summary's full statement of the decision: the recommendation (analysis/recommend.py, saved in
the run's decision record, records/decision.py) or the confirmation's, as Markdown. Pure; decides nothing."""

from __future__ import annotations

import math
import shlex

from evalharness.analysis.equivalence import envelope_task
from evalharness.analysis.length import envelope_text
from evalharness.records.masking import mask_argv, mask_env
from evalharness.records.run import RunResult
from evalharness.render.confirmation import confirmation_lines
from evalharness.render.markdown import code_block, md_text
from evalharness.render.verdict import speed_of


class _Markdown:
    """How the recommendation's words are marked up: Markdown for report.md and summary.md."""

    text = staticmethod(md_text)
    code = staticmethod(lambda name: f"`{name}`")
    bold = staticmethod(lambda words: f"**{words}**")


class _Plain:
    """The same words as plain text, for a page that inserts them as text (render/html_data.py)."""

    text = staticmethod(lambda value, limit=1000: " ".join(str(value).split()))
    code = staticmethod(lambda name: name)
    bold = staticmethod(lambda words: words)


def _interval(run: RunResult, cell: str | None) -> str:
    """The speed rule's interval of the cell against the reference with its level beside the ends ('[99.1%:
    1.10–1.24]'): the level its last look spent, not the report's 90% (analysis/speed.py `interval_text`)."""
    verdict = speed_of(run, cell)
    return "" if verdict is None else verdict.interval


def _speed(rec, interval: str, mark=_Markdown) -> str:
    if rec.ratio is not None and not math.isfinite(rec.ratio):
        return f"{mark.text(rec.speed or '')} ({mark.text(rec.unit)})"
    interval = (f" {interval}" if interval and rec.low is not None and rec.high is not None else
                f" (measured once: no interval; set {mark.code('repeats:')} on the scenario)")
    where = ""
    if rec.at and rec.reference_at and rec.at != rec.reference_at:  # each at its own most goodput under the SLO
        where = (f" (its {mark.code(mark.text(rec.at))} against the reference's "
                 f"{mark.code(mark.text(rec.reference_at))})")
    elif rec.scenario:
        where = f" in {mark.code(mark.text(rec.scenario))}"
    return (f"{rec.ratio:.2f}x{interval} the reference's {mark.text(rec.unit)}{where} (the interval's ends are "
            "one-sided bounds at the alpha its last look spent, 5% over all its looks; faster: the lower bound above "
            "1.05)")


def _controlled(rec, lengths: bool = False) -> str:
    """What the choice controlled (analysis/recommend.py): Holm over the faster candidates' equivalence tests, on the
    tasks they were tested on; length buckets are measured beside them, outside that bound (issue 61, 5)."""
    among = "the one cell faster than the reference" if rec.candidates == 1 else \
        f"the {rec.candidates} cells faster than the reference"
    return (f"chosen among {among} with Holm's adjustment (p {rec.p_adjusted:.2g}), so the chance that the "
            f"recommended cell is truly worse than the reference by a margin or more on one of those tasks is at most "
            f"{rec.alpha:g}"
            + ("; the lengths are measured beside them, not covered by that bound" if lengths else ""))


def _tasks_said(run: RunResult, cell: str) -> str:
    """'its 4 tasks (gsm8k, ...)': the tasks the recommendation's equivalence covers (no length bucket)."""
    drift = run.cells[cell].drift
    tasks = [t.task for t in (drift.tasks if drift else []) if not envelope_task(t.task)]
    return f"its {len(tasks)} task{'s' if len(tasks) != 1 else ''} ({', '.join(tasks)})" if tasks else "its tasks"


def _point(rec, mark=_Markdown) -> str:
    """'at p90 TPOT ≤ 50 ms, concurrency 8: ' where the matrix declares an operating point or an SLO."""
    return f"{mark.text(rec.point)}: " if rec.point and not rec.point.startswith("in ") else ""


def _envelope(run: RunResult, cell: str, mark=_Markdown) -> str:
    """Over which lengths and load the equivalence was measured (analysis/length.py), when the run has buckets."""
    said = envelope_text(run, cell, (run.meta.matrix.get("quality") or {}).get("concurrency"))
    return mark.text(said) if said else ""


def launch_command(argv: list[str], env: dict[str, str]) -> str:
    """The cell's exact launch, ready to paste: its environment, then its argv (secrets masked)."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in mask_env(env).items())
    return (prefix + " " if prefix else "") + shlex.join(mask_argv(argv))


def recommendation_lines(run: RunResult, with_command: bool = True, plain: bool = False) -> list[str]:
    """The recommendation as Markdown lines (or, with `plain`, as plain text for the HTML page: no markup, nothing
    escaped, so the page must insert it as text)."""
    mark = _Plain if plain else _Markdown
    if run.reference not in run.cells or len(run.cells) < 2:
        return []
    if run.confirmation is not None:  # a two-stage run decides by its confirmation alone
        shipped = next((t.finalist for t in run.confirmation.tries if t.verdict and t.verdict.confirmed), None)
        cell = run.cells.get(shipped) if shipped else None
        command = code_block(launch_command(cell.argv, cell.env)) if with_command and cell is not None else None
        return confirmation_lines(run, mark, command)
    rec = run.decision.recommendation if run.decision is not None else None  # analysis/decision.py's record
    if rec is None:
        return []
    if rec.cell is not None:
        envelope = _envelope(run, rec.cell, mark)
        said = [f"largest drop ≤ {rec.drop_upper:.3f}" if rec.drop_upper is not None else "", envelope]
        held = f" ({'; '.join(p for p in said if p)})" if any(said) else ""
        out = [f"{_point(rec, mark)}{mark.bold('Recommendation: ' + mark.code(rec.cell))}, "
               f"{_speed(rec, _interval(run, rec.cell), mark)}, equivalent to the reference on "
               f"{mark.text(_tasks_said(run, rec.cell))} within their margins{held}; "
               f"{_controlled(rec, bool(envelope))}."]
        if with_command:
            out += ["", "Its launch as this run made it (the port was the run's own):", "",
                    code_block(launch_command(rec.argv, rec.env))]
        return out + [""]
    line = f"{_point(rec, mark)}{mark.bold('No recommendation')}: {mark.text(rec.why_none or '')}."
    if rec.candidate:
        parts = []
        for s in rec.settle:
            if s.factor is None:
                parts.append(f"{mark.text(s.task)} (its estimate sits on the margin: no sample size settles it)")
            else:
                took = ("" if s.hours is None else f", about {s.hours:.1f} h" if s.hours >= 0.1 else
                        f", about {s.hours * 60:.0f} min" if s.hours * 60 >= 1 else ", under a minute")
                parts.append(f"{mark.text(s.task)} (≈{s.factor:.1f}× the samples for an 80% chance: "
                             f"{s.more_samples} more {s.unit.replace(' x ', ' × ')}{took} at the speed both ran)")
        speed = _speed(rec, _interval(run, rec.candidate), mark)
        line += f" The fastest candidate, {mark.code(rec.candidate)} ({speed})" + (
            ", is inconclusive on " + "; ".join(parts) + ": that would settle it." if parts else ".")
    return [line, ""]
