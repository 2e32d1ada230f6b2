// The row table (src/row-table.ts, prelinked/rows.json): shipped rows resolve from a build-time
// table, but only when each entry's checks pass; every answer must equal real resolution. Real
// files, real symlinks, real resolution (composeProfile/composeLayers with the table off).
import { execFileSync } from 'node:child_process'
import {
  cpSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'
import { composeLayers, composeProfile, ensureProfile, parseLayer, type ResolvedRow } from '../src/index.ts'
import { buildRowTable, loadRowTable, writeRowTable, type RowTable, type RowTableFile } from '../src/row-table.ts'
import { resolveConditions } from '../src/resolve.ts'
import { INSTALL_BASE, TEMPLATES, tempDir, write } from './helpers.ts'

const CHECKOUT = fileURLToPath(new URL('../../../../', import.meta.url))
const SHIPPED_LAYERS = [
  'bundles/base/cordis.patch.yml',
  'bundles/headless/cordis.patch.yml',
  'bundles/tui/cordis.patch.yml',
  'bundles/web/cordis.patch.yml',
  'packages/acp/acp-app/cordis.patch.yml',
  'packages/sdk/server/cordis.patch.yml',
  'packages/session/sessions-cli/sessions.patch.yml',
].map((f) => join(CHECKOUT, f))

/** Every row (group children included) as `id name -> url`, for comparing compositions. */
function urls(rows: ResolvedRow[] | undefined): string[] {
  return (rows ?? []).flatMap((r) => [
    `${r.row.id ?? ''} ${r.row.name} -> ${r.url ?? r.resolveError}`,
    ...urls(r.children),
  ])
}

/**
 * The base layer and an app's layer on top (rows the base already inserts dropped from the app's
 * inserts, as dsh-jsonrpc-agent does): every name of both resolves from its own layer file.
 */
function onBase(extra: string) {
  const layer = (f: string) => parseLayer(readFileSync(f, 'utf8'), f)
  const base = layer(SHIPPED_LAYERS[0])
  const ours = layer(extra)
  const ids = new Set(base.ops.flatMap((op) => (op.kind === 'insert' ? op.rows.map((r) => r.id) : [])))
  ours.ops = ours.ops.map((op) => (op.kind === 'insert' ? { ...op, rows: op.rows.filter((r) => !ids.has(r.id)) } : op))
  return [base, ours]
}

function tableFile(table: RowTableFile): string {
  const file = join(tempDir('dsh-rowtable-'), 'rows.json')
  writeRowTable(file, table)
  return file
}

describe('row table: the shipped layers', () => {
  it('gives the URLs real resolution gives, for every shipped profile (this process: --conditions development)', () => {
    const file = tableFile(buildRowTable(SHIPPED_LAYERS, CHECKOUT))
    const home = tempDir()
    for (const name of ['headless', 'tui', 'web']) {
      const { dir } = ensureProfile(home, name, TEMPLATES)
      const opts = { home, profileName: name, profileDir: dir, installBase: INSTALL_BASE }
      const table = loadRowTable({ file, root: CHECKOUT, env: {} })
      expect(table.reason).toBeUndefined()
      const fast = composeProfile({ ...opts, rowTable: table })
      const real = composeProfile({ ...opts, rowTable: false })
      expect(urls(fast.rows)).toEqual(urls(real.rows))
      expect(fast.rowTable?.used, name).toBeGreaterThan(name === 'web' ? 30 : 50)
      expect(fast.rowTable?.fallback).toBe(0)
    }
    // The app layers (dsh-acp, dsh-jsonrpc-agent, `dsh sessions`) on top of the base layer.
    for (const extra of SHIPPED_LAYERS.slice(4)) {
      const layers = onBase(extra)
      const fast = composeLayers(layers, INSTALL_BASE, dirname(extra), {
        rowTable: loadRowTable({ file, root: CHECKOUT, env: {} }),
      })
      const real = composeLayers(layers, INSTALL_BASE, dirname(extra), { rowTable: false })
      expect(urls(fast.rows)).toEqual(urls(real.rows))
      expect(fast.rowTable?.used).toBeGreaterThan(50)
    }
  })

  it('prelinked/rows.json of this checkout, in a process without --conditions, matches real resolution', () => {
    // The table the build wrote, as the bin uses it: dist, no conditions, every shipped profile.
    const code = `
      const { composeProfile, composeLayers, ensureProfile, parseLayer } = await import(${JSON.stringify(pathToFileURL(join(CHECKOUT, 'packages/boot/app-compose/dist/index.js')).href)})
      const { readFileSync } = await import('node:fs')
      const { dirname } = await import('node:path')
      const home = process.argv[1], templates = process.argv[2], installBase = process.argv[3], layers = JSON.parse(process.argv[4])
      const flat = (rows) => (rows ?? []).flatMap((r) => [r.row.name + ' -> ' + (r.url ?? r.resolveError), ...flat(r.children)])
      const out = []
      for (const name of ['headless', 'tui', 'web']) {
        const { dir } = ensureProfile(home, name, templates)
        const opts = { home, profileName: name, profileDir: dir, installBase }
        const fast = composeProfile(opts), real = composeProfile({ ...opts, rowTable: false })
        out.push({ name, same: JSON.stringify(flat(fast.rows)) === JSON.stringify(flat(real.rows)), table: fast.rowTable })
      }
      const layer = (f) => parseLayer(readFileSync(f, 'utf8'), f)
      for (const extra of layers.slice(4)) {
        const base = layer(layers[0]), ours = layer(extra)
        const ids = new Set(base.ops.flatMap((op) => (op.kind === 'insert' ? op.rows.map((r) => r.id) : [])))
        ours.ops = ours.ops.map((op) => (op.kind === 'insert' ? { ...op, rows: op.rows.filter((r) => !ids.has(r.id)) } : op))
        const ls = [base, ours]
        const fast = composeLayers(ls, installBase, dirname(extra)), real = composeLayers(ls, installBase, dirname(extra), { rowTable: false })
        out.push({ name: extra, same: JSON.stringify(flat(fast.rows)) === JSON.stringify(flat(real.rows)), table: fast.rowTable })
      }
      console.log(JSON.stringify(out))
    `
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' }
    delete env.DSH_NO_PRELINK
    const stdout = execFileSync(
      process.execPath,
      ['--input-type=module', '-e', code, tempDir(), TEMPLATES, INSTALL_BASE, JSON.stringify(SHIPPED_LAYERS)],
      { env, encoding: 'utf8' },
    )
    const results = JSON.parse(stdout) as Array<{
      name: string
      same: boolean
      table: { used: number; fallback: number; reason?: string }
    }>
    expect(results).toHaveLength(6)
    for (const r of results) {
      expect(r.same, r.name).toBe(true)
      expect(r.table.reason, r.name).toBeUndefined()
      expect(r.table.used, r.name).toBeGreaterThan(30)
      expect(r.table.fallback, r.name).toBe(0)
    }
  })
})

/**
 * A checkout-like dir: a layer file under bundle/sub/ naming `@x/a` (and `@x/b`), packages in
 * store/ linked from root/node_modules, so the table's entry has misses (bundle/sub/node_modules,
 * bundle/node_modules) before the package.json it reads.
 */
function project() {
  const root = tempDir('dsh-rowtable-proj-')
  const layerFile = write(
    join(root, 'bundle', 'sub', 'cordis.patch.yml'),
    '- insert:\n    - { id: a, name: "@x/a" }\n    - { id: b, name: "@x/b/extra" }\n',
  )
  const pkg = (name: string, exports: unknown, files: string[], at = join(root, 'store', name.replace('/', '+'))) => {
    write(join(at, 'package.json'), JSON.stringify({ name, exports }))
    for (const f of files) write(join(at, f), `export const from = ${JSON.stringify(at)}\n`)
    return at
  }
  const link = (name: string, target: string, from = root) => {
    const path = join(from, 'node_modules', name)
    mkdirSync(dirname(path), { recursive: true })
    symlinkSync(target, path)
    return path
  }
  const a = pkg('@x/a', { '.': { import: './dist/a.js' } }, ['dist/a.js', 'dist/other.js'])
  const b = pkg('@x/b', { './extra': './lib/extra.js' }, ['lib/extra.js'])
  link('@x/a', a)
  link('@x/b', b)
  const compose = (rowTable: RowTable | false) =>
    composeLayers([parseLayer(readFileSync(layerFile, 'utf8'), layerFile)], INSTALL_BASE, root, { rowTable })
  const fresh = (file: string) => loadRowTable({ file, root, env: {} })
  const file = tableFile(buildRowTable([layerFile], root))
  return { root, layerFile, a, b, pkg, link, compose, fresh, file }
}

/** Composes with the table and without; both must agree. Returns the table's report. */
function agree(p: ReturnType<typeof project>, file = p.file) {
  const fast = p.compose(p.fresh(file))
  const real = p.compose(false)
  expect(urls(fast.rows)).toEqual(urls(real.rows))
  return { report: fast.rowTable!, rows: urls(real.rows) }
}

describe('row table: entries that can no longer be trusted fall back', () => {
  it('answers both names from the table while nothing changed', () => {
    const p = project()
    const table = JSON.parse(readFileSync(p.file, 'utf8')) as RowTableFile
    expect(table.layers[p.layerFile]['@x/a'][1]).toEqual([
      join(p.root, 'bundle/sub/node_modules/@x/a/package.json'),
      join(p.root, 'bundle/node_modules/@x/a/package.json'),
    ])
    const { report, rows } = agree(p)
    expect(report).toMatchObject({ used: 2, fallback: 0 })
    expect(rows).toEqual([
      `a @x/a -> ${pathToFileURL(join(p.a, 'dist/a.js')).href}`,
      `b @x/b/extra -> ${pathToFileURL(join(p.b, 'lib/extra.js')).href}`,
    ])
  })

  it('a package.json edited (another export target)', () => {
    const p = project()
    writeFileSync(
      join(p.a, 'package.json'),
      JSON.stringify({ name: '@x/a', exports: { '.': { import: './dist/other.js' } } }),
    )
    const { report, rows } = agree(p)
    expect(rows[0]).toContain('dist/other.js')
    expect(report).toMatchObject({ used: 1, fallback: 1 })
    expect(report.firstFallback).toContain('package.json changed')
  })

  it('a package.json replaced (renamed over) by one of the same size and mtime, another target', () => {
    const p = project()
    const pj = join(p.a, 'package.json')
    // Whole seconds: utimes cannot set the nanoseconds a fresh file has.
    utimesSync(pj, 1e9, 1e9)
    const file = tableFile(buildRowTable([p.layerFile], p.root))
    const st = statSync(pj)
    write(join(p.a, 'o.js'), 'export {}\n')
    const text = JSON.stringify({ name: '@x/a', exports: { '.': { import: './o.js' } } })
    expect(text.length).toBeLessThanOrEqual(st.size)
    writeFileSync(`${pj}.new`, text.padEnd(st.size))
    utimesSync(`${pj}.new`, 1e9, 1e9)
    renameSync(`${pj}.new`, pj)
    expect(statSync(pj)).toMatchObject({ size: st.size, mtimeMs: st.mtimeMs })
    const { report, rows } = agree(p, file)
    expect(rows[0]).toContain('/o.js')
    expect(report.firstFallback).toContain('package.json changed')
  })

  it('a package linked to another copy of it (same package.json text and times)', () => {
    const p = project()
    const copy = join(p.root, 'store', 'copy')
    cpSync(p.a, copy, { recursive: true, preserveTimestamps: true })
    unlinkSync(join(p.root, 'node_modules/@x/a'))
    symlinkSync(copy, join(p.root, 'node_modules/@x/a'))
    const { report, rows } = agree(p)
    expect(rows[0]).toContain('/store/copy/dist/a.js')
    expect(report.fallback).toBe(1)
  })

  it('a package removed', () => {
    const p = project()
    unlinkSync(join(p.root, 'node_modules/@x/a'))
    const { report, rows } = agree(p)
    expect(rows[0]).toContain('cannot resolve module "@x/a"')
    expect(report).toMatchObject({ used: 1, fallback: 1 })
  })

  it('a nearer node_modules gains the package (a path the resolution found absent)', () => {
    const p = project()
    const nearer = p.pkg('@x/a', { '.': './dist/a.js' }, ['dist/a.js'], join(p.root, 'store', 'nearer'))
    p.link('@x/a', nearer, join(p.root, 'bundle'))
    const { report, rows } = agree(p)
    expect(rows[0]).toContain('/store/nearer/dist/a.js')
    expect(report.firstFallback).toContain('appeared')
  })

  it('the export target now behind a symlink (realpath changes), or no longer a file', () => {
    const p = project()
    renameSync(join(p.a, 'dist'), join(p.a, 'dist2'))
    symlinkSync(join(p.a, 'dist2'), join(p.a, 'dist'))
    let { report, rows } = agree(p)
    expect(rows[0]).toContain('dist2/a.js')
    expect(report.firstFallback).toContain('now leads to')
    rmSync(join(p.b, 'lib/extra.js'))
    mkdirSync(join(p.b, 'lib/extra.js'))
    ;({ report, rows } = agree(p))
    expect(rows[1]).not.toContain(p.b)
    expect(report.fallback).toBe(2)
  })

  it('a table from another checkout, with other conditions, unreadable, or DSH_NO_PRELINK: no table', () => {
    const p = project()
    const table = JSON.parse(readFileSync(p.file, 'utf8')) as RowTableFile
    expect(loadRowTable({ file: p.file, root: join(p.root, 'moved'), env: {} }).reason).toContain('was built in')
    const other = tableFile({ ...table, conditions: [...table.conditions, 'extra'] })
    expect(loadRowTable({ file: other, root: p.root, env: {} }).reason).toMatch(/resolved with conditions .*extra/)
    expect(resolveConditions()).toContain('development') // vitest's own
    expect(loadRowTable({ file: tableFile({ ...table, conditions: [] }), root: p.root, env: {} }).reason).toContain(
      'conditions []',
    )
    expect(loadRowTable({ file: p.file, root: p.root, env: { DSH_NO_PRELINK: '1' } }).reason).toBe(
      'DSH_NO_PRELINK is set',
    )
    expect(loadRowTable({ file: join(p.root, 'nope.json'), root: p.root, env: {} }).reason).toContain('no row table')
    writeFileSync(other, '{"version":2}')
    expect(loadRowTable({ file: other, root: p.root, env: {} }).reason).toContain('is not a row table')
    // A table with no reason to refuse it still never answers for a name or layer it lacks.
    const t = p.fresh(p.file)
    expect(t.lookup(p.layerFile, '@x/c')).toBeUndefined()
    expect(t.lookup(join(p.root, 'other.yml'), '@x/a')).toBeUndefined()
    expect(t.stats).toEqual({ used: 0, fallback: 0 })
  })
})
