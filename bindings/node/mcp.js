'use strict'
// A governed client for the TypeScript MCP SDK: its `Client` with every
// tool call, resource read and prompt get decided by the engine.
//
// This module maps, never decides: the engine (`Policy.decide`) decides
// each request; this module gives it what the clients saw (the tool's
// listed definition, the fingerprints of each server's first listing, the
// servers whose output came back to the host) and maps the decision to
// the SDK's answers: an allowed call goes through, an ask goes to the
// approver callback, a denied call comes back as an error result whose
// text names the decision, the reason and the rule (the words `mcppol
// proxy` uses), and a denied read or get throws `Refused`. Any failure on
// the way (a bad request, an approver that throws) ends in a refusal.
//
// Taint is the governor's, shared by all its clients: output read through
// one server is in the context of a call through another.

const { refusalText, fingerprint } = require('./index.js')

/** A resource read or prompt get that did not go through. */
class Refused extends Error {
  constructor(decision, message) {
    super(message)
    this.name = 'Refused'
    this.decision = decision
  }
}

function refusedResult(text) {
  return { content: [{ type: 'text', text }], isError: true }
}

/** Governs MCP clients with one policy (see docs/node.md). */
class Governor {
  constructor(policy, options = {}) {
    this.policy = policy
    this.approver = options.approver ?? null
    this.principal = options.principal
    this.cwd = options.cwd
    this.assigns = options.assigns
    /** Servers whose output came back to the host, through any client. */
    this.taint = new Set()
    this._givenLock = options.lock ?? null
    this._seen = new Map()
  }

  /** Wraps a connected `Client` of the server the policy calls `server`. */
  client(client, server) {
    return new GovernedClient(this, client, server)
  }

  /** The engine's decision with what the governor knows added. */
  decide(request) {
    const full = { ...request, taint: [...this.taint].sort() }
    if (this.principal !== undefined) full.principal = this.principal
    if (this.cwd !== undefined) full.cwd = this.cwd
    if (this.assigns !== undefined) full.assigns = this.assigns
    return this.policy.decide(full)
  }

  _lock() {
    if (this._givenLock !== null) return this._givenLock
    const tools = {}
    for (const seen of this._seen.values()) Object.assign(tools, seen)
    return { version: 1, tools }
  }

  // The first listing of a server is its baseline; later ones are compared
  // with it by the engine (through the lock).
  _sawListing(server, listed) {
    if (this._seen.has(server)) return
    const seen = {}
    for (const [name, def] of listed) seen[`${server}/${name}`] = fingerprint(def)
    this._seen.set(server, seen)
  }

  async _approve(server, name, args, decision) {
    if (this.approver === null) return false
    return (await this.approver(server, name, args, decision)) === true
  }
}

/** A `Client` whose listings, calls, reads and gets are governed. */
class GovernedClient {
  constructor(governor, client, server) {
    this.governor = governor
    this.inner = client
    this.server = server
    this._listed = new Map()
  }

  /** The server's tools less those the policy hides from the model. */
  async listTools(params, options) {
    const result = await this.inner.listTools(params, options)
    const listed = result.tools.map((t) => [t.name, JSON.parse(JSON.stringify(t))])
    for (const [name, def] of listed) this._listed.set(name, def)
    this.governor._sawListing(this.server, listed)
    return { ...result, tools: result.tools.filter((t) => this.governor.policy.isVisible(this.server, t.name)) }
  }

  /**
   * Decides the call; an allowed (or approved) call goes through and
   * taints the governor with this server, others come back as an error
   * result naming the decision, the reason and the rule.
   */
  async callTool(params, resultSchema, options) {
    const name = params.name
    if (!this._listed.has(name)) await this.listTools()
    const definition = this._listed.get(name)
    if (definition === undefined || !this.governor.policy.isVisible(this.server, name)) {
      return refusedResult(`Unknown tool: ${name}`)
    }
    const args = params.arguments ?? {}
    let decision
    try {
      decision = this.governor.decide({
        tool: `${this.server}/${name}`,
        args,
        toolDef: definition,
        lock: this.governor._lock(),
        approver: this.governor.approver !== null,
      })
    } catch (e) {
      return refusedResult(`mcppol could not decide this call, so it is denied: ${e?.message ?? e}`)
    }
    if (decision.decision === 'ask') {
      let approved
      try {
        approved = await this.governor._approve(this.server, name, args, decision)
      } catch {
        // An approver that fails has not approved.
        return refusedResult(refusalText(decision, 'ask_failed'))
      }
      if (!approved) return refusedResult(refusalText(decision, 'ask_denied'))
    } else if (decision.decision !== 'allow') {
      return refusedResult(refusalText(decision))
    }
    const result = await this.inner.callTool(params, resultSchema, options)
    this.governor.taint.add(this.server)
    return result
  }

  /** Decides the read (reads have no approver); throws `Refused` unless allowed. */
  async readResource(params, options) {
    const decision = this.governor.decide({ resource: `${this.server}/${params.uri}`, approver: false })
    if (!decision.allowed) throw new Refused(decision, refusalText(decision))
    const result = await this.inner.readResource(params, options)
    this.governor.taint.add(this.server)
    return result
  }

  /** Decides the get (gets have no approver); throws `Refused` unless allowed. */
  async getPrompt(params, options) {
    const decision = this.governor.decide({ prompt: `${this.server}/${params.name}`, approver: false })
    if (!decision.allowed) throw new Refused(decision, refusalText(decision))
    const result = await this.inner.getPrompt(params, options)
    this.governor.taint.add(this.server)
    return result
  }

  /** The wrapped client's listing of resources, unchanged. */
  listResources(params, options) {
    return this.inner.listResources(params, options)
  }

  /** The wrapped client's listing of prompts, unchanged. */
  listPrompts(params, options) {
    return this.inner.listPrompts(params, options)
  }

  /** Closes the wrapped client. */
  close() {
    return this.inner.close()
  }
}

module.exports = { Governor, GovernedClient, Refused }
