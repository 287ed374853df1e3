#!/usr/bin/env bash
# Measures the latency of every built-in tool server against the figures of the Glyphoxa
# design's table (BENCHMARKS.md, "Built-in tools"): `switchboard calibrate` calls the
# read-only and idempotent tools, `switchboard call` the others, then `tools --stats` reports
# p50/p90/p99 per tool and the tiers they fit. web and images run against the project's own
# fixtures on 127.0.0.1 (switchboard-fixture search-api / image-api), so the figures are the
# servers' own cost, not a search engine's or a GPU's.
#
#   scripts/measure-builtins.sh [BIN_DIR] [CALLS]    (default target/release, 20 calls)
#
# Prints a Markdown table on stdout; everything else goes to stderr.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$(cd "${1:-$root/target/release}" && pwd)"
calls="${2:-20}"
sb="$bin/switchboard"
fixture="$bin/switchboard-fixture"
for program in "$sb" "$fixture"; do
  [[ -x "$program" ]] || { echo "missing $program: cargo build --release -p switchboard-cli -p switchboard-fixtures" >&2; exit 1; }
done

work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

start_fixture() { # MODE VAR: starts the fixture here (so the trap can stop it), sets VAR to its address
  local mode="$1" out="$work/$1.out"
  "$fixture" "$mode" --key test-key >"$out" 2>/dev/null &
  pids+=("$!")
  for _ in $(seq 100); do
    if grep -q "listening on" "$out" 2>/dev/null; then
      printf -v "$2" '%s' "$(sed -n 's/^listening on //p' "$out" | head -1)"
      return
    fi
    sleep 0.05
  done
  echo "switchboard-fixture $mode did not start" >&2; exit 1
}
start_fixture search-api search
start_fixture image-api images

mkdir -p "$work/moods/calm" "$work/out"
: >"$work/moods/calm/a.ogg"
cat >"$work/switchboard.toml" <<EOF
[latency]
database = "latency.db"
min_samples = 5

[servers.dice]
builtin = "dice"
seed = 7
tables_dir = "$root/examples/tables"
[servers.dice.tools.roll]
probe_arguments = { expression = "2d20kh1 + 5" }
[servers.dice.tools.roll_table]
probe_arguments = { table = "weather" }
[servers.memory.tools.get_summary]
probe_arguments = { session_id = "s1" }
[servers.sessions.tools.get_summary]
probe_arguments = { session_id = "s1" }
[servers.rules.tools.get_rule]
probe_arguments = { id = "house/table-rules.md#table-rules/combat/flanking" }
[servers.files.tools.read_file]
probe_arguments = { path = "rules/house/table-rules.md" }
[servers.memory]
builtin = "memory"
database = "game.db"
[servers.sessions]
builtin = "sessions"
database = "game.db"
[servers.rules]
builtin = "rules"
dirs = ["$root/examples/rules"]
database = "rules.db"
[servers.files]
builtin = "files"
roots = ["$root/examples"]
[servers.music]
builtin = "music"
player = "null"
moods = { calm = ["moods/calm"] }
[servers.web]
builtin = "web"
backend = "searxng"
url = "http://$search"
allow_private = true
[servers.web.tools.search]
probe_arguments = { query = "stone bridge" }
[servers.web.tools.fetch_page]
probe_arguments = { url = "http://$search/page/hello" }
[servers.rules.tools.search_rules]
probe_arguments = { query = "flanking" }
[servers.images]
builtin = "images"
backend = "automatic1111"
url = "http://$images"
out_dir = "out"
EOF
cd "$work"
export XDG_DATA_HOME="$work/data"
call() { # TOOL JSON: $calls calls through the pipeline (each its own process; the tool's time is recorded)
  for _ in $(seq "$calls"); do "$sb" --config switchboard.toml call "$1" --args "$2" >/dev/null 2>>calls.err || true; done
}
echo "calling the tools calibrate leaves alone…" >&2
call memory__put_summary '{"session_id": "s1", "summary": "The party crossed the ford."}'
call sessions__append_turn '{"session_id": "s1", "speaker": "Mira", "text": "The bridge is out."}'
call memory__create_entities '{"entities": [{"name": "Mira", "entityType": "npc", "observations": ["keeps the tavern"]}]}'
call music__play_track '{"mood": "calm"}'
call images__generate_image '{"prompt": "a stone bridge"}'
call files__write_file '{"path": "campaign/measure.tmp", "content": "x"}'
rm -f "$root/examples/campaign/measure.tmp"
echo "calibrating the read-only and idempotent tools ($calls calls each)…" >&2
"$sb" --config switchboard.toml calibrate --calls "$calls" --json >calibrate.json 2>calibrate.err ||
  { cat calibrate.err >&2; exit 1; }
"$sb" --config switchboard.toml tools --stats --format json >stats.json 2>stats.err || { cat stats.err >&2; exit 1; }

python3 - stats.json <<'PY'
import json, sys
seed = {  # the Glyphoxa design's table: tool server -> (figure, budget mode)
    "dice": ("10–20 ms", "FAST"), "memory": ("50–400 ms", "FAST / STANDARD"),
    "rules": ("300–500 ms", "STANDARD"), "images": ("2000–4000 ms", "DEEP only"),
    "web": ("1500–3000 ms", "DEEP only"), "files": ("20–50 ms", "FAST"),
    "sessions": ("100–300 ms", "STANDARD"), "music": ("50–200 ms", "FAST"),
}
rows = json.load(open(sys.argv[1]))
print("| tool | seed | seed tier | samples | errors | p50 ms | p90 ms | p99 ms | fits |")
print("|---|---|---|---|---|---|---|---|---|")
for row in sorted(rows, key=lambda r: (r["server"], r["tool"])):
    if row["server"] not in seed or not row["samples"]:
        continue
    figure, tier = seed[row["server"]]
    fmt = lambda v: "—" if v is None else f"{v:.2f}"
    print(f"| `{row['tool']}` | {figure} | {tier} | {row['samples']} | {row['error_rate']:.0%} | {fmt(row['p50_ms'])} | "
          f"{fmt(row['p90_ms'])} | {fmt(row['p99_ms'])} | {', '.join(row['tiers']) or '—'} |")
PY
