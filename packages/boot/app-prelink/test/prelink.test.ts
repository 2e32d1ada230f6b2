// loadPrelinked: prelinked layer files are used only when they cover every row and every input
// file is unchanged; otherwise the reason is reported and the boot imports file by file.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, expect, it, vi } from 'vitest'
import { loadPrelinked, readSource } from '../src/index.ts'

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A checkout with one row source file and a prelinked `dsh` variant built from it. */
function checkout() {
  const root = mkdtempSync(join(tmpdir(), 'dsh-prelink-'))
  roots.push(root)
  mkdirSync(join(root, 'pkg/dist'), { recursive: true })
  const source = join(root, 'pkg/dist/index.js')
  writeFileSync(source, 'export const name = "from-file"\n')
  const rowUrl = pathToFileURL(source).href
  const dir = join(root, 'prelinked/dsh')
  mkdirSync(dir, { recursive: true })
  // The layer file exports the row's namespace (what esbuild writes, inlined by hand).
  writeFileSync(
    join(dir, 'bundles-base.mjs'),
    `const ns = Object.freeze({ name: 'from-prelinked' })\nexport const modules = { ${JSON.stringify(rowUrl)}: ns }\n`,
  )
  const st = statSync(source)
  const manifest = {
    variant: 'dsh',
    layers: { 'bundles-base': { modules: [rowUrl] } },
    inputs: [['pkg/dist/index.js', st.size, st.mtimeMs]],
  }
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(manifest))
  return { root, source, rowUrl, dir, manifest }
}

it('serves every covered row from the layer file while its inputs are unchanged', async () => {
  const { root, rowUrl } = checkout()
  const decision = await loadPrelinked([rowUrl], 'dsh', { root, env: {} })
  expect(decision.reason).toBeUndefined()
  expect(await decision.importers![rowUrl]()).toEqual({ name: 'from-prelinked' })
})

it('refuses, with the reason, a changed or missing input, an unlisted row, another variant, DSH_NO_PRELINK', async () => {
  const a = checkout()
  utimesSync(a.source, new Date(), new Date(Date.now() + 5_000))
  expect((await loadPrelinked([a.rowUrl], 'dsh', { root: a.root, env: {} })).reason).toMatch(
    /pkg\/dist\/index\.js changed after prelinking/,
  )

  const b = checkout()
  writeFileSync(b.source, 'export const name = "edited, same mtime is unlikely"\n')
  expect((await loadPrelinked([b.rowUrl], 'dsh', { root: b.root, env: {} })).reason).toMatch(/changed after prelinking/)

  const c = checkout()
  rmSync(c.source)
  expect((await loadPrelinked([c.rowUrl], 'dsh', { root: c.root, env: {} })).reason).toMatch(/is gone/)

  const d = checkout()
  const other = pathToFileURL(join(d.root, 'elsewhere/plugin.js')).href
  const partial = await loadPrelinked([d.rowUrl, other], 'dsh', { root: d.root, env: {} })
  expect(partial.importers).toBeUndefined()
  expect(partial.reason).toBe(`row module ${other} is not prelinked`)

  expect((await loadPrelinked([d.rowUrl], 'acp', { root: d.root, env: {} })).reason).toMatch(/no prelinked modules/)
  mkdirSync(join(d.root, 'prelinked/acp'))
  writeFileSync(join(d.root, 'prelinked/acp/manifest.json'), JSON.stringify({ ...d.manifest }))
  expect((await loadPrelinked([d.rowUrl], 'acp', { root: d.root, env: {} })).reason).toMatch(
    /is not the acp variant's manifest/,
  )

  expect((await loadPrelinked([d.rowUrl], 'dsh', { root: d.root, env: { DSH_NO_PRELINK: '1' } })).reason).toBe(
    'DSH_NO_PRELINK is set',
  )
})

it('an early layer file that does not load is a reason, not a crash', async () => {
  const { root, rowUrl, dir, manifest } = checkout()
  writeFileSync(join(dir, 'bundles-base.mjs'), 'export const modules = {\n')
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({ ...manifest, layers: { 'bundles-base': { modules: [rowUrl], early: true } } }),
  )
  const decision = await loadPrelinked([rowUrl], 'dsh', { root, env: {} })
  expect(decision.importers).toBeUndefined()
  expect(decision.reason).toMatch(/did not load/)
})

