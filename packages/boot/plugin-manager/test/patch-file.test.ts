import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { parseLayer } from '@dsh/app-boot'
import { addRow, defaultRowId, parseSpec, removeRows, rowsOf } from '../src/index.ts'

const TEMPLATE = readFileSync(new URL('../../../../profiles/headless/cordis.patch.yml', import.meta.url), 'utf8')
const temp = () => mkdtempSync(join(tmpdir(), 'dsh-patch-file-'))

describe('profile patch edits', () => {
  it('add then remove gives back the template byte for byte, and the added row parses as a layer', () => {
    const file = join(temp(), 'cordis.patch.yml')
    writeFileSync(file, TEMPLATE)
    addRow(
      file,
      { id: 'hello', name: 'dsh-plugin-hello', config: { greeting: 'Hi' } },
      'dsh plugin add ./x.tgz (dsh-plugin-hello@0.1.0)',
    )
    const text = readFileSync(file, 'utf8')
    expect(text.startsWith(TEMPLATE.slice(0, TEMPLATE.lastIndexOf('[]')))).toBe(true)
    const layer = parseLayer(text, file, 'profile')
    expect(layer.ops).toEqual([
      { kind: 'insert', index: 0, rows: [{ id: 'hello', name: 'dsh-plugin-hello', config: { greeting: 'Hi' } }] },
    ])
    expect(rowsOf(file, 'dsh-plugin-hello')).toEqual(['hello'])
    expect(removeRows(file, 'dsh-plugin-hello')).toEqual({ removed: ['hello'], dangling: [] })
    expect(readFileSync(file, 'utf8')).toBe(TEMPLATE)
  })

  it("keeps the user's own operations, comments and !!js values; reports patches left dangling", () => {
    const file = join(temp(), 'cordis.patch.yml')
    const user = `# mine\n- id: llm\n  config: { key: !!js process.env.K } # keep\n- insert:\n    - { id: other, name: ./x.ts }\n    - { id: wave, name: dsh-plugin-wave }\n- id: wave\n  disabled: true\n`
    writeFileSync(file, user)
    addRow(file, { id: 'hello', name: 'dsh-plugin-hello' }, 'dsh plugin add dsh-plugin-hello')
    expect(removeRows(file, 'dsh-plugin-hello').removed).toEqual(['hello'])
    expect(readFileSync(file, 'utf8')).toBe(user)
    expect(removeRows(file, 'dsh-plugin-wave')).toEqual({ removed: ['wave'], dangling: ['wave'] })
    const text = readFileSync(file, 'utf8')
    expect(text).toContain('!!js process.env.K')
    expect(text).toContain('# keep')
    expect(text).toContain('{ id: other, name: ./x.ts }')
  })

  it('creates a missing file, and refuses to edit a file that is not a list', () => {
    const dir = temp()
    addRow(join(dir, 'new.yml'), { id: 'a', name: 'p' }, 'c')
    expect(parseLayer(readFileSync(join(dir, 'new.yml'), 'utf8'), 'f', 'l').ops).toHaveLength(1)
    writeFileSync(join(dir, 'map.yml'), 'a: 1\n')
    expect(() => addRow(join(dir, 'map.yml'), { id: 'a', name: 'p' }, 'c')).toThrow(
      /map\.yml: cannot edit: the layer must be a YAML list/,
    )
    writeFileSync(join(dir, 'bad.yml'), '- [\n')
    expect(() => addRow(join(dir, 'bad.yml'), { id: 'a', name: 'p' }, 'c')).toThrow(/bad\.yml:\d+:\d+: cannot edit/)
    expect(readFileSync(join(dir, 'bad.yml'), 'utf8')).toBe('- [\n')
  })
})

describe('specs and ids', () => {
  it('classifies names, versions, directories and tarballs; rejects the rest in one line', () => {
    expect(parseSpec('dsh-plugin-x@1.2.0', '/')).toMatchObject({
      kind: 'npm',
      name: 'dsh-plugin-x',
      install: 'dsh-plugin-x@1.2.0',
    })
    expect(parseSpec('@me/dsh-plugin-x', '/')).toMatchObject({ kind: 'npm', name: '@me/dsh-plugin-x' })
    expect(() => parseSpec('Not A Name', '/')).toThrow(/is not a package name, a directory or a tarball/)
    expect(() => parseSpec('x@', '/')).toThrow(/is not a package name/)
    const dir = temp()
    expect(() => parseSpec(dir, '/')).toThrow(/has no package.json/)
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'from-dir' }))
    expect(parseSpec(dir, '/')).toMatchObject({ kind: 'dir', name: 'from-dir', install: dir })
    writeFileSync(join(dir, 'junk.tgz'), 'not a tarball')
    expect(() => parseSpec('./junk.tgz', dir)).toThrow(/junk\.tgz: not a readable \.tgz package/)
  })

  it('derives a row id from the package name', () => {
    expect(defaultRowId('@acme/dsh-plugin-hello')).toBe('hello')
    expect(defaultRowId('dsh-wave')).toBe('wave')
    expect(defaultRowId('plain')).toBe('plain')
  })
})
