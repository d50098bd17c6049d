"""Launch plans per engine: argv lists (never shell strings), environment, readiness endpoints, config diffs."""

import json

import pytest

from evalharness.analysis.settings import asked_names, resolved_differences
from evalharness.matrix.schema import Cell, Matrix
from evalharness.serving.engines import ENGINES, render_args
from evalharness.serving.engines._common import flatten

RENDER = [
    ({"--enforce-eager": True}, ["--enforce-eager"]),
    ({"--enforce-eager": False}, []),
    ({"--quantization": None}, []),
    ({"--tp": 8}, ["--tp", "8"]),
    ({"--mem-fraction-static": 0.85}, ["--mem-fraction-static", "0.85"]),
    ({"--cuda-graph-bs": [1, 2, 4]}, ["--cuda-graph-bs", "1", "2", "4"]),
    ({"--speculative-config": {"method": "ngram", "k": 4}}, ["--speculative-config", '{"method":"ngram","k":4}']),
    ({"--name": "a b; rm -rf /"}, ["--name", "a b; rm -rf /"]),  # one argv item, no shell ever sees it
]


@pytest.mark.parametrize("args,argv", RENDER)
def test_render_args(args, argv):
    assert render_args(args) == argv


def _cell(args=None, env=None, engine="vllm"):
    return Cell(id="c", axes={}, args=args or {}, env=env or {}, settings_hash="x", engine=engine)


def test_vllm_plan():
    matrix = Matrix(name="t", engine="vllm", model="/m", command=["/e/python", "-m", "vllm.entrypoints.openai.api_server"])
    plan = ENGINES["vllm"].launch_plan(matrix, _cell({"--dtype": "bfloat16"}, {"A": "1"}), 8123, "/out")
    assert plan.argv == ["/e/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--host",
                         "127.0.0.1", "--port", "8123", "--served-model-name", "/m", "--dtype", "bfloat16"]
    assert plan.env["A"] == "1" and plan.env["VLLM_CACHE_ROOT"] == "/out/.vllm-cache"
    assert plan.root_url + plan.health_path == "http://127.0.0.1:8123/health"
    assert plan.base_url == "http://127.0.0.1:8123/v1"


