#!/usr/bin/env bash
# One gateway replica on PostgreSQL + Redis against the same build on the embedded default
# (SQLite ledger, in-process limits), side by side in one run (issue 32's figure,
# docs/scale-out.md). Starts its own PostgreSQL 15 and Redis on unix sockets in a temporary
# directory, three HTTP gateways on 127.0.0.1 in front of the echo fixture, and drives them in
# alternating rounds with `bench drive` (2025-11-25 sessions, so a shared deployment also
# checks its sessions in Redis). The first two serve agent `qa` under a rate limit high
# enough never to refuse (100,000 a second): in process on one, the Redis GCRA script on
# the other (a busy rate takes units ahead, docs/scale-out.md). A third, `unlimited`, is the
# shared one without the limit: what PostgreSQL and the rest of Redis cost without
# admission. Redis's command counts at the end show how many round trips admission made.
#
#   scripts/bench-shared.sh [ROUNDS] [CALLS]
#
# Needs target/release/{switchboard,bench,switchboard-fixture}
# (`cargo build --release -p switchboard-cli -p bench -p switchboard-fixtures`),
# postgresql-15 and redis-server (scripts/install-test-deps.sh). Run as root, PostgreSQL runs
# as the `postgres` user. On a machine where they live elsewhere (carried to the device
# machine, BENCHMARKS.md), SWITCHBOARD_BIN, PG_BIN, REDIS_SERVER and REDIS_CLI say where.
set -euo pipefail

rounds=${1:-3}
calls=${2:-10000}
source "$(dirname "$0")/lib/shared-stores.sh"
stores_start

limit='[agents.qa]
limits = { per_minute = 6000000, burst = 100000 }'
server="[servers.fx]
command = \"$fixture\"
args = [\"echo\"]
"
common="$limit

$server"
mkdir -p "$work/embedded" "$work/shared" "$work/unlimited"
printf '[gateway]\nledger = "%s/embedded/ledger.db"\n\n%s' "$work" "$common" > "$work/embedded/gateway.toml"
printf '[gateway]\nledger = "%s/shared/ledger.db"\n\n%s\n\n%s\n' "$work" "$(stores_config)" "$common" \
    > "$work/shared/gateway.toml"
sed -e "s#$work/shared/ledger.db#$work/unlimited/ledger.db#" -e '/^\[agents.qa\]$/,/^limits/d' \
    "$work/shared/gateway.toml" > "$work/unlimited/gateway.toml"
"$bin/switchboard" migrate --config "$work/shared/gateway.toml" >/dev/null

read -r embedded embedded_pid < <(serve embedded)
read -r shared shared_pid < <(serve shared)
read -r unlimited unlimited_pid < <(serve unlimited)
pids+=("$embedded_pid" "$shared_pid" "$unlimited_pid")
[[ -n ${embedded_pid:-} && -n ${shared_pid:-} && -n ${unlimited_pid:-} ]] || exit 1
sample_ledger &
pids+=("$!")

echo "One replica on PostgreSQL + Redis against the embedded default, $rounds alternating rounds of $calls calls"
for concurrency in 1 16; do
    for round in $(seq "$rounds"); do
        for name in embedded shared unlimited; do
            port=${!name} pid_of=${name}_pid
            drive_line "$name" "$concurrency" "$round" "$port" "${!pid_of}"
        done
    done
done
report_rows
report_ledger_samples
echo "Redis commands over the run (INFO commandstats):"
"$redis_cli" -s "$work/redis.sock" info commandstats | grep -E '^cmdstat_(evalsha|eval|pttl|publish|get|set):' | sed 's/^/  /'

