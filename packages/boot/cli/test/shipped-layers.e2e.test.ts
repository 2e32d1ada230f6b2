// The shipped layers are parsed at build time (scripts/prelink.mjs writes prelinked/layers.json):
// a first run in a fresh home composes the headless profile, the sessions layer and the profile
// template without parsing any of them, while a user's own layer still goes through the home's
// parsed-layer cache.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const checkout = fileURLToPath(new URL('../../../../', import.meta.url))
const cached = (home: string): string[] => {
  const dir = join(home, '.cache', 'layers')
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : []
}

describe('shipped layers, parsed at build time', () => {
  it('the table holds every bundle layer and profile template', () => {
    const table = JSON.parse(readFileSync(join(checkout, 'prelinked', 'layers.json'), 'utf8')) as {
      layers: Record<string, unknown[]>
    }
    // base, headless, tui, web, acp and world-e2b bundles at least, plus four profile templates.
    expect(Object.keys(table.layers).length).toBeGreaterThanOrEqual(10)
    for (const ops of Object.values(table.layers)) expect(Array.isArray(ops)).toBe(true)
  })

  it('a first boot in a fresh home parses only the layer the user passed', async () => {
    const root = mkdtempSync(join(tmpdir(), 'dsh-shipped-layers-'))
    const home = join(root, 'home')
    // `dsh sessions` boots the headless profile with the sessions layer: three shipped layers.
    const plain = await runDsh(['sessions', '--all'], { cwd: root, env: { DSH_HOME: home } })
    expect(plain.stderr).toContain('no stored sessions')
    expect(existsSync(join(home, 'profiles', 'headless'))).toBe(true)
    expect(cached(home)).toEqual([])

    // Positive control: a user's layer is parsed and lands in the home's cache.
    const mine = join(root, 'mine.patch.yml')
    writeFileSync(mine, '- id: not-a-shipped-row\n  disabled: true\n')
    const withPatch = await runDsh(['--patch', mine, 'sessions', '--all'], { cwd: root, env: { DSH_HOME: home } })
    expect(withPatch.stderr).toContain('no stored sessions')
    expect(cached(home)).toHaveLength(1)
  })
})
