"""A small MCP server built on the official MCP Python SDK's `MCPServer`
(`mcp`, pinned in .ci/e2e-deps), which serves MCP 2026-07-28 (no
`initialize`, `server/discover`, the `_meta` envelope, `input_required`)
and the 2025 handshake alike, whichever a client opens with.
tests/suite/gateway_servers_2026.rs runs it behind `mcppol gateway`, over
stdio and over streamable HTTP; this script only serves.

    py_server_2026.py stdio
    py_server_2026.py http PORT

Tools: `echo` (its text back, and the protocol version it was spoken to
in), `confirm` (asks the person through an elicitation first: mid-call
for a 2025 client, as an `input_required` result for a 2026 one).
"""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, ElicitationResult, Resolve

server = MCPServer(name="py2026", instructions="A test server of the MCP Python SDK.")


class Answer(BaseModel):
    ok: bool


def ask(item: str) -> Elicit[Answer]:
    return Elicit(f"Really remove {item}?", Answer)


@server.tool()
def echo(message: str, ctx: Context) -> str:
    """Says the message back, with the protocol version of the request."""
    return f"echo: {message} (protocol {ctx.protocol_version})"


@server.tool()
def confirm(item: str, answer: Annotated[ElicitationResult[Answer], Resolve(ask)]) -> str:
    """Removes an item once the person confirms it."""
    if answer.action == "accept" and answer.data is not None and answer.data.ok:
        return f"removed {item}"
    return f"kept {item} ({answer.action})"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
