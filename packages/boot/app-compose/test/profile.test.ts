import { describe, expect, it } from 'vitest'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { composeProfile, DshUserError, ensureProfile, readProfile, resolveBundle } from '../src/index.ts'
import { FIXTURES, INSTALL_BASE, TEMPLATES, tempDir, write, writeProfile } from './helpers.ts'

function userError(fn: () => unknown): DshUserError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(DshUserError)
    expect((error as Error).message.split('\n')).toHaveLength(1)
    return error as DshUserError
  }
  throw new Error('expected a DshUserError')
}

function fakeBundle(root: string, name: string, patch: string) {
  const dir = join(root, 'node_modules', name)
  write(join(dir, 'package.json'), JSON.stringify({ name, dsh: { bundle: { patch: './cordis.patch.yml' } } }))
  write(join(dir, 'cordis.patch.yml'), patch)
  return dir
}

describe('ensureProfile', () => {
  it('creates headless and web from the templates on first use, then reuses them', () => {
    const home = tempDir()
    for (const name of ['headless', 'web']) {
      const first = ensureProfile(home, name, TEMPLATES)
      expect(first).toEqual({ dir: join(home, 'profiles', name), created: true })
      expect(readFileSync(join(first.dir, 'package.json'), 'utf8')).toBe(
        readFileSync(join(TEMPLATES, name, 'package.json'), 'utf8'),
      )
      expect(existsSync(join(first.dir, 'cordis.patch.yml'))).toBe(true)
      expect(ensureProfile(home, name, TEMPLATES).created).toBe(false)
    }
    expect(readProfile(join(home, 'profiles', 'headless')).bundles).toEqual([
      '@dsh/bundle-base',
      '@dsh/bundle-headless',
    ])
  })

  it('rejects an unknown profile as a usage error listing the known ones', () => {
    const e = userError(() => ensureProfile(tempDir(), 'nope', TEMPLATES))
    expect(e.exitCode).toBe(2)
    expect(e.message).toMatch(/^unknown profile "nope": .*\(known: acp, headless, tui, web\)$/)
    expect(userError(() => ensureProfile(tempDir(), '../etc', TEMPLATES)).exitCode).toBe(2)
  })
})

describe('profile and bundle manifests', () => {
  it('names the file and field when dsh.profile.bundles is missing or wrong', () => {
    const home = tempDir()
    const dir = join(home, 'profiles', 'bad')
    write(join(dir, 'package.json'), '{"name":"x"}')
    expect(userError(() => readProfile(dir)).message).toMatch(
      new RegExp(`^${join(dir, 'package.json')}: field "dsh.profile.bundles" is missing`),
    )
    write(join(dir, 'package.json'), '{"dsh":{"profile":{"bundles":"@dsh/bundle-base"}}}')
    expect(userError(() => readProfile(dir)).message).toBe(
      `${join(dir, 'package.json')}: field "dsh.profile.bundles" must be a list of package names`,
    )
    write(join(dir, 'package.json'), '{"dsh":')
    expect(userError(() => readProfile(dir)).message).toMatch(/invalid JSON/)
  })

  it('rejects a bundle package without a dsh.bundle field, naming its package.json', () => {
    const e = userError(() => resolveBundle('./no-dsh-field', FIXTURES, INSTALL_BASE))
    expect(e.message).toBe(
      `${join(FIXTURES, 'no-dsh-field', 'package.json')}: field "dsh.bundle.patch" is missing: ./no-dsh-field is not a dsh bundle`,
    )
  })

  it('rejects a bundle that is not installed anywhere', () => {
    expect(userError(() => resolveBundle('@dsh/bundle-nope', tempDir(), INSTALL_BASE)).message).toMatch(
      /^bundle @dsh\/bundle-nope is not installed: looked from /,
    )
  })

  it('finds bundles from the profile directory first, then from the installation', () => {
    const home = tempDir()
    const dir = writeProfile(home, 'p', ['local-bundle', '@dsh/bundle-base'])
    fakeBundle(dir, 'local-bundle', '[]')
    expect(resolveBundle('local-bundle', dir, INSTALL_BASE).patch).toBe(
      join(dir, 'node_modules', 'local-bundle', 'cordis.patch.yml'),
    )
    expect(resolveBundle('@dsh/bundle-base', dir, INSTALL_BASE).patch).toMatch(/bundles\/base\/cordis\.patch\.yml$/)
  })
})

