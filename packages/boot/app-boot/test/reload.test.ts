import { afterEach, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import {
  bootComposition,
  composeLayers,
  parseLayer,
  probeComposition,
  readLayerFile,
  watchLayers,
  type BootedTree,
} from '../src/index.ts'
import { FIXTURES, INSTALL_BASE } from './helpers.ts'
import { log } from './fixtures/applies.ts'
import type Counter from './fixtures/counter.ts'

const importModule = (url: string) => import(/* @vite-ignore */ url)
const trees: BootedTree[] = []
afterEach(async () => {
  await Promise.all(trees.splice(0).map((t) => t.dispose()))
  log().splice(0)
})

const file = join(FIXTURES, 'reload.yml')
const compose = (text: string) => composeLayers([parseLayer(text, file, 'profile test')], INSTALL_BASE, FIXTURES)
const row = (id: string, extra = '') => `    - { id: ${id}, name: ./applies.ts, config: { label: ${id} }${extra} }\n`

async function boot(text: string) {
  const tree = await bootComposition(compose(text), { importModule })
  trees.push(tree)
  log().splice(0)
  return tree
}

describe('BootedTree.reload', () => {
  it('restarts only the row whose config changed', async () => {
    const tree = await boot(`- insert:\n${row('a')}${row('b')}`)
    const report = await tree.reload(
      compose(`- insert:\n${row('a')}    - { id: b, name: ./applies.ts, config: { label: b2 } }\n`),
    )
    expect(report).toMatchObject({ ok: true, changed: ['b'], added: [], removed: [] })
    expect(log()).toEqual(['dispose b', 'apply b2'])
  })

  it('unloads a disabled row, mounts an added one, unwinds a removed one, and re-enables', async () => {
    const tree = await boot(`- insert:\n${row('a')}${row('b')}`)
    expect(await tree.reload(compose(`- insert:\n${row('a', ', disabled: true')}${row('c')}`))).toMatchObject({
      ok: true,
      changed: ['a'],
      added: ['c'],
      removed: ['b'],
    })
    expect(log().sort()).toEqual(['apply c', 'dispose a', 'dispose b'])
    log().splice(0)
    expect(await tree.reload(compose(`- insert:\n${row('a')}${row('c')}`))).toMatchObject({ ok: true, changed: ['a'] })
    expect(log()).toEqual(['apply a'])
  })

  it('re-creates a row whose module name changed', async () => {
    const tree = await boot(`- insert:\n    - { id: svc, name: ./counter.ts, config: { start: 1 } }\n`)
    expect((tree.ctx.get('counter') as Counter).value).toBe(1)
    const report = await tree.reload(
      compose(`- insert:\n    - { id: svc, name: ./applies.ts, config: { label: svc } }\n`),
    )
    expect(report).toMatchObject({ ok: true, changed: ['svc'] })
    expect(tree.ctx.get('counter')).toBeUndefined()
    expect(log()).toEqual(['apply svc'])
  })

  it('refuses a config that fails the schema, naming row and field, and keeps the running row', async () => {
    const tree = await boot(`- insert:\n    - { id: svc, name: ./counter.ts, config: { start: 1 } }\n`)
    const report = await tree.reload(
      compose(`- insert:\n    - { id: svc, name: ./counter.ts, config: { start: nope } }\n`),
    )
    expect(report.ok).toBe(false)
    expect(report.failures).toHaveLength(1)
    expect(report.failures[0]).toMatchObject({ id: 'svc', kind: 'config' })
    expect(report.failures[0].cause).toMatch(/field config\.start/)
    expect((tree.ctx.get('counter') as Counter).value).toBe(1)
  })

  it('rolls a change whose apply fails back to the last good rows', async () => {
    const tree = await boot(`- insert:\n${row('a')}${row('b')}`)
    const report = await tree.reload(
      compose(
        `- insert:\n${row('a', '')}    - { id: b, name: ./applies.ts, config: { label: b2, fail: true } }\n${row('c')}`,
      ),
    )
    expect(report.ok).toBe(false)
    expect(report.failures).toEqual([
      expect.objectContaining({ id: 'b', kind: 'apply', cause: expect.stringContaining('b2 refuses') }),
    ])
    // c came and went, b is back on its old config; a was never touched.
    expect(log()).toContain('apply b')
    expect(log()).not.toContain('apply a')
    expect(log().filter((l) => l.endsWith(' c'))).toEqual(['apply c', 'dispose c'])
    log().splice(0)
    // The tree still reloads after a refused edit.
    expect(await tree.reload(compose(`- insert:\n${row('a')}`))).toMatchObject({ ok: true, removed: ['b'] })
    expect(log()).toEqual(['dispose b'])
  })

  it('an unchanged composition is a no-op', async () => {
    const tree = await boot(`- insert:\n${row('a')}`)
    expect(await tree.reload(compose(`- insert:\n${row('a')}`))).toEqual({
      ok: true,
      changed: [],
      added: [],
      removed: [],
      failures: [],
    })
    expect(log()).toEqual([])
  })
})

describe('probeComposition', () => {
  it('returns no failure for a tree that comes up, and disposes it', async () => {
    expect(await probeComposition(compose(`- insert:\n${row('a')}`), { importModule })).toEqual([])
    expect(log()).toEqual(['apply a', 'dispose a'])
  })

  it('returns every failed row, unmet injects included', async () => {
    const failures = await probeComposition(
      compose(`- insert:\n    - { id: bad, name: ./throws-apply.ts }\n    - { id: consumer, name: ./consumer.ts }\n`),
      { importModule },
    )
    expect(failures.map((f) => [f.id, f.kind])).toEqual([
      ['bad', 'apply'],
      ['consumer', 'inject'],
    ])
  })
})

describe('watchLayers', () => {
  it('re-composes on an edit of a watched file, and refuses a malformed one naming file, item and field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-watch-'))
    const patch = join(dir, 'cordis.patch.yml')
    const fixtureRow = (label: string) =>
      `- insert:\n    - { id: a, name: ${join(FIXTURES, 'applies.ts')}, config: { label: ${label} } }\n`
    writeFileSync(patch, fixtureRow('one'))
    const recompose = () => composeLayers([readLayerFile(patch, 'profile test')], INSTALL_BASE, dir)
    const tree = await bootComposition(recompose(), { importModule })
    trees.push(tree)
    const lines: string[] = []
    let wake = () => {}
    const watcher = watchLayers(tree, {
      files: [patch],
      recompose,
      debounceMs: 20,
      report: (l) => (lines.push(l), wake()),
    })
    const nextLine = () => new Promise<string>((resolve) => (wake = () => resolve(lines[lines.length - 1])))
    try {
      let line = nextLine()
      writeFileSync(patch, fixtureRow('two'))
      expect(await line).toBe('dsh: reloaded: changed a')
      expect(log()).toContain('apply two')

      line = nextLine()
      writeFileSync(patch, `- insert:\n    - { id: a, name: 7 }\n`)
      expect(await line).toMatch(
        new RegExp(
          `^dsh: reload refused: ${patch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:2: \\[0\\]\\.insert\\[0\\]\\.name: .*; keeping the running tree$`,
        ),
      )

      // An editor's save through rename is seen too.
      line = nextLine()
      writeFileSync(patch + '.tmp', fixtureRow('three'))
      renameSync(patch + '.tmp', patch)
      expect(await line).toBe('dsh: reloaded: changed a')
      expect(log()).toContain('apply three')
    } finally {
      watcher.close()
    }
  })
})
