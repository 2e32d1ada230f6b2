// scripts/prelink-script.mjs: a bundled ES module turned into a function script plus a module of
// its imports must mean what the module meant: the same bindings, the same import order, import()
// still working, strings that merely look like imports untouched, and the same line numbers.
// Anything the transform does not handle must fail the build, not ship.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Script } from 'node:vm'
import { afterEach, expect, it } from 'vitest'

type ToScript = (
  text: string,
  id: string,
  expected?: number,
) => Promise<{ script: string; imports: string; warnings: string[] }>
const { toScript } = (await import(
  pathToFileURL(join(import.meta.dirname, '../../../../scripts/prelink-script.mjs')).href
)) as { toScript: ToScript }

const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** Writes the pair, imports the imports module and runs the script: its exports. */
async function run(
  text: string,
  expected?: number,
): Promise<{ exports: Record<string, unknown>; script: string; imports: string }> {
  const { script, imports } = await toScript(text, 'stack-test', expected)
  const dir = mkdtempSync(join(tmpdir(), 'dsh-prelink-script-'))
  dirs.push(dir)
  writeFileSync(join(dir, 'stack-test.imports.mjs'), imports)
  const mod = (await import(pathToFileURL(join(dir, 'stack-test.imports.mjs')).href)) as {
    imports: unknown[]
    load: (s: string) => Promise<unknown>
  }
  const fn = new Script(script, { filename: join(dir, 'stack-test.script.js') }).runInThisContext() as (
    i: unknown[],
    l: unknown,
  ) => Promise<Record<string, unknown>>
  return { exports: await fn(mod.imports, mod.load), script, imports }
}

// What esbuild writes for a bundle with externals: one-line and wrapped imports, default,
// namespace and mixed forms, a side-effect import, an import() and one export at the end.
const BUNDLE = [
  'import { join, sep as separator } from "node:path";',
  'import * as os from "node:os";',
  'import fs from "node:fs";',
  'import util, { format } from "node:util";',
  'import "node:url";',
  'import {',
  '  EventEmitter,',
  '  once as onceEvent',
  '} from "node:events";',
  '',
  '// a comment saying import x from "nowhere"',
  "var text = \"import y from 'nowhere'; import('nowhere')\";",
  'var template = `export { nothing }`;',
  'var lazy = () => import("node:crypto");',
  'function fails() { throw new Error("line 15") }',
  'var modules = { join: join("a", "b"), separator, platform: os.platform(), readFile: typeof fs.readFileSync, util: typeof util.inspect, format: format("%d", 1), emitter: typeof EventEmitter, onceEvent: typeof onceEvent, text, template, lazy, fails };',
  'export {',
  '  modules',
  '};',
  '',
].join('\n')

it('keeps every binding, strings and comments, and import()', async () => {
  const { exports } = await run(BUNDLE, 6)
  const modules = exports.modules as Record<string, unknown>
  expect(modules).toMatchObject({
    join: 'a/b',
    separator: '/',
    readFile: 'function',
    util: 'function',
    format: '1',
    emitter: 'function',
    onceEvent: 'function',
    text: "import y from 'nowhere'; import('nowhere')",
    template: 'export { nothing }',
  })
  expect(typeof modules.platform).toBe('string')
  const crypto = await (modules.lazy as () => Promise<{ createHash?: unknown }>)()
  expect(typeof crypto.createHash).toBe('function')
})

it("imports the specifiers in the module's order, and keeps its line numbers", async () => {
  const { exports, imports } = await run(BUNDLE)
  expect([...imports.matchAll(/^import \* as i\d+ from "([^"]+)"$/gm)].map((m) => m[1])).toEqual([
    'node:path',
    'node:os',
    'node:fs',
    'node:util',
    'node:url',
    'node:events',
  ])
  let stack = ''
  try {
    ;(exports.modules as Record<string, () => void>).fails()
  } catch (error) {
    stack = (error as Error).stack ?? ''
  }
  expect(stack).toMatch(/stack-test\.script\.js:15:/)
})

