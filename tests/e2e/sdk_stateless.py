"""A host built on the official MCP Python SDK's high-level `Client`
(`mcp`, pinned in .ci/e2e-deps), which speaks MCP 2026-07-28: it probes
`server/discover`, then sends each request on its own (no `initialize`, no
session) with its `_meta` and routing headers, and settles an
`input_required` result through its elicitation callback. It talks to a
`mcppol gateway --listen` over streamable HTTP and reports what it saw as
one JSON object on stdout; tests/suite/gateway_sdk_http.rs asserts on it.

    sdk_stateless.py CONFIG_JSON

CONFIG_JSON: {"url": URL, "token": TOKEN, "sandbox": DIR, "elicit": WORD,
"write_name": NAME}
"""

import asyncio
import json
import os
import sys

from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
import mcp.types as types


def view(r):
    return {
        "is_error": bool(r.is_error),
        "text": "\n".join(getattr(c, "text", "") for c in r.content),
    }


async def call(client, name, args):
    try:
        return view(await client.call_tool(name, args))
    except Exception as e:  # a JSON-RPC error answer
        err = getattr(e, "error", None)
        return {"rpc_error": {"code": getattr(err, "code", None), "message": getattr(err, "message", str(e))}}


async def run(cfg):
    report = {}
    asked = []

    async def answer_elicitation(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": cfg["elicit"]})

    headers = {"Authorization": "Bearer " + cfg["token"]}
    async with create_mcp_http_client(headers=headers) as http:
        transport = streamable_http_client(cfg["url"], http_client=http)
        async with Client(transport, mode="auto", elicitation_callback=answer_elicitation) as client:
            report["protocol_version"] = client.protocol_version
            tools = await client.list_tools()
            report["tools"] = [t.name for t in tools.tools]
            report["write_before"] = await call(client, "memory__create_entities", {"entities": [
                {"name": "before", "entityType": "note", "observations": ["clean"]}]})
            report["echo"] = await call(client, "everything__echo", {"message": "stateless"})
            # everything's output is the principal's context now, though no
            # session ties these requests together.
            report["write_after"] = await call(client, "memory__create_entities", {"entities": [
                {"name": "after", "entityType": "note", "observations": ["tainted"]}]})
            # An ask: answered through input_required, then the call is done.
            report["write"] = await call(client, "fs__write_file", {
                "path": os.path.join(cfg["sandbox"], cfg["write_name"]), "content": "asked"})
            report["asked"] = asked
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(run(json.loads(sys.argv[1])))
