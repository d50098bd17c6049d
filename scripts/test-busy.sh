#!/usr/bin/env bash
# The README's test command with the machine made slower on purpose: one process keeps one core busy for the whole
# run (EH_BUSY_CORES=N for more), so that about half of a 2-core machine is left to the suite. No test outcome may
# depend on the machine's speed (the timeouts under test are calibrated at the start of the session, see
# tests/integration/conftest.py): this passing is the proof. Arguments go to pytest, as with scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
burners=()
for _ in $(seq "${EH_BUSY_CORES:-1}"); do
  (exec yes > /dev/null) &
  burners+=("$!")
done
trap 'kill "${burners[@]}" 2>/dev/null || true' EXIT
echo "test-busy: ${#burners[@]} busy process(es): ${burners[*]}"
scripts/test.sh "$@"
