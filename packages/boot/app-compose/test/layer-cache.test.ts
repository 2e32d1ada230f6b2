import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { composeProfile, isJsExpr, parseLayer, parseLayerCached, type PatchOp } from '../src/index.ts'
import { INSTALL_BASE, tempDir, writeProfile } from './helpers.ts'

const text = `- insert:
    - id: a
      name: ./a.ts
      config: { key: !!js process.env.KEY, list: [1, 2] }
- id: b
  disabled: !!js process.env.OFF === '1'
`

describe('parsed-layer cache', () => {
  it('returns what parseLayer returns, with !!js values revived, from a warm cache', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-cache-'))
    const cold = parseLayerCached(text, '/x/layer.yml', 'test', dir)
    expect(readdirSync(dir)).toHaveLength(1)
    const warm = parseLayerCached(text, '/y/other.yml', 'other', dir)
    expect(warm.ops).toEqual(parseLayer(text, '/x/layer.yml').ops)
    expect(warm).toMatchObject({ file: '/y/other.yml', label: 'other' })
    const insert = warm.ops[0] as { rows: { config: { key: unknown } }[] }
    expect(isJsExpr(insert.rows[0].config.key)).toBe(true)
    expect(cold.ops).toEqual(warm.ops)
  })

  it('misses on changed text, parses again over a corrupt entry, and never caches a failure', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-cache-'))
    parseLayerCached(text, '/x/layer.yml', 'test', dir)
    const [entry] = readdirSync(dir)
    writeFileSync(join(dir, entry), '{not json')
    expect(parseLayerCached(text, '/x/layer.yml', 'test', dir).ops).toEqual(parseLayer(text, '/x/layer.yml').ops)
    parseLayerCached(text + '- id: c\n  disabled: true\n', '/x/layer.yml', 'test', dir)
    expect(readdirSync(dir)).toHaveLength(2)
    expect(() => parseLayerCached('- insert: nope\n', '/x/bad.yml', 'bad', dir)).toThrow(/bad\.yml/)
    expect(readdirSync(dir)).toHaveLength(2)
  })

  it('serves a warm parse from the entry rather than parsing the text again', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-cache-'))
    parseLayerCached(text, '/x/layer.yml', 'test', dir)
    const [entry] = readdirSync(dir)
    // A planted entry (valid ops, different from the text) proves where the warm result comes from.
    writeFileSync(
      join(dir, entry),
      JSON.stringify([{ kind: 'patch', index: 0, id: 'from-cache', fields: { disabled: { __jsExpr: 'true' } } }]),
    )
    const warm = parseLayerCached(text, '/x/layer.yml', 'test', dir)
    expect(warm.ops).toMatchObject([{ kind: 'patch', id: 'from-cache' }])
    expect(isJsExpr((warm.ops[0] as PatchOp).fields.disabled)).toBe(true)
  })

  it('is used by composeProfile under $DSH_HOME/.cache/layers, and DSH_LAYER_CACHE=0 turns it off', () => {
    const home = tempDir()
    writeProfile(home, 'p', [], '- insert:\n    - { id: original, name: "@dsh/home-paths" }\n')
    const ids = () => composeProfile({ home, profileName: 'p', installBase: INSTALL_BASE }).rows.map((r) => r.row.id)
    expect(ids()).toEqual(['original'])
    const dir = join(home, '.cache', 'layers')
    const entries = readdirSync(dir)
    expect(entries).toHaveLength(1)
    writeFileSync(
      join(dir, entries[0]),
      JSON.stringify([{ kind: 'insert', index: 0, rows: [{ id: 'from-cache', name: '@dsh/home-paths' }] }]),
    )
    expect(ids()).toEqual(['from-cache'])
    process.env.DSH_LAYER_CACHE = '0'
    try {
      expect(ids()).toEqual(['original'])
    } finally {
      delete process.env.DSH_LAYER_CACHE
    }
  })
})
