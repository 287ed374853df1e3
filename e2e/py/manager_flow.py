"""The model's side of Switchboard's server manager, on the official Python SDK: one legacy
session with the gateway over Streamable HTTP that does what a model would.

Usage:
  manager_flow.py --http URL QUERY NAME TOOL JSON [--elicit-values JSON]

1. search_servers(QUERY) and checks that NAME is among the servers found;
2. request_server(NAME, purpose) with a progress token: the call returns an operation id
   (printed on stderr as "operation: ID"), reporting progress while it follows the work;
3. operation_status(ID, wait_seconds) until the operation waits for an approval (printed on
   stderr as "approval: ID"; the test approves it as an operator) or ends;
4. waits (120 s at most) for tools/list_changed, lists the tools again and calls TOOL(JSON).
With --elicit-values, the session declares elicitation and answers every elicitation with
accept and that JSON object as its content (the questions are printed on stderr as
"elicited: {...}").
Prints one JSON document: {"found", "requested", "progress", "states", "notified", "after",
"result"}. Errors: exit code 1 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.client.client import Client

from client import dump, fail, innermost, one_line


async def run(args: argparse.Namespace) -> Any:
    options: dict[str, Any] = {}
    if args.elicit_values:
        content = json.loads(args.elicit_values)

        async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
            print("elicited: " + json.dumps({"message": params.message}), file=sys.stderr, flush=True)
            return types.ElicitResult(action="accept", content=content)

        options["elicitation_callback"] = on_elicit
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            changed.set()

    options["message_handler"] = on_message
    async with Client(args.http, mode="legacy", read_timeout_seconds=120, **options) as client:
        found = await client.call_tool("manager__search_servers", {"query": args.query})
        if found.is_error:
            raise RuntimeError(f"search_servers failed: {dump(found)}")
        names = [s["name"] for s in (found.structured_content or {}).get("result", {}).get("servers", [])]
        if args.name not in names:
            raise RuntimeError(f"search_servers did not find {args.name}: {names}")
        progress: list[dict[str, Any]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append({"progress": value, "message": message})

        requested = await client.call_tool(
            "manager__request_server",
            {"name": args.name, "purpose": "the end-to-end test needs its tools"},
            progress_callback=on_progress,
        )
        if requested.is_error:
            raise RuntimeError(f"request_server failed: {dump(requested)}")
        operation = requested.structured_content or {}
        op_id = operation["id"]
        print(f"operation: {op_id}", file=sys.stderr, flush=True)
        states = [operation.get("state")]
        asked = False
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            status = await client.call_tool("manager__operation_status", {"id": op_id, "wait_seconds": 2})
            operation = status.structured_content or {}
            states.append(operation.get("state"))
            if operation.get("state") in ("completed", "failed", "cancelled"):
                break
            if (operation.get("waiting") or {}).get("for") == "approval" and not asked:
                print(f"approval: {op_id}", file=sys.stderr, flush=True)
                asked = True
        if operation.get("state") != "completed":
            raise RuntimeError(f"the operation did not complete: {operation}")
        with anyio.move_on_after(120):
            await changed.wait()
        after = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool(args.tool, json.loads(args.arguments))
        return {
            "found": names,
            "requested": dump(requested),
            "progress": progress,
            "states": states,
            "operation": operation,
            "notified": changed.is_set(),
            "after": after,
            "result": {"structuredContent": None, **dump(result)},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--http", metavar="URL", required=True)
    parser.add_argument("--elicit-values", metavar="JSON")
    parser.add_argument("query")
    parser.add_argument("name")
    parser.add_argument("tool")
    parser.add_argument("arguments")
    args = parser.parse_args()
    try:
        result = anyio.run(run, args)
    except BaseException as error:  # noqa: BLE001 - one clear line for the test to show
        if isinstance(error, SystemExit):
            raise
        fail(one_line(innermost(error)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
