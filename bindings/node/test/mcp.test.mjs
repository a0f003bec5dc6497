// The governed client against the real @modelcontextprotocol/server-everything
// (installed into .e2e/node by .ci/e2e-deps) through the real TypeScript MCP
// SDK: listings filtered by visibility, every call decided, asks settled
// by the approver, taint shared by the clients of one governor, reads and
// gets decided.

import test from 'node:test'
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import mcppol from '../index.js'
import mcppolMcp from '../mcp.js'

const { Policy } = mcppol
const { Governor, Refused } = mcppolMcp

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const SERVER = path.join(ROOT, '.e2e/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js')
const skip = fs.existsSync(SERVER) ? false : `server-everything is not installed: run .ci/e2e-deps (looked for ${SERVER})`

const POLICY = Policy.fromString(`policy agent {
  scope tools, resources, prompts
  default deny
  tools { exclude "*/get-env" }
  deny  "ops/toggle-*" when tainted(ignore: ["ops"])
  ask   "ops/get-sum"
  allow "docs/echo", "ops/echo", "ops/toggle-*", "ops/get-sum"
  allow resource "docs/demo://resource/static/*"
  allow prompt "docs/simple-prompt"
}`)

async function connect() {
  const client = new Client({ name: 'mcppol-test', version: '0.1.0' })
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [SERVER, 'stdio'], stderr: 'ignore' }))
  return client
}

function text(result) {
  return result.content.map((c) => c.text).join('\n')
}

test('the governed client against server-everything', { skip }, async (t) => {
  const docsRaw = await connect()
  const opsRaw = await connect()
  t.after(() => Promise.all([docsRaw.close(), opsRaw.close()]))
  const asked = []
  let answer = true
  const governor = new Governor(POLICY, {
    approver: async (server, tool, args, decision) => {
      asked.push([server, tool, args, decision.reason])
      return answer
    },
  })
  const docs = governor.client(docsRaw, 'docs')
  const ops = governor.client(opsRaw, 'ops')

  await t.test('listings leave out what the policy hides', async () => {
    const names = (await ops.listTools()).tools.map((x) => x.name)
    assert.ok(names.includes('echo'), names.join(', '))
    assert.ok(!names.includes('get-env'), names.join(', '))
    const hidden = await ops.callTool({ name: 'get-env', arguments: {} })
    assert.deepEqual(hidden, { content: [{ type: 'text', text: 'Unknown tool: get-env' }], isError: true })
  })

  await t.test('an untainted toggle is allowed, a call with no rule is denied', async () => {
    const allowed = await ops.callTool({ name: 'toggle-simulated-logging', arguments: {} })
    assert.ok(!allowed.isError, JSON.stringify(allowed))
    const denied = await ops.callTool({ name: 'get-tiny-image', arguments: {} })
    assert.equal(denied.isError, true)
    assert.equal(text(denied), 'mcppol refused this call: decision deny, reason no_rule, rule none, policy agent. Do not retry the same call; a person can change the policy.')
  })

  await t.test('an ask goes to the approver: yes runs, no is refused', async () => {
    const yes = await ops.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } })
    assert.match(text(yes), /5/)
    answer = false
    const no = await ops.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } })
    assert.equal(no.isError, true)
    assert.match(text(no), /decision deny, reason ask_denied, rule ask:0 \(policy reason ask_rule\), policy agent/)
    assert.deepEqual(asked.map((a) => a.slice(0, 2)), [['ops', 'get-sum'], ['ops', 'get-sum']])
  })

  await t.test('output read through one client taints a call through another', async () => {
    assert.deepEqual([...governor.taint].sort(), ['ops'])
    const echoed = await docs.callTool({ name: 'echo', arguments: { message: 'from the docs' } })
    assert.equal(text(echoed), 'Echo: from the docs')
    assert.deepEqual([...governor.taint].sort(), ['docs', 'ops'])
    const toggle = await ops.callTool({ name: 'toggle-simulated-logging', arguments: {} })
    assert.equal(toggle.isError, true)
    assert.match(text(toggle), /decision deny, reason deny_rule, rule deny:0/)
  })

  await t.test('reads and gets are decided', async () => {
    const doc = await docs.readResource({ uri: 'demo://resource/static/document/architecture.md' })
    assert.ok(doc.contents.length > 0)
    await assert.rejects(
      ops.readResource({ uri: 'demo://resource/static/document/architecture.md' }),
      (e) => e instanceof Refused && e.decision.reason === 'no_rule',
    )
    const prompt = await docs.getPrompt({ name: 'simple-prompt' })
    assert.ok(prompt.messages.length > 0)
    await assert.rejects(docs.getPrompt({ name: 'args-prompt', arguments: { city: 'Paris' } }), Refused)
  })
})

test('without an approver an ask is denied', { skip }, async (t) => {
  const raw = await connect()
  t.after(() => raw.close())
  const ops = new Governor(POLICY).client(raw, 'ops')
  const result = await ops.callTool({ name: 'get-sum', arguments: { a: 1, b: 1 } })
  assert.match(text(result), /decision deny, reason no_approver, rule ask:0/)
})

test('a tool whose definition differs from the lock is refused', { skip }, async (t) => {
  const raw = await connect()
  t.after(() => raw.close())
  const lock = { version: 1, tools: { 'ops/echo': 'sha256:' + '0'.repeat(64) } }
  const ops = new Governor(POLICY, { lock }).client(raw, 'ops')
  const result = await ops.callTool({ name: 'echo', arguments: { message: 'x' } })
  assert.equal(result.isError, true)
  // The pin asks; with nobody to ask, the engine denies.
  assert.equal(text(result), 'mcppol refused this call: decision deny, reason definition_changed, rule none, policy agent. Do not retry the same call; a person can change the policy.')
})
