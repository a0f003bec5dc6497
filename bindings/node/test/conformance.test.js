'use strict'
// The design's conformance cases (tests/fixtures/conformance/*.jsonl, the
// contract `mcppol eval` is checked against), decided through
// `Policy.decide`: each case's `eval` flags become the request object and
// the expected fields are compared, as shared/conformance/run.py does for
// the CLI. A flag the translation does not know fails the case: none is
// skipped.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { Policy } = require('..')

const FIXTURES = path.resolve(__dirname, '../../../tests/fixtures/conformance')

const TEXT_FLAGS = { '--tool': 'tool', '--resource': 'resource', '--prompt': 'prompt', '--principal': 'principal', '--cwd': 'cwd' }
const JSON_FLAGS = { '--args': 'args', '--annotations': 'annotations', '--assigns': 'assigns', '--tool-def': 'toolDef', '--lock': 'lock' }
const SWITCHES = {
  '--no-approver': ['approver', false],
  '--trust-server': ['trustServer', true],
  '--taint-unknown': ['taintUnknown', true],
  '--local-tool': ['localTool', true],
}
// The CLI's snake_case output fields, as the JS decision names them.
const FIELD = { rule_id: 'ruleId' }

function jsonValue(arg, files) {
  for (const prefix of ['@$', '$']) {
    if (arg.startsWith(prefix) && arg.slice(prefix.length) in files) return files[arg.slice(prefix.length)]
  }
  return JSON.parse(arg)
}

function translate(argv, files) {
  let name
  const request = {}
  for (let i = 0; i < argv.length; ) {
    const flag = argv[i]
    if (flag in SWITCHES) {
      const [key, value] = SWITCHES[flag]
      request[key] = value
      i += 1
      continue
    }
    assert.ok(i + 1 < argv.length, `flag ${flag} has no value`)
    const value = argv[i + 1]
    if (flag === '--name') name = value
    else if (flag === '--taint') (request.taint ??= []).push(value)
    else if (flag in TEXT_FLAGS) request[TEXT_FLAGS[flag]] = value
    else if (flag in JSON_FLAGS) request[JSON_FLAGS[flag]] = jsonValue(value, files)
    else assert.fail(`the Node API has no translation for ${flag}`)
    i += 2
  }
  return { name, request }
}

const cases = fs
  .readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .flatMap((f) =>
    fs
      .readFileSync(path.join(FIXTURES, f), 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l)),
  )

test('the cases are there', () => {
  assert.ok(cases.length >= 59, `only ${cases.length} cases under ${FIXTURES}`)
})

for (const c of cases) {
  test(c.id, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcppol-conf-'))
    try {
      const file = path.join(dir, 'policy.mcppol')
      fs.writeFileSync(file, c.policy)
      const { name, request } = translate(c.argv, c.files ?? {})
      const got = Policy.fromFile(file, { name }).decide(request)
      for (const [key, want] of Object.entries(c.expect)) {
        assert.deepEqual(got[FIELD[key] ?? key], want, `${c.id}: ${key}`)
      }
      // The same text from a string decides the same, bar nothing.
      assert.deepEqual(Policy.fromString(c.policy, { name }).decide(request), got)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
}
