import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import {
  bootComposition,
  composeLayers,
  composeProfile,
  dumpComposition,
  ensureProfile,
  parseLayer,
  type Composition,
} from '../src/index.ts'
import { FIXTURES, INSTALL_BASE, TEMPLATES, tempDir, write, writeProfile } from './helpers.ts'

const importModule = (url: string) => import(/* @vite-ignore */ url)

/** What boots: per row, the id, the module URL and everything the loader reads. */
const booted = (c: Composition) => c.rows.map((r) => ({ ...r.row, name: r.url }))

function roundTrip(comp: Composition, where = tempDir()) {
  const file = write(join(where, 'dump.yml'), dumpComposition(comp))
  return composeLayers([parseLayer(dumpComposition(comp), file, 'dump')], INSTALL_BASE, where)
}

describe('dumpComposition', () => {
  it('prints one loadable layer with a "# ==" comment before each run of rows', () => {
    const home = tempDir()
    const dir = writeProfile(
      home,
      'p',
      [],
      `- insert:
    - { id: a, name: ./a.ts, config: { key: !!js "process.env.K + ': x'" } }
    - { id: b, name: "@dsh/cmdline" }
- id: b
  config: { args: [one] }
`,
    )
    write(join(dir, 'a.ts'), 'export function apply() {}\n')
    write(join(home, 'cordis.patch.yml'), '- insert:\n    - { id: c, name: "@dsh/home-paths", disabled: true }\n')
    const comp = composeProfile({ home, profileName: 'p', installBase: INSTALL_BASE })
    const text = dumpComposition(comp)
    const comments = text.split('\n').filter((l) => l.startsWith('# =='))
    expect(comments).toEqual(['# == profile p', '# == home'])
    // A bare name the installation resolves the same way stays bare; a relative one becomes absolute.
    expect(text).toContain('name: "@dsh/cmdline"')
    expect(text).toContain(`name: ${join(dir, 'a.ts')}`)
    expect(text).toContain(`key: !!js "process.env.K + ': x'"`)
    const again = roundTrip(comp)
    expect(booted(again)).toEqual(booted(comp))
    expect(again.warnings).toEqual([])
  })

  it('round-trips the shipped headless profile and boots the same rows', async () => {
    const home = tempDir()
    ensureProfile(home, 'headless', TEMPLATES)
    const comp = composeProfile({ home, profileName: 'headless', installBase: INSTALL_BASE })
    const again = roundTrip(comp)
    expect(booted(again)).toEqual(booted(comp))
    const [t1, t2] = [await bootComposition(comp, { importModule }), await bootComposition(again, { importModule })]
    expect(Object.keys(t2.loader.store)).toEqual(Object.keys(t1.loader.store))
    await Promise.all([t1.dispose(), t2.dispose()])
  })

  it('dumps an empty composition as an empty list', () => {
    const comp = composeLayers([parseLayer('[]', join(FIXTURES, 'e.yml'), 'e')], INSTALL_BASE, FIXTURES)
    const text = dumpComposition(comp)
    expect(parseLayer(text, join(FIXTURES, 'e.yml')).ops).toEqual([])
  })
})
