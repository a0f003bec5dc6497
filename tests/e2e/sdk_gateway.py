"""A host built on the official MCP Python SDK (`mcp`, pinned in
.ci/e2e-deps) that runs `mcppol gateway --stdio` in front of the real
server-everything, server-memory and server-filesystem from npm, and
reports what it saw as one JSON object on stdout. tests/suite/gateway_e2e.rs
runs one scenario a test and asserts on the report; this script only
observes.

    sdk_gateway.py SCENARIO CONFIG_JSON

CONFIG_JSON: {"mcppol": BIN, "policy": FILE, "servers": FILE,
"everything_js": PATH, "memory_pid": FILE, "sandbox": DIR, "stderr": FILE,
"gateway_args": [...]}; with "url" (and "token"), the client speaks
streamable HTTP to a gateway already listening there instead of starting
one on its stdio; "elicit" is what it answers an elicitation with.
"""

import asyncio
import contextlib
import json
import os
import signal
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import mcp.types as types


def result_view(r):
    """A tool result as plain data: isError, the content blocks, the
    structured content."""
    return {
        "is_error": bool(r.is_error),
        "content": [c.model_dump(exclude_none=True) for c in r.content],
        "structured": r.structured_content,
    }


async def call(session, name, args):
    try:
        return result_view(await session.call_tool(name, args))
    except Exception as e:  # a JSON-RPC error answer
        err = getattr(e, "error", None)
        return {"rpc_error": {"code": getattr(err, "code", None), "message": getattr(err, "message", str(e))}}


def text(view):
    return "\n".join(c.get("text", "") for c in view.get("content", []))


async def direct_echo(cfg, args):
    """The same call straight to server-everything, no gateway between."""
    server = StdioServerParameters(command="node", args=[cfg["everything_js"], "stdio"], env={**os.environ})
    with open(cfg["stderr"], "a") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await call(session, "echo", args)


async def memory_tools(session):
    tools = await session.list_tools()
    return [t.name for t in tools.tools if t.name.startswith("memory__")]


@contextlib.asynccontextmanager
async def transport(cfg):
    """The gateway over streamable HTTP (`url`), or started on stdio."""
    if cfg.get("url"):
        headers = {"Authorization": "Bearer " + cfg["token"]} if cfg.get("token") else None
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(cfg["url"], http_client=client) as (read, write):
                yield read, write
        return
    server = StdioServerParameters(
        command=cfg["mcppol"],
        args=["gateway", "--policy", cfg["policy"], "--servers", cfg["servers"], "--stdio",
              *cfg.get("gateway_args", [])],
        env={**os.environ},
    )
    with open(cfg["stderr"], "a") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            yield read, write


async def run(scenario, cfg):
    report = {}
    asked = []

    async def answer_elicitation(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": cfg["elicit"]})

    async with transport(cfg) as (read, write):
        async with ClientSession(read, write,
                                 elicitation_callback=answer_elicitation if cfg.get("elicit") else None) as session:
            init = await session.initialize()
            report["protocol_version"] = init.protocol_version
            report["server_name"] = init.server_info.name
            if scenario == "basics":
                tools = await session.list_tools()
                report["tools"] = [t.name for t in tools.tools]
                # Nothing in the context yet: a memory write is allowed.
                report["write_before"] = await call(session, "memory__create_entities", {"entities": [
                    {"name": "before", "entityType": "note", "observations": ["clean"]}]})
                args = {"message": "hello through the gateway"}
                report["echo"] = await call(session, "everything__echo", args)
                report["direct_echo"] = await direct_echo(cfg, args)
                # everything's output is in the context now: the same
                # write is denied, though this client passes no taint.
                report["write_after"] = await call(session, "memory__create_entities", {"entities": [
                    {"name": "after", "entityType": "note", "observations": ["tainted"]}]})
                report["hidden"] = await call(session, "everything__get-env", {})
                report["fs_read"] = await call(session, "fs__read_text_file", {"path": os.path.join(cfg["sandbox"], "hello.txt")})
            elif scenario == "kill":
                report["before"] = await call(session, "memory__read_graph", {})
                pid = int(open(cfg["memory_pid"]).read().strip())
                os.kill(pid, signal.SIGKILL)
                report["killed"] = await call(session, "memory__read_graph", {})
                report["other"] = await call(session, "everything__echo", {"message": "still here"})
                back = []
                for _ in range(100):
                    await asyncio.sleep(0.1)
                    back = await memory_tools(session)
                    if back:
                        break
                report["tools_back"] = back
                report["after"] = await call(session, "memory__read_graph", {})
            elif scenario == "remote":
                # server-everything in its streamable-HTTP mode, as `remote`.
                tools = await session.list_tools()
                report["tools"] = [t.name for t in tools.tools]
                report["echo"] = await call(session, "remote__echo", {"message": "over HTTP"})
                report["write_after"] = await call(session, "memory__create_entities", {"entities": [
                    {"name": "after", "entityType": "note", "observations": ["tainted"]}]})
            elif scenario == "principal":
                # Who calls is the token's: the policy's per-user rule.
                report["sum"] = await call(session, "everything__get-sum", {"a": 1, "b": 2})
                # An ask settled by the host, through the POST's stream.
                report["write"] = await call(session, "fs__write_file", {
                    "path": os.path.join(cfg["sandbox"], cfg["write_name"]), "content": "asked"})
                report["asked"] = asked
            else:
                raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], json.loads(sys.argv[2])))
