'use strict'
// The Vercel AI SDK (`ai` 7): a `toolApproval` function from a policy.
// Every tool call the model makes is decided by the engine before the SDK
// runs it: allow runs it, deny returns the refusal to the model, ask goes
// to the SDK's own manual approval (a `tool-approval-request` the host
// answers). Taint is read from the conversation: a tool result already in
// `messages` taints the server of that tool. Any failure to decide denies.

const { refusalText } = require('./index.js')

function serverOf(options, toolName) {
  const servers = options.servers ?? {}
  return Object.prototype.hasOwnProperty.call(servers, toolName) ? servers[toolName] : (options.server ?? 'local')
}

// The servers whose tools' output is in the messages the model was sent.
function taintFrom(options, messages) {
  const taint = new Set(options.taint ?? [])
  for (const message of messages ?? []) {
    if (!Array.isArray(message?.content)) continue
    for (const part of message.content) {
      if (part?.type === 'tool-result' && typeof part.toolName === 'string') {
        taint.add(serverOf(options, part.toolName))
      }
    }
  }
  return [...taint]
}

/**
 * A `toolApproval` function for `generateText`, `streamText` or
 * `ToolLoopAgent` that asks `policy` (a Policy, or a Store with `name`)
 * about every tool call.
 */
function toolApproval(policy, options = {}) {
  const decide =
    typeof options.name === 'string' ? (request) => policy.decide(options.name, request) : (request) => policy.decide(request)
  return ({ toolCall, messages }) => {
    let decision
    try {
      const request = {
        tool: `${serverOf(options, toolCall.toolName)}/${toolCall.toolName}`,
        args: toolCall.input ?? {},
        taint: taintFrom(options, messages),
        approver: options.approver ?? true,
      }
      if (options.principal !== undefined) request.principal = options.principal
      if (options.cwd !== undefined) request.cwd = options.cwd
      decision = decide(request)
    } catch (e) {
      // Fail closed: a call the engine could not decide does not run.
      return { type: 'denied', reason: `mcppol could not decide this call, so it is denied: ${e?.message ?? e}` }
    }
    // A throwing audit hook fails the SDK's run: the call does not go through.
    if (typeof options.onDecision === 'function') options.onDecision(toolCall, decision)
    switch (decision.decision) {
      case 'allow':
        return { type: 'approved', reason: `mcppol: ${decision.reason} ${decision.ruleId ?? ''}`.trimEnd() }
      case 'ask':
        return {
          type: 'user-approval',
          reason: `mcppol asks: ${decision.reason}, rule ${decision.ruleId ?? 'none'}, policy ${decision.policy ?? 'none'}`,
        }
      default:
        return { type: 'denied', reason: refusalText(decision) }
    }
  }
}

module.exports = { toolApproval }
