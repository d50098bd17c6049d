#!/usr/bin/env bash
# Set up (once), then run the whole test suite: unit tests, and integration tests against the real embedded engine.
# A failed SGLang set-up on a machine where SGLang 0.5.23 should install fails the run (scripts/sglang_expected.py);
# where it should not, the run says so in its first line and what it covers without the real-SGLang tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}  # the interpreter scripts/setup.sh builds with
"$PYTHON" scripts/sglang_expected.py before
scripts/setup.sh
"$PYTHON" scripts/sglang_expected.py after
exec .venv/bin/python -m pytest --durations=40 "$@"