/** The checkout plus an early row (its own entry file) next to the late one. */
function withEarlyRow(late: string) {
  const c = checkout()
  const earlySource = join(c.root, 'pkg/dist/early.js')
  writeFileSync(earlySource, 'export const name = "early-from-file"\n')
  const earlyUrl = pathToFileURL(earlySource).href
  writeFileSync(
    join(c.dir, 'bundles-base.early.mjs'),
    `export const modules = { ${JSON.stringify(earlyUrl)}: { name: 'early' } }\n`,
  )
  writeFileSync(join(c.dir, 'bundles-base.mjs'), late)
  const st = statSync(earlySource)
  const manifest = {
    ...c.manifest,
    layers: { 'bundles-base': { modules: [c.rowUrl] }, 'bundles-base.early': { modules: [earlyUrl], early: true } },
    inputs: [...c.manifest.inputs, ['pkg/dist/early.js', st.size, st.mtimeMs]],
  }
  writeFileSync(join(c.dir, 'manifest.json'), JSON.stringify(manifest))
  return { ...c, earlyUrl }
}

it('returns once the early rows are loaded; the other files load only once started, their rows resolve when loaded', async () => {
  // The late file records that it was evaluated, then finishes only when the test opens the gate:
  // were it awaited, loadPrelinked would never return.
  let open!: () => void
  const global = globalThis as Record<string, unknown>
  global.__dshPrelinkGate = new Promise<void>((resolve) => (open = resolve))
  global.__dshLateStarted = false
  const c = withEarlyRow('')
  writeFileSync(
    join(c.dir, 'bundles-base.mjs'),
    `globalThis.__dshLateStarted = true\nawait globalThis.__dshPrelinkGate\nexport const modules = { ${JSON.stringify(c.rowUrl)}: { name: 'late' } }\n`,
  )
  const decision = await loadPrelinked([c.earlyUrl, c.rowUrl], 'dsh', { root: c.root, env: {} })
  expect(decision.reason).toBeUndefined()
  expect([...decision.early!]).toEqual([c.earlyUrl])
  expect(await decision.importers![c.earlyUrl]()).toEqual({ name: 'early' })
  let late: unknown
  const pending = decision.importers![c.rowUrl]().then((ns) => (late = ns))
  // Positive control through the same path: once the call's own promise steps have run (a
  // macrotask), a module file of the same directory is imported and has run; an import of the
  // late file the call had started would have been issued first and have begun to run.
  writeFileSync(join(c.dir, 'probe.mjs'), 'globalThis.__dshProbeRan = true\n')
  await new Promise((resolve) => setImmediate(resolve))
  await import(pathToFileURL(join(c.dir, 'probe.mjs')).href)
  expect(global.__dshProbeRan).toBe(true)
  // Not even read before startRest: the early rows get the main thread first.
  expect(global.__dshLateStarted).toBe(false)
  decision.startRest!()
  await vi.waitFor(() => expect(global.__dshLateStarted).toBe(true), { timeout: 10_000, interval: 10 })
  expect(late).toBeUndefined()
  open()
  await pending
  expect(late).toEqual({ name: 'late' })
})

it("a late layer file that does not load falls back to the row's own module", async () => {
  const c = withEarlyRow('export const modules = {\n')
  const imported: string[] = []
  const importFile = async (url: string) => (imported.push(url), import(url))
  const decision = await loadPrelinked([c.earlyUrl, c.rowUrl], 'dsh', { root: c.root, env: {}, importFile })
  expect(decision.reason).toBeUndefined()
  expect(await decision.importers![c.earlyUrl]()).toEqual({ name: 'early' })
  decision.startRest!()
  expect({ ...((await decision.importers![c.rowUrl]()) as object) }).toEqual({ name: 'from-file' })
  expect(imported).toEqual([c.rowUrl])
})

/**
 * The checkout plus a stack holding its row: `body` is the stack script's body (it returns
 * `{ modules }`), written in the script form scripts/prelink-script.mjs produces.
 */
