"""A host built on the official MCP Python SDK's `Client` (`mcp`, pinned
in .ci/e2e-deps) that starts `mcppol gateway --stdio` in front of servers
of two protocol eras: tests/e2e/py_server_2026.py (MCP 2026-07-28, the
Python SDK's own server) as a child and over streamable HTTP, and the real
server-everything from npm (2025-11-25 only). The host speaks 2025-11-25
(`mode` "legacy") or 2026-07-28 (`mode` "auto": `server/discover`, no
session). It reports what it saw as one JSON object on stdout;
tests/suite/gateway_servers_2026.rs asserts on it.

    sdk_servers_2026.py CONFIG_JSON

CONFIG_JSON: {"mcppol": BIN, "policy": FILE, "servers": FILE, "stderr":
FILE, "mode": "legacy" | "auto", "taint_by": SERVER_ID, "other": SERVER_ID,
"server_py": PATH (py_server_2026.py)}
"""

import asyncio
import json
import sys

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
import mcp.types as types


async def call(client, name, args):
    try:
        r = await client.call_tool(name, args)
        return {"is_error": bool(r.is_error), "content": [c.model_dump(exclude_none=True) for c in r.content]}
    except Exception as e:  # a JSON-RPC error answer
        err = getattr(e, "error", None)
        return {"rpc_error": {"code": getattr(err, "code", None), "message": getattr(err, "message", str(e))}}


async def direct(cfg, errlog, name, args):
    """The same call straight to the 2026 server, no gateway between."""
    server = StdioServerParameters(command=sys.executable, args=[cfg["server_py"], "stdio"])
    async with Client(stdio_client(server, errlog=errlog), mode="auto") as client:
        return await call(client, name, args)


async def run(cfg):
    report = {}
    asked = []

    async def answer_elicitation(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    with open(cfg["stderr"], "a") as errlog:
        gateway = StdioServerParameters(
            command=cfg["mcppol"],
            args=["gateway", "--policy", cfg["policy"], "--servers", cfg["servers"], "--stdio"],
        )
        transport = stdio_client(gateway, errlog=errlog)
        async with Client(transport, mode=cfg["mode"], elicitation_callback=answer_elicitation) as client:
            report["protocol_version"] = client.protocol_version
            tools = await client.list_tools()
            report["tools"] = sorted(t.name for t in tools.tools)
            report["everything_before"] = await call(client, "everything__echo", {"message": "clean"})
            taint_by, other = cfg["taint_by"], cfg["other"]
            report["echo"] = await call(client, taint_by + "__echo", {"message": "same"})
            # The 2026 server's output is in the context now: a call the
            # policy denies `when tainted`, though the host said nothing.
            report["everything_after"] = await call(client, "everything__echo", {"message": "tainted"})
            report["echo_other"] = await call(client, other + "__echo", {"message": "same"})
            # The server asks the person mid-call (input_required): put to
            # this host in its own version's form.
            report["confirm"] = await call(client, taint_by + "__confirm", {"item": "a"})
            report["confirm_other"] = await call(client, other + "__confirm", {"item": "b"})
            report["asked"] = asked
        report["direct_echo"] = await direct(cfg, errlog, "echo", {"message": "same"})
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(run(json.loads(sys.argv[1])))
