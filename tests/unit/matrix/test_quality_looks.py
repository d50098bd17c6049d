"""The quality section's looks (matrix/quality.py): resolved per task against its own repeats, ending at the plan, the
equivalence-only looks beside them, and bad ones refused by key."""

from __future__ import annotations

import pytest

from evalharness.analysis.sequential import final_levels, look_levels, quality_levels
from evalharness.cli import main
from evalharness.matrix.quality import QualitySection


def test_looks_that_do_not_end_at_the_planned_repeats_are_refused():
    with pytest.raises(ValueError, match=r"looks .*task t, 8 repeats.*end at 4 repeats but the task runs 8"):
        QualitySection(tasks=["t"], repeats=8, looks=[2, 4])
    with pytest.raises(ValueError, match="strictly increasing"):
        QualitySection(tasks=["t"], repeats=8, looks=[4, 2, 8])
    with pytest.raises(ValueError, match=r"task_settings.u.looks"):
        QualitySection(tasks=["t", "u"], repeats=8, looks=[0.5, 1.0], task_settings={"u": {"looks": [3, 5]}})
    # fractions resolve against each task's own repeats, so one list ends at every task's planned end
    section = QualitySection(tasks=["t", "u"], repeats=8, looks=[0.25, 0.5, 1.0], equivalence_looks=[],
                             task_settings={"u": {"repeats": 30}})
    assert section.looks_for("t") == [2, 4, 8] and section.looks_for("u") == [8, 15, 30]
    # (the default's equivalence-only look at three quarters joins them, the equivalence test's alone)
    default = QualitySection(tasks=["t"], repeats=8, looks=[0.25, 0.5, 1.0])
    assert default.looks_for("t") == [2, 4, 6, 8] and default.equivalence_only_for("t") == [6]
    # the alpha spent over looks that end at the plan adds up to alpha once, never twice
    assert sum(look_levels(0.05, section.looks_for("u"))) == pytest.approx(0.05)
    assert final_levels(0.05, section.looks_for("u"), 30) == quality_levels(0.05, [8, 15, 30])[-1]


def test_a_matrix_with_looks_past_the_plan_exits_2(tmp_path, capsys):
    from pathlib import Path

    text = Path("matrices/cpu-smollm2.yaml").read_text()
    assert "\n  reference_repeats: 2\n" in text
    bad = tmp_path / "m.yaml"  # the cells run each task 3 times; looks ending at 2 stop short of the plan
    bad.write_text(text.replace("\n  reference_repeats: 2\n", "\n  reference_repeats: 2\n  repeats: 3\n  looks: [1, 2]\n")
                   .replace("../.engine", str(Path(".").resolve() / ".engine")))
    assert main(["validate", "--matrix", str(bad), "--no-engine-check"]) == 2
    err = capsys.readouterr().err
    assert "looks" in err and "m.yaml" in err and "Traceback" not in err


def test_equivalence_only_looks_are_resolved_per_task_and_bad_ones_name_their_key():
    # three quarters by default, [] for none; the section's list (fractions of each task's repeats); a task's own
    # list over the section's
    assert QualitySection(tasks=["t"], repeats=8).equivalence_only_for("t") == [6]
    assert QualitySection(tasks=["t"], repeats=8, equivalence_looks=[]).looks_for("t") == [1, 2, 4, 8]
    section = QualitySection(tasks=["t", "u", "v"], repeats=8, equivalence_looks=[0.75],
                             task_settings={"u": {"equivalence_looks": []}, "v": {"equivalence_looks": [0.5, 7]}})
    assert section.looks_for("t") == [1, 2, 4, 6, 8] and section.equivalence_only_for("t") == [6]
    assert section.looks_for("u") == [1, 2, 4, 8] and section.equivalence_only_for("u") == []
    # a look both tests already take is theirs (0.5 of 8 is 4), not the equivalence test's alone
    assert section.looks_for("v") == [1, 2, 4, 7, 8] and section.equivalence_only_for("v") == [7]
    with pytest.raises(ValueError, match=r"equivalence_looks \(task t, 8 repeats\).*below the task's 8 repeats"):
        QualitySection(tasks=["t"], repeats=8, equivalence_looks=[8])
    with pytest.raises(ValueError, match=r"task_settings.u.equivalence_looks \(task u, 4 repeats\)"):
        QualitySection(tasks=["t", "u"], repeats=8, task_settings={"u": {"repeats": 4, "equivalence_looks": [5]}})
    with pytest.raises(ValueError, match="less than 1"):
        QualitySection(tasks=["t"], repeats=8, equivalence_looks=[1.0])