function withStack(body: string, extra: Record<string, unknown> = {}) {
  const c = checkout()
  const script = `(async function (__imports, __import) {"use strict";${body}\n})`
  writeFileSync(join(c.dir, 'stack-test.script.js'), script)
  writeFileSync(
    join(c.dir, 'stack-test.imports.mjs'),
    'import * as i0 from "node:path"\nexport const imports = [i0]\nexport const load = (s) => import(s)\n',
  )
  const stack = {
    layers: ['bundles/base/cordis.patch.yml'],
    modules: [c.rowUrl],
    early: [],
    script: 'stack-test.script.js',
    imports: 'stack-test.imports.mjs',
    hash: 'h1',
    ...extra,
  }
  writeFileSync(join(c.dir, 'manifest.json'), JSON.stringify({ ...c.manifest, stacks: { 'stack-test': stack } }))
  const cacheDir = join(c.root, 'home/.cache/compile')
  return { ...c, cacheDir }
}

const STACK_BODY = (rowUrl: string) =>
  `const sep = __imports[0].sep; return { modules: { ${JSON.stringify(rowUrl)}: { name: 'from-stack', sep, lazy: () => __import('node:os') } } }`

it('serves the rows from a stack that holds them all, with no code cache unless given a directory', async () => {
  // This stack holds another checkout's row: it does not cover this boot, the layer file does.
  const other = checkout().rowUrl
  const c = withStack(STACK_BODY(other), { modules: [other] })
  const layerDecision = await loadPrelinked([c.rowUrl], 'dsh', { root: c.root, env: {}, cacheDir: c.cacheDir })
  expect(layerDecision.stack).toBeUndefined()
  expect(await layerDecision.importers![c.rowUrl]()).toEqual({ name: 'from-prelinked' })

  const s = withStack('')
  writeFileSync(
    join(s.dir, 'stack-test.script.js'),
    `(async function (__imports, __import) {"use strict";${STACK_BODY(s.rowUrl)}\n})`,
  )
  const decision = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {} })
  expect(decision.reason).toBeUndefined()
  expect(decision.stack).toEqual({ id: 'stack-test', cache: 'off' })
  expect(decision.saveCodeCache).toBeUndefined()
  expect(decision.startRest).toBeUndefined()
  const ns = (await decision.importers![s.rowUrl]()) as { name: string; sep: string }
  expect(ns).toMatchObject({ name: 'from-stack', sep: '/' })
})

it('writes the code cache, uses it next time (import() still works), and keys it to the exact script file', async () => {
  const s = withStack('')
  writeFileSync(
    join(s.dir, 'stack-test.script.js'),
    `(async function (__imports, __import) {"use strict";${STACK_BODY(s.rowUrl)}\n})`,
  )
  const first = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: s.cacheDir })
  expect(first.stack).toEqual({ id: 'stack-test', cache: 'absent' })
  expect(existsSync(s.cacheDir)).toBe(false)
  first.saveCodeCache!()
  first.saveCodeCache!()
  const written = readdirSync(s.cacheDir)
  expect(written).toEqual([expect.stringMatching(/^prelink-dsh-stack-test-\w+\.v8$/)])

  const second = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: s.cacheDir })
  expect(second.stack).toEqual({ id: 'stack-test', cache: 'used' })
  expect(second.saveCodeCache).toBeUndefined()
  // Functions that came from the cache still reach Node's loader through the imports module.
  const ns = (await second.importers![s.rowUrl]()) as { lazy: () => Promise<{ platform?: unknown }> }
  expect(typeof (await ns.lazy()).platform).toBe('function')

  // A rebuilt script of the same length (V8 checks only the length) is another file to the
  // cache: not served the old code, and its own cache replaces the old one.
  const path = join(s.dir, 'stack-test.script.js')
  writeFileSync(path, readFileSync(path, 'utf8').replace("'from-stack'", "'from-stacK'"))
  utimesSync(path, new Date(), new Date(Date.now() + 5_000))
  const third = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: s.cacheDir })
  expect(third.stack).toEqual({ id: 'stack-test', cache: 'absent' })
  expect(((await third.importers![s.rowUrl]()) as { name: string }).name).toBe('from-stacK')
  third.saveCodeCache!()
  const now = readdirSync(s.cacheDir)
  expect(now).toHaveLength(1)
  expect(now[0]).not.toBe(written[0])
})

