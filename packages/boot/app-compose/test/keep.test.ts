// The `- keep: [ids]` operation: parsing (with file:line errors), applying, the parsed-layer cache
// and the dump.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { applyLayers, keepMatches, LayerError, parseLayer, parseLayerCached } from '../src/index.ts'

const F = '/cfg/cordis.patch.yml'
const layer = (text: string, label = 'L') => parseLayer(text, `/cfg/${label}.yml`, label)
const rows = (...ids: string[]) => `- insert:\n${ids.map((id) => `    - { id: ${id}, name: pkg-${id} }\n`).join('')}`

function errorOf(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(LayerError)
    expect((error as Error).message.split('\n')).toHaveLength(1)
    return (error as Error).message
  }
  throw new Error('expected a LayerError')
}

describe('keep', () => {
  it('matches exact ids and * patterns', () => {
    expect(keepMatches('session', 'session')).toBe(true)
    expect(keepMatches('session', 'session-title')).toBe(false)
    expect(keepMatches('session-*', 'session-title')).toBe(true)
    expect(keepMatches('session-*', 'session')).toBe(false)
    expect(keepMatches('*-cli', 'sessions-cli')).toBe(true)
    expect(keepMatches('a*b*c', 'a-b-c')).toBe(true)
    expect(keepMatches('a*b*c', 'a-c-b')).toBe(false)
    expect(keepMatches('ab*ba', 'aba')).toBe(false)
    expect(keepMatches('*', 'anything')).toBe(true)
  })

  it('disables every earlier row it does not keep; later rows and kept rows are untouched', () => {
    const { rows: out, warnings } = applyLayers([
      layer(`${rows('home', 'mcp', 'session-store', 'session-query', 'off')}- id: off\n  disabled: true\n`, 'base'),
      layer(`- keep: [home, session-*, off]\n${rows('late')}`, 'command'),
    ])
    expect(warnings).toEqual([])
    expect(out.map((c) => [c.row.id, c.row.disabled ?? false])).toEqual([
      ['home', false],
      ['mcp', true],
      ['session-store', false],
      ['session-query', false],
      ['off', true], // kept, so its own `disabled` stays
      ['late', false],
    ])
    // The dump's layer labels name the layer that disabled a row.
    expect(out.find((c) => c.row.id === 'mcp')!.layers).toEqual(['base', 'command'])
    expect(out.find((c) => c.row.id === 'home')!.layers).toEqual(['base'])
  })

  it('warns, with the line, when an exact id names no row; patterns never warn', () => {
    const file = '/cfg/command.yml'
    const { warnings } = applyLayers([
      layer(rows('session-title'), 'base'),
      parseLayer('- keep:\n    - session-*\n    - sesion-title\n', file, 'command'),
    ])
    expect(warnings).toEqual([
      'command (/cfg/command.yml): [0].keep[1] id "sesion-title" names no row (did you mean "session-title"?); nothing kept by it',
    ])
  })

  it('refuses a malformed keep with file:line', () => {
    expect(errorOf(() => parseLayer('- id: a\n  disabled: true\n- keep: []\n', F))).toBe(
      `${F}:3: [1].keep: must be a non-empty list of row ids or patterns such as "session-*"`,
    )
    expect(errorOf(() => parseLayer('- keep: session\n', F))).toBe(
      `${F}:1: [0].keep: must be a non-empty list of row ids or patterns such as "session-*"`,
    )
    expect(errorOf(() => parseLayer('- keep:\n    - a\n    - 3\n', F))).toBe(
      `${F}:3: [0].keep[1]: must be a row id or a pattern such as "session-*"`,
    )
    expect(errorOf(() => parseLayer('- keep:\n    - group:child\n', F))).toBe(
      `${F}:2: [0].keep[0]: must not contain ":" (nested rows cannot be kept one by one)`,
    )
    expect(errorOf(() => parseLayer('- keep: [a]\n  disabled: true\n', F))).toBe(
      `${F}:2: [0].disabled: a "keep" operation takes no other fields`,
    )
  })

  it('round-trips through the parsed-layer cache', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-cache-keep-'))
    const text = '- keep: [home, "session-*"]\n'
    const cold = parseLayerCached(text, '/x/a.yml', 'a', dir)
    const warm = parseLayerCached(text, '/x/a.yml', 'a', dir)
    expect(cold.ops).toEqual([{ kind: 'keep', index: 0, ids: ['home', 'session-*'] }])
    expect(warm.ops).toEqual(cold.ops)
  })
})
