"""Registers an MCP server with a running ContextForge gateway, for the side-by-side benchmarks.

    python contextforge_register.py GATEWAY_URL NAME SERVER_URL TOOL

Run with the ContextForge venv's Python and the gateway's environment (JWT_SECRET_KEY): mints
an admin token with ContextForge's own tool, registers SERVER_URL as gateway NAME through the
REST API, then waits until TOOL is listed on the gateway's MCP endpoint (GATEWAY_URL/mcp).
Loopback only. Exits non-zero with the reason when any step fails.
"""

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request


def post(url, body, token=None):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.read().decode()


def main():
    gateway, name, server, tool = sys.argv[1:5]
    for url in (gateway, server):
        if not url.startswith("http://127.0.0.1:"):
            sys.exit(f"{url}: benchmarks talk to 127.0.0.1 only")
    token = subprocess.run(
        [sys.executable, "-m", "mcpgateway.utils.create_jwt_token", "--username",
         os.environ.get("PLATFORM_ADMIN_EMAIL", "admin@example.com"), "--exp", "120",
         "--secret", os.environ["JWT_SECRET_KEY"]],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()[-1]
    try:
        post(f"{gateway}/gateways", {"name": name, "url": server, "transport": "STREAMABLEHTTP"}, token)
    except urllib.error.HTTPError as error:
        sys.exit(f"registering {server}: HTTP {error.code}: {error.read().decode()[:500]}")
    listed = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if f'"name":"{tool}"' in post(f"{gateway}/mcp", listed).replace(" ", ""):
            return
        time.sleep(0.2)
    sys.exit(f"{tool} never appeared in {gateway}/mcp tools/list")


if __name__ == "__main__":
    main()