it('a later save writes the cache again with the functions compiled since the first (the run after app/ready)', async () => {
  // A function the rows call only after the boot (a one-shot's turn), long enough that its
  // bytecode shows in the cache's size.
  const late = Array.from({ length: 200 }, (_, i) => `t = (t * 31 + ${i}) % 1000003;`).join(' ')
  const s = withStack('')
  writeFileSync(
    join(s.dir, 'stack-test.script.js'),
    `(async function (__imports, __import) {"use strict";return { modules: { ${JSON.stringify(s.rowUrl)}: { name: 'from-stack', late: (t) => { ${late} return t } } } }\n})`,
  )
  const first = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: s.cacheDir })
  expect(first.stack).toEqual({ id: 'stack-test', cache: 'absent' })
  first.saveCodeCache!()
  const [file] = readdirSync(s.cacheDir)
  const atReady = statSync(join(s.cacheDir, file)).size
  const ns = (await first.importers![s.rowUrl]()) as { late: (t: number) => number }
  expect(ns.late(1)).toBeGreaterThanOrEqual(0)
  first.saveCodeCache!()
  expect(readdirSync(s.cacheDir)).toEqual([file])
  const atStop = statSync(join(s.cacheDir, file)).size
  expect(atStop).toBeGreaterThan(atReady + 500)
  // The richer cache is the one the next start uses.
  const second = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: s.cacheDir })
  expect(second.stack).toEqual({ id: 'stack-test', cache: 'used' })
  expect(((await second.importers![s.rowUrl]()) as { late: (t: number) => number }).late(1)).toBe(ns.late(1))
})

it('a stack that throws, or does not export a row it lists, is a reason (the boot then loads file by file)', async () => {
  const a = withStack('throw new Error("row exploded")')
  expect((await loadPrelinked([a.rowUrl], 'dsh', { root: a.root, env: {} })).reason).toMatch(
    /prelinked stack stack-test .* did not load: row exploded/,
  )
  const b = withStack('return { modules: {} }')
  expect((await loadPrelinked([b.rowUrl], 'dsh', { root: b.root, env: {} })).reason).toMatch(
    /the stack does not export/,
  )
  const c = withStack('return {}')
  expect((await loadPrelinked([c.rowUrl], 'dsh', { root: c.root, env: {} })).reason).toMatch(/exported no modules/)
})

it('a code cache that cannot be written (a home that is not writable) costs only the next compile', async () => {
  const s = withStack('')
  writeFileSync(
    join(s.dir, 'stack-test.script.js'),
    `(async function (__imports, __import) {"use strict";${STACK_BODY(s.rowUrl)}\n})`,
  )
  // The cache directory would sit under a regular file: mkdir fails whatever the user's rights.
  const blocked = join(s.root, 'not-a-dir')
  writeFileSync(blocked, '')
  const first = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: join(blocked, 'compile') })
  expect(first.stack).toEqual({ id: 'stack-test', cache: 'absent' })
  expect(() => first.saveCodeCache!()).not.toThrow()
  const second = await loadPrelinked([s.rowUrl], 'dsh', { root: s.root, env: {}, cacheDir: join(blocked, 'compile') })
  expect(second.stack).toEqual({ id: 'stack-test', cache: 'absent' })
  expect(((await second.importers![s.rowUrl]()) as { name: string }).name).toBe('from-stack')
})

it('reads a stack as the same string whether it is ASCII (latin1 fast path) or not (UTF-8)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-prelink-src-'))
  const ascii = 'const a = "plain \\u00e9 escapes stay text";\n'.repeat(1000)
  const wide = 'const b = "caf\u00e9 \u2014 \u{1F600}";\n'
  writeFileSync(join(dir, 'ascii.js'), ascii)
  writeFileSync(join(dir, 'wide.js'), wide)
  expect(readSource(join(dir, 'ascii.js'))).toBe(ascii)
  // A non-ASCII stack (the build warns about it) still decodes as UTF-8, not byte by byte.
  expect(readSource(join(dir, 'wide.js'))).toBe(wide)
  expect(readSource(join(dir, 'wide.js'))).toContain('\u{1F600}')
})
