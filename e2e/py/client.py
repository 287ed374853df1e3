"""A small command-line MCP client on the official Python SDK, used by Switchboard's
end-to-end tests to drive the gateway the way a real client does.

Usage:
  client.py [--era legacy|auto|modern] (--stdio -- CMD ARGS... | --http URL) ACTION ...
Actions (each prints one JSON document on stdout):
  list                       -> [{"name", "description"}, ...] (all pages)
  call NAME JSON             -> {"content", "structuredContent", "isError"}
  progress NAME JSON         -> {"progress": [values...], "result": {...}}
  cancel NAME JSON SECONDS   -> {"cancelled": true} after cancelling the call
  prompts                    -> [{"name"}...]
  resources                  -> [{"uri"}...]
  read URI                   -> the ReadResourceResult
  info                       -> {"protocolVersion", "serverInfo"}
Errors: exit code 1 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

ERAS = {"legacy": "legacy", "auto": "auto", "modern": "2026-07-28"}


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def run(args: argparse.Namespace) -> Any:
    if args.http:
        server: Any = args.http
    else:
        if not args.command:
            raise SystemExit("--stdio needs a command after --")
        server = StdioServerParameters(command=args.command[0], args=args.command[1:])
    async with Client(server, mode=ERAS[args.era], read_timeout_seconds=30) as client:
        action = args.action
        if action == "info":
            info = client.server_info
            return {"protocolVersion": client.protocol_version, "serverInfo": dump(info) if info else None}
        if action == "list":
            tools, cursor = [], None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend({"name": t.name, "description": t.description} for t in page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
        if action == "call":
            result = await client.call_tool(args.name, json.loads(args.arguments))
            return dump(result)
        if action == "progress":
            seen: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            result = await client.call_tool(args.name, json.loads(args.arguments), progress_callback=on_progress)
            return {"progress": seen, "result": dump(result)}
        if action == "cancel":
            with anyio.move_on_after(float(args.seconds)) as scope:
                await client.call_tool(args.name, json.loads(args.arguments))
            # Give the cancellation notification time to leave before the connection closes.
            await anyio.sleep(0.5)
            return {"cancelled": scope.cancelled_caught}
        if action == "prompts":
            return [{"name": p.name} for p in (await client.list_prompts()).prompts]
        if action == "resources":
            return [{"uri": str(r.uri)} for r in (await client.list_resources()).resources]
        if action == "read":
            return dump(await client.read_resource(args.name))
        raise SystemExit(f"unknown action {action}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--era", choices=sorted(ERAS), default="auto")
    parser.add_argument("--http")
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("action")
    parser.add_argument("name", nargs="?")
    parser.add_argument("arguments", nargs="?", default="{}")
    parser.add_argument("seconds", nargs="?", default="1")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    argv = sys.argv[1:]
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    args = parser.parse_args(argv)
    args.command = command
    try:
        result = anyio.run(run, args)
    except Exception as error:  # noqa: BLE001 - one clear line for the test to show
        print(f"client error: {type(error).__name__}: {error}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
