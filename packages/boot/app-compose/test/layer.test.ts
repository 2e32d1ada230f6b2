import { describe, expect, it } from 'vitest'
import { applyLayers, isJsExpr, LayerError, parseLayer } from '../src/index.ts'

const F = '/cfg/cordis.patch.yml'
const layer = (text: string, label = 'L') => parseLayer(text, `/cfg/${label}.yml`, label)

function errorOf(fn: () => unknown): LayerError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(LayerError)
    const e = error as LayerError
    expect(e.message.split('\n')).toHaveLength(1)
    return e
  }
  throw new Error('expected a LayerError')
}

describe('parseLayer', () => {
  it('parses insert and id operations, keeping !!js as {__jsExpr}', () => {
    const l = parseLayer(
      `
- insert:
    - id: a
      name: pkg-a
      config: { key: !!js process.env.KEY, nested: [1, !!js "2 + 2"] }
- id: a
  disabled: !!js process.env.OFF === '1'
`,
      F,
    )
    expect(l.ops).toHaveLength(2)
    const [ins, patch] = l.ops
    expect(ins.kind).toBe('insert')
    const config = ins.kind === 'insert' ? (ins.rows[0].config as { key: unknown; nested: unknown[] }) : undefined
    expect(isJsExpr(config!.key)).toBe(true)
    expect(config!.key).toEqual({ __jsExpr: 'process.env.KEY' })
    expect(config!.nested[1]).toEqual({ __jsExpr: '2 + 2' })
    expect(patch).toMatchObject({
      kind: 'patch',
      id: 'a',
      fields: { disabled: { __jsExpr: "process.env.OFF === '1'" } },
    })
  })

  it('accepts an empty document and an empty list', () => {
    expect(parseLayer('# only comments\n', F).ops).toEqual([])
    expect(parseLayer('[]', F).ops).toEqual([])
  })

  it('reports malformed YAML with file, line and column', () => {
    const e = errorOf(() => parseLayer('- insert:\n    - id: a\n     name: b\n', F))
    expect(e.message).toMatch(/^\/cfg\/cordis\.patch\.yml:\d+:\d+: invalid YAML: /)
  })

  it('rejects a layer that is not a list', () => {
    expect(errorOf(() => parseLayer('id: a\n', F)).message).toBe(`${F}: expected a YAML list of operations, got a map`)
  })

  it('names the line of the offending item and the likely field of an unknown one', () => {
    expect(
      errorOf(() => parseLayer('# mine\n- id: a\n  disabled: true\n- id: b\n  confg:\n    x: 1\n', F)).message,
    ).toBe(
      `${F}:5: [1].confg: unknown field (did you mean "config"?); a row has "id", "name", "config", "disabled", "inject", "group", "isolate", "intercept"`,
    )
  })

  it('names the item and field of a bad row', () => {
    expect(errorOf(() => parseLayer('- insert:\n    - { id: a, name: 3 }\n', F)).message).toBe(
      `${F}:2: [0].insert[0].name: must be a non-empty string (a package name or a relative path)`,
    )
    expect(errorOf(() => parseLayer('- id: x\n  config: {}\n- insert:\n    - { id: a }\n', F)).message).toBe(
      `${F}:4: [1].insert[0].name: is required`,
    )
    expect(errorOf(() => parseLayer('- id: a\n  colour: red\n', F)).message).toMatch(
      /^\/cfg\/cordis\.patch\.yml:2: \[0\]\.colour: unknown field/,
    )
    expect(errorOf(() => parseLayer('- id: a\n  disabled: maybe\n', F)).message).toBe(
      `${F}:2: [0].disabled: must be true, false or a !!js expression`,
    )
    expect(errorOf(() => parseLayer('- id: "a:b"\n  disabled: true\n', F)).message).toMatch(
      /\[0\]\.id: must not contain ":"/,
    )
    expect(errorOf(() => parseLayer('- id: a\n', F)).message).toBe(
      `${F}:1: [0]: patch of "a" lists no field to replace`,
    )
    expect(errorOf(() => parseLayer('- insert: []\n  id: a\n', F)).message).toBe(
      `${F}:2: [0].id: an "insert" operation takes no other fields`,
    )
    expect(errorOf(() => parseLayer('- 42\n', F)).message).toMatch(/\[0\]: an operation must be a map/)
    expect(errorOf(() => parseLayer('- insert:\n    - { id: a, name: b, inject: [1] }\n', F)).message).toBe(
      `${F}:2: [0].insert[0].inject[0]: must be a service name`,
    )
  })

  it('allows !!js only inside config and disabled', () => {
    expect(errorOf(() => parseLayer('- insert:\n    - { id: a, name: !!js "x" }\n', F)).message).toBe(
      `${F}:2: [0].insert[0].name: !!js is only allowed inside "config" and "disabled"`,
    )
    expect(errorOf(() => parseLayer('- id: a\n  inject: [!!js x]\n', F)).message).toBe(
      `${F}:2: [0].inject[0]: !!js is only allowed inside "config" and "disabled"`,
    )
  })
})

