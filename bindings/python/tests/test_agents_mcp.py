"""mcppol.agents.MCPGuard in the real OpenAI Agents SDK (openai-agents
0.24.0): its MCPServerStdio running the real @modelcontextprotocol
server-everything and server-memory from npm (pinned, installed into
.e2e/node by ci.sh and .ci/e2e-deps), driven by the SDK's ScriptedModel (no
network). An allowed call runs, a denied one returns the refusal to the
model as the tool's error result, an ask is settled by the SDK's approval
interruption (approve and reject), a hidden tool is not listed, and a write
after output from another server of the same guard is refused."""

import asyncio
import json
import os
import pathlib
import shutil

import pytest

pytest.importorskip("agents", reason="openai-agents is not installed: bindings/python/ci.sh installs it")

from agents import Agent, Runner, set_tracing_disabled  # noqa: E402
from agents.mcp import MCPServerStdio  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

import mcppol  # noqa: E402
import mcppol.agents  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[3]
NODE_MODULES = ROOT / ".e2e" / "node" / "node_modules" / "@modelcontextprotocol"
SERVERS = {
    "everything": NODE_MODULES / "server-everything" / "dist" / "index.js",
    "memory": NODE_MODULES / "server-memory" / "dist" / "index.js",
}

POLICY = """
policy agent {
  default deny
  tools {
    exclude "everything/trigger-*"
  }
  deny tainted_write: "memory/create_*", "memory/add_*", "memory/delete_*"
    when tainted(ignore: ["memory"])
  ask "memory/create_entities"
  allow "memory/read_graph", "everything/echo"
}
"""
# No traces leave the machine.
set_tracing_disabled(True)

ENTITY = {"entities": [{"name": "dana", "entityType": "person", "observations": ["x"]}]}


def node_servers():
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the end-to-end test needs Node.js 18 or later")
    for name, path in SERVERS.items():
        assert path.is_file(), f"{path} is missing: run bindings/python/ci.sh (it installs server-{name})"


def stdio_server(name, env):
    params = {"command": "node", "args": [str(SERVERS[name])], "env": env}
    return MCPServerStdio(name=name, params=params, client_session_timeout_seconds=30)


def text_of(output):
    """A tool output item's text (the SDK keeps an MCP text block as a dict)."""
    if isinstance(output, dict):
        return output.get("text", "")
    if isinstance(output, list):
        return "\n".join(text_of(o) for o in output)
    return str(output)


def outputs(result):
    return [text_of(item.output) for item in result.new_items if item.type == "tool_call_output_item"]


async def run_scenario(tmp_path, answer):
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    guard = mcppol.agents.MCPGuard(mcppol.Policy.from_str(POLICY))
    seen = {}
    calls = [
        ("read_graph", {}),
        ("delete_entities", {"entityNames": ["dana"]}),
        ("create_entities", ENTITY),
        ("echo", {"message": "hi"}),
        ("create_entities", ENTITY),
    ]
    steps = [[function_call(name, args, call_id=f"call_{i}")] for i, (name, args) in enumerate(calls)]
    model = ScriptedModel([*steps, [assistant_message("done")]])
    async with stdio_server("everything", env) as everything, stdio_server("memory", env) as memory:
        governed = [guard.wrap(everything), guard.wrap(memory)]
        seen["everything_tools"] = [t.name for t in await governed[0].list_tools()]
        agent = Agent(name="assistant", model=model, mcp_servers=governed)
        first = await Runner.run(agent, "go")
        seen["first"] = outputs(first)
        (pending,) = first.interruptions
        seen["pending"] = (pending.tool_name, json.loads(pending.arguments))
        seen["taint_asked"] = set(guard.taint)
        state = first.to_state()
        if answer == "approve":
            state.approve(pending)
        else:
            state.reject(pending)
        second = await Runner.run(agent, state)
        seen["second"] = outputs(second)
        seen["interruptions"] = second.interruptions
        seen["taint"] = set(guard.taint)
        # An ask that did not come through the SDK's approval is refused.
        seen["unapproved"] = await guard.wrap(memory, name="memory").call_tool("create_entities", ENTITY)
    return seen


def test_governed_mcp_servers_in_the_agents_sdk(tmp_path):
    node_servers()
    seen = asyncio.run(run_scenario(tmp_path, "approve"))
    # Visibility: hidden tools are left out of the listing.
    assert "echo" in seen["everything_tools"]
    assert not [t for t in seen["everything_tools"] if t.startswith("trigger-")]
    # Allowed: it ran. Denied: the model reads the refusal as the tool's result.
    read_graph, delete = seen["first"]
    assert "entities" in read_graph
    assert delete == (
        "mcppol refused this call: decision deny, reason no_rule, rule none, policy agent. "
        "Do not retry the same call; a person can change the policy."
    )
    # Ask: the run stopped on the SDK's approval interruption; approved, it ran.
    assert seen["pending"] == ("create_entities", ENTITY)
    assert seen["taint_asked"] == {"memory"}
    created, echo, tainted = seen["second"][-3:]
    assert "dana" in created
    assert echo == "Echo: hi"
    # Taint across the guard's servers: everything's output was read, so
    # the write to memory is refused, not asked.
    assert not seen["interruptions"], "a tainted write must be refused, not asked"
    assert "reason deny_rule, rule tainted_write" in tainted
    assert seen["taint"] == {"memory", "everything"}
    assert seen["unapproved"].is_error
    assert "reason deny_rule, rule tainted_write" in seen["unapproved"].content[0].text


def test_an_ask_the_person_rejects(tmp_path):
    node_servers()
    seen = asyncio.run(run_scenario(tmp_path, "reject"))
    assert seen["pending"] == ("create_entities", ENTITY)
    rejected = seen["second"][-3]
    # The SDK's own rejection: the server never saw the call.
    assert "not approved" in rejected and "dana" not in rejected
    assert "reason deny_rule, rule tainted_write" in seen["second"][-1]


def test_a_call_the_sdk_did_not_ask_about_is_refused(tmp_path):
    node_servers()
    env = {**os.environ, "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    guard = mcppol.agents.MCPGuard(mcppol.Policy.from_str(POLICY))

    async def scenario():
        async with stdio_server("memory", env) as memory:
            return await guard.wrap(memory).call_tool("create_entities", ENTITY)

    result = asyncio.run(scenario())
    assert result.is_error
    assert result.content[0].text.startswith(
        "mcppol refused this call: decision deny, reason ask_denied, rule ask:0 (policy reason ask_rule)"
    )
