"""Issue 38, part 4 ("Pictures"): each run's throughput-per-GPU against interactivity chart, one curve per ok cell's
load sweep. curves.png (matplotlib) is written for a run with a sweep and not for one without (a stale one removed);
report.html's data carries one curve per cell with the reference flagged; and in headless chromium the page draws
the curves on its canvas, names every cell as text, and shows a hostile cell name as text, not markup."""

from __future__ import annotations

import json

import pytest

from evalharness.render.html import render_html
from evalharness.render.html_data import page_data
from evalharness.render.outputs import render_all
from evalharness.render.plot import write_curves_plot
from tests.headless import browser, open_page, screenshot  # noqa: F401  (browser is a fixture)
from tests.unit.analysis.sweep_runs import cell, step, sweep_run
from tests.unit.analysis.test_speed_verdicts import _run, _scenario

HOSTILE = "fast <img src=x onerror=alert(1)>"
SLO = {"tpot": {"percentile": 90, "max_ms": 90}}


def _sweep(fast: str = "fast"):
    """The reference and a cell faster at one user and slower (missing the 90 ms TPOT target) at eight."""
    ref = cell("ref", [step(1, [30, 31, 29], tpot_s=0.033), step(8, [100, 102, 98], tpot_s=0.08)], outcome=None)
    other = cell(fast, [step(1, [45, 46, 44], tpot_s=0.022), step(8, [80, 82, 79], tpot_s=0.1)])
    return sweep_run([ref, other], concurrency=[1, 8], slo=SLO, operating_point={"concurrency": 8})


def _no_sweep():
    return _run({"ref": _scenario([30, 31, 29]), "b": _scenario([40, 41, 39])})


def _png_is_drawn(path) -> bool:
    import matplotlib.image

    pixels = matplotlib.image.imread(str(path))
    return pixels.shape[0] > 300 and pixels.shape[1] > 500 and float(pixels[..., :3].std()) > 0.05


def test_write_curves_plot_writes_a_png_for_a_sweep_and_nothing_without_one(tmp_path):
    path = tmp_path / "curves.png"
    assert write_curves_plot(_sweep(), path) is True
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and _png_is_drawn(path)
    assert write_curves_plot(_no_sweep(), tmp_path / "none.png") is False
    assert not (tmp_path / "none.png").exists()


def test_render_all_writes_curves_png_beside_pareto_png_and_removes_a_stale_one(tmp_path):
    with_sweep, without = tmp_path / "sweep", tmp_path / "plain"
    with_sweep.mkdir()
    without.mkdir()
    render_all(_sweep(), with_sweep)
    assert (with_sweep / "curves.png").exists() and (with_sweep / "pareto.png").exists()
    (without / "curves.png").write_bytes(b"stale")
    render_all(_no_sweep(), without)
    assert not (without / "curves.png").exists() and (without / "pareto.png").exists()


def test_page_data_has_one_curve_per_ok_cell_with_the_reference_flagged(tmp_path):
    curves = page_data(_sweep(), tmp_path)["curves"]
    assert [(c["cell"], c["reference"]) for c in curves["cells"]] == [("ref", True), ("fast", False)]
    ref, fast = curves["cells"]
    assert [p["label"] for p in ref["points"]] == ["c=1", "c=8"]
    assert [p["y"] for p in ref["points"]] == [30.0, 100.0]  # output tok/s per GPU (one GPU)
    assert [p["x"] for p in fast["points"]] == pytest.approx([1 / 0.022, 1 / 0.1])  # the median request's tok/s
    assert all(p["y_low"] < p["y"] < p["y_high"] for c in curves["cells"] for p in c["points"])
    assert [p["meets"] for p in fast["points"]] == [True, False]  # 100 ms per token misses the 90 ms target
    assert [p["meets"] for p in ref["points"]] == [True, True]
    assert curves["point"] == "at p90 TPOT ≤ 90 ms, concurrency 8"
    assert "per user" in curves["x_label"] and "per GPU" in curves["y_label"]
    plain = page_data(_no_sweep(), tmp_path)["curves"]
    assert plain["cells"] == []


def test_a_failed_cell_draws_no_curve(tmp_path):
    run = _sweep()
    run.cells["fast"].status = "crashed"
    assert [c["cell"] for c in page_data(run, tmp_path)["curves"]["cells"]] == ["ref"]


# --- in headless chromium -----------------------------------------------------------------------------------------

_PIXELS = """
const c = document.getElementById('curves-canvas');
const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
let drawn = 0, black = 0, blue = 0;
for (let i = 0; i < d.length; i += 4) {
  if (d[i + 3] === 0) continue;
  drawn++;
  if (d[i] < 40 && d[i + 1] < 40 && d[i + 2] < 40) black++;
  if (Math.abs(d[i] - 0x1f) < 30 && Math.abs(d[i + 1] - 0x77) < 30 && Math.abs(d[i + 2] - 0xb4) < 30) blue++;
}
return [drawn, black, blue];
"""

_HOVER = """
const canvas = document.getElementById('curves-canvas'), box = canvas.getBoundingClientRect();
const point = Chart.getChart(canvas).getDatasetMeta(1).data[1];  // the second cell's step at c=8
canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: box.left + point.x, clientY: box.top + point.y, bubbles: true}));
"""


def test_the_page_draws_the_curves_and_shows_a_hostile_cell_name_as_text(browser, tmp_path):
    from selenium.webdriver.support.wait import WebDriverWait  # here: without selenium the fixture skips

    run = _sweep(HOSTILE)
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    drawn, black, blue = browser.execute_script(_PIXELS)
    # the reference's thick black curve and the other cell's blue one are on the canvas, not just its axes
    assert drawn > 5000 and black > 300 and blue > 200, (drawn, black, blue)
    legend = browser.find_element("css selector", "#curves #curves-legend").text
    assert "ref (reference)" in legend and HOSTILE in legend
    assert browser.execute_script("return document.querySelectorAll('#page img, #page script').length") == 0
    names = browser.execute_script("return [...document.querySelectorAll('#curves-legend > li')].map((li) => li.getAttribute('data-cell'))")
    assert names == ["ref", HOSTILE]
    section = browser.find_element("css selector", "#curves").text
    assert "Throughput against interactivity" in section and "at p90 TPOT ≤ 90 ms, concurrency 8" in section
    # each step as text, folded: open the hostile cell's and read its missed step
    browser.execute_script("document.querySelectorAll('#curves-legend details').forEach((d) => { d.open = true; });")
    steps = browser.find_element("css selector", f"#curves-legend > li[data-cell={json.dumps(HOSTILE)}]").text
    assert "at c=8: 80.3 tok/s per GPU [" in steps and "SLO missed" in steps and "at c=1" in steps
    # hovering a step says its cell, load, tok/s per GPU with its interval, tok/s per user and the SLO
    browser.execute_script(_HOVER)
    WebDriverWait(browser, 10).until(lambda b: "SLO missed" in b.find_element("id", "curves-detail").text)
    assert browser.find_element("id", "curves-detail").text == (
        f"{HOSTILE} at c=8: 80.3 tok/s per GPU [90%: 77.8–82.9], 10.0 tok/s per user; SLO missed")
    browser.execute_script("document.getElementById('curves').scrollIntoView();")
    screenshot(browser, "curves.png")


def test_the_page_says_so_when_the_run_has_no_sweep(browser, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(_no_sweep(), tmp_path), encoding="utf-8")
    open_page(browser, page)
    section = browser.find_element("css selector", "#curves")
    assert "No load sweep in this run (throughput.sweep)" in section.text
    assert not section.find_elements("css selector", "canvas")