describe('applyLayers', () => {
  it('replaces listed fields whole, never merging config', () => {
    const { rows, warnings } = applyLayers([
      layer('- insert:\n    - { id: a, name: pkg-a, config: { x: 1, y: { z: 2 } }, inject: [foo] }\n', 'bundle'),
      layer('- id: a\n  config: { y: { w: 3 } }\n  disabled: true\n', 'profile'),
    ])
    expect(warnings).toEqual([])
    expect(rows.map((r) => r.row)).toEqual([
      { id: 'a', name: 'pkg-a', config: { y: { w: 3 } }, inject: ['foo'], disabled: true },
    ])
    expect(rows[0].layers).toEqual(['bundle', 'profile'])
  })

  it('removes a field set to null and toggles disabled back', () => {
    const { rows } = applyLayers([
      layer('- insert:\n    - { id: a, name: pkg-a, config: { x: 1 }, disabled: true }\n', 'b'),
      layer('- id: a\n  config: null\n  disabled: false\n', 'p'),
    ])
    expect(rows[0].row).toEqual({ id: 'a', name: 'pkg-a', disabled: false })
  })

  it('lets later layers and later operations of the same layer target inserted rows', () => {
    const { rows, warnings } = applyLayers([
      layer('- insert:\n    - { id: a, name: pkg-a }\n- id: a\n  config: { n: 1 }\n', 'one'),
      layer('- insert:\n    - { id: b, name: pkg-b }\n', 'two'),
      layer('- id: b\n  config: { n: 2 }\n- id: a\n  config: { n: 3 }\n', 'three'),
    ])
    expect(warnings).toEqual([])
    expect(rows.map((r) => [r.row.id, r.row.config])).toEqual([
      ['a', { n: 3 }],
      ['b', { n: 2 }],
    ])
  })

  it('warns, naming the layer, when a patch names a missing id', () => {
    const { rows, warnings } = applyLayers([layer('- id: ghost\n  disabled: true\n', 'profile headless')])
    expect(rows).toEqual([])
    expect(warnings).toEqual(['profile headless (/cfg/profile headless.yml): [0] id "ghost" names no row; skipped'])
  })

  it('rejects a duplicate id, naming the file and both layers', () => {
    const e = errorOf(() =>
      applyLayers([
        layer('- insert:\n    - { id: a, name: x }\n', 'first'),
        layer('- insert:\n    - { id: b, name: y }\n    - { id: a, name: z }\n', 'second'),
      ]),
    )
    expect(e.message).toBe(
      '/cfg/second.yml: [0].insert[1].id: duplicate id "a" (already inserted by first); patch it with "- id: a" instead',
    )
  })

  it('records which layer last set the name (names resolve from there)', () => {
    const { rows } = applyLayers([
      layer('- insert:\n    - { id: a, name: ./a.ts }\n', 'b1'),
      layer('- id: a\n  config: {}\n', 'b2'),
      layer('- id: a\n  name: ./other.ts\n', 'b3'),
    ])
    expect(rows[0].nameFrom).toBe('/cfg/b3.yml')
    expect(rows[0].layers).toEqual(['b1', 'b2', 'b3'])
  })

  it('does not alias layer data into composed rows', () => {
    const l = layer('- insert:\n    - { id: a, name: x, config: { list: [1] } }\n', 'b')
    const { rows } = applyLayers([l])
    ;(rows[0].row.config as { list: number[] }).list.push(2)
    const again = applyLayers([l])
    expect(again.rows[0].row.config).toEqual({ list: [1] })
  })
})
