"""A real MCP server on the official Python SDK, served over HTTP on 127.0.0.1, for the
gateway's HTTP-upstream tests.

Usage: http_server.py (streamable-http|sse) PORT [CERT KEY]

With CERT and KEY (PEM files) it serves HTTPS instead.
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
    if len(sys.argv) < 5:
        server.run(transport, host="127.0.0.1", port=port)  # type: ignore[call-overload]
        return
    import uvicorn

    cert, key = sys.argv[3], sys.argv[4]
    if transport == "sse":
        app = server.sse_app(host="127.0.0.1")
    else:
        app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        ssl_certfile=cert,
        ssl_keyfile=key,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
