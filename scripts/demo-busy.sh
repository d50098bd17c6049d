#!/usr/bin/env bash
# The demo with the machine disturbed on purpose, in bursts: EH_BUSY_CORES processes (default 2) burn a core each for
# EH_BURST_ON_S seconds (default 15), then rest EH_BURST_OFF_S seconds (default 45), for the whole run. They are not
# the harness's children, so its host window counts them as other processes (serving/interference.py). The speed
# verdicts of this run should be those of a quiet one (issue 43), and the report names the disturbed repeats.
# OUT as for scripts/demo.sh (default reports/cpu-smollm2-busy).
set -euo pipefail
cd "$(dirname "$0")/.."
on=${EH_BURST_ON_S:-15}
off=${EH_BURST_OFF_S:-45}
burst() {  # one burner: its own child killed with it
  child=
  trap '[ -n "$child" ] && kill "$child" 2>/dev/null; exit 0' TERM
  while true; do
    timeout "$on" yes > /dev/null & child=$!
    wait "$child" || true
    sleep "$off" & child=$!
    wait "$child" || true
  done
}
burners=()
for _ in $(seq "${EH_BUSY_CORES:-2}"); do
  burst &
  burners+=("$!")
done
trap 'kill "${burners[@]}" 2>/dev/null || true; wait 2>/dev/null || true' EXIT
echo "demo-busy: ${#burners[@]} burst process(es), ${on} s on, ${off} s off"
OUT=${OUT:-reports/cpu-smollm2-busy} scripts/demo.sh
