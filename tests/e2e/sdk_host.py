"""A host built on the official MCP Python SDK (`mcp`, pinned in
.ci/e2e-deps) that runs `mcppol proxy` in front of the real
@modelcontextprotocol/server-filesystem and reports what it saw as one JSON
object on stdout. tests/suite/proxy_e2e.rs runs one scenario a test and asserts
on the report; this script only observes.

    sdk_host.py SCENARIO CONFIG_JSON

CONFIG_JSON: {"mcppol": BIN, "server_js": PATH, "policy": FILE,
"sandbox": DIR, "outside": DIR, "stderr": FILE, "proxy_args": [...],
"roots": [URI, ...] or null, "elicit": "allow_once" | "decline" | null}
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def result_view(r):
    """A tool result as plain data: isError and the texts."""
    texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
    return {"is_error": bool(r.is_error), "text": "\n".join(texts)}


async def call(session, name, args):
    try:
        return result_view(await session.call_tool(name, args))
    except Exception as e:  # a JSON-RPC error answer
        err = getattr(e, "error", None)
        return {"rpc_error": {"code": getattr(err, "code", None), "message": getattr(err, "message", str(e))}}


async def run(scenario, cfg):
    roots = cfg.get("roots")
    elicit = cfg.get("elicit")
    asked = []

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=u, name="host root") for u in roots])

    async def answer_elicitation(context, params):
        asked.append(params.message)
        if elicit == "decline":
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": elicit})

    server = StdioServerParameters(
        command=cfg["mcppol"],
        args=["proxy", "--policy", cfg["policy"], "--server-id", "fs", *cfg.get("proxy_args", []),
              "--", "node", cfg["server_js"], cfg["sandbox"]],
        env={**os.environ},
    )
    report = {}
    with open(cfg["stderr"], "a") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write):
            async with ClientSession(
                read,
                write,
                list_roots_callback=list_roots if roots is not None else None,
                elicitation_callback=answer_elicitation if elicit else None,
            ) as session:
                init = await session.initialize()
                report["protocol_version"] = init.protocol_version
                sandbox, outside = cfg["sandbox"], cfg["outside"]
                inside_file = os.path.join(sandbox, "hello.txt")
                escape = os.path.join(sandbox, "..", os.path.basename(outside), "secret.txt")
                if scenario == "basics":
                    tools = await session.list_tools()
                    report["tools"] = [t.name for t in tools.tools]
                    report["hidden"] = await call(session, "move_file", {"source": inside_file, "destination": inside_file + ".2"})
                    report["unknown"] = await call(session, "no_such_tool", {})
                    report["read"] = await call(session, "read_text_file", {"path": inside_file})
                    report["escape"] = await call(session, "read_text_file", {"path": escape})
                    report["write"] = await call(session, "write_file", {"path": os.path.join(sandbox, "new.txt"), "content": "x"})
                elif scenario == "write":
                    report["write"] = await call(session, "write_file", {"path": os.path.join(sandbox, "new.txt"), "content": "written"})
                    report["asked"] = asked
                elif scenario == "roots":
                    # Give the server time to ask for the roots after the handshake.
                    await asyncio.sleep(1.0)
                    report["allowed"] = await call(session, "list_allowed_directories", {})
                    report["outside"] = await call(session, "read_text_file", {"path": os.path.join(outside, "secret.txt")})
                elif scenario == "reload":
                    report["before"] = await call(session, "read_text_file", {"path": inside_file})
                    policy = cfg["policy"]
                    text = open(policy).read()
                    with open(policy + ".tmp", "w") as f:
                        f.write(text.replace("default deny", 'default deny\n  deny no_reads: "fs/read_text_file"'))
                    os.replace(policy + ".tmp", policy)  # a save by rename
                    after = None
                    for _ in range(100):
                        await asyncio.sleep(0.1)
                        after = await call(session, "read_text_file", {"path": inside_file})
                        if after.get("is_error"):
                            break
                    report["after"] = after
                    with open(policy, "w") as f:
                        f.write("policy fs { deny oops: }\n")
                    await asyncio.sleep(1.5)
                    report["broken"] = await call(session, "read_text_file", {"path": inside_file})
                elif scenario == "shaped":
                    # A file with hidden characters: what the model gets, and the
                    # SDK's own check of structuredContent against outputSchema.
                    r = await session.call_tool("read_text_file", {"path": os.path.join(sandbox, "poison.txt")})
                    report["read"] = result_view(r)
                    report["structured"] = r.structured_content
                elif scenario == "lock":
                    report["read"] = await call(session, "read_text_file", {"path": inside_file})
                else:
                    raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(run(sys.argv[1], json.loads(sys.argv[2])))
