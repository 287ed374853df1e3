#!/usr/bin/env bash
# Installs the peer gateways the side-by-side benchmarks (`bench compare`) measure Switchboard
# against, into .bench-peers/ (git-ignored):
#   - the Rust mcp-proxy 0.6.0 from crates.io (cargo install; ~8 minutes on 2 cores; cached);
#   - the Python mcp-proxy from PyPI, pinned with its dependencies in
#     crates/bench/peers-requirements.txt;
#   - IBM ContextForge (mcp-contextforge-gateway) from PyPI, pinned with its dependencies in
#     crates/bench/contextforge-requirements.txt (~250 MB, under a minute).
# Not part of the test command: the benchmarks run without peers and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
peers=.bench-peers

if [ -x "$peers/rust/bin/mcp-proxy" ]; then
  echo "rust mcp-proxy: already installed"
else
  echo "rust mcp-proxy 0.6.0: cargo install (several minutes)"
  cargo install mcp-proxy --version 0.6.0 --locked --root "$peers/rust"
fi

# A Python peer: a venv of its own in $peers/DIR from a pinned requirements file, unless
# its PROGRAM is there already.
python_peer() {
  local name=$1 dir=$2 program=$3 requirements=$4
  if [ -x "$peers/$dir/bin/$program" ]; then
    echo "$name: already installed"
  else
    echo "$name: venv + pinned requirements"
    python3 -m venv "$peers/$dir"
    "$peers/$dir/bin/pip" install --quiet --requirement "$requirements"
  fi
}

python_peer "python mcp-proxy" py mcp-proxy crates/bench/peers-requirements.txt
python_peer contextforge contextforge mcpgateway crates/bench/contextforge-requirements.txt
echo "peers installed in $peers"
