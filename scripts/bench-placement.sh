#!/usr/bin/env bash
# Where the processes of a stdio → stdio latency run sit, and what it costs.
#
# Runs `bench latency` and, once its processes have started, pins them with taskset:
#   default   no pinning
#   gateway   the gateway alone on core 0; the client, its direct fixture and the gateway's
#             upstream on core 1
#   together  the gateway and its upstream on core 0; the client and its direct fixture on 1
#   one       everything on core 0
# Prints the mode and the added p50 (through the gateway minus direct), in µs.
# Usage: scripts/bench-placement.sh MODE [CALLS]   (needs the release build and 2+ cores)
set -euo pipefail
mode=${1:?usage: scripts/bench-placement.sh default|gateway|together|one [CALLS]}
calls=${2:-30000}
cd "$(dirname "$0")/.."
bench=target/release/bench
[ -x "$bench" ] || { echo "build first: cargo build --release -p switchboard-cli -p switchboard-fixtures -p bench" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pin() { taskset -a -p -c "$1" "$2" >/dev/null; }
if [ "$mode" = one ]; then
  taskset -c 0 "$bench" latency --calls "$calls" --json >"$out"
else
  "$bench" latency --calls "$calls" --json >"$out" &
  runner=$!
  sleep 0.6
  gateway=$(pgrep -P "$runner" -f "switchboard --config" | head -1)
  upstream=$(pgrep -P "$gateway" -f switchboard-fixture | head -1)
  direct=$(pgrep -P "$runner" -f "switchboard-fixture echo" | head -1)
  case $mode in
    default) ;;
    gateway) pin 0 "$gateway"; pin 1 "$upstream"; pin 1 "$runner"; pin 1 "$direct" ;;
    together) pin 0 "$gateway"; pin 0 "$upstream"; pin 1 "$runner"; pin 1 "$direct" ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  wait "$runner"
fi
python3 - "$mode" "$out" <<'PY'
import json, sys
rows = json.load(open(sys.argv[2]))[0]["rows"]
direct, through = rows[0][1]["p50_us"], rows[1][1]["p50_us"]
print(f"{sys.argv[1]}: direct p50 {direct:.1f} µs, through {through:.1f} µs, added {through - direct:+.1f} µs")
PY