describe('composeProfile', () => {
  it('applies bundles in order, then the profile, the home patch and each --patch', () => {
    const home = tempDir()
    const dir = writeProfile(
      home,
      'p',
      ['b1', 'b2'],
      '- id: r\n  config: { by: profile }\n- insert:\n    - { id: from-profile, name: ./plugin.ts }\n',
    )
    write(join(dir, 'plugin.ts'), 'export function apply() {}\n')
    fakeBundle(dir, 'b1', `- insert:\n    - { id: r, name: ${join(FIXTURES, 'row.ts')}, config: { by: b1 } }\n`)
    fakeBundle(dir, 'b2', '- id: r\n  config: { by: b2 }\n')
    write(join(home, 'cordis.patch.yml'), '- id: r\n  config: { by: home }\n')
    const cwd = tempDir()
    write(join(cwd, 'one.yml'), '- id: r\n  config: { by: one }\n')
    write(join(cwd, 'two.yml'), '- id: r\n  disabled: true\n- id: missing\n  disabled: true\n')
    const comp = composeProfile({
      home,
      profileName: 'p',
      patches: ['one.yml', 'two.yml'],
      installBase: INSTALL_BASE,
      cwd,
    })
    expect(comp.layers.map((l) => l.label)).toEqual([
      'bundle b1',
      'bundle b2',
      'profile p',
      'home',
      '--patch one.yml',
      '--patch two.yml',
    ])
    const r = comp.rows.find((x) => x.row.id === 'r')!
    expect(r.row).toMatchObject({ config: { by: 'one' }, disabled: true })
    expect(r.layers).toEqual(comp.layers.map((l) => l.label))
    expect(comp.warnings).toEqual([
      `--patch two.yml (${join(cwd, 'two.yml')}:3): [1] id "missing" names no row; skipped`,
    ])
    // A relative name resolves against the layer file that introduced it.
    expect(comp.rows.find((x) => x.row.id === 'from-profile')!.url).toBe(pathToFileURL(join(dir, 'plugin.ts')).href)
  })

  it('resolves bare names from the introducing layer, else from the installation, else records why not', () => {
    const home = tempDir()
    const dir = writeProfile(
      home,
      'p',
      [],
      '- insert:\n    - { id: hp, name: "@dsh/home-paths" }\n    - { id: local, name: my-plugin }\n    - { id: gone, name: not-installed-anywhere }\n    - { id: rel, name: ./missing.ts }\n',
    )
    write(
      join(dir, 'node_modules', 'my-plugin', 'package.json'),
      JSON.stringify({ name: 'my-plugin', type: 'module', exports: { '.': { import: './index.js' } } }),
    )
    write(join(dir, 'node_modules', 'my-plugin', 'index.js'), 'export function apply() {}\n')
    const comp = composeProfile({ home, profileName: 'p', installBase: INSTALL_BASE })
    const byId = Object.fromEntries(comp.rows.map((r) => [r.row.id, r]))
    expect(byId.hp.url).toMatch(/packages\/util\/home-paths\/src\/index\.ts$/)
    expect(byId.local.url).toBe(pathToFileURL(join(dir, 'node_modules', 'my-plugin', 'index.js')).href)
    expect(byId.gone.url).toBeUndefined()
    expect(byId.gone.resolveError).toBe(
      `cannot resolve module "not-installed-anywhere" from ${join(dir, 'cordis.patch.yml')} or the dsh installation`,
    )
    expect(byId.rel.resolveError).toBe(
      `module file "./missing.ts" does not exist (relative to ${join(dir, 'cordis.patch.yml')})`,
    )
  })

  it('reports a missing --patch file as a usage error and a malformed layer by file', () => {
    const home = tempDir()
    writeProfile(home, 'p', [])
    expect(
      userError(() =>
        composeProfile({ home, profileName: 'p', patches: ['nope.yml'], installBase: INSTALL_BASE, cwd: home }),
      ).exitCode,
    ).toBe(2)
    write(join(home, 'cordis.patch.yml'), '- insert: {}\n')
    expect(userError(() => composeProfile({ home, profileName: 'p', installBase: INSTALL_BASE })).message).toBe(
      `${join(home, 'cordis.patch.yml')}:1: [0].insert: must be a list of rows`,
    )
  })

  it('composes the shipped headless profile from the real bundles', () => {
    const home = tempDir()
    ensureProfile(home, 'headless', TEMPLATES)
    const comp = composeProfile({ home, profileName: 'headless', installBase: INSTALL_BASE })
    expect(comp.rows.map((r) => r.row.id)).toEqual(expect.arrayContaining(['home-paths', 'cmdline']))
    expect(comp.rows.every((r) => r.url && !r.resolveError)).toBe(true)
  })
})
