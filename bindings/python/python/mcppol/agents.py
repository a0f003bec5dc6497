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

Needs `openai-agents` (the extra `mcppol[agents]`).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Set

from agents import FunctionTool
from agents.tool_guardrails import (
    ToolGuardrailFunctionOutput,
    ToolInputGuardrail,
    ToolInputGuardrailData,
    ToolOutputGuardrail,
    ToolOutputGuardrailData,
)

from mcppol._mcppol import Decision, Policy

__all__ = ["PolicyGuard"]


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
