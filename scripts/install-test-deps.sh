#!/usr/bin/env bash
# Installs what the end-to-end tests need, from the pinned manifests in e2e/:
#   e2e/node_modules  npm reference servers, the conformance suite, Node 22 (e2e/package-lock.json)
#   .deps/venv        the official Python MCP SDK and mcp-server-time (e2e/requirements.txt)
# Idempotent: a stamp of the manifests' hash skips work that is already done.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

fail() {
  echo "install-test-deps: $1" >&2
  echo "  hint: $2" >&2
  exit 1
}

command -v npm >/dev/null || fail "npm is not installed" "install Node.js and npm (Debian: apt-get install nodejs npm)"
command -v python3 >/dev/null || fail "python3 is not installed" "install Python 3.10 or newer"

mkdir -p .deps
npm_hash="$(sha256sum e2e/package.json e2e/package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ -f .deps/npm.stamp && "$(cat .deps/npm.stamp)" == "$npm_hash" && -d e2e/node_modules ]]; then
  echo "npm packages: up to date"
else
  echo "npm packages: installing from e2e/package-lock.json"
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error) ||
    fail "npm ci failed in e2e/" "check that the npm registry is reachable, then rerun scripts/install-test-deps.sh"
  echo "$npm_hash" > .deps/npm.stamp
fi

py_hash="$(sha256sum e2e/requirements.txt | cut -d' ' -f1)"
if [[ -f .deps/venv.stamp && "$(cat .deps/venv.stamp)" == "$py_hash" && -x .deps/venv/bin/python ]]; then
  echo "python packages: up to date"
else
  echo "python packages: installing from e2e/requirements.txt into .deps/venv"
  rm -rf .deps/venv
  python3 -m venv .deps/venv || fail "cannot create a virtual environment" "install python3-venv (Debian: apt-get install python3-venv)"
  .deps/venv/bin/pip install --quiet --disable-pip-version-check -r e2e/requirements.txt ||
    fail "pip install failed" "check that PyPI is reachable, then rerun scripts/install-test-deps.sh"
  echo "$py_hash" > .deps/venv.stamp
fi

node_version="$(e2e/node_modules/.bin/node --version 2>/dev/null || true)"
[[ "$node_version" == v22.* ]] || fail "e2e/node_modules/.bin/node is '$node_version', expected v22.x" "delete e2e/node_modules and .deps/npm.stamp, then rerun"
echo "test prerequisites ready (node $node_version, $(.deps/venv/bin/python --version))"
