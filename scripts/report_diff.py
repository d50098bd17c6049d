"""Whether a change of the code changes what a recorded run reads like (issue 59, 6: nothing observable changes).

Each run folder is copied twice and re-rendered with `evalharness report`: once by the code of BEFORE (a git ref,
checked out in a temporary worktree) and once by this working tree's. report.md, summary.md, results.json,
results.csv and report.html must be byte-identical; every file that differs is named with the first lines of its
diff. A results.json whose keys moved (a record moved into a measure's folder, read back by the loader from where a
run saved before kept it) is told apart: both sides read by the after tree's loader give the same run, so a run
saved before resumes and re-renders alike; that is printed as "keys moved, the same run when read" and is not a
difference. Run folders are any finished `run --out` folder (the demo's reports/cpu-smollm2/, a test session's
/tmp/pytest-of-*/.../out); the run's own files are never written.

    .venv/bin/python scripts/report_diff.py HEAD~3 reports/cpu-smollm2 /tmp/pytest-of-root/pytest-9/*/out
    exit 0: every run renders the same; 1: some differ (each named); 2: a bad ref or run folder

Both sides run under this interpreter: the package each imports is checked to be its own tree's (PYTHONPATH
first), so an editable install of the working tree cannot stand in for BEFORE.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ("report.md", "summary.md", "results.json", "results.csv", "report.html")
SHOWN_LINES = 40  # of each file's diff


def render(code_root: Path, run_dir: Path, into: Path) -> str | None:
    """`evalharness report` of a copy of run_dir (into/) by the package under code_root; None, or what went
    wrong."""
    shutil.copytree(run_dir, into, ignore=shutil.ignore_patterns(*OUTPUTS[:2], *OUTPUTS[3:]))
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    where = subprocess.run([sys.executable, "-c", "import evalharness; print(evalharness.__file__)"], env=env,
                           capture_output=True, text=True, cwd=into)
    if not where.stdout.strip().startswith(str(code_root)):
        return f"the package imported was {where.stdout.strip() or where.stderr[-300:]}, not {code_root}'s"
    done = subprocess.run([sys.executable, "-m", "evalharness", "report", str(into)], env=env, capture_output=True,
                          text=True, cwd=into)
    return None if done.returncode == 0 else f"report exited {done.returncode}: {done.stderr[-500:]}"


# both folders' results.json read by one tree's loader, their comparisons recomputed as `report` does, and dumped:
# equal when only where a record is kept changed
SAME_WHEN_READ = ("import sys\nfrom evalharness.analysis.drift import refresh_drift\n"
                  "from evalharness.records.io import load_run\nfrom pathlib import Path\n"
                  "runs = [(load_run(Path(f)), Path(f)) for f in sys.argv[1:]]\n"
                  "[refresh_drift(run, folder) for run, folder in runs]\n"
                  "print('same' if runs[0][0].model_dump_json() == runs[1][0].model_dump_json() else 'different')")


def same_when_read(code_root: Path, before: Path, after: Path) -> bool:
    """Whether the two results.json are one run once read by code_root's loader and refreshed as `report` refreshes
    them (keys moved, nothing lost)."""
    read = subprocess.run([sys.executable, "-c", SAME_WHEN_READ, str(before), str(after)],
                          env={**os.environ, "PYTHONPATH": str(code_root)}, capture_output=True, text=True)
    return read.returncode == 0 and read.stdout.strip() == "same"


def differences(before: Path, after: Path, after_root: Path = ROOT) -> tuple[list[str], list[str]]:
    """Each output file that differs between the two renderings, with the first lines of its diff; and a note for
    each that differs in layout only (results.json's keys moved, the same run when read by after_root's loader)."""
    out: list[str] = []
    moved: list[str] = []
    for name in OUTPUTS:
        old, new = before / name, after / name
        if not old.exists() and not new.exists():
            continue
        if old.exists() and new.exists() and old.read_bytes() == new.read_bytes():
            continue
        if name == "results.json" and old.exists() and new.exists() and same_when_read(after_root, before, after):
            moved.append("results.json: keys moved, the same run when read by the after tree")
            continue
        old_lines = old.read_text().splitlines() if old.exists() else []
        new_lines = new.read_text().splitlines() if new.exists() else []
        diff = list(difflib.unified_diff(old_lines, new_lines, f"before/{name}", f"after/{name}", lineterm="", n=1))
        out.append("\n".join([f"{name} differs:", *diff[:SHOWN_LINES]]
                             + ([f"... ({len(diff) - SHOWN_LINES} more lines)"] if len(diff) > SHOWN_LINES else [])))
    return out, moved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="the git ref whose code renders the 'before' side")
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (each with its results.json)")
    parser.add_argument("--after", type=Path, default=ROOT, help="the tree whose code renders the 'after' side "
                        "(default: this working tree)")
    args = parser.parse_args(argv)
    for run in args.runs:
        if not (run / "results.json").is_file():
            print(f"{run}: no results.json; expected a run folder", file=sys.stderr)
            return 2
    after_root = args.after.resolve()
    with tempfile.TemporaryDirectory(prefix="report-diff-") as scratch:
        worktree = Path(scratch) / "before"
        added = subprocess.run(["git", "-C", str(after_root), "worktree", "add", "--detach", "--quiet",
                                str(worktree), args.before], capture_output=True, text=True)
        if added.returncode != 0:
            print(f"{args.before}: not a ref of {after_root}: {added.stderr.strip()}", file=sys.stderr)
            return 2
        try:
            changed = 0
            for number, run in enumerate(args.runs):
                sides = {}
                for label, code in (("before", worktree), ("after", after_root)):
                    sides[label] = Path(scratch) / f"{number}-{label}"
                    problem = render(code, run, sides[label])
                    if problem:
                        print(f"{run}: the {label} side could not render it: {problem}", file=sys.stderr)
                        return 2
                found, moved = differences(sides["before"], sides["after"], after_root)
                changed += bool(found)
                print(f"{run}: " + ("the same" if not found else "DIFFERS\n" + "\n".join(found))
                      + "".join(f" ({note})" for note in moved))
        finally:
            subprocess.run(["git", "-C", str(after_root), "worktree", "remove", "--force", str(worktree)],
                           capture_output=True)
    print(f"{len(args.runs) - changed} of {len(args.runs)} run(s) render the same with {args.before} and "
          f"{after_root}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
