"""An MCP server on the official Python SDK whose tools try what a sandbox must stop, for the
gateway's sandbox tests. Each tool reports what happened as text: the outcome on success,
"error: ..." when the system refused.

Usage: sandbox_probe.py  (stdio)
"""

from __future__ import annotations

import os
import signal
import socket
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("sandbox-probe")


@server.tool()
def read_file(path: str) -> str:
    """Reads a file."""
    try:
        with open(path, encoding="utf-8") as f:
            return "read: " + f.read()
    except OSError as e:
        return f"error: {e}"


@server.tool()
def write_file(path: str, text: str) -> str:
    """Writes a file."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return "wrote"
    except OSError as e:
        return f"error: {e}"


@server.tool()
def get_env(name: str) -> str:
    """An environment variable of this server."""
    value = os.environ.get(name)
    return f"env: {value}" if value is not None else "error: not set"


@server.tool()
def parent_environ(name: str) -> str:
    """Looks for a variable in the environment of this server's parent (the gateway)."""
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as f:
            found = any(e.startswith(name.encode() + b"=") for e in f.read().split(b"\0"))
        return "found" if found else "error: not there"
    except OSError as e:
        return f"error: {e}"


@server.tool()
def fork_many(count: int) -> str:
    """Forks `count` children that sleep, then kills them."""
    children = []
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
        return f"forked {len(children)}"
    except OSError as e:
        return f"error: after {len(children)}: {e}"
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        for pid in children:
            os.waitpid(pid, 0)


@server.tool()
def allocate(mib: int) -> str:
    """Allocates `mib` MiB and touches it."""
    try:
        block = bytearray(mib * 1024 * 1024)
        return f"allocated {len(block) >> 20} MiB"
    except MemoryError:
        return "error: MemoryError"


@server.tool()
def connect(host: str, port: int) -> str:
    """Opens a TCP connection."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return "connected"
    except OSError as e:
        return f"error: {e}"


@server.tool()
def send_udp(host: str, port: int) -> str:
    """Sends one UDP datagram."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"x", (host, port))
        return "sent"
    except OSError as e:
        return f"error: {e}"


if __name__ == "__main__":
    server.run("stdio")
