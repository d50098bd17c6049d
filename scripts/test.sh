#!/usr/bin/env bash
# Set up (once), then run the whole test suite: unit tests, and integration tests against the real embedded engine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/python -m pytest --durations=15 "$@"