def test_sglang_plan_defaults_to_sglang_serve_and_health_generate():
    matrix = Matrix(name="t", engine="sglang", model="Qwen/Q", served_model_name="q")
    plan = ENGINES["sglang"].launch_plan(
        matrix, _cell({"--tp": 8, "--moe-runner-backend": "flashinfer_cutlass"}, {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"}, "sglang"),
        30000, "/out")
    assert plan.argv[:4] == ["sglang", "serve", "--model-path", "Qwen/Q"]
    assert plan.argv[-5:] == ["--tp", "8", "--moe-runner-backend", "flashinfer_cutlass", "--enable-metrics"]
    assert plan.env == {"SGLANG_ENABLE_JIT_DEEPGEMM": "0"} and plan.health_path == "/health_generate"
    # the matrix can say otherwise: `--enable-metrics: false` keeps it off
    off = ENGINES["sglang"].launch_plan(matrix, _cell({"--enable-metrics": False}, engine="sglang"), 30000, "/out")
    assert "--enable-metrics" not in off.argv


def test_transformers_serve_plan_pins_the_model_it_is_given_and_is_asked_by_that_name():
    """transformers serve (5.19) answers only requests that name the model it was started with ("Server is pinned
    to '<path>'; requested 'x'"), so a served-model alias in the matrix cannot be the requests' name."""
    matrix = Matrix(name="t", engine="transformers", model="/m", served_model_name="alias")
    plan = ENGINES["transformers"].launch_plan(matrix, _cell({"--dtype": "float32"}, {"A": "1"}, "transformers"),
                                               8124, "/out")
    assert plan.argv == ["transformers", "serve", "/m", "--host", "127.0.0.1", "--port", "8124", "--dtype", "float32"]
    assert plan.served_model_name == "/m" and plan.env["A"] == "1"
    assert plan.root_url + plan.health_path == "http://127.0.0.1:8124/health"
    assert ENGINES["transformers"].logprob_path is None and ENGINES["transformers"].cache_flush_path is None
    assert ENGINES["transformers"].log_markers("[transformers] Loading model\nINFO: ok\n[transformers] ready") == 2


def test_llama_server_plan_takes_the_gguf_file_and_its_alias_and_notes_tools_without_jinja():
    """llama-server's model is `-m FILE`, its API name `--alias` (tools/server/README.md); a build without --jinja on
    by default refuses tool requests ("tools param requires --jinja flag", server-common.cpp), said by validate."""
    matrix = Matrix(name="t", engine="llamacpp", model="/m.gguf", served_model_name="small")
    engine = ENGINES["llamacpp"]
    plan = engine.launch_plan(matrix, _cell({"-np": 4, "-fa": True}, engine="llamacpp"), 8080, "/out")
    assert plan.argv == ["llama-server", "-m", "/m.gguf", "--host", "127.0.0.1", "--port", "8080", "--alias", "small",
                         "-np", "4", "-fa"]
    assert plan.served_model_name == "small" and plan.root_url + plan.health_path == "http://127.0.0.1:8080/health"
    assert engine.calls_flag_notes({}, {"tools"}) and "--jinja" in engine.calls_flag_notes({}, {"tools"})[0]
    assert engine.calls_flag_notes({"--jinja": True}, {"tools"}) == [] and engine.calls_flag_notes({}, {"json"}) == []
    log = "llama_model_loader: loaded meta data\nsrv  llama_server: model loaded\nINFO: other\n"
    assert engine.log_markers(log) == 2 and ENGINES["vllm"].log_markers(log) == 0


def test_teardown_styles_are_engine_data():
    assert ENGINES["sglang"].terminate == "launcher" and ENGINES["vllm"].terminate == "group"


def test_external_plan_polls_models():
    matrix = Matrix(name="t", engine="external", model="m", base_url="http://10.0.0.1:8000/v1/")
    plan = ENGINES["external"].launch_plan(matrix, _cell(engine="external"), 0, "/out")
    assert plan.argv == [] and plan.root_url == "http://10.0.0.1:8000"
    assert plan.root_url + plan.health_path == "http://10.0.0.1:8000/v1/models"


def test_flatten():
    assert flatten({"a": {"b": 1, "c": [1, 2]}, "d": [{"e": 1}]}) == {"a.b": 1, "a.c": [1, 2], "d[0].e": 1}


def test_differences_mark_what_no_flag_asked_for():
    reference = {"args.dtype": "float32", "engine.dtype": "torch.float32", "attention_backend": "fa3", "same": 1}
    cell = {"args.dtype": "bfloat16", "engine.dtype": "torch.bfloat16", "attention_backend": "triton", "same": 1}
    asked = asked_names({"--dtype": "bfloat16"}, {}, {"--dtype": "float32"}, {})
    diffs = resolved_differences(reference, cell, asked)
    assert [(d.key, d.asked) for d in diffs] == [("attention_backend", False), ("args.dtype", True),
                                                 ("engine.dtype", True)]
    assert json.loads(diffs[0].model_dump_json())["reference"] == "fa3"


METRICS = """# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{{model_name="m",is_streaming="true"}} {tokens}
sglang:generation_tokens_total{{model_name="m",is_streaming="false"}} 5.0
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{{model_name="m"}} {verifies}
"""


@pytest.mark.parametrize("flush_status,metrics,spec,expected", [
    # the counters' delta: (105+5 - 5-5) / (40 - 0) tokens per verify step, SGLang's own completion_tokens/verify_ct
    (200, True, "NEXTN", {"spec_mean_acceptance_length": 2.5, "spec_verify_calls": 40.0,
                          "spec_generated_tokens": 100.0, "spec_source": "metrics delta"}),
    # /flush_cache refused: something else ran on the server; its tokens would be in the delta: no figure, a reason
    (400, True, "NEXTN", {"spec_unavailable": "/flush_cache answered 400 (Flush cache failed.): requests still ran "
                          "on the server, so the counters would count them too"}),
    # no /metrics (--enable-metrics: false): the 40-step avg_spec_accept_length is never shown instead
    (200, False, "NEXTN", "no counters"),
    (200, True, None, {}),  # not speculative: nothing to say
])
def test_sglang_acceptance_is_a_counter_delta_or_no_figure(flush_status, metrics, spec, expected):
    import httpx

    calls = {"metrics": 0}

    def answer(request):
        if request.url.path == "/flush_cache":
            assert request.url.params["timeout"] == "60"
            return httpx.Response(flush_status, text="Flush cache failed.\n" if flush_status != 200 else "ok")
        if request.url.path == "/metrics":
            if not metrics:
                return httpx.Response(404)
            calls["metrics"] += 1
            first = calls["metrics"] == 1
            return httpx.Response(200, text=METRICS.format(tokens=5 if first else 105, verifies=0 if first else 40))
        return httpx.Response(200, json={"speculative_algorithm": spec,
                                         "internal_states": [{"avg_spec_accept_length": 9.9}]})

    engine = ENGINES["sglang"]
    plan = engine.launch_plan(Matrix(name="t", engine="sglang", model="/m"), _cell(engine="sglang"), 30000, "/out")
    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        got = engine.after_load(client, plan, engine.before_load(client, plan))
    if isinstance(expected, str):
        assert expected in got["spec_unavailable"] and "40th decode step" in got["spec_unavailable"]
    else:
        assert got == expected


def test_a_labelled_counter_with_no_sample_yet_reads_as_zero():
    """Before its first increment a labelled counter is only its "# TYPE" line (no warm-up, NEXTN's first scenario):
    the starting value is 0, not "no counters"."""
    from evalharness.serving.engines._common import prometheus_totals

    page = ("# HELP sglang:spec_verify_calls_total Number of verify calls\n"
            "# TYPE sglang:spec_verify_calls_total counter\n"
            "# TYPE sglang:generation_tokens_total counter\n"
            'sglang:generation_tokens_total{model_name="m"} 7.0\n')
    assert prometheus_totals(page, ("sglang:generation_tokens_total", "sglang:spec_verify_calls_total")) == {
        "sglang:generation_tokens_total": 7.0, "sglang:spec_verify_calls_total": 0.0}
    assert prometheus_totals(page, ("sglang:other_total",)) == {}  # a counter that is not on the page stays absent


def test_sglang_measured_values_are_server_facts_never_settings():
    """/server_info's max_total_num_tokens and max_req_input_len are sized from free memory at startup (two launches
    of the same settings differ a little): a settings diff on them would make every axis look like it changed
    something. They are facts."""
    import httpx

    from evalharness.serving.engines.sglang import sglang_facts

    info = {"dtype": "float32", "attention_backend": "torch_native", "max_total_tokens": 8192,
            "status": "ready", "max_total_num_tokens": 8191, "max_req_input_len": 8185, "version": "0.5.23"}
    engine = ENGINES["sglang"]
    plan = engine.launch_plan(Matrix(name="t", engine="sglang", model="/m"), _cell(engine="sglang"), 30000, "/out")
    with httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200, json=info))) as client:
        resolved = engine.resolved_config(client, plan, "")
    assert resolved == {"dtype": "float32", "attention_backend": "torch_native", "max_total_tokens": 8192}
    facts = sglang_facts(info, {})
    assert facts["token_capacity"] == 8191 and facts["max_req_input_len"] == 8185 and facts["status"] == "ready"


