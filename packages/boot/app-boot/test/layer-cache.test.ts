import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { isJsExpr, parseLayer, parseLayerCached } from '../src/index.ts'

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
})
