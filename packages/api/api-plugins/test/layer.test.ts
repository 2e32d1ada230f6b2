import { describe, expect, it } from 'vitest'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { editLayerFile, editLayerText, LayerEditError } from '../src/layer.ts'

describe('editing a patch layer', () => {
  it('appends an operation to an empty or absent layer', () => {
    expect(parse(editLayerText('', 'f.yml', 'tool-bash', { disabled: true }))).toEqual([
      { id: 'tool-bash', disabled: true },
    ])
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-'))
    try {
      const file = join(dir, 'cordis.patch.yml')
      editLayerFile(file, 'a', { config: { n: 1 } })
      expect(parse(readFileSync(file, 'utf8'))).toEqual([{ id: 'a', config: { n: 1 } }])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("changes the row's last operation in place and keeps comments and other operations", () => {
    const text = [
      '# my patch',
      '- id: tool-bash',
      '  disabled: true   # off for now',
      '- insert:',
      '    - id: extra',
      '      name: ./extra.ts',
      '- id: timeout-policy',
      '  config: { defaultMs: 5 }',
      '',
    ].join('\n')
    const out = editLayerText(text, 'f.yml', 'tool-bash', { disabled: false })
    expect(out).toContain('# my patch')
    expect(parse(out)).toEqual([
      { id: 'tool-bash', disabled: false },
      { insert: [{ id: 'extra', name: './extra.ts' }] },
      { id: 'timeout-policy', config: { defaultMs: 5 } },
    ])
    // A config replaces the whole config of that operation.
    expect(parse(editLayerText(text, 'f.yml', 'timeout-policy', { config: { perTool: { bash: 1 } } }))[2]).toEqual({
      id: 'timeout-policy',
      config: { perTool: { bash: 1 } },
    })
  })

  it('refuses a layer that is not a list, or not YAML, naming the file', () => {
    expect(() => editLayerText('a: 1\n', 'p.yml', 'x', { disabled: true })).toThrow(LayerEditError)
    expect(() => editLayerText('a: 1\n', 'p.yml', 'x', { disabled: true })).toThrow(
      /^p\.yml: a patch layer is a YAML list/,
    )
    expect(() => editLayerText('- id: [\n', 'p.yml', 'x', { disabled: true })).toThrow(/^p\.yml: not valid YAML/)
  })

  it('leaves the file as it was when the edit fails', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-layer-'))
    try {
      const file = join(dir, 'cordis.patch.yml')
      writeFileSync(file, 'a: 1\n')
      expect(() => editLayerFile(file, 'x', { disabled: true })).toThrow(LayerEditError)
      expect(readFileSync(file, 'utf8')).toBe('a: 1\n')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
