#!/usr/bin/env bash
# The main job on the embedded default: set up (once), then serve every cell of matrices/cpu-smollm2.yaml and report.
# Re-running finishes an interrupted run (--resume) or, when it is complete, just re-renders it; delete the folder to
# start over.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo  # what the demo needs: harness, vLLM engine, model (no browser, no SGLang)
OUT=${OUT:-reports/cpu-smollm2}
status=0
.venv/bin/evalharness run --matrix matrices/cpu-smollm2.yaml --out "$OUT" --resume || status=$?
echo
case "$OUT" in /*) where=$OUT ;; *) where=$(pwd)/$OUT ;; esac  # OUT may be given as an absolute path
echo "The report is $where/report.md"
exit $status
