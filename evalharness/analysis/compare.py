"""Two runs of one matrix compared cell by cell: what a change (a new engine version, a kernel, a default) did to every
cell. The pull-request view behind `evalharness compare BASE HEAD`.

Cells are matched by id, then (for ids only one run has) by settings hash: an axis renamed in the pull request still
pairs with its old self. Per matched cell: status transitions, accuracy paired per sample across the two runs (the
same code as drift against the reference: analysis/drift.py, pairing.py and stats.py), throughput ratio per scenario
(the speed rule, analysis/speed.py, head against base), reasoning length, truncation and empty answers
paired per document (analysis/secondary.py), warnings that came or went, and launch or resolved settings that changed.
A cell's accuracy is "changed beyond noise" only after multiplicity control: Holm over its tasks, then
Benjamini-Hochberg across the cells (an unchanged 24-cell matrix would otherwise call some cell changed in most runs).
Pass or fail is the gate's own decision (gate.py) with the base run standing in for a baseline: noise is not a
regression.

Reads records only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from evalharness.analysis.drift import drift_between, refresh_drift
from evalharness.analysis.gate import check, machine_warning, make_baseline, thresholds_for
from evalharness.analysis.settings import SettingDifference, asked_names, resolved_differences
from evalharness.analysis.secondary import secondary_changes
from evalharness.analysis.speed import scenario_verdict
from evalharness.analysis.stats import benjamini_hochberg, holm
from evalharness.records.baseline import Thresholds
from evalharness.records.drift import CellDrift, SecondaryChange
from evalharness.records.io import ResultsError
from evalharness.records.provenance import machine_kind
from evalharness.records.run import CellResult, RunResult

Verdict = Literal["fails", "changed", "differs", "same", "only"]
# matrix keys that are labels or run plumbing: a difference in them changes nothing a cell measures
_LABELS = {"name", "description", "reference", "report", "gate", "timeouts", "requests", "host", "port"}


class CompareError(ResultsError):
    """Two folders that cannot be compared (exit 2): runs of different matrices."""




class ScenarioChange(BaseModel):
    name: str
    base_tok_s: float | None = None
    head_tok_s: float | None = None
    ratio: float | None = None  # head / base output tokens/s (the speed rule's, over the repeats it kept)
    ci_low: float | None = None  # the rule's one-sided bounds, only where a side repeated the scenario
    ci_high: float | None = None
    repeats: tuple[int, int] = (0, 0)  # repeats kept: (base, head)
    outcome: str | None = None  # the rule's: faster | slower | equal | undecided (head against base)
    speed: str | None = None  # its words

    def beyond_noise(self) -> bool:
        """The speed rule calls the head credibly faster or slower than the base (analysis/speed.py)."""
        return self.outcome in ("faster", "slower")


class CellComparison(BaseModel):
    cell: str  # the head run's id (the base's when the cell is only in the base run)
    base_id: str | None = None  # the base run's id: another id when matched by settings hash
    presence: Literal["both", "base", "head"]
    absent: str | None = None  # why the cell is in one run only
    base_status: str | None = None
    head_status: str | None = None
    transitions: list[str] = []
    settings_changed: bool = False
    launch: list[SettingDifference] = []  # flags and variables: reference = base, cell = head
    resolved: list[SettingDifference] = []
    accuracy: CellDrift | None = None  # the head cell against the base cell, paired per sample
    accuracy_p: float | None = None  # its no-difference p: Holm over its tasks, then BH across the cells
    extras: list[SecondaryChange] = []  # truncation, empty answers, reasoning length: paired, with materiality
    scenarios: list[ScenarioChange] = []
    warnings: list[str] = []
    violations: list[str] = []
    verdict: Verdict = "same"
    why: list[str] = []  # what put the cell in its verdict, shortest first


class RunComparison(BaseModel):
    matrix_name: str
    base_dir: str
    head_dir: str
    base_label: str
    head_label: str
    versions: list[SettingDifference] = []  # engine, lm-eval, harness, git revision, machine: base -> head
    matrix_changes: list[str] = []
    thresholds: dict[str, Any] = {}
    machine_warning: str | None = None
    cells: list[CellComparison] = []
    violations: list[str] = []
    notes: list[str] = []

    def failed(self) -> bool:
        return bool(self.violations)


def _label(run: RunResult) -> str:
    return (run.meta.git_revision or "")[:12] or run.meta.started_at


def match_cells(base: RunResult, head: RunResult) -> list[tuple[str | None, str | None]]:
    """(base id, head id) in the head's order, then the base's cells the head does not have. An id that only one run
    finished pairs with a cell of the same settings hash that only the other run finished (a renamed axis value)."""
    head_ids = [c for c in head.cell_order if c in head.cells] + [c for c in head.cells if c not in head.cell_order]
    base_ids = [c for c in base.cell_order if c in base.cells] + [c for c in base.cells if c not in base.cell_order]
    only_base = [c for c in base_ids if c not in head.cells and c not in head.cell_order]
    by_hash = {base.cells[c].settings_hash: c for c in only_base}
    pairs: list[tuple[str | None, str | None]] = []
    for hid in head_ids:
        if hid in base.cells:
            pairs.append((hid, hid))
        elif hid not in base.cell_order and head.cells[hid].settings_hash in by_hash:
            bid = by_hash.pop(head.cells[hid].settings_hash)
            only_base.remove(bid)
            pairs.append((bid, hid))
        else:
            pairs.append((None, hid))
    pairs += [(bid, None) for bid in base_ids if bid not in head.cells and (bid in only_base or bid in head.cell_order)]
    return pairs


def transitions(base: CellResult, head: CellResult) -> list[str]:
    """Status changes worth a line: ok → crashed, garbage appears, a new crash class, fixed cells."""
    out = []
    kind_b = base.crash.kind if base.crash else None
    kind_h = head.crash.kind if head.crash else None
    if base.status != head.status:
        if head.status == "ok":
            what = "fixed"
        elif head.status == "garbage":
            what = "garbage appears"
        else:
            what = f"{kind_h or head.status} at {head.phase}"
        out.append(f"{base.status} → {head.status}: {what}")
    elif head.status == "crashed" and kind_h != kind_b:
        out.append(f"new crash class {kind_h} (was {kind_b})")
    return out


def _settings(base: dict[str, Any], head: dict[str, Any]) -> list[SettingDifference]:
    return [SettingDifference(key=k, reference=base.get(k), cell=head.get(k), asked=True)
            for k in sorted(set(base) | set(head)) if base.get(k) != head.get(k)]


def scenario_changes(base: CellResult, head: CellResult) -> list[ScenarioChange]:
    theirs = {s.name: s for s in base.throughput}
    out = []
    for sc in head.throughput:
        before = theirs.pop(sc.name, None)
        change = ScenarioChange(name=sc.name, head_tok_s=sc.output_tok_s,
                                base_tok_s=before.output_tok_s if before else None)
        verdict = scenario_verdict(sc, before)
        if verdict is not None:
            change.ratio, change.outcome, change.speed = verdict.ratio, verdict.outcome, verdict.text()
            change.ci_low, change.ci_high = verdict.low, verdict.high
            change.repeats = (verdict.kept[1], verdict.kept[0])
        out.append(change)
    return out + [ScenarioChange(name=n, base_tok_s=s.output_tok_s) for n, s in theirs.items()]


def task_extras(base: CellResult, base_dir: Path, head: CellResult, head_dir: Path,
                alpha: float) -> list[SecondaryChange]:
    """Truncation, empty answers and reasoning length of every task both cells ran, paired per document."""
    theirs = {t.task: t for t in base.quality if not t.error and t.samples}
    out = []
    for score in head.quality:
        if score.task in theirs and not score.error and score.samples:
            try:
                out += secondary_changes(theirs[score.task], base_dir, score, head_dir, alpha)
            except (OSError, ValueError):
                continue
    return out


def warning_changes(base: CellResult, head: CellResult) -> list[str]:
    """Known warnings that came, went, or changed their values; 'other' lines only by count."""
    known_b = {w.key: w for w in base.warnings if w.key != "other"}
    known_h = {w.key: w for w in head.warnings if w.key != "other"}
    out = [f"new: {k}" for k in known_h if k not in known_b] + [f"gone: {k}" for k in known_b if k not in known_h]
    for key in (k for k in known_h if k in known_b and known_h[k].values != known_b[k].values):
        before, after = known_b[key].values, known_h[key].values
        moved = [f"{v} {before.get(v)} → {after.get(v)}" for v in sorted(set(before) | set(after))
                 if before.get(v) != after.get(v)]
        out.append(f"changed: {key} ({', '.join(moved)})")
    other_b = sum(w.count for w in base.warnings if w.key == "other")
    other_h = sum(w.count for w in head.warnings if w.key == "other")
    if other_b != other_h:
        out.append(f"other warning lines: {other_b} → {other_h}")
    return out


def compare_cell(base: CellResult, base_dir: Path, head: CellResult, head_dir: Path,
                 gate: dict[str, Any] | None = None) -> CellComparison:
    alpha = float((gate or {}).get("alpha") or 0.05)
    out = CellComparison(cell=head.id, base_id=base.id, presence="both", base_status=base.status,
                         head_status=head.status, transitions=transitions(base, head),
                         settings_changed=base.settings_hash != head.settings_hash,
                         launch=_settings(base.args, head.args) + _settings(base.env, head.env),
                         scenarios=scenario_changes(base, head),
                         extras=task_extras(base, base_dir, head, head_dir, alpha),
                         warnings=warning_changes(base, head))
    if base.resolved and head.resolved:
        asked = asked_names(head.args, head.env, base.args, base.env)
        out.resolved = resolved_differences(base.resolved, head.resolved, asked)
    if base.quality and head.quality:
        out.accuracy, _ = drift_between(base, base_dir, head, head_dir, gate)
        tasks = [t.p_value for t in out.accuracy.tasks if t.p_value is not None]
        out.accuracy_p = min(holm(tasks)) if tasks else None
    return out


def judge(cell: CellComparison, alpha: float) -> None:
    """Set the cell's verdict: fails the gate; changed beyond noise; differs in settings, warnings or figures
    that have no noise estimate; the same within noise. `accuracy_p` must be adjusted across the cells first."""
    why: list[str] = []
    acc = cell.accuracy
    if acc is not None and cell.accuracy_p is not None and cell.accuracy_p < alpha:
        moved = [t.task for t in acc.tasks if t.p_value is not None and t.p_value < alpha]
        why.append(f"credible accuracy change (p={cell.accuracy_p:.3g} after Holm over tasks and "
                   f"Benjamini-Hochberg over cells" + (f"; {', '.join(moved)}" if moved else "") + ")")
    why += [f"{s.name} tok/s {s.speed}" for s in cell.scenarios if s.beyond_noise()]
    changed = bool(cell.transitions or why)
    differs = []
    if cell.settings_changed:
        differs.append("settings changed" + (f" ({', '.join(d.key for d in cell.launch)})" if cell.launch else ""))
    if cell.resolved:
        differs.append(f"{len(cell.resolved)} resolved setting(s) changed")
    if cell.warnings:
        differs.append("warnings changed")
    moved = [f"{e.task} {e.field}" for e in cell.extras if e.changed]
    if moved:
        differs.append("reasoning, truncation or empty answers changed (" + ", ".join(moved) + ")")
    cell.why = cell.transitions + why + differs
    cell.verdict = "fails" if cell.violations else "changed" if changed else "differs" if differs else "same"


def check_comparable(base: RunResult, head: RunResult, base_dir: Path, head_dir: Path) -> None:
    if base.meta.matrix_name != head.meta.matrix_name:
        raise CompareError(f"{base_dir} is a run of matrix {base.meta.matrix_name!r} and {head_dir} of matrix "
                           f"{head.meta.matrix_name!r}: compare two runs of one matrix")


def _versions(base: RunResult, head: RunResult) -> list[SettingDifference]:
    pairs = {"engine": (base.meta.engine, head.meta.engine),
             "engine version": (base.engine_version(), head.engine_version()),
             "lm-eval version": (base.meta.lm_eval_version, head.meta.lm_eval_version),
             "harness version": (base.meta.harness_version, head.meta.harness_version),
             "git revision": (base.meta.git_revision, head.meta.git_revision),
             "machine": (machine_kind(base.meta.machine), machine_kind(head.meta.machine))}
    return [SettingDifference(key=k, reference=b, cell=h, asked=True) for k, (b, h) in pairs.items() if b != h]


def compare_runs(base: RunResult, base_dir: Path, head: RunResult, head_dir: Path) -> RunComparison:
    """Everything `compare` says, from two loaded runs and their folders (the per-sample files are read here)."""
    check_comparable(base, head, base_dir, head_dir)
    refresh_drift(base, base_dir)
    refresh_drift(head, head_dir)
    out = RunComparison(matrix_name=head.meta.matrix_name, base_dir=str(base_dir), head_dir=str(head_dir),
                        base_label=_label(base), head_label=_label(head), versions=_versions(base, head))
    out.matrix_changes = sorted(k for k in set(base.meta.matrix) | set(head.meta.matrix)
                                if k not in _LABELS and base.meta.matrix.get(k) != head.meta.matrix.get(k))
    for name, run in (("base", base), ("head", head)):
        if run.pending():
            out.notes.append(f"the {name} run has {len(run.pending())} cell(s) not run: {', '.join(run.pending())}")
    cells = []
    gate = {k: v for k, v in (base.meta.matrix.get("gate") or {}).items() if v is not None}
    for bid, hid in match_cells(base, head):
        if bid is not None and hid is not None:
            cells.append(compare_cell(base.cells[bid], base_dir, head.cells[hid], head_dir, gate))
        elif hid is not None:
            cells.append(CellComparison(cell=hid, presence="head", head_status=head.cells[hid].status,
                                        absent="not in the base run's matrix" if hid not in base.cell_order
                                        else "in the base run's matrix but not run there"))
        elif bid is not None:
            cells.append(CellComparison(cell=bid, base_id=bid, presence="base", base_status=base.cells[bid].status,
                                        absent="not in the head run's matrix" if bid not in head.cell_order
                                        else "in the head run's matrix but not run there"))
    tested = [c for c in cells if c.accuracy_p is not None]
    for cell, adjusted in zip(tested, benjamini_hochberg([c.accuracy_p for c in tested])):  # type: ignore[misc]
        cell.accuracy_p = adjusted
    baseline_cells = [c.base_id for c in cells if c.base_id and base.cells[c.base_id].status == "ok"
                      and (c.presence == "both" or c.cell in head.cell_order)]
    baseline = make_baseline(base, base_dir, baseline_cells, Thresholds(**gate)) if baseline_cells else None
    limits = thresholds_for(head, baseline) if baseline else Thresholds(**gate)
    out.thresholds = limits.model_dump(exclude_none=True)
    if baseline is not None:
        mapping = {c.cell: c.base_id for c in cells if c.base_id in baseline_cells}
        out.violations = check(head, head_dir, baseline, mapping)
        warning = machine_warning(head, baseline)  # the gate's words, where the base run is the baseline
        out.machine_warning = warning and warning.replace("the baseline was", "the base run was").replace(
            "baseline on", "base run on").replace("this run on", "head run on")
    for cell in cells:
        cell.violations = [v for v in out.violations if v.startswith(f"{cell.cell}:")]
        if cell.presence == "both":
            judge(cell, limits.alpha)
        else:
            cell.verdict = "fails" if cell.violations else "only"
            cell.why = [f"only in the {cell.presence} run ({cell.absent})"]
    out.cells = cells
    return out
