"""A real MCP server on the official Python SDK, served over HTTP on 127.0.0.1, for the
gateway's HTTP-upstream tests.

Usage: http_server.py (streamable-http|sse) PORT
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-http")


@server.tool()
def shout(text: str) -> str:
    """Returns the text in upper case."""
    return text.upper()


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


def main() -> None:
    transport, port = sys.argv[1], int(sys.argv[2])
    server.run(transport, host="127.0.0.1", port=port)  # type: ignore[call-overload]


if __name__ == "__main__":
    main()
