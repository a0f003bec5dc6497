"""OpenAI Agents SDK: function tools governed by a policy.

    guard = mcppol.agents.PolicyGuard(policy, servers={"send_email": "mail"})
    agent = Agent(name="assistant", tools=guard.govern([fetch_page, send_email]))
    result = await Runner.run(agent, "...")
    for item in result.interruptions:         # the engine said ask
        state = result.to_state(); state.approve(item)   # or state.reject(item)
        result = await Runner.run(agent, state)

`govern` gives each tool three hooks of the SDK, all answered by the engine:

- `needs_approval`: true exactly when the engine answers `ask`, so the run
  stops on the SDK's approval interruption and the person's `approve` or
  `reject` settles the call;
- a tool input guardrail: a denied call is not run, and the model reads the
  refusal text (the decision, the reason and the rule, in the words
  `mcppol proxy` uses) instead of the result;
- a tool output guardrail that records the tool's server in the guard's
  `taint` once its result reaches the model, so a later call meets the
  policy's `tainted` tests.

A tool is named to the policy as `SERVER/TOOL`: `servers` maps a tool name
to its server id (else `server`). One guard is one conversation's taint.

MCP servers are governed by an `MCPGuard`: `guard.wrap(server)` gives an
`MCPServer` the agent uses in place of the SDK's (`MCPServerStdio` and the
others), whose `list_tools` leaves out the tools the policy hides and
whose `call_tool` is decided by the engine through `mcppol.mcp`'s mapping
(the same requests, lock and refusals as `mcppol.mcp.GovernedSession`):

    guard = mcppol.agents.MCPGuard(policy)
    async with MCPServerStdio(name="memory", params={...}) as memory:
        agent = Agent(name="assistant", mcp_servers=[guard.wrap(memory)])

A denied call comes back to the model as the tool's error result (the
refusal text); an ask stops the run on the SDK's approval interruption,
and only a call a person approved there goes through; the taint is the
guard's, shared by all the servers it wrapped.

Needs `openai-agents` (the extra `mcppol[agents]`; `MCPGuard` needs `mcp`
too, which the SDK depends on).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

import mcp.types as types
from agents import FunctionTool
from agents.mcp import MCPServer
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from mcppol._mcppol import Decision, Policy
from mcppol.mcp import Governor, GovernedSession

__all__ = ["GovernedMCPServer", "MCPGuard", "PolicyGuard"]


class PolicyGuard:
    """Decides the calls of an agent's function tools with a policy."""

    def __init__(
        self,
        policy: Policy,
        *,
        server: str = "tools",
        servers: Optional[Dict[str, str]] = None,
        principal: Optional[str] = None,
    ) -> None:
        self.policy = policy
        self.server = server
        self.servers = dict(servers or {})
        self.principal = principal
        #: Servers whose tool results reached the model.
        self.taint: Set[str] = set()
        self.input_guardrail = ToolInputGuardrail(guardrail_function=self._check_input, name="mcppol")
        self.output_guardrail = ToolOutputGuardrail(guardrail_function=self._record_output, name="mcppol_taint")

    def server_of(self, tool: str) -> str:
        """The server id a tool is named under."""
        return self.servers.get(tool, self.server)

    def decide(self, tool: str, args: Dict[str, Any]) -> Decision:
        """The engine's decision on one call of a tool."""
        return self.policy.decide(
            tool=f"{self.server_of(tool)}/{tool}",
            args=args,
            taint=sorted(self.taint),
            principal=self.principal,
        )

    def govern(self, tools: Iterable[FunctionTool]) -> List[FunctionTool]:
        """The tools, each with the guard's approval rule and guardrails."""
        out = []
        for tool in tools:
            tool.needs_approval = self._needs_approval_for(tool.name)
            tool.tool_input_guardrails = [*(tool.tool_input_guardrails or []), self.input_guardrail]
            tool.tool_output_guardrails = [*(tool.tool_output_guardrails or []), self.output_guardrail]
            out.append(tool)
        return out

    def _needs_approval_for(self, name: str):
        async def needs_approval(run_context: Any, params: Dict[str, Any], call_id: str) -> bool:
            try:
                return self.decide(name, dict(params or {})).decision == "ask"
            except Exception:
                # Undecidable here: the input guardrail refuses it.
                return False

        return needs_approval

    def _check_input(self, data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        context = data.context
        try:
            args = json.loads(context.tool_arguments or "{}")
            d = self.decide(context.tool_name, args if isinstance(args, dict) else {})
        except Exception as e:  # a call that cannot be decided does not run
            return ToolGuardrailFunctionOutput.reject_content(
                f"mcppol refused this call: it could not be decided ({e})."
            )
        # An ask reached here only through the SDK's approval (needs_approval).
        if d.decision in ("allow", "ask"):
            return ToolGuardrailFunctionOutput.allow(output_info=d.to_dict())
        return ToolGuardrailFunctionOutput.reject_content(d.refusal_text(), output_info=d.to_dict())

    def _record_output(self, data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        self.taint.add(self.server_of(data.context.tool_name))
        return ToolGuardrailFunctionOutput.allow()


def _call_key(server: str, tool: str, arguments: Dict[str, Any]) -> Tuple[str, str, str]:
    """One call as a key: the server, the tool and its arguments as
    canonical JSON (the SDK parses the same arguments for the approval
    check and for the call)."""
    return (server, tool, json.dumps(arguments, sort_keys=True, separators=(",", ":")))


class MCPGuard:
    """Governs the Agents SDK's MCP servers with one policy.

    `wrap` each server the agent uses; the guard's `governor` (a
    `mcppol.mcp.Governor`) keeps the taint and the first listings of all of
    them, so output read through one server is in the context of a call
    through another. `lock`, `principal`, `cwd` and `assigns` are the
    `Governor`'s. Asks are settled by the SDK's approval interruption: the
    approval check records each call the engine answered `ask` for, and the
    governor's approver lets through only such a call (one the SDK ran
    because a person approved it), once.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        lock: Optional[Dict[str, Any]] = None,
        principal: Optional[str] = None,
        cwd: Optional[str] = None,
        assigns: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.governor = Governor(
            policy, approver=self._approved_by_sdk, lock=lock, principal=principal, cwd=cwd, assigns=assigns
        )
        # Calls the approval check answered `ask` for and not yet run.
        self._asked: Dict[Tuple[str, str, str], int] = {}

    @property
    def taint(self) -> Set[str]:
        """Servers whose output reached the model, through any wrapped server."""
        return self.governor.taint

    def wrap(self, server: MCPServer, *, name: Optional[str] = None) -> "GovernedMCPServer":
        """`server` governed; `name` is its id in the policy's targets
        (default: the server's own `name`)."""
        return GovernedMCPServer(self, server, name if name is not None else server.name)

    def _record_check(self, server: str, tool: str, arguments: Dict[str, Any], ask: bool) -> None:
        key = _call_key(server, tool, arguments)
        if ask:
            self._asked[key] = self._asked.get(key, 0) + 1
        else:
            # The latest check of this call did not ask: no earlier ask
            # (one a person may have rejected) can approve it.
            self._asked.pop(key, None)

    def _approved_by_sdk(self, server: str, tool: str, arguments: Dict[str, Any], d: Decision) -> bool:
        # The SDK runs a call its approval check answered `ask` for only
        # after a person approved it; a call that asks now but did not
        # then (the taint changed in between) was approved by nobody.
        key = _call_key(server, tool, arguments)
        left = self._asked.get(key, 0)
        if left <= 0:
            return False
        if left == 1:
            del self._asked[key]
        else:
            self._asked[key] = left - 1
        return True


class _ServerAsSession:
    """An SDK `MCPServer` with the `ClientSession` methods
    `mcppol.mcp.GovernedSession` calls."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(await self.server.list_tools(run_context, agent)))

    async def call_tool(
        self, name: str, arguments: Optional[Dict[str, Any]], meta: Optional[Dict[str, Any]] = None
    ) -> types.CallToolResult:
        if meta is None:
            return await self.server.call_tool(name, arguments)
        return await self.server.call_tool(name, arguments, meta=meta)

    async def read_resource(self, uri: str) -> Any:
        return await self.server.read_resource(uri)

    async def get_prompt(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Any:
        return await self.server.get_prompt(name, arguments)


class GovernedMCPServer(MCPServer):
    """An SDK MCP server governed by an `MCPGuard` (make it with
    `guard.wrap(server)`). Listings leave out hidden tools; calls, resource
    reads and prompt gets are decided as `mcppol.mcp.GovernedSession`
    decides them (a denied read or get raises `mcppol.mcp.Refused`); each
    tool's approval check is the engine's `ask`. Connecting and cleaning
    up are the wrapped server's."""

    def __init__(self, guard: MCPGuard, server: MCPServer, server_id: str) -> None:
        super().__init__(
            use_structured_content=server.use_structured_content,
            tool_meta_resolver=server.tool_meta_resolver,
            custom_data_extractor=server.custom_data_extractor,
            tool_input_guardrails=server.tool_input_guardrails,
            tool_output_guardrails=server.tool_output_guardrails,
        )
        self.guard = guard
        self.inner = server
        self.server_id = server_id
        self.session: GovernedSession = guard.governor.session(_ServerAsSession(server), server=server_id)

    @property
    def name(self) -> str:
        """The wrapped server's name."""
        return self.inner.name

    async def connect(self) -> None:
        """Connects the wrapped server."""
        await self.inner.connect()

    async def cleanup(self) -> None:
        """Cleans up the wrapped server."""
        await self.inner.cleanup()

    async def __aenter__(self) -> "GovernedMCPServer":
        await self.connect()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.cleanup()

    async def list_tools(self, run_context: Any = None, agent: Any = None) -> List[types.Tool]:
        """The server's tools less those the policy hides from the model."""
        return list((await self.session.list_tools(run_context, agent)).tools)

    @property
    def cached_tools(self) -> Optional[List[types.Tool]]:
        """The wrapped server's cached tools less the hidden ones."""
        tools = self.inner.cached_tools
        if tools is None:
            return None
        return [t for t in tools if self.guard.governor.policy.is_visible(self.server_id, t.name)]

    async def call_tool(
        self, tool_name: str, arguments: Optional[Dict[str, Any]], meta: Optional[Dict[str, Any]] = None
    ) -> types.CallToolResult:
        """Decides the call (see `mcppol.mcp.GovernedSession.call_tool`): a
        refused one is an error result whose text is the refusal."""
        if meta is None:
            return await self.session.call_tool(tool_name, arguments)
        return await self.session.call_tool(tool_name, arguments, meta=meta)

    async def list_prompts(self) -> types.ListPromptsResult:
        """The wrapped server's prompts (each get is decided)."""
        return await self.inner.list_prompts()

    async def get_prompt(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> types.GetPromptResult:
        """Decides the get; raises `mcppol.mcp.Refused` unless allowed."""
        return await self.session.get_prompt(name, arguments)

    async def list_resources(self, cursor: Optional[str] = None) -> types.ListResourcesResult:
        """The wrapped server's resources (each read is decided)."""
        return await self.inner.list_resources(cursor)

    async def list_resource_templates(self, cursor: Optional[str] = None) -> types.ListResourceTemplatesResult:
        """The wrapped server's resource templates."""
        return await self.inner.list_resource_templates(cursor)

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Decides the read; raises `mcppol.mcp.Refused` unless allowed."""
        return await self.session.read_resource(uri)

    def _get_failure_error_function(self, agent_failure_error_function: Any) -> Any:
        return self.inner._get_failure_error_function(agent_failure_error_function)

    def _get_needs_approval_for_tool(self, tool: types.Tool, agent: Any) -> Any:
        # The SDK's approval path for MCP tools: a call needs a person's
        # approval exactly when the engine answers `ask`.
        async def needs_approval(run_context: Any, arguments: Dict[str, Any], call_id: str) -> bool:
            try:
                args = dict(arguments or {})
                d = self.session.decide_call(tool.name, args)
                ask = d is not None and d.decision == "ask"
                self.guard._record_check(self.server_id, tool.name, args, ask)
                return ask
            except Exception:
                # Undecidable here: `call_tool` decides again and refuses.
                return False

        return needs_approval
