"""The decision of a two-stage run (issue 61) in words: the confirmed finalist with its speed over launches and each
task "not worse", or why none was confirmed. Pure: reads the run record (its confirmation refreshed with the drift);
render/recommend.py puts these lines first where a run has a second stage."""

from __future__ import annotations

from evalharness.analysis.speed import FLOOR
from evalharness.records.run import ConfirmTry, RunResult
from evalharness.render.markdown import markdown_table, md_text


def _tries_said(tries: int, level: float) -> str:
    return (f"one finalist tried, its tests at alpha {level:g}" if tries == 1 else
            f"{tries} finalists allowed, each try's tests at alpha / {tries} = {level:g}")


def _claims(this: ConfirmTry, mark) -> str:
    """'not worse on every confirmed task: ...', or that the claim is speed alone (a matrix measuring no answers)."""
    tasks = this.verdict.tasks if this.verdict else []
    if not tasks:
        return "no answers measured: the claim is speed alone"
    return "not worse on every confirmed task: " + "; ".join(mark.text(t.text) for t in tasks)


def confirmation_lines(run: RunResult, mark, command: str | None) -> list[str]:
    """The decision first, then what it rests on. `command`: the confirmed cell's launch as a code block."""
    record = run.confirmation
    assert record is not None
    tries = (run.meta.matrix.get("confirm") or {}).get("tries") or 1
    decided = [t for t in record.tries if t.verdict is not None]
    shipped = next((t for t in decided if t.verdict.confirmed), None)
    if shipped is not None:
        v = shipped.verdict
        unit = v.unit
        out = [f"{mark.bold('Ship ' + mark.code(shipped.finalist))}: confirmed on fresh launches against the "
               f"reference relaunched, {mark.text(v.speed)} in {unit} at "
               f"{mark.code(mark.text(shipped.scenario or 'the operating point'))}, "
               f"credibly faster by {FLOOR:.0%}; {_claims(shipped, mark)}.",
               "",
               f"Each claim rests on confirmation's own launches and seeds ({_tries_said(tries, shipped.level)}), "
               f"so choosing it among {len(run.cells) - 1} explored cell{'s' if len(run.cells) != 2 else ''} does not "
               "inflate it: the chance that "
               f"it is truly not faster by {FLOOR:.0%} or worse by a margin on one of these tasks is at most "
               f"{shipped.level * tries:g}."]
        if command:
            out += ["", "Its launch as this run made it (the port was the run's own):", "", command]
        return out + [""]
    if not record.order:
        return [f"{mark.bold('No recommendation: keep the reference')}: exploration handed no finalist to "
                f"confirmation ({len(record.ruled_out)} of {len(run.cells) - 1} cells ruled out; none of the rest "
                f"estimated faster than the reference by the {FLOOR:.0%} floor).", ""]
    if decided and len(decided) == len(record.order) and record.complete:
        why = " ".join(f"{mark.code(t.finalist)}: {mark.text(t.verdict.why_not)}." for t in decided)
        return [f"{mark.bold('No recommendation: keep the reference')}: no finalist was confirmed on fresh launches. "
                + why, ""]
    pending = record.order[len(decided)] if len(decided) < len(record.order) else record.order[-1]
    return [f"{mark.bold('Not decided yet')}: the confirmation of {mark.code(pending)} has not finished "
            f"({len(record.launches)} confirmation launches done); `evalharness run --resume` finishes it.", ""]


def _figure(rates: list[float] | None) -> str:
    """A launch's figure as the verdict read it: the mean of its kept repeats, their range beside it."""
    if not rates:
        return ""
    return f"{sum(rates) / len(rates):.1f} (repeats {min(rates):.1f}..{max(rates):.1f})"


def confirmation_section(run: RunResult) -> list[str]:
    """## Confirmation: what exploration handed on and every launch of every try, in the order they ran."""
    record = run.confirmation
    if record is None:
        return []
    order = ", ".join(f"`{md_text(c)}` ({record.explored.get(c, float('nan')):.2f}x in exploration)"
                      for c in record.order) or "none"
    out = ["## Confirmation", "",
           f"Exploration's finalists, in the order they are tried: {order}; {len(record.ruled_out)} of "
           f"{len(run.cells) - 1} cells ruled out (crashed, garbage, worse on a task, screened or slower). Each try "
           "relaunches the reference and the finalist, interleaved; each launch's figure below is the mean of the "
           "repeats the verdict kept at the operating point's step, in the verdict's unit.", ""]
    for attempt, this in enumerate(record.tries, 1):
        rows = []
        for ref_id, fin_id in zip(this.reference_launches, this.finalist_launches):
            for lid, role in ((ref_id, "reference"), (fin_id, "finalist")):
                launch = record.launches.get(lid)
                if launch is None:
                    rows.append([f"`{md_text(lid)}`", role, "not run", "", "", ""])
                    continue
                answers = "; ".join(f"{md_text(t.task)} {t.value:.3f}" for t in launch.quality if t.value is not None)
                rows.append([f"`{md_text(lid)}`", role, launch.status if launch.status == "ok" else
                             f"**{launch.status}**", f"{launch.startup_s or 0:.0f}",
                             _figure(this.verdict.figures.get(lid) if this.verdict else None), answers])
        out += [f"Try {attempt}: `{md_text(this.finalist)}` at `{md_text(this.scenario or '?')}`, tests at alpha "
                f"{this.level:g}" + (f": {md_text(this.verdict.speed)}" if this.verdict else " (not finished)"), "",
                markdown_table(["launch", "role", "status", "startup s",
                                this.verdict.unit if this.verdict else "tok/s", "answers (mean score)"], rows),
                ""]
    return out