def test_versions_read_sgl_deep_gemm_the_distribution_0_5_23_depends_on(tmp_path):
    """SGLang 0.5.23 requires sgl-deep-gemm==0.2.3.post2 (its METADATA), not a distribution named deep_gemm."""
    import os
    import subprocess
    import sys

    from evalharness.serving.engines.sglang_check import VERSIONS_SCRIPT

    info = tmp_path / "sgl_deep_gemm-0.2.3.post2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sgl-deep-gemm\nVersion: 0.2.3.post2\n")
    proc = subprocess.run([sys.executable, "-c", VERSIONS_SCRIPT], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert json.loads(proc.stdout.strip().splitlines()[-1])["deep_gemm"] == "0.2.3.post2"


def test_the_parser_check_runs_under_the_matrixs_environment(tmp_path):
    """An engine that imports only with the matrix's env (here its PYTHONPATH holds the package) is checked, not
    reported as 'cannot import sglang's parser'."""
    import sys

    from evalharness.matrix.expand import expand
    from evalharness.serving.engines.sglang_check import check_cells

    package = tmp_path / "site" / "sglang"
    (package / "srt").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.5.23"\n')
    (package / "srt" / "__init__.py").write_text("")
    (package / "srt" / "server_args.py").write_text("def prepare_server_args(argv):\n    return argv\n")
    matrix = Matrix(name="t", engine="sglang", model="/m", env={"PYTHONPATH": str(tmp_path / "site")},
                    axes={"a": {"x": {}}})
    cells = expand(matrix)
    check = check_cells(matrix, cells, sys.executable)
    assert check.checked and check.version == "0.5.23" and not check.failed, check


def test_each_cell_is_checked_under_its_own_environment_and_launcher(tmp_path):
    """Issue 41: validate applied the matrix's env only. Here the package that makes SGLang importable is on the
    PYTHONPATH of one axis value, and two values carry two different installs: each cell is checked by the SGLang its
    own server would import, and a cell on vLLM is not sent to SGLang's parser at all."""
    import sys

    from evalharness.matrix.expand import expand
    from evalharness.serving.engines.sglang_check import check_cells

    for version in ("0.5.23", "0.5.99"):
        package = tmp_path / version / "sglang"
        (package / "srt").mkdir(parents=True)
        (package / "__init__.py").write_text(f'__version__ = "{version}"\n')
        (package / "srt" / "__init__.py").write_text("")
        # the 0.5.99 install refuses a flag, as an SGLang that renamed it would
        refuse = "--old-flag" if version == "0.5.99" else "--never"
        (package / "srt" / "server_args.py").write_text(
            "import sys\n"
            "def prepare_server_args(argv):\n"
            f"    if {refuse!r} in argv:\n"
            f"        print('sglang: error: unrecognized arguments: {refuse}', file=sys.stderr)\n"
            "        raise SystemExit(2)\n"
            "    return argv\n")
    matrix = Matrix(name="t", engine="sglang", model="/m", args={"--old-flag": True}, axes={"install": {
        "old": {"env": {"PYTHONPATH": str(tmp_path / "0.5.23")}},
        "new": {"env": {"PYTHONPATH": str(tmp_path / "0.5.99")}},
        "vllm": {"engine": "vllm"}}})
    cells = [c for c in expand(matrix) if c.engine == "sglang"]
    check = check_cells(matrix, cells, sys.executable)
    assert check.checked and check.version == "0.5.23, 0.5.99", check
    verdicts = {c.id: c for c in check.cells}
    assert verdicts["install-old"].ok and not verdicts["install-new"].ok
    assert "unrecognized arguments: --old-flag" in verdicts["install-new"].error



def test_the_shared_defaults_read_no_counters_and_write_no_notes():
    """An engine that knows nothing beyond launching (_common.EngineDefaults: the external endpoint, transformers
    serve, llama.cpp) answers every scenario, flag and log question empty; SGLang and vLLM answer their own."""
    from evalharness.serving.engines._common import EngineDefaults

    plain = EngineDefaults()
    assert plain.before_load(None, None) == {} and plain.after_load(None, None, {"x": 1}) == {}
    assert plain.server_facts(None, None, None) == {} and plain.scenario_log_summary("gen throughput 5") == {}
    assert plain.calls_flag_notes({"--jinja": True}, {"tools"}) == [] and plain.log_markers("INFO x\n") == 0
    assert plain.check_cells(None, [], None) is None
    assert isinstance(ENGINES["external"], EngineDefaults) and not isinstance(ENGINES["vllm"], EngineDefaults)