it('fails the build on what it cannot carry over', async () => {
  // A count that differs from esbuild's: some import was not found.
  await expect(toScript(BUNDLE, 'stack-test', 7)).rejects.toThrow(/found 6 import statements, esbuild reports 7/)
  await expect(toScript('var u = import.meta.url;\nexport { u };\n', 'stack-test')).rejects.toThrow(
    /import\.meta|not handled/,
  )
  await expect(toScript('var a = 1, b = 2;\nexport { a };\nexport { b };\n', 'stack-test')).rejects.toThrow(
    /2 export statements/,
  )
  await expect(toScript('var a = 1;\n', 'stack-test')).rejects.toThrow(/0 export statements/)
  await expect(
    toScript('import data from "./x.json" with { type: "json" };\nexport { data };\n', 'stack-test'),
  ).rejects.toThrow(/not handled/)
  await expect(toScript('var a = ;\nexport { a };\n', 'stack-test')).rejects.toThrow()
})

it('warns about a non-ASCII character (one makes the whole script a two-byte string), naming its line', async () => {
  expect((await toScript(BUNDLE, 'stack-test')).warnings).toEqual([])
  const wide = BUNDLE.replace('var lazy', 'var quotes = /[\\u201C\\u201D]/;\nvar curly = /[“”]/;\nvar lazy')
  const { warnings } = await toScript(wide, 'stack-test')
  expect(warnings).toHaveLength(1)
  expect(warnings[0]).toMatch(/stack-test has a non-ASCII character on line 15 .*curly/)
})

it('takes a default-only import of a CommonJS file through require(), in import order, as the same object', async () => {
  // A package of CommonJS files (no "type": "module") and an ES module, each recording when it
  // evaluates; the bundle imports them in the order es, cjs (default), cjs (named), es.
  // A folder named as pnpm names a patched package's (`=` in it) must still be taken.
  const parent = mkdtempSync(join(tmpdir(), 'dsh-prelink-cjs-'))
  dirs.push(parent)
  const pkg = join(parent, 'cjs@1.0.0_patch_hash=ab12')
  mkdirSync(pkg)
  writeFileSync(join(pkg, 'package.json'), '{ "name": "cjs-fixture" }\n')
  const order = 'globalThis.__prelinkOrder ??= []; globalThis.__prelinkOrder.push'
  writeFileSync(join(pkg, 'first.mjs'), `${order}('first');\nexport const first = 1;\n`)
  writeFileSync(join(pkg, 'lib.js'), `${order}('lib');\nmodule.exports = { made: Symbol('lib') };\n`)
  writeFileSync(join(pkg, 'named.cjs'), `${order}('named');\nexports.value = 42;\n`)
  writeFileSync(join(pkg, 'last.mjs'), `${order}('last');\nexport const last = 2;\n`)
  const url = (file: string) => pathToFileURL(join(pkg, file)).href
  const bundle = [
    `import { first } from "${url('first.mjs')}";`,
    `import lib from "${url('lib.js')}";`,
    `import { value } from "${url('named.cjs')}";`,
    `import { last } from "${url('last.mjs')}";`,
    'var modules = { first, lib, value, last };',
    'export {',
    '  modules',
    '};',
    '',
  ].join('\n')
  const { exports, imports } = await run(bundle, 4)
  const specifiers = [...imports.matchAll(/^import \* as i\d+ from "([^"]+)"$/gm)].map((m) => m[1])
  // The default-only import of lib.js is a data: module that requires it; the named import of a
  // CommonJS file needs Node's lexer (its names) and stays an import of the file.
  expect(specifiers[0]).toBe(url('first.mjs'))
  expect(specifiers[1]).toMatch(/^data:text\/javascript,/)
  expect(decodeURIComponent(specifiers[1])).toContain('createRequire')
  // The file's URL stays verbatim in the specifier, ending at a quote: the npm package's first
  // start moves build paths by text replacement and checks every `file:///` it finds exists.
  expect([...specifiers[1]!.matchAll(/file:\/\/\/[^"'`\s)]+/g)].map((m) => m[0])).toEqual([
    url('lib.js'),
    url('lib.js'),
  ])
  expect(specifiers.slice(2)).toEqual([url('named.cjs'), url('last.mjs')])
  const modules = exports.modules as { first: number; lib: unknown; value: number; last: number }
  expect(modules).toMatchObject({ first: 1, value: 42, last: 2 })
  // The very object require() gives every other importer (Node's loader shares that cache).
  expect(modules.lib).toBe(createRequire(import.meta.url)(join(pkg, 'lib.js')))
  expect((globalThis as { __prelinkOrder?: string[] }).__prelinkOrder).toEqual(['first', 'lib', 'named', 'last'])
})
