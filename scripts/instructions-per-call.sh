#!/usr/bin/env bash
# Instructions the gateway executes per tools/call, counted by valgrind's callgrind: a figure
# that does not drift with the machine's load, unlike latency on a shared VM (docs/bench/history.md,
# "Instructions per call"). It runs the gateway twice under callgrind, over N1 and N2 calls
# of the echo fixture, and divides the difference by N2 - N1, so start-up is left out.
#
#   scripts/instructions-per-call.sh [stdio|http|http-http|floor] [BINARY]
#
# stdio and http name the front the client speaks to, with the echo fixture as a stdio
# upstream; http-http is the HTTP front in front of the fixture's HTTP server (`http-echo`).
# floor counts the bare forwarder (`switchboard-fixture forward`, the benchmarks' floor) in
# front of that same HTTP server, all its threads together: the least any gateway executes
# to move a call one hop (user space only; the kernel's share of a call is not counted).
#
# BINARY defaults to target/release/switchboard (build it with
# `cargo build --release -p switchboard-cli -p switchboard-fixtures`). Needs valgrind and
# python3. Busy polling is off (`--busy-poll 0`): its spinning would be counted as work. The
# HTTP gateway runs on one thread (`--threads 1`), so the runtime thread is the main thread.
set -euo pipefail

scenario=${1:-stdio}
front=${scenario%%-*}
upstream=stdio
[[ $scenario == http-http || $scenario == floor ]] && upstream=http
[[ $scenario == floor ]] && front=http
binary=${2:-target/release/switchboard}
fixture=target/release/switchboard-fixture
small=500
large=2500

command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 is not installed" >&2; exit 1; }
[[ -x $binary ]] || { echo "no gateway binary at $binary (cargo build --release -p switchboard-cli)" >&2; exit 1; }
[[ -x $fixture ]] || { echo "no fixture at $fixture (cargo build --release -p switchboard-fixtures)" >&2; exit 1; }
case $scenario in stdio|http|http-http|floor) ;; *) echo "the scenario must be stdio, http, http-http or floor, not '$scenario'" >&2; exit 2 ;; esac

work=$(mktemp -d)
fixture_pid=
trap 'rm -rf "$work"; [[ -n $fixture_pid ]] && kill "$fixture_pid" 2>/dev/null' EXIT
export XDG_DATA_HOME=$work XDG_STATE_HOME=$work XDG_CONFIG_HOME=$work
source "$(dirname "$0")/lib/echo-upstream.sh"
echo_upstream "$upstream" "$fixture" "$work"

# The client: initialize, then N sequential echo calls, over stdio or HTTP.
cat > "$work/drive.py" <<'EOF'
import http.client, json, os, subprocess, sys, time
front, n = sys.argv[1], int(sys.argv[2])
init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "count", "version": "1"}}}
initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
def call(i):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "echo__echo", "arguments": {"message": "hello"}}}
if front == "stdio":
    gateway = subprocess.Popen(sys.argv[3:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    def rpc(message):
        gateway.stdin.write((json.dumps(message) + "\n").encode()); gateway.stdin.flush()
        if "id" in message:
            while True:
                answer = json.loads(gateway.stdout.readline())
                if answer.get("id") == message["id"]:
                    return answer
    rpc(init); rpc(initialized)
    for i in range(n):
        if "error" in rpc(call(i + 1)):
            sys.exit("the echo call failed")
    gateway.stdin.close(); gateway.wait()
else:
    port = int(sys.argv[3])
    connection = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    for _ in range(100):
        try:
            connection.request("POST", "/mcp", json.dumps(init), headers); break
        except OSError:
            time.sleep(0.2); connection = http.client.HTTPConnection("127.0.0.1", port)
    answer = connection.getresponse(); answer.read()
    headers["mcp-session-id"] = answer.getheader("mcp-session-id")
    headers["mcp-protocol-version"] = "2025-06-18"
    connection.request("POST", "/mcp", json.dumps(initialized), headers); connection.getresponse().read()
    for i in range(n):
        connection.request("POST", "/mcp", json.dumps(call(i + 1)), headers)
        answer = connection.getresponse(); answer.read()
        if answer.status != 200:
            sys.exit(f"the echo call answered HTTP {answer.status}")
EOF

run() {
    local calls=$1 out="$work/callgrind-$1"
    # Each run starts from empty state: the second would otherwise open the first one's
    # ledger and stats, and that start-up work would count as per-call work.
    local state="$work/state-$calls"
    mkdir -p "$state"
    local gateway=(env XDG_DATA_HOME="$state" XDG_STATE_HOME="$state"
        valgrind --tool=callgrind --callgrind-out-file="$out" --separate-threads=yes
        "$binary" --config "$work/gateway.toml" --log error serve --busy-poll 0)
    if [[ $scenario == floor ]]; then
        local port=$((20000 + RANDOM % 20000))
        valgrind --tool=callgrind --callgrind-out-file="$out" --separate-threads=yes \
            "$fixture" forward --port "$port" --upstream "http://$fixture_address/mcp" >/dev/null 2>&1 &
        local pid=$!
        python3 "$work/drive.py" http "$calls" "$port"
        # The forwarder has no handler of its own: a TERM ends it and callgrind writes out.
        kill -TERM "$pid"; wait "$pid" || true
    elif [[ $front == stdio ]]; then
        python3 "$work/drive.py" stdio "$calls" "${gateway[@]}" 2>/dev/null
    else
        local port=$((20000 + RANDOM % 20000))
        "${gateway[@]}" --threads 1 --http "127.0.0.1:$port" >/dev/null 2>&1 &
        local pid=$!
        python3 "$work/drive.py" http "$calls" "$port"
        kill -INT "$pid"; wait "$pid" || true
    fi
}

total() { grep -m1 '^summary:' "$1" | awk '{print $2}'; }

run $small
run $large
if [[ $scenario == floor ]]; then
    # Every thread of the forwarder: the acceptor and the connection's own.
    sum() { local n=0 f; for f in "$work/callgrind-$1"-*; do n=$((n + $(total "$f"))); done; echo $n; }
    echo "floor (bare forwarder) → http: $(( ($(sum $large) - $(sum $small)) / (large - small) )) instructions per call, all its threads"
    exit 0
fi
main=$(( ($(total "$work/callgrind-$large-01") - $(total "$work/callgrind-$small-01")) / (large - small) ))
echo "$front → $upstream, $binary: $main instructions per call on the gateway's runtime thread"
# The ledger writer is the other thread that works per call (the busiest of them): threads
# are numbered in the order they start, and which starts second (the log writer, the ledger's)
# is no promise.
writer=0
for file in "$work/callgrind-$large"-*; do
    suffix=${file##*-}
    [[ $suffix == 01 || ! -f $work/callgrind-$small-$suffix ]] && continue
    delta=$(( ($(total "$file") - $(total "$work/callgrind-$small-$suffix")) / (large - small) ))
    (( delta > writer )) && writer=$delta
done
if (( writer > 0 )); then
    echo "  and $writer on the ledger writer's thread (one batch per call at this pace)"
fi
