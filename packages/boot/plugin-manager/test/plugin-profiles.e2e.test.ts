// `dsh plugin add` without --profile installs into every profile (the shipped templates and any
// other profile of the home), `remove` removes it from each that has it, and --profile narrows both.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { runDsh } from '@dsh/cli-testkit'

const root = mkdtempSync(join(tmpdir(), 'dsh-plugin-profiles-'))
const home = join(root, 'home')
const project = join(root, 'project')
mkdirSync(project, { recursive: true })
const plugin = (...args: string[]) =>
  runDsh(['plugin', ...args], { cwd: project, env: { DSH_HOME: home }, timeoutMs: 180_000 })
const patchOf = (profile: string) => {
  const file = join(home, 'profiles', profile, 'cordis.patch.yml')
  return existsSync(file) ? readFileSync(file, 'utf8') : ''
}

function pluginDir(name: string): string {
  const dir = join(root, 'src', name)
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name, version: '1.0.0', type: 'module', main: 'index.js', dsh: { plugin: { id: 'everywhere' } } }),
  )
  writeFileSync(join(dir, 'index.js'), `export const name = '${name}'\nexport function apply() {}\n`)
  return dir
}

it('add goes to every profile unless --profile narrows it; remove follows it everywhere', async () => {
  const dir = pluginDir('dsh-plugin-everywhere')
  const add = await plugin('add', dir)
  expect(add.code, add.stderr).toBe(0)
  expect(add.stdout).toBe(
    ['acp', 'headless', 'tui', 'web']
      .map((p) => `added dsh-plugin-everywhere@1.0.0 to profile ${p} as row everywhere\n`)
      .join(''),
  )
  for (const profile of ['acp', 'headless', 'tui', 'web'])
    expect(patchOf(profile)).toMatch(/- id: everywhere\n\s+name: dsh-plugin-everywhere/)

  // Again: left as it is in each, not an error.
  const again = await plugin('add', dir)
  expect(again.code, again.stderr).toBe(0)
  expect(again.stdout).toContain('dsh-plugin-everywhere is already in profile tui; left as it is')

  const narrow = await plugin('remove', 'dsh-plugin-everywhere', '--profile', 'web')
  expect(narrow).toMatchObject({ code: 0, stdout: 'removed dsh-plugin-everywhere from profile web (everywhere)\n' })
  expect(patchOf('web')).not.toContain('everywhere')
  expect(patchOf('tui')).toContain('everywhere')

  const rest = await plugin('remove', 'dsh-plugin-everywhere')
  expect(rest.code, rest.stderr).toBe(0)
  expect(rest.stdout).toBe(
    ['acp', 'headless', 'tui'].map((p) => `removed dsh-plugin-everywhere from profile ${p} (everywhere)\n`).join(''),
  )
  const none = await plugin('remove', 'dsh-plugin-everywhere')
  expect(none).toMatchObject({ code: 2, stderr: 'dsh plugin: dsh-plugin-everywhere is not installed in any profile\n' })
}, 240_000)
