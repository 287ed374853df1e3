#!/usr/bin/env bash
# Several gateway replicas on one PostgreSQL + Redis behind HAProxy (issue 32's scaling figure,
# docs/scale-out.md): the same release build served three ways, driven in alternating rounds
# by `bench drive` (2025-11-25 sessions, sealed, so any replica serves any request):
#   direct    one replica, no load balancer;
#   haproxy-1 the same replica behind HAProxy (what the load balancer's hop costs);
#   haproxy-N N replicas behind HAProxy, round robin per request.
# Each replica serves agent `qa` under a rate limit never reached (the Redis GCRA script runs)
# in front of its own stdio echo fixture, and records its ledger on the one chain. The server
# CPU is the replicas' (and their fixtures'), HAProxy's not included. Afterwards the ledger's
# rows are counted until they settle (every answered call must be there once).
#
#   scripts/bench-replicas.sh [REPLICAS] [ROUNDS] [CALLS] [CONCURRENCY...]
#
# Three replicas on a 2-core machine are not a scaling measurement (client, replicas, HAProxy,
# PostgreSQL and Redis share two cores); run it on a machine with many cores. Needs what
# bench-shared.sh needs, and haproxy (scripts/install-test-deps.sh; HAPROXY says where).
set -euo pipefail

replicas=${1:-3}
rounds=${2:-3}
calls=${3:-20000}
shift $(( $# < 3 ? $# : 3 ))
concurrencies=("$@")
[[ ${#concurrencies[@]} -gt 0 ]] || concurrencies=(16 64)
haproxy=${HAPROXY:-haproxy}
command -v "$haproxy" >/dev/null || { echo "haproxy is not installed (scripts/install-test-deps.sh)" >&2; exit 1; }
source "$(dirname "$0")/lib/shared-stores.sh"
stores_start

ports=() replica_pids=()
for index in $(seq "$replicas"); do
    mkdir -p "$work/r$index"
    cat > "$work/r$index/gateway.toml" <<CONFIG
[gateway]
ledger = "$work/r$index/ledger.db"

$(stores_config "$replicas")

[agents.qa]
limits = { per_minute = 6000000, burst = 100000 }

[servers.fx]
command = "$fixture"
args = ["echo"]
CONFIG
    [[ $index == 1 ]] && "$bin/switchboard" migrate --config "$work/r1/gateway.toml" >/dev/null
    read -r port pid < <(serve "r$index")
    [[ -n ${pid:-} ]] || exit 1
    ports+=("$port") replica_pids+=("$pid") pids+=("$pid")
done

one_port=$((20000 + RANDOM % 20000)) all_port=$((20000 + RANDOM % 20000))
{
    printf 'global\n  maxconn 4096\n'
    printf 'defaults\n  mode http\n  timeout connect 1s\n  timeout client 60s\n  timeout server 60s\n'
    printf '  retries 3\n  retry-on conn-failure\n  option redispatch\n  http-reuse always\n'
    printf 'frontend one\n  bind 127.0.0.1:%s\n  default_backend one\n' "$one_port"
    printf 'frontend all\n  bind 127.0.0.1:%s\n  default_backend all\n' "$all_port"
    printf 'backend one\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n'
    printf '  server r1 127.0.0.1:%s check inter 1s\n' "${ports[0]}"
    printf 'backend all\n  balance roundrobin\n  option httpchk GET /readyz\n  http-check expect status 200\n'
    for index in "${!ports[@]}"; do
        printf '  server r%s 127.0.0.1:%s check inter 1s\n' "$((index + 1))" "${ports[$index]}"
    done
} > "$work/haproxy.cfg"
"$haproxy" -c -q -f "$work/haproxy.cfg"
"$haproxy" -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
pids+=("$!")
for _ in $(seq 50); do
    python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$all_port/livez', timeout=1)" 2>/dev/null && break
    sleep 0.1
done
sample_ledger &
pids+=("$!")

all_pids=$(IFS=,; echo "${replica_pids[*]}")
echo "$replicas replicas on PostgreSQL + Redis, behind HAProxy $("$haproxy" -v | head -1 | cut -d' ' -f3), $(nproc) cores; $rounds alternating rounds of $calls calls"
answered=0
for concurrency in "${concurrencies[@]}"; do
    for round in $(seq "$rounds"); do
        for how in direct haproxy-1 "haproxy-$replicas"; do
            case $how in
                direct) port=${ports[0]} servers=${replica_pids[0]} ;;
                haproxy-1) port=$one_port servers=${replica_pids[0]} ;;
                *) port=$all_port servers=$all_pids ;;
            esac
            drive_line "$how" "$concurrency" "$round" "$port" "$servers"
            answered=$((answered + calls + 200))
        done
    done
done
report_rows "$answered"
report_ledger_samples
for index in "${!ports[@]}"; do
    echo "replica r$((index + 1)): $(psql_value "select count(*) from mcp_tool_invocations where replica like '%:${replica_pids[$index]}'") rows"
done
