import type { Decision, Policy } from './index'

/** Settles an ask: `(server, tool, args, decision)`; true (or a promise of true) lets the call through. */
export type Approver = (server: string, tool: string, args: Record<string, unknown>, decision: Decision) => boolean | Promise<boolean>

/** A resource read or prompt get that did not go through. */
export declare class Refused extends Error {
  readonly name: 'Refused'
  readonly decision: Decision
}

/** Governs MCP clients with one policy; taint is shared by all its clients. */
export declare class Governor {
  constructor(
    policy: Policy,
    options?: {
      /** Settles asks; without one, asks are denied (`no_approver`). */
      approver?: Approver
      /** A lock file's JSON; without one, each server's first listing is the approved baseline. */
      lock?: Record<string, unknown>
      principal?: string
      cwd?: string
      assigns?: Record<string, unknown>
    },
  )
  readonly policy: Policy
  /** Servers whose output came back to the host, through any client. */
  readonly taint: Set<string>
  /** Wraps a connected `Client` of the server the policy calls `server`. */
  client<C extends McpClientLike>(client: C, server: string): GovernedClient<C>
}

/** What the governed client needs of the MCP SDK's `Client`. */
export interface McpClientLike {
  listTools(params?: unknown, options?: unknown): Promise<{ tools: Array<{ name: string }> }>
  callTool(params: { name: string; arguments?: Record<string, unknown> }, resultSchema?: unknown, options?: unknown): Promise<unknown>
  readResource(params: { uri: string }, options?: unknown): Promise<unknown>
  getPrompt(params: { name: string; arguments?: Record<string, string> }, options?: unknown): Promise<unknown>
  listResources(params?: unknown, options?: unknown): Promise<unknown>
  listPrompts(params?: unknown, options?: unknown): Promise<unknown>
  close(): Promise<void>
}

/** A `Client` whose listings, calls, reads and gets are governed. */
export declare class GovernedClient<C extends McpClientLike = McpClientLike> {
  readonly inner: C
  readonly server: string
  /** The server's tools less those the policy hides. */
  listTools(...args: Parameters<C['listTools']>): ReturnType<C['listTools']>
  /** Decides the call: allowed or approved calls go through; others are an error result naming the rule. */
  callTool(...args: Parameters<C['callTool']>): Promise<any>
  /** Decides the read; throws `Refused` unless allowed. */
  readResource(...args: Parameters<C['readResource']>): ReturnType<C['readResource']>
  /** Decides the get; throws `Refused` unless allowed. */
  getPrompt(...args: Parameters<C['getPrompt']>): ReturnType<C['getPrompt']>
  listResources(...args: Parameters<C['listResources']>): ReturnType<C['listResources']>
  listPrompts(...args: Parameters<C['listPrompts']>): ReturnType<C['listPrompts']>
  close(): Promise<void>
}
