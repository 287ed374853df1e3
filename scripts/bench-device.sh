#!/usr/bin/env bash
# The 16-core measurements of issue 33 (and issue 26's `bench manager`) on a bare machine
# with no toolchain and no network, such as the device machine: everything it needs is
# carried in one git-ignored folder of the repo, and what it measures goes to $OUT.
#
# Pack the folder here (release builds, stripped; BASE is the build to compare against):
#   mkdir -p /tmp/pack/peers/rust/bin
#   strip -o /tmp/pack/switchboard target/release/switchboard
#   strip -o /tmp/pack/switchboard-base BASE
#   strip -o /tmp/pack/switchboard-fixture target/release/switchboard-fixture
#   strip -o /tmp/pack/bench target/release/bench
#   strip -o /tmp/pack/peers/rust/bin/mcp-proxy .bench-peers/rust/bin/mcp-proxy
#   git -C BASE_CHECKOUT log -1 --format=%h > /tmp/pack/BASE; git log -1 --format=%h > /tmp/pack/COMMIT
#   tar -cJf .bench-carry/bins.tar.xz -C /tmp/pack .
# and, for `bench manager`, Node.js, npm and an npm cache holding the memory server
# (`npm install --cache DIR @modelcontextprotocol/server-memory@2026.8.31` fills one):
#   tar -cJf .bench-carry/node.tar.xz -C DIR_ABOVE node npm-cache   # node/bin/{node,npm}
# Then run there: `OUT=... scripts/bench-device.sh .bench-carry [SECONDS]` (ONLY=throughput
# for the throughput table alone).
set -uo pipefail
carry=${1:?the carried folder}
seconds=${2:-3}
out=${OUT:?set OUT to where the results go}
work=$(mktemp -d)
tar -xJf "$carry/bins.tar.xz" -C "$work" || exit 1
if [[ -f $carry/node.tar.xz ]]; then
    tar -xJf "$carry/node.tar.xz" -C "$work" || exit 1
    export PATH=$work/node/bin:$PATH npm_config_cache=$work/npm-cache
fi
exec > >(tee -a "$out/device.txt") 2>&1
echo "== the machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), kernel $(uname -r)"
echo "== builds: this $(cat "$work/COMMIT" 2>/dev/null), base $(cat "$work/BASE" 2>/dev/null)"
cd "$work" || exit 1
if command -v npm >/dev/null; then
    echo "== bench manager (issue 26)"
    timeout 200 ./bench manager
fi
echo "== bench compare (issue 33)"
mkdir -p "$out/plots"
only=${ONLY:-throughput,scaling,instances}
shape=()
[[ $only == *scaling* ]] && shape+=(--cores 2,4,8,16)
[[ $only == *instances* ]] && shape+=(--instances 1,2,4)
timeout 420 ./bench compare --only "$only" --concurrency 64 "${shape[@]}" --seconds "$seconds" \
    --against ./switchboard-base --against-label "switchboard $(cat BASE 2>/dev/null || echo base)" \
    --peers-dir ./peers --plots "$out/plots"
echo "== end"
