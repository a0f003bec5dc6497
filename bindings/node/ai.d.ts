import type { Decision, Policy, Store } from './index'

/** How tool names of the AI SDK become `server/tool` requests, and what else is known. */
export interface ToolApprovalOptions {
  /** The server id of every tool not in `servers` (default `"local"`). */
  server?: string
  /** The server id of each tool by its name (`{fetch: "web", sendEmail: "mail"}`). */
  servers?: Record<string, string>
  /** With a Store: the policy's name. */
  name?: string
  /** Servers whose output is in the context from the start (the tool results in `messages` are added). */
  taint?: string[]
  /** Who the calls are made for. */
  principal?: string
  /** Whether a person can be asked (default true); without one an ask is denied. */
  approver?: boolean
  /** The folder the agent works in. */
  cwd?: string
  /** Called with each decision (for an audit log). */
  onDecision?: (toolCall: { toolName: string; toolCallId: string; input: unknown }, decision: Decision) => void
}

/** The AI SDK's approval statuses this function returns. */
export type ApprovalStatus =
  | { type: 'approved'; reason: string }
  | { type: 'denied'; reason: string }
  | { type: 'user-approval'; reason: string }

/**
 * A `toolApproval` function (the AI SDK's `GenericToolApprovalFunction`):
 * allow runs the tool, deny returns the refusal to the model, ask goes to
 * the SDK's manual approval. A call that cannot be decided is denied.
 */
export declare function toolApproval(
  policy: Policy | Store,
  options?: ToolApprovalOptions,
): (options: { toolCall: { toolName: string; toolCallId: string; input: unknown }; messages?: unknown[] }) => ApprovalStatus
