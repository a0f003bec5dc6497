'use strict'
// docs/node.md's examples: every ```js block, each run as its own script
// (an ES module when it imports) from the root of the checkout, with
// `mcppol` resolving to this package. The `// ` lines that end a block are
// what it must print last, so the page cannot drift.

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const PACKAGE = path.resolve(__dirname, '..')
const ROOT = path.resolve(PACKAGE, '../..')
const PAGE = path.join(ROOT, 'docs/node.md')
const BIN = path.join(ROOT, '.e2e/node/node_modules/.bin')
// Inside the package, so that `require('mcppol')` resolves to it.
const SCRATCH = path.join(PACKAGE, 'test/.docs-run')

function blocks() {
  const lines = fs.readFileSync(PAGE, 'utf8').split('\n')
  const out = []
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trimEnd() !== '```js') continue
    const start = i + 1
    let end = start
    while (lines[end].trimEnd() !== '```') end++
    out.push({ line: start + 1, code: lines.slice(start, end).join('\n') })
    i = end
  }
  return out
}

function shown(code) {
  const lines = code.split('\n')
  const out = []
  for (let i = lines.length - 1; i >= 0 && (lines[i] === '//' || lines[i].startsWith('// ')); i--) {
    out.unshift(lines[i].slice(3))
  }
  return out
}

const examples = blocks()

test('the page has its examples', () => {
  assert.ok(examples.length >= 6, `docs/node.md has ${examples.length} js examples`)
})

fs.rmSync(SCRATCH, { recursive: true, force: true })
fs.mkdirSync(SCRATCH, { recursive: true })
test.after(() => fs.rmSync(SCRATCH, { recursive: true, force: true }))

for (const { line, code } of examples) {
  const needsServer = code.includes('mcp-server-everything')
  const skip = needsServer && !fs.existsSync(path.join(BIN, 'mcp-server-everything')) ? 'server-everything is not installed: run .ci/e2e-deps' : false
  test(`docs/node.md:${line}`, { skip }, () => {
    const file = path.join(SCRATCH, `example-${line}.${/^import /m.test(code) ? 'mjs' : 'js'}`)
    fs.writeFileSync(file, code + '\n')
    const printed = execFileSync(process.execPath, [file], {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: 60000,
      env: { ...process.env, PATH: `${BIN}${path.delimiter}${process.env.PATH}` },
    })
    const want = shown(code)
    const got = printed.replace(/\n$/, '').split('\n')
    assert.deepEqual(got.slice(got.length - want.length), want, `docs/node.md:${line} printed:\n${printed}`)
  })
}
