"""The charts show the choice (issue 58, 5): pareto.png plots the accuracy evidence (the drop's upper bound) against the
figure from zero, the margin as a band, the verdicts in colour, the pick and the reference marked, short names as
labels; curves.png says "per GPU" only where the run saw GPUs and rings the operating point."""

import evalharness.render.plot as plot
from evalharness.analysis.drift import refresh_drift
from evalharness.render.plot import write_plot
from tests.unit.render.test_report_names import AXES, _demo_like


def _drawn(monkeypatch):
    seen = {}

    def keep(fig, ax, title, path):
        seen.update(ax=ax, title=title)
        return True

    monkeypatch.setattr(plot, "_save", keep)
    return seen


def test_pareto_plots_the_evidence_against_the_margin_with_the_pick_marked(tmp_path, monkeypatch):
    run = _demo_like(tmp_path)
    run.meta.matrix["gate"] = {"margin": 0.1}
    refresh_drift(run, tmp_path)
    seen = _drawn(monkeypatch)
    pick = "dtype-float32.spec-off.compile-compiled.fault-none"
    assert write_plot(run, tmp_path / "pareto.png", pick)
    ax = seen["ax"]
    labels = [t.get_text() for t in ax.texts]
    assert "compiled" in labels and "reference" in labels and not [t for t in labels if t in AXES]
    assert ax.get_xlim()[0] == 0 and "upper bound" in ax.get_ylabel()
    legend = ax.get_legend_handles_labels()[1]
    assert "margin 0.1" in legend and "the pick" in legend and "equivalent" in legend and "reference" in legend
    # the pick's marker sits at its drop's bound, on the evidence axis
    drop = run.cells[pick].drift.worst_drop_upper
    stars = [c for c in ax.collections if c.get_label() == "the pick"]
    assert stars and abs(stars[0].get_offsets()[0][1] - drop) < 1e-9


def test_curves_say_per_server_on_a_cpu_run_and_ring_the_operating_point(tmp_path, monkeypatch):
    from tests.unit.render.test_curves_chart import _sweep  # the reference and a cell, swept at 1 and 8 streams

    run = _sweep()
    run.meta.machine = {"gpus": []}
    seen = _drawn(monkeypatch)
    assert plot.write_curves_plot(run, tmp_path / "curves.png", "fast")
    assert "per server" in seen["ax"].get_ylabel() and "per GPU" not in seen["title"]
    rings = [label for label in seen["ax"].get_legend_handles_labels()[1] if label.startswith("operating point of")]
    assert rings == ["operating point of ref (reference)", "operating point of fast"]
    run.meta.machine = {"gpus": [{"name": "H100"}]}
    assert plot.write_curves_plot(run, tmp_path / "curves.png", None)
    assert "per GPU" in seen["ax"].get_ylabel() and "per GPU" in seen["title"]
