"""A small command-line MCP client on the official Python SDK, used by Switchboard's
end-to-end tests to drive the gateway the way a real client does.

Usage:
  client.py [--era legacy|auto|modern] (--http URL | --stdio) ACTION ARGS... [-- CMD ARGS...]
Eras (the SDK's `Client(mode=...)`):
  legacy   the 2025-11-25 initialize handshake (mode="legacy")
  modern   2026-07-28, stateless: sends server/discover and adopts its answer; no fallback
  auto     the SDK default: server/discover, falling back to initialize on a legacy server
Actions (each prints one JSON document on stdout):
  list                             -> [{"name", "description"}, ...] (all pages)
  call NAME JSON                   -> {"content", "structuredContent", "isError"}
  progress NAME JSON               -> {"progress": [values...], "result": {...}}
  cancel NAME JSON --after SECS    -> {"cancelled": true} after cancelling the call
                                      (SECS may also be given positionally after JSON)
  prompts                          -> [{"name"}...]
  prompt NAME JSON                 -> the GetPromptResult of prompts/get (JSON: its arguments)
  resources                        -> [{"uri"}...]
  read URI                         -> the ReadResourceResult
  info                             -> {"protocolVersion", "serverInfo"}
  lazy CATEGORY TOOL JSON          -> categories mode: {"before": [names], "notified": bool,
                                      "after": [names], "result": {...}} — lists, loads the
                                      category, waits for tools/list_changed, lists, calls TOOL
  calls JSON                       -> [{...}, ...]: one call per [name, arguments] pair, in order,
                                      in one session
  watch TOOL JSON                  -> {"before": [names], "notified": bool, "after": [names],
                                      "waited_ms", "result": {...}} — lists, prints "ready" on
                                      stderr, waits (60 s at most) for tools/list_changed while
                                      the session stays open, lists again, calls TOOL
  find QUERY TOOL JSON             -> search mode: {"found": {...}, "result": {...}} —
                                      search_tools(QUERY), then call_tool(TOOL, JSON)
With --stdio, everything after `--` is the server's command line.
--client-credentials ID:SECRET (with --issuer URL, optionally --scope S) makes the SDK's OAuth
client_credentials provider get the token: it follows the 401's protected resource metadata.
--elicit accept|decline|approve-false declares the elicitation capability and answers every
elicitation that way (accept = {"approve": true}); the questions asked are printed to stderr
as JSON lines starting with "elicited: ".
Errors: exit code 1 and one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters

MODERN_VERSION = "2026-07-28"
# Client(mode=...) per era. "modern" pins the version (no initialize), then run() sends a real
# server/discover and adopts the server's answer, so a server without the modern era fails.
MODES = {"legacy": "legacy", "auto": "auto", "modern": MODERN_VERSION}


class UsageError(Exception):
    pass


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def need(value: str | None, what: str) -> str:
    if value is None:
        raise UsageError(f"missing {what}")
    return value


def arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(f"JSON_ARGS is not JSON: {error}") from None
    if not isinstance(value, dict):
        raise UsageError("JSON_ARGS must be a JSON object")
    return value


class MemoryTokens:
    """The SDK's TokenStorage, in memory: each run starts without tokens."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def oauth_client_credentials(args: argparse.Namespace) -> Any:
    """The SDK's OAuth client for the client_credentials grant: on a 401 it follows the
    protected resource metadata to the authorization server, gets a token and retries."""
    from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider

    client_id, _, secret = args.client_credentials.partition(":")
    return ClientCredentialsOAuthProvider(
        server_url=args.http,
        storage=MemoryTokens(),
        client_id=client_id,
        client_secret=secret,
        scope=args.scope,
        issuer=args.issuer,
    )


async def discover(client: Client) -> None:
    raw = await client.session.send_discover(MODERN_VERSION)
    client.session.adopt(types.DiscoverResult.model_validate(raw))


