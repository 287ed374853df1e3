#!/usr/bin/env bash
# Runs every check and test of Switchboard. On a fresh machine it first installs what the
# end-to-end tests need (npm reference servers, Node 22, the Python SDK) from the pinned
# manifests in e2e/; later runs reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing test prerequisites (e2e/package-lock.json, e2e/requirements.txt)"
bash scripts/install-test-deps.sh

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

echo "== cargo build (binaries the end-to-end tests run)"
cargo build --workspace --locked --bins

echo "== cargo test"
# Gateways started by the tests keep their ledger, memory and admin files here, not in the
# user's home directories.
test_home="$(mktemp -d)"
trap 'rm -rf "$test_home"' EXIT
XDG_DATA_HOME="$test_home/data" XDG_STATE_HOME="$test_home/state" \
  cargo test --workspace --locked --no-fail-fast

echo "== benchmarks run and emit valid JSON (bench quick; no timing assertions)"
cargo build --release --locked -p switchboard-cli -p switchboard-fixtures -p bench
target/release/bench quick --json > target/bench-quick.json
python3 -c 'import json, sys; data = json.load(open(sys.argv[1])); assert isinstance(data, list) and data, "bench quick printed no results"; print("bench quick: %d scenarios, valid JSON" % len(data))' target/bench-quick.json
# Two builds in one run: the --against gateway gets its own row; a missing binary is named.
# With --busy-threads the run says so.
target/release/bench latency --calls 100 --against target/release/switchboard --busy-threads 1 --json > target/bench-against.json
python3 -c 'import json, sys; run = json.load(open(sys.argv[1]))[0]; rows = run["rows"]; assert len(rows) == 3 and all(r[1]["samples"] == 50 for r in rows[1:]), rows; assert any("spinning on the CPU" in n for n in run["notes"]), run["notes"]; print("bench latency --against --busy-threads: %d rows" % len(rows))' target/bench-against.json
if target/release/bench latency --calls 10 --against target/no-such-switchboard 2> target/bench-against.err; then
  echo "bench latency --against a missing binary should fail" >&2; exit 1
fi
grep -q "no-such-switchboard: no such file" target/bench-against.err || { cat target/bench-against.err >&2; exit 1; }
# compare --against measures the second build in every latency scenario.
target/release/bench compare --no-peers --only latency --no-plots --calls 20 --sparse-calls 5 --gap-ms 5 --against target/release/switchboard --json > target/bench-compare-against.json
python3 -c 'import json, sys; result = json.load(open(sys.argv[1])); assert set(result) >= {"latency"} and not result.get("throughput"), list(result); runs = result["latency"]; assert len(runs) == 3 and all(r["sparse_gap_ms"] == 5 and len(r["targets"]) == 3 and all(t["latency"]["samples"] == 20 and t["back_to_back"]["samples"] == 20 and t["sparse"]["samples"] == 5 for t in r["targets"]) for r in runs), runs; print("bench compare --against: %d scenarios of 3 targets, three passes" % len(runs))' target/bench-compare-against.json
