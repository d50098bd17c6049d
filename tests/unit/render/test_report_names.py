"""Short cell names in report.md and summary.md (issue 58, 3): a cell shown by what differs from the reference, one key
table back to the ids and their flags, ids kept on disk and in results.json."""

import re

from evalharness.analysis.drift import refresh_drift
from evalharness.render.names import SHORT, named, short_names
from evalharness.render.report import render_markdown, summary_markdown
from tests.unit.analysis.test_equivalence import _run_with, _scores

SAME = [1.0] * 90 + [0.0] * 30
AXES = {"dtype-float32.spec-off.compile-eager.fault-none": ({"dtype": "float32", "spec": "off", "compile": "eager",
                                                              "fault": "none"}, {"--dtype": "float32",
                                                                                 "--enforce-eager": True}),
        "dtype-float32.spec-off.compile-compiled.fault-none": ({"dtype": "float32", "spec": "off",
                                                                "compile": "compiled", "fault": "none"},
                                                               {"--dtype": "float32", "--enforce-eager": False}),
        "dtype-bfloat16.spec-off.compile-eager.fault-bad_rope": ({"dtype": "bfloat16", "spec": "off",
                                                                  "compile": "eager", "fault": "bad_rope"},
                                                                 {"--dtype": "bfloat16", "--enforce-eager": True,
                                                                  "--hf-overrides": {"rope_theta": 10.0}})}


def _demo_like(tmp_path):
    run = _run_with(tmp_path, {cid: _scores(tmp_path, cid, {"t": SAME}) for cid in AXES},
                    tok_s={cid: rate for cid, rate in zip(AXES, (10.0, 13.0, 11.0))})
    for cid, (axes, args) in AXES.items():
        run.cells[cid].axes, run.cells[cid].args = axes, args
    run.cells["dtype-bfloat16.spec-off.compile-eager.fault-bad_rope"].status = "garbage"
    refresh_drift(run, tmp_path)  # decided, as every run is before it is rendered
    return run


def test_long_ids_are_shown_by_what_differs_and_the_key_table_maps_them_back(tmp_path):
    run = _demo_like(tmp_path)
    names = short_names(run)
    assert list(names.values()) == ["reference", "compiled", "bfloat16+bad_rope"]  # each value names its axis
    for text in (render_markdown(run), summary_markdown(run)):
        key = text[text.index("Cell names"):]
        end = key.find("\n\n", key.index("| name"))
        key = key if end < 0 else key[:end]
        outside = text.replace(key, "")
        assert not [m for m in re.findall(r"`([^`]+)`", outside) if m in AXES]  # no id as a cell's name
        assert "| compiled | dtype-float32.spec-off.compile-compiled.fault-none | - --enforce-eager |" in key
        assert "+ --dtype bfloat16; + --hf-overrides" in key
        assert "`bfloat16+bad_rope`" in outside
        first = text[text.index("| cell"):].split("\n\n")[0].splitlines()  # the first table, alone
        assert first[0].count("|") - 1 <= 7 and max(len(line) for line in first) <= 120


def test_ids_a_reader_can_read_stay_and_ambiguous_names_keep_their_ids(tmp_path):
    run = _run_with(tmp_path, {"ref": _scores(tmp_path, "ref", {"t": SAME}),
                               "fast": _scores(tmp_path, "fast", {"t": SAME})})
    refresh_drift(run, tmp_path)
    assert short_names(run) == {} and "Cell names" not in render_markdown(run) and "`fast`" in render_markdown(run)
    twin = _demo_like(tmp_path)
    same_axes = twin.cells["dtype-float32.spec-off.compile-compiled.fault-none"].axes
    twin.cells["dtype-bfloat16.spec-off.compile-eager.fault-bad_rope"].axes = dict(same_axes)
    names = short_names(twin)
    assert names["dtype-float32.spec-off.compile-compiled.fault-none"] == \
        "dtype-float32.spec-off.compile-compiled.fault-none"  # two cells one name: the ids say which is which
    assert all(len(cid) > SHORT for cid in names)


def test_a_launch_of_a_cell_is_named_after_it_and_model_output_is_never_renamed():
    names = {"dtype-float32.spec-off.compile-compiled.fault-none": "compile=compiled"}
    text = ("`dtype-float32.spec-off.compile-compiled.fault-none.confirm-1-2` and "
            "\\`dtype-float32.spec-off.compile-compiled.fault-none\\` and cells/dtype-float32.spec-off.compile-"
            "compiled.fault-none/server.log")
    out = named(text, names)
    assert out.startswith("`compile=compiled.confirm-1-2` and \\`dtype-float32")  # escaped model text stays
    assert out.endswith("cells/dtype-float32.spec-off.compile-compiled.fault-none/server.log")  # paths stay real


def test_a_24_cell_run_fits_a_pull_request_comment(tmp_path):
    """sm120's shape: 3 x 2 x 2 x 2 cells, ids of 52-56 characters; GitHub's comment limit is 65,536 characters."""
    import itertools
    import random

    axes = {"moe": ["triton", "cutlass", "deepgemm"], "fp4": ["cutlass", "flashinfer"], "deepgemm": ["on", "off"],
            "nextn": ["on", "off"]}
    combos = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    ids = [".".join(f"{k}-{v}" for k, v in combo.items()) for combo in combos]
    tasks = {"gsm8k": [1.0] * 150 + [0.0] * 50, "gpqa": [1.0] * 120 + [0.0] * 80}
    rng = random.Random(1)
    run = _run_with(tmp_path, {cid: _scores(tmp_path, cid, tasks) for cid in ids}, gate={"margin": 0.03},
                    tok_s={cid: 100 * (1 + 0.05 * rng.random() * i / 4) for i, cid in enumerate(ids)})
    for cid, combo in zip(ids, combos):
        run.cells[cid].axes, run.cells[cid].args = combo, {f"--{k}": v for k, v in combo.items()}
    refresh_drift(run, tmp_path)
    summary = summary_markdown(run)
    assert len(summary) < 65_536
    # a value shared by two axes, or a switch's on/off, keeps its axis: 'moe=deepgemm+flashinfer+nextn=off'
    assert short_names(run)["moe-deepgemm.fp4-flashinfer.deepgemm-on.nextn-off"] == \
        "moe=deepgemm+flashinfer+nextn=off"
    # a matrix may give a value a label (as sm120's do): the names, and the first table, shorten
    run.meta.matrix["axes"] = {"moe": {"triton": {"label": "moe-triton"}, "cutlass": {"label": "moe-cutlass"},
                                       "deepgemm": {"label": "moe-dg"}},
                               "fp4": {"cutlass": {"label": "fp4-cutlass"}, "flashinfer": {"label": "fp4-fi"}},
                               "deepgemm": {"on": {"label": "dg"}, "off": {"label": "no-dg"}},
                               "nextn": {"on": {"label": "mtp"}, "off": {"label": "no-mtp"}}}
    names = short_names(run)
    assert names["moe-deepgemm.fp4-flashinfer.deepgemm-off.nextn-off"] == "moe-dg+fp4-fi+no-dg+no-mtp"
    report = render_markdown(run)
    first = report[report.index("| cell"):].split("\n\n")[0].splitlines()
    # 4 columns, within 120 characters (sm120's longest label name, 'moe-cutedsl+fp4-cutlass+no-dg+mtp', is 33)
    assert first[0].count("|") - 1 <= 7 and max(len(line) for line in first) <= 120, max(first, key=len)
