#!/usr/bin/env bash
# Server CPU per call and calls/s of one gateway binary on this machine: `switchboard serve
# --threads THREADS --http` in front of the echo fixture (over stdio, or `http-echo` over
# HTTP), driven by `bench drive` at CONCURRENCY with `--server-pid` (the gateway and its
# children, so a stdio fixture's CPU counts too). For side-by-side runs of two builds on a
# small machine, where `bench compare` is too coarse: alternate the binaries, several rounds.
#
#   scripts/cpu-per-call.sh BINARY [http|http-http] [CALLS] [CONCURRENCY] [THREADS]
#
# Needs `cargo build --release -p switchboard-fixtures -p bench`.
set -euo pipefail

binary=${1:?usage: scripts/cpu-per-call.sh BINARY [http|http-http] [CALLS] [CONCURRENCY] [THREADS]}
scenario=${2:-http}
calls=${3:-30000}
concurrency=${4:-16}
threads=${5:-2}
fixture=target/release/switchboard-fixture
bench=target/release/bench
case $scenario in http|http-http) ;; *) echo "the scenario must be http or http-http, not '$scenario'" >&2; exit 2 ;; esac
for program in "$binary" "$fixture" "$bench"; do
    [[ -x $program ]] || { echo "no program at $program (cargo build --release -p switchboard-cli -p switchboard-fixtures -p bench)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT
export XDG_DATA_HOME=$work XDG_STATE_HOME=$work XDG_CONFIG_HOME=$work
source "$(dirname "$0")/lib/echo-upstream.sh"
upstream=stdio
[[ $scenario == http-http ]] && upstream=http
echo_upstream "$upstream" "$fixture" "$work"
port=$((20000 + RANDOM % 20000))
"$binary" --config "$work/gateway.toml" --log error serve --threads "$threads" --http "127.0.0.1:$port" \
    > "$work/gateway.out" 2>&1 &
gateway=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.05; done
pids=$gateway
children=
for _ in $(seq 40); do
    children=$(pgrep -P "$gateway" | paste -sd, -) || true
    [[ -n $children || $scenario == http-http ]] && break
    sleep 0.05
done
[[ -n $children ]] && pids="$pids,$children"
"$bench" drive --url "http://127.0.0.1:$port/mcp" --tool echo__echo --calls "$calls" \
    --concurrency "$concurrency" --server-pid "$pids"
