/** One request: a tool call, resource read or prompt get, and what a policy may read of it. */
export interface Request {
  /** A tool call: `"server/tool"` (split at the first `/`). */
  tool?: string
  /** A resource read: `"server/uri"`. */
  resource?: string
  /** A prompt get: `"server/name"`. */
  prompt?: string
  /** The call's arguments (a plain object). */
  args?: Record<string, unknown>
  /** The tool's MCP `annotations`. Overrides those of `toolDef`. */
  annotations?: Record<string, unknown>
  /** The tool's whole `tools/list` entry: its annotations and current fingerprint. */
  toolDef?: Record<string, unknown>
  /** The lock file's content (`{version: 1, tools: {...}}`), as an object or its JSON text; needs `toolDef`. */
  lock?: Record<string, unknown> | string
  /** Instead of `lock`: the tool's standing stated (default `"approved"`). */
  approval?: 'approved' | 'new' | 'changed'
  /** Servers whose output is already in the model's context. */
  taint?: string[]
  /** The host cannot tell what is in the model's context: every `tainted` test fails closed. */
  taintUnknown?: boolean
  /** Who the call is made for. */
  principal?: string
  /** Whether a person can be asked (default true); without one, `ask` becomes `deny`. */
  approver?: boolean
  /** The folder the agent works in (`$CWD` roots, relative paths). */
  cwd?: string
  /** Host data for `assigns.KEY`. */
  assigns?: Record<string, unknown>
  /** The host trusts this server's annotations. */
  trustServer?: boolean
  /** The tool acts on this machine: path tests resolve symbolic links. */
  localTool?: boolean
}

/** The engine's answer. */
export interface Decision {
  decision: 'allow' | 'ask' | 'deny'
  /** The stage that decided: visibility, deny, pin, ask, allow, default, request, protected. */
  source: string
  /** Why: deny_rule, ask_rule, allow_rule, no_rule, no_approver, ... */
  reason: string
  /** The deciding rule's id, or null when no rule decided. */
  ruleId: string | null
  /** The name of the policy that decided (null for `no_policy`). */
  policy: string | null
  /** The 1-based line of the deciding rule, or null. */
  line: number | null
  /** Whether the call goes through without asking (`decision === "allow"`). */
  allowed: boolean
}

/** One diagnostic of a policy that does not load. */
export interface Diagnostic {
  code: string
  severity: 'error' | 'warning'
  file: string
  line: number
  column: number
  message: string
  help: string | null
}

/** A policy that does not load: `message` is the rendered diagnostic. */
export declare class PolicyError extends Error {
  readonly name: 'PolicyError'
  readonly diagnostics: Diagnostic[]
}

/** One loaded policy. */
export declare class Policy {
  private constructor(handle: unknown)
  /** Reads and loads a policy file; `name` picks one of several. */
  static fromFile(path: string, options?: { name?: string }): Policy
  /** Loads policy text; `origin` names it in diagnostics (default `<string>`). */
  static fromString(text: string, options?: { name?: string; origin?: string }): Policy
  /** The policy's name. */
  readonly name: string
  /** Decides one request. Throws a TypeError on a malformed request. */
  decide(request: Request): Decision
  /** Explains one request: the text `mcppol explain` prints. */
  explain(request: Request, options?: { format?: 'text' }): string
  /** Explains one request as the JSON object `mcppol explain --format json` prints. */
  explain(request: Request, options: { format: 'json' }): Record<string, unknown>
  /** Whether the policy's `tools {}` block lets the model see `server/tool`. */
  isVisible(server: string, tool: string): boolean
}

/** Named policies from files and folders, hot-reloaded unless `{watch: false}` (the last good version is kept). */
export declare class Store {
  /** `poll`: read the files every second instead of relying on file events. */
  constructor(paths: string | string[], options?: { watch?: boolean; poll?: boolean })
  /** How many times the policies in force have been swapped. */
  readonly generation: number
  /**
   * Replaces a policy (by name, or a file the store holds) with new text;
   * throws `PolicyError` and keeps the old one if it does not load.
   * Returns the new generation.
   */
  update(nameOrFile: string, text: string): number
  /** Reads every file now and loads the changed ones (file counts). */
  reload(): { loaded: number; failed: number; removed: number }
  /** Decides one request against the policy `name` (not loaded: deny, `no_policy`). */
  decide(name: string, request: Request): Decision
  /** Files, policies, generations and last errors. */
  status(): Record<string, unknown>
  /** The names of the policies in force. */
  names(): string[]
  /** Stops hot reload; the policies in force stay. */
  close(): void
}

/**
 * The text a model reads for a call that did not go through, as the proxy
 * words it. `reason` replaces the decision's own (`ask_denied`, say).
 */
export declare function refusalText(decision: Decision, reason?: string): string

/** The fingerprint `mcppol lock` records for a tool's `tools/list` entry (`sha256:...`). */
export declare function fingerprint(toolDef: Record<string, unknown>): string
