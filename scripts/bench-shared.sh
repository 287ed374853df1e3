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
bin=${SWITCHBOARD_BIN:-target/release}
pg=${PG_BIN:-/usr/lib/postgresql/15/bin}
redis_server=${REDIS_SERVER:-redis-server}
redis_cli=${REDIS_CLI:-redis-cli}
for program in "$bin/switchboard" "$bin/bench" "$bin/switchboard-fixture"; do
    [[ -x $program ]] || { echo "no $program: cargo build --release -p switchboard-cli -p bench -p switchboard-fixtures" >&2; exit 1; }
done
[[ -x $pg/initdb ]] || { echo "PostgreSQL 15 is not installed (scripts/install-test-deps.sh)" >&2; exit 1; }
command -v "$redis_server" >/dev/null || { echo "redis-server is not installed (scripts/install-test-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
chmod 755 "$work"
pids=()
as_pg=()
[[ $(id -u) == 0 ]] && as_pg=(runuser -u postgres --)
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    [[ -f $work/pg/postmaster.pid ]] && "${as_pg[@]}" "$pg/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
    [[ -S $work/redis.sock ]] && "$redis_cli" -s "$work/redis.sock" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# PostgreSQL on a unix socket only; fsync off, as in the tests (the VM's disk is not what is measured).
mkdir -p "$work/pg" "$work/sock"
[[ ${#as_pg[@]} -gt 0 ]] && chown postgres "$work/pg" "$work/sock"
"${as_pg[@]}" "$pg/initdb" -D "$work/pg" -U postgres -A trust >/dev/null
"${as_pg[@]}" "$pg/pg_ctl" -D "$work/pg" -l "$work/sock/pg.log" -w \
    -o "-k $work/sock -c listen_addresses='' -c fsync=off" start >/dev/null
"$redis_server" --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 --save '' \
    --appendonly no --daemonize yes --logfile "$work/redis.log" >/dev/null
for _ in $(seq 50); do [[ -S $work/redis.sock ]] && break; sleep 0.1; done

fixture=$(realpath "$bin/switchboard-fixture")
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
"$bin/switchboard" keys create "$work/shared/keys" >/dev/null 2>&1
cat > "$work/shared/gateway.toml" <<EOF
[gateway]
ledger = "$work/shared/ledger.db"

[storage]
url = "postgres:///postgres?host=$work/sock&user=postgres"

[shared]
keys = "$work/shared/keys"
redis = "unix://$work/redis.sock"
redis_unavailable = "fail_closed"
replicas = 1
deployment = "bench"

$common
EOF
sed -e "s#$work/shared/ledger.db#$work/unlimited/ledger.db#" -e '/^\[agents.qa\]$/,/^limits/d' \
    "$work/shared/gateway.toml" > "$work/unlimited/gateway.toml"
"$bin/switchboard" migrate --config "$work/shared/gateway.toml" >/dev/null

port() { echo $((20000 + RANDOM % 20000)); }
start() {
    local name=$1 listen
    listen=$(port)
    XDG_STATE_HOME=$work/$name XDG_DATA_HOME=$work/$name \
        "$bin/switchboard" --config "$work/$name/gateway.toml" --log error \
        serve --http "127.0.0.1:$listen" --agent qa >"$work/$name/out.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$listen/livez', timeout=1)" 2>/dev/null \
            && { echo "$listen $pid"; return; }
        sleep 0.1
    done
    echo "the $name gateway did not start:" >&2; cat "$work/$name/out.log" >&2; exit 1
}
read -r embedded embedded_pid < <(start embedded)
read -r shared shared_pid < <(start shared)
read -r unlimited unlimited_pid < <(start unlimited)
pids+=("$embedded_pid" "$shared_pid" "$unlimited_pid")
[[ -n ${embedded_pid:-} && -n ${shared_pid:-} && -n ${unlimited_pid:-} ]] || exit 1

drive() {
    "$bin/bench" drive --json --url "http://127.0.0.1:$1/mcp" --tool fx__echo \
        --calls "$calls" --concurrency "$2" --server-pid "$3"
}
field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

echo "One replica on PostgreSQL + Redis against the embedded default, $rounds alternating rounds of $calls calls"
for concurrency in 1 16; do
    for round in $(seq "$rounds"); do
        for name in embedded shared unlimited; do
            port=${!name} pid_of=${name}_pid
            drive "$port" "$concurrency" "${!pid_of}" > "$work/result.json"
            printf '%-9s concurrency %2s round %s: p50 %6.1f µs, p99 %7.1f µs, %6.0f calls/s, server CPU %5.1f µs/call, %s errors\n' \
                "$name" "$concurrency" "$round" \
                "$(field "['latency']['p50_us']" < "$work/result.json")" \
                "$(field "['latency']['p99_us']" < "$work/result.json")" \
                "$(field "['calls_per_second']" < "$work/result.json")" \
                "$(field "['server_cpu_us'] or 0" < "$work/result.json")" \
                "$(field "['errors']" < "$work/result.json")"
        done
    done
done
count_rows() {
    "${as_pg[@]}" "$pg/psql" -h "$work/sock" -U postgres -At -c "select count(*) from mcp_tool_invocations" postgres 2>/dev/null || echo "?"
}
rows=$(count_rows)
echo "ledger rows on PostgreSQL when the last call was answered: $rows"
# What the calls left in the journals is still being appended: wait until the count settles.
waited=0
while (( waited < 60 )); do
    sleep 1
    waited=$((waited + 1))
    now=$(count_rows)
    [[ $now == "$rows" ]] && break
    rows=$now
done
echo "ledger rows once the writers were done: $rows (settled within ${waited} s)"
echo "Redis commands over the run (INFO commandstats):"
"$redis_cli" -s "$work/redis.sock" info commandstats | grep -E '^cmdstat_(evalsha|eval|pttl|publish|get|set):' | sed 's/^/  /'

