"""A governed MCP client session: the MCP Python SDK's `ClientSession`
with every tool call, resource read and prompt get decided by the engine.

    governor = mcppol.mcp.Governor(policy, approver=ask_a_person)
    async with ClientSession(read, write) as raw:
        await raw.initialize()
        session = governor.session(raw, server="memory")
        tools = await session.list_tools()      # hidden tools left out
        result = await session.call_tool("read_graph", {})

What this module does is mapping, never deciding: the engine
(`Policy.decide`) decides each request; this module gives it what the
session saw (the tool's listed definition, the fingerprints of the first
listing of each server, the servers whose output came back to the host)
and maps the decision to the SDK's answers: an allowed call goes through,
an ask goes to the approver callback, a denied call comes back as an error
result whose text names the decision, the reason and the rule (the words
`mcppol proxy` uses), and a denied read or get raises `Refused`. Any
failure on the way (a bad request, an approver that raises) ends in a
refusal, never in a call that was not decided.

Taint is the governor's, shared by all its sessions: output read through
one server is in the context of a call through another.

Needs the `mcp` package (the extra `mcppol[mcp]`).
"""

from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable, Dict, Optional, Set, Union

import mcp.types as types

from mcppol._mcppol import Decision, Policy, fingerprint

__all__ = ["Approver", "Governor", "GovernedSession", "Refused"]

#: Called for a decision of `ask`: `(server, tool, arguments, decision)`;
#: returns (or resolves to) True to let the call go through.
Approver = Callable[[str, str, Dict[str, Any], Decision], Union[bool, Awaitable[bool]]]


class Refused(PermissionError):
    """A resource read or prompt get that did not go through; `decision`
    is the engine's, and the message the refusal text."""

    def __init__(self, decision: Decision, message: str) -> None:
        super().__init__(message)
        self.decision = decision


def _definition(tool: types.Tool) -> Dict[str, Any]:
    """A listed tool as the JSON object its server sent (what a fingerprint
    covers)."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


class Governor:
    """Governs MCP client sessions with one policy.

    `approver` settles asks (None: nobody can be asked, so the engine denies
    them, `reason: no_approver`). `lock` is a lock file's JSON (`mcppol
    lock`); without one, the first listing of each server is taken as
    approved, and a tool whose definition changes later, or that appears
    later, meets the policy's `pin_tools` and `allow_new_tools` rules.
    `principal`, `cwd` and `assigns` are passed with every request.
    """

    def __init__(
        self,
        policy: Policy,
        *,
        approver: Optional[Approver] = None,
        lock: Optional[Dict[str, Any]] = None,
        principal: Optional[str] = None,
        cwd: Optional[str] = None,
        assigns: Optional[Dict[str, Any]] = None,
    ) -> None:
        self.policy = policy
        self.approver = approver
        self.principal = principal
        self.cwd = cwd
        self.assigns = assigns
        #: Servers whose output came back to the host, in any session.
        self.taint: Set[str] = set()
        self._given_lock = lock
        self._seen: Dict[str, Dict[str, str]] = {}

    def session(self, session: Any, server: str) -> "GovernedSession":
        """Wraps an initialized `ClientSession` to the server named
        `server` (the id the policy's targets use)."""
        return GovernedSession(self, session, server)

    def _lock(self) -> Dict[str, Any]:
        if self._given_lock is not None:
            return self._given_lock
        tools = {key: fp for seen in self._seen.values() for key, fp in seen.items()}
        return {"version": 1, "tools": tools}

    def _saw_listing(self, server: str, tools: Dict[str, Dict[str, Any]]) -> None:
        # The first listing of a server is its baseline; later ones are
        # compared with it by the engine (through the lock).
        if server not in self._seen:
            self._seen[server] = {f"{server}/{name}": fingerprint(d) for name, d in tools.items()}

    def decide(self, **request: Any) -> Decision:
        """The engine's decision with what the governor knows added."""
        return self.policy.decide(
            taint=sorted(self.taint),
            principal=self.principal,
            cwd=self.cwd,
            assigns=self.assigns,
            **request,
        )

    async def _approve(self, server: str, name: str, arguments: Dict[str, Any], d: Decision) -> bool:
        if self.approver is None:
            return False
        answer = self.approver(server, name, arguments, d)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer is True


class GovernedSession:
    """A `ClientSession` whose listings, calls, reads and gets are governed.
    Anything else is the wrapped session's, unchanged."""

    def __init__(self, governor: Governor, session: Any, server: str) -> None:
        self.governor = governor
        self.inner = session
        self.server = server
        self._listed: Dict[str, Dict[str, Any]] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def list_tools(self, *args: Any, **kwargs: Any) -> types.ListToolsResult:
        """The server's tools less those the policy hides from the model."""
        result = await self.inner.list_tools(*args, **kwargs)
        listed = {t.name: _definition(t) for t in result.tools}
        self._listed.update(listed)
        self.governor._saw_listing(self.server, listed)
        result.tools = [t for t in result.tools if self.governor.policy.is_visible(self.server, t.name)]
        return result

    def _refused(self, d: Decision, reason: Optional[str] = None) -> types.CallToolResult:
        text = d.refusal_text(reason)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)

    def decide_call(self, name: str, arguments: Dict[str, Any]) -> Optional[Decision]:
        """The engine's decision on calling a listed tool, with what the
        session knows (its definition, the lock, the taint); None for a tool
        the session has not listed or the policy hides (an unknown tool)."""
        definition = self._listed.get(name)
        if definition is None or not self.governor.policy.is_visible(self.server, name):
            return None
        return self.governor.decide(
            tool=f"{self.server}/{name}",
            args=arguments,
            tool_def=definition,
            lock=self.governor._lock(),
            approver=self.governor.approver is not None,
        )

    async def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None, *args: Any, **kwargs: Any) -> Any:
        """Decides the call; allowed (or approved) calls go through and
        taint the governor with this server, others come back as an error
        result naming the decision, the reason and the rule."""
        if name not in self._listed:
            # A tool the session never listed: list now, so its definition
            # (and the pin) is known; one the server does not list is
            # refused as an unknown tool.
            await self.list_tools()
        arguments = dict(arguments or {})
        d = self.decide_call(name, arguments)
        if d is None:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True
            )
        if d.decision == "ask":
            try:
                approved = await self.governor._approve(self.server, name, arguments, d)
            except Exception:
                # An approver that fails has not approved.
                return self._refused(d, "ask_failed")
            if not approved:
                return self._refused(d, "ask_denied")
        elif d.decision != "allow":
            return self._refused(d)
        result = await self.inner.call_tool(name, arguments, *args, **kwargs)
        self.governor.taint.add(self.server)
        return result

    async def read_resource(self, uri: Any, *args: Any, **kwargs: Any) -> Any:
        """Decides the read (resource reads have no approver); raises
        `Refused` unless it is allowed."""
        d = self.governor.decide(resource=f"{self.server}/{uri}", approver=False)
        if not d.allowed:
            raise Refused(d, d.refusal_text())
        result = await self.inner.read_resource(uri, *args, **kwargs)
        self.governor.taint.add(self.server)
        return result

    async def get_prompt(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Decides the get (prompt gets have no approver); raises `Refused`
        unless it is allowed."""
        d = self.governor.decide(prompt=f"{self.server}/{name}", approver=False)
        if not d.allowed:
            raise Refused(d, d.refusal_text())
        result = await self.inner.get_prompt(name, *args, **kwargs)
        self.governor.taint.add(self.server)
        return result
