# Sourced by the benchmarks of issue 32 (bench-shared.sh, bench-replicas.sh): a PostgreSQL 15 and
# a Redis of their own on unix sockets in a temporary directory, stopped and removed on exit,
# release gateways started on 127.0.0.1, and the ledger's rows counted and sampled.
#
# Reads SWITCHBOARD_BIN, PG_BIN, REDIS_SERVER and REDIS_CLI (where the programs live when not
# at their usual places: the device machine, BENCHMARKS.md), GATEWAY_LOG (the gateways' log
# level, `error` by default) and KEEP_LOGS (a folder the gateways' logs and the samples are
# copied to on exit). Sets work, bin, pg, redis_cli,
# fixture and pids (the background processes to stop); `stores_start` starts both servers.

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
fixture=$(realpath "$bin/switchboard-fixture")
stores_cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [[ -n ${KEEP_LOGS:-} ]]; then
        mkdir -p "$KEEP_LOGS"
        for log in "$work"/*/out.log "$work"/*.txt "$work"/*.log "$work"/sock/pg.log; do
            [[ -f $log ]] && cp "$log" "$KEEP_LOGS/$(basename "$(dirname "$log")")-$(basename "$log")"
        done
    fi
    [[ -f $work/pg/postmaster.pid ]] && "${as_pg[@]}" "$pg/pg_ctl" -D "$work/pg" -m immediate stop >/dev/null 2>&1 || true
    [[ -S $work/redis.sock ]] && "$redis_cli" -s "$work/redis.sock" shutdown nosave >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap stores_cleanup EXIT

# PostgreSQL on a unix socket only; fsync off, as in the tests (the disk is not what is measured);
# no JIT (a carried PostgreSQL may lack LLVM, and counting a big table would fail for it).
stores_start() {
    mkdir -p "$work/pg" "$work/sock"
    [[ ${#as_pg[@]} -gt 0 ]] && chown postgres "$work/pg" "$work/sock"
    "${as_pg[@]}" "$pg/initdb" -D "$work/pg" -U postgres -A trust >/dev/null
    "${as_pg[@]}" "$pg/pg_ctl" -D "$work/pg" -l "$work/sock/pg.log" -w \
        -o "-k $work/sock -c listen_addresses='' -c fsync=off -c jit=off" start >/dev/null
    "$redis_server" --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 --save '' \
        --appendonly no --daemonize yes --logfile "$work/redis.log" >/dev/null
    for _ in $(seq 50); do [[ -S $work/redis.sock ]] && break; sleep 0.1; done
}

# The [storage] and [shared] sections of a replica of deployment `bench` (keys made once).
stores_config() {
    [[ -f $work/keys ]] || "$bin/switchboard" keys create "$work/keys" >/dev/null 2>&1
    cat <<CONFIG
[storage]
url = "postgres:///postgres?host=$work/sock&user=postgres"

[shared]
keys = "$work/keys"
redis = "unix://$work/redis.sock"
redis_unavailable = "fail_closed"
replicas = ${1:-1}
deployment = "bench"
CONFIG
}

psql_value() {
    "${as_pg[@]}" "$pg/psql" -h "$work/sock" -U postgres -At -c "$1" postgres 2>/dev/null || echo "?"
}
# The chain's length, which is its rows (ids have no gaps): read off the head, so sampling it
# twice a second does not scan a table of millions of rows.
count_rows() { psql_value "select seq from ledger_head where chain = 'main'"; }

# `serve --http` for the config $work/NAME/gateway.toml on a free port; prints "PORT PID".
serve() {
    local name=$1 listen
    shift
    listen=$((20000 + RANDOM % 20000))
    XDG_STATE_HOME=$work/$name XDG_DATA_HOME=$work/$name \
        "$bin/switchboard" --config "$work/$name/gateway.toml" --log "${GATEWAY_LOG:-error}" \
        serve --http "127.0.0.1:$listen" --agent qa "$@" >"$work/$name/out.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do
        python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$listen/livez', timeout=1)" 2>/dev/null \
            && { echo "$listen $pid"; return; }
        sleep 0.1
    done
    echo "the $name gateway did not start:" >&2; cat "$work/$name/out.log" >&2; exit 1
}

field() { python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

# `bench drive` of CALLS echo calls at CONCURRENCY through the gateway at PORT, whose CPU is
# that of the processes PIDS (comma-separated) and their children; prints one line, LABEL
# first. A run with failed calls prints the first failure and goes on.
drive_line() {
    local label=$1 concurrency=$2 round=$3 port=$4 servers=$5
    if ! "$bin/bench" drive --json --url "http://127.0.0.1:$port/mcp" --tool fx__echo \
        --calls "$calls" --concurrency "$concurrency" --server-pid "$servers" \
        > "$work/result.json" 2> "$work/drive.err"; then
        printf '%-10s concurrency %2s round %s: FAILED: %s\n' "$label" "$concurrency" "$round" \
            "$(grep -m1 . "$work/drive.err")"
        return
    fi
    printf '%-10s concurrency %2s round %s: p50 %6.1f µs, p99 %7.1f µs, %7.0f calls/s, server CPU %5.1f µs/call, %s errors\n' \
        "$label" "$concurrency" "$round" \
        "$(field "['latency']['p50_us']" < "$work/result.json")" \
        "$(field "['latency']['p99_us']" < "$work/result.json")" \
        "$(field "['calls_per_second']" < "$work/result.json")" \
        "$(field "['server_cpu_us'] or 0" < "$work/result.json")" \
        "$(field "['errors']" < "$work/result.json")"
}

# The ledger's rows when the last call was answered, then once the writers are done (the
# calls' rows still in the journals are being appended: the count is read until it reaches
# $1, how many rows there should be, when given, or stays the same for 3 s; 120 s at most).
report_rows() {
    local rows now waited=0 still=0 of=${1:+ of $1 answered calls}
    rows=$(count_rows)
    echo "ledger rows on PostgreSQL when the last call was answered: $rows$of"
    while (( waited < 120 && still < 3 )) && [[ $rows != "${1:-}" ]]; do
        sleep 1
        waited=$((waited + 1))
        now=$(count_rows)
        if [[ $now == "$rows" ]]; then still=$((still + 1)); else still=0; fi
        rows=$now
    done
    echo "ledger rows once the writers were done: $rows (after ${waited} s)"
}

# Samples the ledger's row count every 0.5 s into $work/rows.txt ("milliseconds rows"), and what
# the writers' PostgreSQL backends are doing into $work/waits.txt, until killed.
sample_ledger() {
    local started=${EPOCHREALTIME/./} now
    while true; do
        now=${EPOCHREALTIME/./}
        printf '%s %s\n' "$(( (now - started) / 1000 ))" "$(count_rows)" >> "$work/rows.txt"
        psql_value "select $(( (now - started) / 1000 )) || ' ' || pid || ' ' || replace(state, ' ', '_') || ' '
            || coalesce(wait_event_type, 'cpu') || ':' || coalesce(wait_event, '-') || ' xact '
            || coalesce(round(extract(epoch from now() - xact_start) * 1000)::text, '-') || ' ms: '
            || left(regexp_replace(query, '\s+', ' ', 'g'), 50)
            from pg_stat_activity where backend_type = 'client backend' and pid <> pg_backend_pid()
            and state <> 'idle'" >> "$work/waits.txt"
        sleep 0.5
    done
}

# What sample_ledger saw: the fastest 2 s of appending, and what busy backends were doing.
report_ledger_samples() {
    echo "the ledger's table: $(psql_value "select 'sequential scans ' || seq_scan || ' (' || seq_tup_read
        || ' rows read), index scans ' || idx_scan from pg_stat_user_tables where relname = 'mcp_tool_invocations'")"
    [[ -s $work/rows.txt ]] || return 0
    python3 - "$work/rows.txt" "$work/waits.txt" <<'PY'
import collections, sys
rows = []
for line in open(sys.argv[1]):
    ms, n = line.split()
    if n.isdigit():
        rows.append((int(ms) / 1000, int(n)))
best = 0.0
for i, (t0, n0) in enumerate(rows):
    for t1, n1 in rows[i + 1:]:
        if t1 - t0 >= 2.0:
            best = max(best, (n1 - n0) / (t1 - t0))
            break
print(f"ledger appending on PostgreSQL, sampled every 0.5 s: fastest 2 s {best:,.0f} rows/s")
waits = collections.Counter()
for line in open(sys.argv[2]):
    parts = line.split()
    if len(parts) > 4 and parts[2] != "idle":
        waits[" ".join(parts[2:4]) + " (" + " ".join(parts[7:10]) + ")"] += 1
total = sum(waits.values())
if total:
    print("busy PostgreSQL backends, sampled every 0.5 s: " + "; ".join(
        f"{k} {100 * v / total:.0f} %" for k, v in waits.most_common(6)))
PY
}
