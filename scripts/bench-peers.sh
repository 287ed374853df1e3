#!/usr/bin/env bash
# Installs the peer gateways the side-by-side benchmarks (`bench compare`) measure Switchboard
# against, into .bench-peers/ (git-ignored):
#   - the Rust mcp-proxy 0.6.0 from crates.io (cargo install; ~8 minutes on 2 cores; cached);
#   - the Python mcp-proxy from PyPI, pinned with its dependencies in
#     crates/bench/peers-requirements.txt.
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

if [ -x "$peers/py/bin/mcp-proxy" ]; then
  echo "python mcp-proxy: already installed"
else
  echo "python mcp-proxy: venv + pinned requirements"
  python3 -m venv "$peers/py"
  "$peers/py/bin/pip" install --quiet --requirement crates/bench/peers-requirements.txt
fi
echo "peers installed in $peers"