async def run(args: argparse.Namespace) -> Any:
    if args.http:
        server: Any = args.http
        if args.header or args.client_credentials:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = dict(h.split("=", 1) for h in args.header or [])
            auth = oauth_client_credentials(args) if args.client_credentials else None
            http_client = httpx2.AsyncClient(headers=headers, auth=auth, timeout=90)
            server = streamable_http_client(args.http, http_client=http_client)
    else:
        # The whole environment, not the SDK's safe subset: tests point XDG_* at temp dirs.
        server = StdioServerParameters(command=args.command[0], args=args.command[1:], env=dict(os.environ))
    options: dict[str, Any] = {}
    if args.elicit:

        async def on_elicit(context: Any, params: Any) -> types.ElicitResult:
            print("elicited: " + json.dumps({"message": params.message}), file=sys.stderr, flush=True)
            if args.elicit == "decline":
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content={"approve": args.elicit == "accept"})

        options["elicitation_callback"] = on_elicit
    changed = anyio.Event()
    lists_changed: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()
            lists_changed.append("tools")
        elif isinstance(root, types.PromptListChangedNotification):
            lists_changed.append("prompts")
        elif isinstance(root, types.ResourceListChangedNotification):
            lists_changed.append("resources")

    options["message_handler"] = on_message
    async with Client(server, mode=MODES[args.era], read_timeout_seconds=90, **options) as client:
        if args.era == "modern":
            await discover(client)
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
            result = await client.call_tool(need(args.name, "NAME"), arguments(args.arguments))
            return {"structuredContent": None, **dump(result)}
        if action == "lazy":
            async def names() -> list[str]:
                return [t.name for t in (await client.list_tools()).tools]

            before = await names()
            loaded = await client.call_tool("load_category", {"name": need(args.name, "CATEGORY")})
            with anyio.move_on_after(5):
                await changed.wait()
            after = await names()
            result = await client.call_tool(need(args.arguments, "TOOL"), arguments(args.extra or "{}"))
            return {"before": before, "loaded": dump(loaded), "notified": changed.is_set(), "after": after,
                    "result": {"structuredContent": None, **dump(result)}}
        if action == "watch":
            import time

            before = [t.name for t in (await client.list_tools()).tools]
            print("ready", file=sys.stderr, flush=True)
            started = time.monotonic()
            with anyio.move_on_after(60):
                await changed.wait()
            waited_ms = (time.monotonic() - started) * 1000
            # The prompts' and resources' notifications of the same change come just after.
            await anyio.sleep(0.3)
            after = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool(need(args.name, "TOOL"), arguments(args.arguments))
            return {"before": before, "notified": changed.is_set(), "after": after, "waited_ms": waited_ms,
                    "lists_changed": sorted(set(lists_changed)),
                    "result": {"structuredContent": None, **dump(result)}}
        if action == "calls":
            plan = json.loads(need(args.name, "JSON"))
            results = []
            for name, tool_arguments in plan:
                result = await client.call_tool(name, tool_arguments)
                results.append({"name": name, "structuredContent": None, **dump(result)})
            return results
        if action == "find":
            found = await client.call_tool("search_tools", {"query": need(args.name, "QUERY")})
            result = await client.call_tool(
                "call_tool", {"name": need(args.arguments, "TOOL"), "arguments": arguments(args.extra or "{}")}
            )
            return {"found": {"structuredContent": None, **dump(found)},
                    "result": {"structuredContent": None, **dump(result)}}
        if action == "progress":
            seen: list[float] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                seen.append(progress)

            result = await client.call_tool(
                need(args.name, "NAME"), arguments(args.arguments), progress_callback=on_progress
            )
            return {"progress": seen, "result": {"structuredContent": None, **dump(result)}}
        if action == "cancel":
            with anyio.move_on_after(args.after) as scope:
                await client.call_tool(need(args.name, "NAME"), arguments(args.arguments))
            # Give the cancellation notification time to leave before the connection closes.
            await anyio.sleep(0.5)
            return {"cancelled": scope.cancelled_caught}
        if action == "prompts":
            return [{"name": p.name} for p in (await client.list_prompts()).prompts]
        if action == "prompt":
            return dump(await client.get_prompt(need(args.name, "NAME"), arguments(args.arguments)))
        if action == "resources":
            return [{"uri": str(r.uri)} for r in (await client.list_resources()).resources]
        if action == "read":
            return dump(await client.read_resource(need(args.name, "URI")))
        raise UsageError(f"unknown action {action}")


def innermost(error: BaseException) -> BaseException:
    # anyio task groups wrap the real failure; show the innermost one.
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    return error


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or "(no message)"
    if isinstance(error, UsageError):
        return text
    return f"{type(error).__name__}: {text}"


def fail(message: str) -> NoReturn:
    print(f"client error: {message}", file=sys.stderr)
    sys.exit(1)


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        fail(f"usage: {message} (see client.py --help)")


def parse(argv: list[str]) -> argparse.Namespace:
    command: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    parser = Parser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--era", choices=sorted(MODES), default="auto")
    parser.add_argument("--http", metavar="URL")
    parser.add_argument("--stdio", action="store_true", help="run the server command given after --")
    parser.add_argument("--after", type=float, metavar="SECONDS", help="cancel: cancel after this long")
    parser.add_argument("--header", action="append", metavar="NAME=VALUE", help="extra HTTP header")
    parser.add_argument(
        "--client-credentials", metavar="ID:SECRET", help="OAuth: the SDK's client_credentials provider"
    )
    parser.add_argument("--issuer", metavar="URL", help="OAuth: the authorization server's issuer")
    parser.add_argument("--scope", help="OAuth: the scopes to ask for")
    parser.add_argument("--elicit", choices=["accept", "decline", "approve-false"], help="answer elicitations")
    parser.add_argument("action")
    parser.add_argument("name", nargs="?")
    parser.add_argument("arguments", nargs="?", default="{}")
    parser.add_argument("extra", nargs="?")
    args = parser.parse_args(argv)
    args.command = command
    if bool(args.http) == bool(args.stdio):
        parser.error("give exactly one of --http URL or --stdio -- CMD ARGS...")
    if args.stdio and not command:
        parser.error("--stdio needs the server's command after --")
    if args.after is None:
        try:
            args.after = float(args.extra) if args.action == "cancel" and args.extra is not None else 1.0
        except ValueError:
            parser.error("cancel: SECONDS must be a number")
    return args


def main() -> None:
    args = parse(sys.argv[1:])
    try:
        result = anyio.run(run, args)
    except KeyboardInterrupt:
        fail("interrupted")
    except BaseException as error:  # noqa: BLE001 - one clear line for the test to show
        if isinstance(error, SystemExit):
            raise
        fail(one_line(innermost(error)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
