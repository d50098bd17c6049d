"""The report's and the summary's first line: the recommendation (analysis/recommend.py) as Markdown. Pure."""

from __future__ import annotations

import shlex

from evalharness.analysis.recommend import recommend
from evalharness.records.masking import mask_argv, mask_env
from evalharness.records.run import RunResult
from evalharness.render.markdown import code_block, md_text


def _speed(rec) -> str:
    interval = (f" [{rec.low:.2f}–{rec.high:.2f}]" if rec.low is not None and rec.high is not None else
                " (measured once: no interval; set `repeats:` on the scenario)")
    return f"{rec.ratio:.2f}x{interval} the reference's output tok/s in `{md_text(rec.scenario or '')}`"


def launch_command(argv: list[str], env: dict[str, str]) -> str:
    """The cell's exact launch, ready to paste: its environment, then its argv (secrets masked)."""
    prefix = " ".join(f"{k}={shlex.quote(v)}" for k, v in mask_env(env).items())
    return (prefix + " " if prefix else "") + shlex.join(mask_argv(argv))


def recommendation_lines(run: RunResult, with_command: bool = True) -> list[str]:
    if run.reference not in run.cells or len(run.cells) < 2:
        return []
    rec = recommend(run)
    if rec.cell is not None:
        upper = f" (largest drop ≤ {rec.drop_upper:.3f})" if rec.drop_upper is not None else ""
        out = [f"**Recommendation: `{rec.cell}`**, {_speed(rec)}, equivalent to the reference on every task within "
               f"its margin{upper}."]
        if with_command:
            out += ["", "Its launch as this run made it (the port was the run's own):", "",
                    code_block(launch_command(rec.argv, rec.env))]
        return out + [""]
    line = f"**No recommendation**: {md_text(rec.why_none or '')}."
    if rec.candidate:
        parts = []
        for s in rec.settle:
            if s.factor is None:
                parts.append(f"{md_text(s.task)} (its estimate sits on the margin: no sample size settles it)")
            else:
                took = ("" if s.hours is None else f", about {s.hours:.1f} h" if s.hours >= 0.1 else
                        f", about {s.hours * 60:.0f} min" if s.hours * 60 >= 1 else ", under a minute")
                parts.append(f"{md_text(s.task)} (≈{s.factor:.1f}× the samples: {s.more_samples} more "
                             f"{s.unit.replace(' x ', ' × ')}{took} at the speed it ran)")
        line += (f" The fastest candidate, `{rec.candidate}` ({_speed(rec)}), is inconclusive on "
                 + "; ".join(parts) + ": that would settle it.")
    return [line, ""]
