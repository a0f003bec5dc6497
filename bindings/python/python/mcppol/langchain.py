"""LangChain v1 agent middleware: every tool call decided by the engine.

    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver
    import mcppol.langchain

    agent = create_agent(model, tools=[fetch_page, send_email],
                         middleware=mcppol.langchain.middleware(
                             policy, tools=[fetch_page, send_email],
                             servers={"fetch_page": "web", "send_email": "mail"}),
                         checkpointer=InMemorySaver())

`middleware()` returns two middlewares, in this order:

- `PolicyMiddleware` decides each tool call: an allowed call runs, a denied
  one comes back to the model as an error `ToolMessage` whose text names
  the decision, the reason and the rule (the words `mcppol proxy` uses);
- LangChain's own `HumanInTheLoopMiddleware` (per-call interrupts) gates
  exactly the calls the engine answers `ask`: the run pauses on a LangGraph
  interrupt and the reviewer's `approve` or `reject` settles it.

A tool is named to the policy as `SERVER/TOOL`: `servers` maps a tool name
to its server id (else `server`). Taint is what is in the conversation: the
servers of the tools whose results are among the agent's messages.

Deciding is the engine's; this module maps its decision. `PolicyMiddleware`
alone (without the interrupt middleware) has no approver, so the engine
denies what it would ask (`no_approver`).

Needs `langchain` 1.x (the extra `mcppol[langchain]`).
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Dict, Iterable, List, Optional, Sequence, Union

from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware
from langchain_core.messages import ToolMessage

from mcppol._mcppol import Decision, Policy

__all__ = ["PolicyMiddleware", "middleware"]


def _name_of(tool: Any) -> str:
    return tool if isinstance(tool, str) else tool.name


class PolicyMiddleware(AgentMiddleware):
    """Decides every tool call of a LangChain agent with a policy."""

    def __init__(
        self,
        policy: Policy,
        *,
        server: str = "tools",
        servers: Optional[Dict[str, str]] = None,
        principal: Optional[str] = None,
        approver: bool = False,
        gated: Iterable[str] = (),
    ) -> None:
        super().__init__()
        #: The tools whose asks an interrupt settles; an ask for any other
        #: tool is refused, so no ask ever runs unreviewed.
        self.gated = frozenset(gated)
        self.policy = policy
        self.server = server
        self.servers = dict(servers or {})
        self.principal = principal
        self.approver = approver

    def server_of(self, tool: str) -> str:
        """The server id a tool is named under."""
        return self.servers.get(tool, self.server)

    def taint_of(self, state: Any) -> List[str]:
        """The servers whose tool results are in the conversation."""
        messages = state.get("messages", []) if isinstance(state, dict) else getattr(state, "messages", [])
        return sorted({self.server_of(m.name) for m in messages if isinstance(m, ToolMessage) and m.name})

    def decide(self, request: Any) -> Decision:
        """The engine's decision on one tool call request."""
        call = request.tool_call
        name = call["name"]
        return self.policy.decide(
            tool=f"{self.server_of(name)}/{name}",
            args=dict(call.get("args") or {}),
            taint=self.taint_of(request.state),
            principal=self.principal,
            approver=self.approver,
        )

    def asks(self, request: Any) -> bool:
        """Whether the engine answers this call with `ask` (the interrupt's `when`)."""
        return self.decide(request).decision == "ask"

    def _refusal(self, request: Any) -> Optional[ToolMessage]:
        try:
            d = self.decide(request)
        except Exception as e:  # a call that cannot be decided does not run
            text = f"mcppol refused this call: it could not be decided ({e})."
            return self._message(request, text)
        if d.decision == "allow":
            return None
        if d.decision == "ask" and self.approver and request.tool_call["name"] in self.gated:
            return None
        return self._message(request, d.refusal_text())

    @staticmethod
    def _message(request: Any, text: str) -> ToolMessage:
        call = request.tool_call
        return ToolMessage(content=text, tool_call_id=call["id"], name=call["name"], status="error")

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        refused = self._refusal(request)
        return refused if refused is not None else handler(request)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        refused = self._refusal(request)
        return refused if refused is not None else await handler(request)


def middleware(
    policy: Policy,
    *,
    tools: Iterable[Any],
    server: str = "tools",
    servers: Optional[Dict[str, str]] = None,
    principal: Optional[str] = None,
) -> Sequence[AgentMiddleware]:
    """The policy middleware and the interrupt that settles its asks, for
    `create_agent(..., middleware=...)` (the agent needs a checkpointer)."""
    names = [_name_of(t) for t in tools]
    gate = PolicyMiddleware(
        policy, server=server, servers=servers, principal=principal, approver=True, gated=names
    )
    interrupt_on: Dict[str, Union[bool, Dict[str, Any]]] = {
        name: {"allowed_decisions": ["approve", "reject"], "when": gate.asks} for name in names
    }
    return [gate, HumanInTheLoopMiddleware(interrupt_on=interrupt_on, interrupt_mode="per_call")]
